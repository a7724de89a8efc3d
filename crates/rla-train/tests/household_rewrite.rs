//! The household's harder rewrite of a generated task is one of the rewrites that stay harder
//! (`rla_env::household::harder`) whenever one applies, whichever rewriter the config names.

use rla_core::adapt::Direction;
use rla_env::household::harder::{harder, searched_steps};
use rla_env::household::splits::train_tasks;
use rla_env::household::HouseTask;
use rla_lm::{Codec, LmError, Message, Request, Sample, Sampler};
use rla_train::config::{RewriterKind, RunConfig};
use rla_train::household::config::HouseholdConfig;
use rla_train::household::Household;
use rla_train::setting::{Ctx, Setting};

/// A reward model whose every answer names no goal, byte-level tokens.
struct NoGoal;

const ANSWER: &str = "I would rather not say.";

impl Codec for NoGoal {
    fn encode(&self, text: &str) -> rla_lm::Result<Vec<u32>> {
        Ok(text.bytes().map(u32::from).collect())
    }
    fn decode(&self, ids: &[u32]) -> rla_lm::Result<String> {
        Ok(ids.iter().map(|&i| char::from(i as u8)).collect())
    }
    fn eos_ids(&self) -> &[u32] {
        &[0]
    }
    fn chat_template(&self, _: &[Message], _: bool) -> rla_lm::Result<Option<String>> {
        Ok(None)
    }
}

impl Sampler for NoGoal {
    fn sample(&self, r: &Request) -> rla_lm::Result<Vec<Vec<Sample>>> {
        Ok(r.prompts
            .iter()
            .map(|_| {
                (0..r.n)
                    .map(|_| Sample {
                        tokens: ANSWER.bytes().map(u32::from).collect(),
                        logprobs: vec![-1.0; ANSWER.len()],
                        text: ANSWER.to_string(),
                        finish: rla_lm::Finish::Eos,
                    })
                    .collect()
            })
            .collect())
    }
    fn score(&self, _: &[(Vec<u32>, Vec<u32>)]) -> rla_lm::Result<Vec<Vec<f32>>> {
        Err(LmError::Unsupported("a rewriter is never scored".into()))
    }
}

#[test]
fn the_households_harder_rewrite_is_one_that_stays_harder_when_one_applies() {
    let cfg = RunConfig::default();
    let tasks = train_tasks(12, 5);
    for kind in [RewriterKind::Structured, RewriterKind::RewardModel] {
        let mut h = Household {
            cfg: HouseholdConfig {
                rewriter: kind,
                ..Default::default()
            },
        };
        let mut new_kinds = 0;
        for (i, t) in tasks.iter().enumerate() {
            let ctx = Ctx {
                cfg: &cfg,
                k: 3,
                progress: false,
                run: None,
            };
            let task = HouseTask::Generated(t.clone());
            let r = h
                .rewrite(ctx, &NoGoal, &task, Direction::Harder, None, i)
                .unwrap();
            // whether one applies does not hang on the seed: every candidate is tried
            if harder(t, 0, 3).is_none() {
                continue;
            }
            let (what, child) = r.unwrap_or_else(|| panic!("{kind:?}: no rewrite of {}", t.id));
            let HouseTask::Generated(child) = child else {
                panic!("a generated task's rewrite is generated")
            };
            assert!(
                ["escalate: ", "hide targets: ", "lookalike: "]
                    .iter()
                    .any(|p| what.starts_with(p)),
                "{kind:?}: {what}"
            );
            assert_eq!(child.parent.as_deref(), Some(t.id.as_str()));
            assert_eq!(child.id, format!("{}~3", t.id));
            assert!(searched_steps(&child).unwrap() > searched_steps(t).unwrap());
            new_kinds += 1;
        }
        assert!(new_kinds >= 6, "{kind:?}: {new_kinds}");
    }
}
