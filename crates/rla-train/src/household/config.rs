//! The household's table of the run config (`[household]`).

use crate::config::{RunConfig, SettingConfig};
use serde::{Deserialize, Serialize};

/// Who rewrites tasks and summarises critiques.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RewriterKind {
    /// The household's structured rewriter and the phrase-count summariser.
    #[default]
    Structured,
    /// The reward model prompted as the reference prompts its environment model.
    RewardModel,
}

/// The household setting (`[household]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HouseholdConfig {
    /// Step limit in training.
    pub train_step_limit: usize,
    /// Step limit in evaluation.
    pub eval_step_limit: usize,
    /// Past (observation, action) pairs shown to the policy.
    pub history_window: usize,
    /// How the policy's prompt lists the admissible commands.
    pub prompt_style: crate::household::PromptStyle,
    /// Draw the policy's answer only among the admissible answers (constrained decoding over a
    /// token trie of `\boxed{command}` strings): every step is then a legal move, which tiny
    /// models need; real models answer freely with reasoning.
    pub constrain_actions: bool,
    /// Give the policy the agent's notes (see [`super::notes`]): the places it has not looked
    /// into, what it saw in the others, what it holds and has done, kept from the game's text.
    /// With a short history window this is its memory of the episode.
    pub notes: bool,
    /// Give the judge the agent's notes too, above the step it judges (needs `notes`): whether a
    /// step searched a new place or went back to a known one shows only there.
    pub judge_notes: bool,
    /// Who rewrites tasks and summarises critiques.
    pub rewriter: RewriterKind,
    /// Reward every step with the oracle's progress label (+1 progress, −1 none) in place of the
    /// judge's verdicts: what the integrated reward gives with a judge that is always right. A
    /// diagnostic of the step reward's ceiling; the judge still judges and its accuracy is still
    /// measured, but its agreeing samples give it no consistency reward to learn from.
    pub oracle_verdicts: bool,
}

impl Default for HouseholdConfig {
    fn default() -> Self {
        HouseholdConfig {
            train_step_limit: 40,
            eval_step_limit: 60,
            history_window: 2,
            prompt_style: crate::household::PromptStyle::Numbered,
            constrain_actions: false,
            notes: false,
            judge_notes: false,
            rewriter: RewriterKind::Structured,
            oracle_verdicts: false,
        }
    }
}

impl SettingConfig for HouseholdConfig {
    fn validate(&self, run: &RunConfig, active: bool) -> Result<(), String> {
        if self.prompt_style == super::PromptStyle::Unlisted && !self.constrain_actions {
            return Err(
                "household.prompt_style = \"unlisted\" needs household.constrain_actions = true (the constraint carries the admissible commands)".into(),
            );
        }
        if self.judge_notes && !self.notes {
            return Err("household.judge_notes = true needs household.notes = true".into());
        }
        for (name, v) in [
            ("household.train_step_limit", self.train_step_limit),
            ("household.eval_step_limit", self.eval_step_limit),
        ] {
            if v == 0 {
                return Err(format!("{name} must be at least 1"));
            }
        }
        let val = rla_env::household::splits::VALIDATION_SIZE;
        if active && run.pretrain.validation > val {
            return Err(format!(
                "pretrain.validation = {}: the validation split holds {val} tasks",
                run.pretrain.validation
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_judge_reads_notes_only_where_the_policy_keeps_them() {
        let mut h = HouseholdConfig {
            judge_notes: true,
            ..Default::default()
        };
        let run = RunConfig::default();
        assert!(h
            .validate(&run, true)
            .unwrap_err()
            .contains("household.notes = true"));
        h.notes = true;
        h.validate(&run, true).unwrap();
    }
}
