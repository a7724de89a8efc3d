//! DAgger for the household's policy: the fitted policy plays fresh training tasks, the
//! searching expert labels every state it reached, and SFT goes on over the demonstrations and
//! the labels (`pretrain.dagger_rounds`).

use super::prompts::policy_answer_styled;
use super::warm::{household_probe, household_train_tasks, ExpertWalk};
use crate::config::RunConfig;
use crate::play::Trajectory;
use crate::pretrain::{encode_pairs, Demo, Example, WarmStart};
use anyhow::{Context, Result};
use rla_env::household::TaskSpec;
use rla_lm::SampleParams;

/// DAgger's labels: the searching expert's action at the states of the policy's own episodes.
/// Each episode is played again in its task's game, the prompt the policy saw rebuilt as the
/// play loop builds it (history window, notes, listing style); the expert follows the agent's
/// actions, seeing only what the agent sees, and names the action it would take there. Each
/// command the expert names is kept once an episode, at the first state it names it: an agent
/// that loops for fifteen steps hears "go to coffeemachine 1" fifteen times, and SFT on every
/// one of those teaches going, not taking (measured: held-out accuracy 79.8% → 74.1%,
/// validation success 48.3% → 23.3% with every state kept).
pub fn expert_labels(
    tasks: &[TaskSpec],
    trajs: &[Trajectory],
    cfg: &RunConfig,
) -> Result<Vec<Demo>> {
    let h = &cfg.household;
    let mut out = Vec::new();
    for tr in trajs {
        let t = tasks
            .get(tr.task)
            .with_context(|| format!("an episode of task {}, of {}", tr.task, tasks.len()))?;
        let mut walk = ExpertWalk::start(t, h.notes)?;
        let mut named: Vec<String> = Vec::new();
        for s in &tr.steps {
            // an agent that has spoilt its task leaves the expert nothing to do
            let Some(l) = walk.label(h)? else {
                break;
            };
            if !named.contains(&l.cmd) {
                named.push(l.cmd.clone());
                out.push(Demo {
                    prompt: l.prompt,
                    answer: policy_answer_styled(&l.cmd, l.idx, h.prompt_style),
                    choices: l.adm,
                    task: tr.task,
                });
            }
            if walk.play(&s.action)?.1.done {
                break;
            }
        }
    }
    Ok(out)
}

/// The demonstrations and the labels with the labels repeated until they are about `share` of
/// the whole (at least once each), so that a batch drawn from it is about `share` labels.
fn mix<T: Clone>(demos: &[T], labels: &[T], share: f64) -> Vec<T> {
    let want = share / (1.0 - share) * demos.len() as f64;
    let times = ((want / labels.len().max(1) as f64).round() as usize).max(1);
    let mut out = demos.to_vec();
    for _ in 0..times {
        out.extend_from_slice(labels);
    }
    out
}

