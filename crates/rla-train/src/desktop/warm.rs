//! The desktop's warm start and base: the expert's actions in states of noisy expert episodes
//! (policy examples) and every executed step labelled with its episode's outcome (judge
//! examples: weak labels, no oracle), on generated training tasks that share no table with the
//! evaluated ones, fitted into tiny models; the policy measured as it learns (held-out loss, the
//! share of held-out steps whose greedy action is the expert's, validation success).

use super::play::{open, split_tasks};
use super::probe::{desktop_probe, training_specs};
use super::prompts::{judge_answer, judge_prompt, policy_answer, policy_prompt, previous_actions};
use crate::config::RunConfig;
use crate::config::SettingConfig;
use crate::desktop::config::DesktopConfig;
use crate::pretrain::{example_corpus, Demo, Example, WarmStart, CHAT_MARKERS};
use crate::setting::Split;
use anyhow::Result;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rla_desktop::play::tiny;
use rla_desktop::tasks::expert;
use rla_desktop::tasks::family::Spec;

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
    let window = DesktopConfig::of(cfg).history;
    for (ti, t) in tasks.iter().enumerate() {
        for eps in [noise, (noise * 2.0).min(0.9)] {
            let mut ep = open(t, cfg)?;
            let instruction = ep.task.task.instruction.clone();
            let mut actions: Vec<String> = Vec::new();
            let mut steps: Vec<(String, String, String, String)> = Vec::new(); // prev, obs, answer, next
            for _ in 0..DesktopConfig::of(cfg).train_step_limit {
                let nodes = ep.tree(tiny::TREE);
                let obs = tiny::observation(&ep.desktop, &nodes, DesktopConfig::of(cfg).summary());
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
                let after = tiny::observation(
                    &ep.desktop,
                    &ep.tree(tiny::TREE),
                    DesktopConfig::of(cfg).summary(),
                );
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
    // every word the evaluation tasks can show or ask for; the sheets world keeps its OOD
    // split's held-out names out, for the tokenizer to cut into pieces it knows
    let world = DesktopConfig::of(cfg).world;
    let held_out =
        world.of_split(rla_core::Split::Ood) == rla_desktop::tasks::family::World::HeldOut;
    for split in Split::EVALUATION {
        if held_out && split == Split::Ood {
            continue;
        }
        for s in split_tasks(world, split, usize::MAX) {
            let ep = open(&s, cfg)?;
            let nodes = ep.tree(tiny::TREE);
            corpus.push_str(&ep.task.task.instruction);
            corpus.push('\n');
            corpus.push_str(&tiny::observation(
                &ep.desktop,
                &nodes,
                DesktopConfig::of(cfg).summary(),
            ));
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
    let mut lines = crate::dagger::fit_policy(w, &corpus, &pol, vec![], probe, || {
        super::dagger::dagger(w, &pol, &held)
    })?;
    lines.push(crate::dagger::fit_judge(w, &corpus, &jud)?);
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
    use crate::desktop::probe::{evaluation_seeds, training_specs};
    use rla_desktop::tasks::family::{self, Family};
    use std::collections::HashSet;

    #[test]
    fn training_tasks_share_no_table_with_the_evaluated_ones() {
        let cfg = RunConfig::with_table("desktop", DesktopConfig::default());
        let held = evaluation_seeds(family::World::Plain);
        assert_eq!(held.len(), 230 + 139 + 140);
        let starts: HashSet<String> = [
            rla_core::Split::InDomain,
            rla_core::Split::Ood,
            rla_core::Split::Validation,
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
    fn the_demonstrations_show_the_summary_the_config_asks_for() {
        let mut cfg = RunConfig::with_table("desktop", DesktopConfig::default());
        let tasks = training_specs(&cfg, 2, 3);
        let prompts = |cfg: &RunConfig| -> Vec<String> {
            demonstrations(cfg, &tasks, 0)
                .unwrap()
                .0
                .into_iter()
                .map(|d| d.prompt)
                .collect()
        };
        let plain = prompts(&cfg);
        assert!(plain.iter().all(|p| !p.contains("| empty ")));
        DesktopConfig::of_mut(&mut cfg).empty_columns = true;
        let with = prompts(&cfg);
        assert_eq!(plain.len(), with.len());
        assert!(with.iter().all(|p| p.contains("| empty ")), "{with:?}");
    }

    #[test]
    fn the_probe_measures_held_out_steps_and_validation_success() {
        let mut cfg = crate::pretrain::tiny_test_config();
        cfg.set_table("desktop", DesktopConfig::default());
        DesktopConfig::of_mut(&mut cfg).eval_step_limit = 2;
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
