//! The desktop's warm start and base: the expert's actions in states of noisy expert episodes
//! (policy examples) and every executed step labelled with its episode's outcome (judge
//! examples: weak labels, no oracle), on generated training tasks that share no table with the
//! evaluated ones, fitted into tiny models; the policy measured as it learns (held-out loss, the
//! share of held-out steps whose greedy action is the expert's, validation success).

use super::play::{open, rollout, split_tasks};
use super::prompts::{
    judge_answer, judge_prompt, parse_answer, policy_answer, policy_prompt, previous_actions,
};
use crate::config::RunConfig;
use crate::play::encode_response;
use crate::pretrain::{
    encode_pairs, example_corpus, greedy_accuracy, CurvePoint, Demo, Example, Fit, Probe,
    WarmStart, CHAT_MARKERS,
};
use crate::setting::Split;
use anyhow::Result;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rla_desktop::family::{self, Family, Spec};
use rla_desktop::{expert, tiny};
use rla_lm::{Model, SampleParams};
use std::collections::HashSet;

/// Demonstrations: the expert's actions in states of noisy expert episodes (policy examples),
/// and every executed step labelled with its episode's outcome (judge examples: weak labels,
/// no oracle).
pub fn demonstrations(
    cfg: &RunConfig,
    tasks: &[Spec],
    seed: u64,
) -> Result<(Vec<Demo>, Vec<Example>)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut pol, mut jud) = (Vec::new(), Vec::new());
    let noise = cfg.pretrain.noise;
    let window = cfg.desktop.history;
    for (ti, t) in tasks.iter().enumerate() {
        for eps in [noise, (noise * 2.0).min(0.9)] {
            let mut ep = open(t, cfg)?;
            let instruction = ep.task.task.instruction.clone();
            let mut actions: Vec<String> = Vec::new();
            let mut steps: Vec<(String, String, String, String)> = Vec::new(); // prev, obs, answer, next
            for _ in 0..cfg.desktop.train_step_limit {
                let nodes = ep.tree(tiny::TREE);
                let obs = tiny::observation(&ep.desktop, &nodes);
                let prev = previous_actions(&actions, window);
                let cands = tiny::candidates(&ep.desktop, &nodes, &instruction);
                let code = expert::next(&ep);
                let Some(best) = tiny::from_code(&code, &ep.desktop, &nodes, &instruction) else {
                    break; // the expert needs an action the vocabulary does not have
                };
                pol.push(Demo {
                    prompt: policy_prompt(&instruction, &prev, &obs),
                    answer: policy_answer(&best),
                    choices: cands.clone(),
                    task: ti,
                });
                let act = if best != "done" && rng.gen::<f64>() < eps {
                    cands.choose(&mut rng).cloned().unwrap_or(best)
                } else {
                    best
                };
                if let Some(code) = tiny::to_code(&act, &ep.desktop, &nodes) {
                    ep.step_code(&code, &nodes);
                }
                let after = tiny::observation(&ep.desktop, &ep.tree(tiny::TREE));
                steps.push((prev, obs, policy_answer(&act), after));
                actions.push(act);
                if ep.finished.is_some() {
                    break;
                }
            }
            let won = ep.score() == Ok(1.0);
            for (prev, obs, ans, next) in steps {
                let act = ans.trim_start_matches("Action: ").to_string();
                jud.push((
                    judge_prompt(&instruction, &prev, &obs, &ans, &next),
                    judge_answer(&act, won),
                ));
            }
        }
    }
    pol.shuffle(&mut rng);
    jud.shuffle(&mut rng);
    Ok((pol, jud))
}

/// The tables the fixed splits evaluate (their seeds): no training task of a warm start is
/// generated from one of them.
pub fn evaluation_seeds() -> HashSet<u64> {
    [
        family::Split::InDomain,
        family::Split::Ood,
        family::Split::Validation,
    ]
    .into_iter()
    .flat_map(|s| family::split(s, usize::MAX))
    .map(|s| s.seed)
    .collect()
}

/// `n` generated training tasks of the in-domain families, drawn with `seed` at every
/// difficulty the adaptation reaches (1–3 objects, either evaluator, a `pretrain.hint_fraction`
/// share with hints), none generated from a table the fixed splits evaluate.
pub fn training_specs(cfg: &RunConfig, n: usize, seed: u64) -> Vec<Spec> {
    let held = evaluation_seeds();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let family = Family::IN_DOMAIN[out.len() % Family::IN_DOMAIN.len()];
        let s = Spec {
            family,
            seed: rng.gen(),
            objects: rng.gen_range(1..=3),
            variant: rng.gen_range(1..=2),
            hints: if rng.gen::<f64>() < cfg.pretrain.hint_fraction {
                rng.gen_range(1..=family::MAX_HINTS)
            } else {
                0
            },
        };
        if !held.contains(&s.seed) {
            out.push(s);
        }
    }
    out
}