/// `pretrain.dagger_rounds` rounds of DAgger on the fitted policy (`out/policy`): each plays
/// fresh training tasks greedily, labels every state reached with the expert's action
/// ([`expert_labels`]), and trains on the demonstrations and all labels so far at the
/// schedule's last rate; the policy is measured after each round (a point of its curve) and
/// saved. Returns a line saying what was done.
pub(super) fn dagger(w: WarmStart, demos: &[Example], held: &[Demo]) -> Result<String> {
    let (cfg, out) = (w.cfg, w.out);
    let p = &cfg.pretrain;
    let steps = p.policy_steps.max(1);
    // SFT from here on at the rate the schedule ended at
    let mut flat = cfg.clone();
    flat.pretrain.lr = p.lr_at(steps - 1, steps);
    flat.pretrain.schedule = crate::config::LrSchedule::Constant;
    flat.pretrain.warmup = 0;
    let opts = rla_lm::OpenOptions {
        dtype: cfg.policy.dtype.clone(),
        train: Some(rla_lm::TrainOptions {
            lr: flat.pretrain.lr,
            micro_batch: cfg.policy.micro_batch,
            seed: cfg.seed.wrapping_add(101),
            ..Default::default()
        }),
        ..Default::default()
    };
    let dir = out.join("policy");
    let mut lm = w.backend.open(&dir, &opts)?;
    let demos = encode_pairs(&*lm, demos)?;
    let mut labels_enc = Vec::new();
    let curve_path = out.join("curve-policy.jsonl");
    let mut curve = crate::manifest::read_curve(&curve_path)?;
    let files = [super::Episodes::evaluation(cfg).record()?];
    let ep = super::Episodes {
        rollouts: 1,
        step_limit: cfg.household.train_step_limit,
        ..super::Episodes::evaluation(cfg)
    };
    let sp = SampleParams::greedy(cfg.policy.max_new_tokens);
    let (mut labelled, mut won_last) = (0usize, 0.0);
    for round in 0..p.dagger_rounds {
        let mut c = cfg.clone();
        c.seed = cfg.seed.wrapping_add(104_729 + round as u64);
        c.pretrain.tasks = p.dagger_tasks;
        let tasks = household_train_tasks(&c);
        let bar = w.progress.then(|| {
            let n = tasks.len() * ep.step_limit;
            crate::bar(
                n as u64,
                &format!("DAgger round {}: the policy plays", round + 1),
            )
        });
        let trajs = super::rollout(&*lm, &tasks, ep, &sp, bar.as_ref())?;
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        won_last = trajs.iter().filter(|t| t.won()).count() as f64 / tasks.len() as f64;
        let labels = expert_labels(&tasks, &trajs, cfg)?;
        labelled += labels.len();
        for d in &labels {
            labels_enc.push((
                crate::play::encode_prompt(&*lm, &d.prompt)?,
                crate::play::encode_response(&*lm, &d.answer)?,
            ));
        }
        let data = mix(&demos, &labels_enc, p.dagger_label_share);
        let bar = w.progress.then(|| {
            crate::bar(
                p.dagger_steps as u64,
                &format!("DAgger round {}: SFT", round + 1),
            )
        });
        let probe = household_probe(
            cfg,
            held,
            p.validation,
            Some(out.join("mistakes-policy.txt")),
        );
        let (_, points) = crate::pretrain::sft(
            &mut *lm,
            &flat,
            &data,
            p.dagger_steps,
            c.seed,
            bar.as_ref(),
            Some((0, probe)),
            &mut |_, _| Ok(()),
        )?;
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        for mut point in points {
            point.insert(
                "step".into(),
                (p.policy_steps + (round + 1) * p.dagger_steps).into(),
            );
            point.insert("dagger_round".into(), (round + 1).into());
            point.insert("dagger_train_success".into(), won_last.into());
            tracing::info!(point = %serde_json::Value::Object(point.clone()), "DAgger");
            curve.push(point);
        }
        rla_lm::replace_dir_atomic(&dir, |tmp| -> Result<()> {
            lm.export(tmp, None)?;
            for (file, text) in &files {
                rla_lm::write_atomic(&tmp.join(file), text.as_bytes())?;
            }
            Ok(())
        })?;
        let text: String = curve
            .iter()
            .map(|p| serde_json::Value::Object(p.clone()).to_string() + "\n")
            .collect();
        crate::run::write_atomic(&curve_path, &text)?;
    }
    Ok(format!(
        "policy, DAgger: {} rounds of {} tasks played greedily ({:.1}% won in the last), {labelled} \
         states labelled by the expert, {} SFT steps a round",
        p.dagger_rounds,
        p.dagger_tasks,
        100.0 * won_last,
        p.dagger_steps
    ) + &format!(
        ", {:.0}% of each batch labels",
        100.0 * p.dagger_label_share
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::household::prompts::parse_choice;
    use crate::household::warm::household_warm_start;
    use crate::pretrain::tiny_test_config;

    #[test]
    fn dagger_goes_on_from_a_base_the_config_names_without_fitting_it_again() {
        let mut cfg = tiny_test_config();
        cfg.pretrain.held_out = 1;
        cfg.pretrain.policy_steps = 2;
        cfg.household.train_step_limit = 6;
        let base = tempfile::tempdir().unwrap();
        household_warm_start(crate::pretrain::candle_warm_start(&cfg, base.path())).unwrap();
        cfg.policy.path = Some(base.path().join("policy"));
        cfg.reward.path = Some(base.path().join("reward"));
        cfg.pretrain.dagger_rounds = 1;
        cfg.pretrain.dagger_tasks = 2;
        cfg.pretrain.dagger_steps = 2;
        let dir = tempfile::tempdir().unwrap();
        let lines =
            household_warm_start(crate::pretrain::candle_warm_start(&cfg, dir.path())).unwrap();
        assert!(
            lines[0].ends_with("as it is (not fitted again)"),
            "{lines:?}"
        );
        assert!(
            lines[1].starts_with("policy, DAgger: 1 rounds"),
            "{lines:?}"
        );
        let read = |d: &std::path::Path, f: &str| std::fs::read(d.join(f)).unwrap();
        // the judge is the base's, byte for byte; the policy learnt from the labels
        for f in ["reward/model.safetensors", "reward/tokenizer.json"] {
            assert_eq!(read(base.path(), f), read(dir.path(), f), "{f}");
        }
        let f = "policy/model.safetensors";
        assert_ne!(read(base.path(), f), read(dir.path(), f));
        assert_eq!(
            read(base.path(), "policy/tokenizer.json"),
            read(dir.path(), "policy/tokenizer.json")
        );
        // the base's curve goes on with the round
        let n = |d: &std::path::Path| {
            String::from_utf8(read(d, "curve-policy.jsonl"))
                .unwrap()
                .lines()
                .count()
        };
        assert_eq!(n(dir.path()), n(base.path()) + 1);
        // a base that is not there is named
        cfg.policy.path = Some(base.path().join("nothing"));
        let e =
            household_warm_start(crate::pretrain::candle_warm_start(&cfg, dir.path())).unwrap_err();
        assert!(format!("{e:#}").contains("policy.path"), "{e:#}");
    }

    #[test]
    fn labels_are_repeated_to_their_share_of_the_batch() {
        let demos = vec![0u8; 90];
        let labels = vec![1u8; 10];
        let m = mix(&demos, &labels, 0.5);
        assert_eq!(m.iter().filter(|x| **x == 1).count(), 90);
        assert_eq!(m.len(), 180);
        let m = mix(&demos, &labels, 0.25);
        assert_eq!(m.iter().filter(|x| **x == 1).count(), 30);
        // more labels than their share still go in once each
        let m = mix(&labels, &demos, 0.1);
        assert_eq!(m.len(), 100);
    }

    #[test]
    fn dagger_labels_the_states_the_policy_reached_with_the_experts_actions() {
        let mut cfg = tiny_test_config();
        cfg.household.history_window = 1;
        let dir = tempfile::tempdir().unwrap();
        household_warm_start(crate::pretrain::candle_warm_start(&cfg, dir.path())).unwrap();
        let lm = rla_lm::Backend::open(
            &rla_model::Candle,
            &dir.path().join("policy"),
            &Default::default(),
        )
        .unwrap();
        let tasks = rla_env::household::splits::train_tasks(3, 11);
        let ep = crate::household::Episodes {
            step_limit: 8,
            ..crate::household::Episodes::evaluation(&cfg)
        };
        let sp = SampleParams::greedy(cfg.policy.max_new_tokens);
        let trajs = crate::household::rollout(&*lm, &tasks, ep, &sp, None).unwrap();
        let labels = expert_labels(&tasks, &trajs, &cfg).unwrap();
        // each label's prompt is one the policy saw, token for token, in its own episode; and
        // an episode's labels name each command once
        let mut differ = 0;
        let mut named = std::collections::HashSet::new();
        for d in &labels {
            let ids = crate::play::encode_prompt(&*lm, &d.prompt).unwrap();
            let s = trajs[d.task]
                .steps
                .iter()
                .find(|s| s.prompt_ids == ids)
                .unwrap_or_else(|| panic!("a prompt the policy never saw: {}", d.prompt));
            let (idx, parsed) = parse_choice(&d.answer, &d.choices);
            assert!(parsed, "{}", d.answer);
            assert!(
                named.insert((d.task, idx, d.choices[idx].clone())),
                "{}",
                d.answer
            );
            differ += usize::from(d.choices[idx] != s.action);
        }
        // the first state of every episode is labelled, and no more states than were played
        let steps: usize = trajs.iter().map(|t| t.steps.len()).sum();
        assert!(labels.len() <= steps && labels.len() >= trajs.len());
        // a policy of a few SFT steps strays from the expert, which names another action
        assert!(differ > 0, "the labels repeat the policy's actions");
        // an episode of another task list is refused by name
        let e = expert_labels(&tasks[..1], &trajs, &cfg).unwrap_err();
        assert!(format!("{e:#}").contains("an episode of task"), "{e:#}");
    }

    #[test]
    fn dagger_rounds_go_on_from_the_fitted_policy_and_extend_its_curve() {
        let mut cfg = tiny_test_config();
        cfg.pretrain = crate::config::PretrainConfig {
            held_out: 1,
            validation: 2,
            policy_steps: 2,
            dagger_rounds: 2,
            dagger_tasks: 2,
            dagger_steps: 3,
            ..cfg.pretrain
        };
        cfg.household.train_step_limit = 6;
        cfg.validate().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let lines =
            household_warm_start(crate::pretrain::candle_warm_start(&cfg, dir.path())).unwrap();
        assert!(
            lines[1].starts_with("policy, DAgger: 2 rounds of 2 tasks"),
            "{lines:?}"
        );
        let curve = std::fs::read_to_string(dir.path().join("curve-policy.jsonl")).unwrap();
        let points: Vec<serde_json::Value> = curve
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(points.len(), 3, "{curve}");
        for (p, (step, round)) in points.iter().zip([(2, None), (5, Some(1)), (8, Some(2))]) {
            assert_eq!(p["step"], step, "{p}");
            assert_eq!(p["dagger_round"].as_u64(), round, "{p}");
            assert!(p["held_out_action_acc"].as_f64().is_some(), "{p}");
        }
        // the saved policy is the one after the last round, and still plays as it was trained
        let ep = crate::household::Episodes::load_from(&dir.path().join("policy"))
            .unwrap()
            .unwrap();
        assert_eq!(ep, crate::household::Episodes::evaluation(&cfg));
        // only the household's policy learns this way
        let mut coding = cfg.clone();
        coding.setting = crate::config::SettingName::Coding;
        let e = coding.validate().unwrap_err();
        assert!(
            e.contains("pretrain.dagger_rounds") && e.contains("coding"),
            "{e}"
        );
        cfg.pretrain.dagger_steps = 0;
        assert!(cfg
            .validate()
            .unwrap_err()
            .contains("pretrain.dagger_steps"));
    }
}
