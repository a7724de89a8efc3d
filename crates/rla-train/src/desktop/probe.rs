//! What the desktop's warm start and DAgger share: the generated training tasks, kept off the
//! tables the fixed splits evaluate, and the probe that measures a policy as it learns.

use super::play::{rollout, split_tasks};
use super::prompts::{parse_answer, policy_answer};
use crate::config::RunConfig;
use crate::config::SettingConfig;
use crate::desktop::config::DesktopConfig;
use crate::play::encode_response;
use crate::pretrain::{encode_pairs, greedy_accuracy, CurvePoint, Demo, Example, Probe};
use crate::setting::Split;
use anyhow::Result;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rla_desktop::tasks::family::{self, Spec};
use rla_lm::{Model, SampleParams};
use std::collections::HashSet;

/// The tables the fixed splits of a world evaluate (their seeds): no training task of a warm
/// start is generated from one of them.
pub fn evaluation_seeds(world: family::World) -> HashSet<u64> {
    [
        rla_core::Split::InDomain,
        rla_core::Split::Ood,
        rla_core::Split::Validation,
    ]
    .into_iter()
    .flat_map(|s| family::split_in(world, s, usize::MAX))
    .map(|s| s.seed)
    .collect()
}

/// `n` generated training tasks of the in-domain families, drawn with `seed` at every
/// difficulty the adaptation reaches (1–3 objects, either evaluator, a `pretrain.hint_fraction`
/// share with hints), none generated from a table the fixed splits evaluate.
pub fn training_specs(cfg: &RunConfig, n: usize, seed: u64) -> Vec<Spec> {
    let world = DesktopConfig::of(cfg).world;
    let held = evaluation_seeds(world);
    let families = world.families(rla_core::Split::Train);
    let world = world.of_split(rla_core::Split::Train);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let family = families[out.len() % families.len()];
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
            perturb: None,
            world,
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
            let tasks = split_tasks(DesktopConfig::of(cfg).world, Split::Validation, validation);
            let sp = SampleParams::greedy(cfg.policy.max_new_tokens);
            let trajs = rollout(
                lm,
                cfg,
                &tasks,
                1,
                DesktopConfig::of(cfg).eval_step_limit,
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