/// Measures the desktop policy on held-out demonstration steps: the mean SFT loss and the share
/// of steps whose greedy answer among the state's candidates (as the policy plays) is the
/// expert's, with the first mistakes written to `mistakes`; and, with `validation > 0`, greedy
/// success on that many validation tasks.
pub fn desktop_probe<'a>(
    cfg: &'a RunConfig,
    held_out: &'a [Demo],
    validation: usize,
    mistakes: Option<std::path::PathBuf>,
) -> Probe<'a> {
    Box::new(move |lm: &dyn Model| {
        let mut point = CurvePoint::new();
        if !held_out.is_empty() {
            let examples: Vec<Example> = held_out
                .iter()
                .map(|d| (d.prompt.clone(), d.answer.clone()))
                .collect();
            let pairs = encode_pairs(lm, &examples)?;
            point.insert("held_out_loss".into(), lm.sft_loss(&pairs)?.into());
            // greedy answers among the state's candidates, as the policy plays
            let prompts: Vec<Vec<u32>> = pairs.iter().map(|p| p.0.clone()).collect();
            let allowed: Vec<Vec<Vec<u32>>> = held_out
                .iter()
                .map(|d| {
                    d.choices
                        .iter()
                        .map(|c| encode_response(lm, &policy_answer(c)))
                        .collect::<Result<_>>()
                })
                .collect::<Result<_>>()?;
            let (acc, wrong) = greedy_accuracy(
                lm,
                &prompts,
                Some(&allowed),
                cfg.policy.max_new_tokens,
                |i, text| {
                    let d = &held_out[i];
                    let got = parse_answer(text, &d.choices);
                    let want = d.answer.trim_start_matches("Action: ");
                    (got.map(String::as_str) != Some(want)).then(|| {
                        format!(
                            "{}\nexpert: {want}\nmodel:  {}\n",
                            d.prompt,
                            got.map_or("(no candidate)", String::as_str)
                        )
                    })
                },
            )?;
            point.insert("held_out_action_acc".into(), acc.into());
            if let Some(path) = &mistakes {
                crate::run::write_atomic(path, &wrong.join("\n"))?;
            }
        }
        if validation > 0 {
            let tasks = split_tasks(Split::Validation, validation);
            let sp = SampleParams::greedy(cfg.policy.max_new_tokens);
            let trajs = rollout(
                lm,
                cfg,
                &tasks,
                1,
                cfg.desktop.eval_step_limit,
                &sp,
                false,
                None,
            )?;
            point.insert(
                "validation_success".into(),
                crate::play::success(&trajs).into(),
            );
        }
        Ok(point)
    })
}

/// Builds the tokenizer and both tiny models and fits them on demonstrations of
/// `pretrain.tasks` generated training tasks, saved under `out`. The demonstrations of the last
/// `pretrain.held_out` tasks measure the policy as it learns (with `pretrain.validation`
/// validation tasks, every `pretrain.eval_every` steps; its curve in `out/curve-policy.jsonl`,
/// its held-out mistakes in `out/mistakes-policy.txt`).
pub fn warm_start(w: WarmStart) -> Result<Vec<String>> {
    let cfg = w.cfg;
    let tasks = training_specs(cfg, cfg.pretrain.tasks, cfg.seed.wrapping_add(29));
    let cut = tasks.len() - cfg.pretrain.held_out.min(tasks.len());
    let (pol, jud) = demonstrations(cfg, &tasks[..cut], cfg.seed)?;
    let (held, _) = demonstrations(cfg, &tasks[cut..], cfg.seed.wrapping_add(1))?;
    let pol: Vec<Example> = pol.into_iter().map(|d| (d.prompt, d.answer)).collect();
    let held_examples = held.iter().map(|d| (d.prompt.clone(), d.answer.clone()));
    let mut corpus = example_corpus(pol.iter().chain(jud.iter()));
    corpus.push_str(&example_corpus(held_examples.collect::<Vec<_>>().iter()));
    // every word the evaluation tasks can show or ask for
    for split in [Split::InDomain, Split::Ood, Split::Validation] {
        for s in split_tasks(split, usize::MAX) {
            let ep = open(&s, cfg)?;
            let nodes = ep.tree(tiny::TREE);
            corpus.push_str(&ep.task.task.instruction);
            corpus.push('\n');
            corpus.push_str(&tiny::observation(&ep.desktop, &nodes));
            corpus.push('\n');
            for c in tiny::candidates(&ep.desktop, &nodes, &ep.task.task.instruction) {
                corpus.push_str(&policy_answer(&c));
                corpus.push('\n');
            }
        }
    }
    corpus.push_str(CHAT_MARKERS);
    let validation = cfg.pretrain.validation;
    let probe = (!held.is_empty() || validation > 0).then(|| {
        (
            cfg.pretrain.eval_every,
            desktop_probe(
                cfg,
                &held,
                validation,
                Some(w.out.join("mistakes-policy.txt")),
            ),
        )
    });
    let mut lines = vec![crate::dagger::fit_or_continue(
        w,
        Fit {
            name: "policy",
            spec: &cfg.policy,
            corpus: &corpus,
            data: &pol,
            steps: cfg.pretrain.policy_steps,
            files: vec![],
            probe,
        },
    )?];
    if cfg.pretrain.dagger_rounds > 0 {
        lines.push(super::dagger::dagger(w, &pol, &held)?);
    }
    lines.push(crate::dagger::fit_or_continue(
        w,
        Fit {
            name: "reward",
            spec: &cfg.reward,
            corpus: &corpus,
            data: &jud,
            steps: cfg.pretrain.reward_steps,
            files: vec![],
            probe: None,
        },
    )?);
    Ok(lines)
}

