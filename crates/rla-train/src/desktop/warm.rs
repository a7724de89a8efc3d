//! The desktop's warm start: the expert's actions in states of noisy expert episodes (policy
//! examples) and every executed step labelled with its episode's outcome (judge examples: weak
//! labels, no oracle), fitted into tiny models.

use super::play::{open, split_tasks};
use super::prompts::{judge_answer, judge_prompt, policy_answer, policy_prompt, previous_actions};
use crate::config::RunConfig;
use crate::pretrain::Example;
use crate::setting::Split;
use anyhow::Result;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rla_desktop::family::{self, Spec};
use rla_desktop::{expert, tiny};

/// Demonstrations: the expert's actions in states of noisy expert episodes (policy examples),
/// and every executed step labelled with its episode's outcome (judge examples: weak labels,
/// no oracle).
pub fn demonstrations(
    cfg: &RunConfig,
    tasks: &[Spec],
    seed: u64,
) -> Result<(Vec<Example>, Vec<Example>)> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let (mut pol, mut jud) = (Vec::new(), Vec::new());
    let noise = cfg.pretrain.noise;
    let window = cfg.desktop.history;
    for t in tasks {
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
                pol.push((
                    policy_prompt(&instruction, &prev, &obs),
                    policy_answer(&best),
                ));
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

/// Builds the tokenizer and both tiny models, warm-starts them on demonstrations, and saves
/// them under `out`.
pub fn warm_start(w: crate::setting::WarmStart) -> Result<Vec<String>> {
    let cfg = w.cfg;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(cfg.seed.wrapping_add(29));
    // training-distribution tasks at every difficulty the adaptation reaches
    let tasks: Vec<Spec> = family::split(family::Split::Train, cfg.pretrain.tasks + 1000)
        .into_iter()
        .skip(1000)
        .map(|s| Spec {
            objects: rng.gen_range(1..=3),
            variant: rng.gen_range(1..=2),
            hints: if rng.gen::<f64>() < cfg.pretrain.hint_fraction {
                rng.gen_range(1..=family::MAX_HINTS)
            } else {
                0
            },
            ..s
        })
        .collect();
    let (pol, jud) = demonstrations(cfg, &tasks, cfg.seed)?;
    let mut corpus = crate::pretrain::example_corpus(pol.iter().chain(jud.iter()));
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
    corpus.push_str(crate::pretrain::CHAT_MARKERS);
    crate::pretrain::fit_both(w, &corpus, (&pol, &jud))
}