/// Tasks of the SFT control's demonstrations per chunk.
const CONTROL_CHUNK: usize = 64;

/// The SFT control's demonstrations: the expert's steps on chunk `chunk` of generated training
/// tasks, drawn with other seeds than the warm start's own.
pub fn control_demonstrations(cfg: &RunConfig, chunk: u64) -> Result<Vec<Example>> {
    let seed = rla_core::seed::mix(cfg.seed, &format!("desktop/control/{chunk}"));
    let tasks = training_specs(cfg, CONTROL_CHUNK, seed);
    let (pol, _) = demonstrations(cfg, &tasks, seed)?;
    Ok(pol.into_iter().map(|d| (d.prompt, d.answer)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn training_tasks_share_no_table_with_the_evaluated_ones() {
        let cfg = RunConfig {
            setting: crate::config::SettingName::Desktop,
            ..Default::default()
        };
        let held = evaluation_seeds();
        assert_eq!(held.len(), 230 + 139 + 140);
        let starts: HashSet<String> = [
            family::Split::InDomain,
            family::Split::Ood,
            family::Split::Validation,
        ]
        .into_iter()
        .flat_map(|s| family::split(s, usize::MAX))
        .map(|s| format!("{:?}", family::generate(&s).start))
        .collect();
        let train = training_specs(&cfg, 400, 29);
        assert_eq!(train.len(), 400);
        for s in &train {
            assert!(!held.contains(&s.seed));
            assert!(Family::IN_DOMAIN.contains(&s.family));
            assert!(!starts.contains(&format!("{:?}", family::generate(s).start)));
        }
        // every difficulty the adaptation reaches is drawn
        for o in 1..=3 {
            assert!(train.iter().any(|s| s.objects == o));
        }
        assert!(train.iter().any(|s| s.variant == 2));
        // the control's chunks are other tasks than each other's and the warm start's
        let a = control_demonstrations(&cfg, 0).unwrap();
        let b = control_demonstrations(&cfg, 1).unwrap();
        assert!(!a.is_empty() && a != b);
    }

    #[test]
    fn the_probe_measures_held_out_steps_and_validation_success() {
        let mut cfg = crate::pretrain::tiny_test_config();
        cfg.setting = crate::config::SettingName::Desktop;
        cfg.desktop.eval_step_limit = 2;
        cfg.pretrain.tasks = 3;
        cfg.pretrain.held_out = 1;
        cfg.pretrain.validation = 2;
        cfg.pretrain.eval_every = 1;
        let dir = tempfile::tempdir().unwrap();
        let lines = warm_start(crate::pretrain::candle_warm_start(&cfg, dir.path())).unwrap();
        assert_eq!(lines.len(), 2, "{lines:?}");
        let curve = std::fs::read_to_string(dir.path().join("curve-policy.jsonl")).unwrap();
        let points: Vec<serde_json::Value> = curve
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(points.len(), cfg.pretrain.policy_steps);
        for p in &points {
            let acc = p["held_out_action_acc"].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&acc), "{p}");
            assert!(p["held_out_loss"].as_f64().unwrap() > 0.0, "{p}");
            let v = p["validation_success"].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&v), "{p}");
        }
        // two steps of a 16-wide model: most held-out actions are wrong, and written down
        let mistakes = std::fs::read_to_string(dir.path().join("mistakes-policy.txt")).unwrap();
        assert!(mistakes.contains("expert: "), "{mistakes}");
        assert!(dir.path().join("policy/config.json").exists());
        assert!(dir.path().join("reward/config.json").exists());
    }
}
