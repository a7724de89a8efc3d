//! The household's table of the run config (`[household]`).

use crate::config::{RunConfig, SettingConfig};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub use crate::config::RewriterKind;

/// Game folders standing in for the fixed evaluation splits (`[household] eval_games`: in-domain
/// as ALFWorld's `valid_seen`, OOD as its `valid_unseen`); a split not named keeps the generated
/// one.
pub type EvalGames = crate::config::EvalSources;

/// The most steps an episode may be given (ALFWorld's episodes have 50), and the longest history
/// window and loop the table may name.
pub const MAX_STEP_LIMIT: usize = 1_000;

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
    /// How much the notes write out: `"full"` (every unseen place, every object seen) or
    /// `"compact"` (unseen places of a kind as number ranges, only objects of the classes the
    /// task names; about half the prompt in ALFRED's rooms). Needs `notes`.
    pub notes_style: super::notes::NotesStyle,
    /// Give the judge the agent's notes too, above the step it judges (needs `notes`): whether a
    /// step searched a new place or went back to a known one shows only there.
    pub judge_notes: bool,
    /// Who rewrites tasks and summarises critiques.
    pub rewriter: RewriterKind,
    /// Reward every step with its label (+1 good, −1 not; the label an agent could know, the
    /// searching expert's: `rla_env::household::expert::knowable_label`) in place of the
    /// judge's verdicts: what the integrated reward gives with a judge that is always right. A
    /// diagnostic of the step reward's ceiling; the judge still judges and its accuracy is still
    /// measured, but its agreeing samples give it no consistency reward to learn from.
    pub oracle_verdicts: bool,
    /// Train on game folders in ALFWorld's layout (found recursively under this folder, as
    /// `$ALFWORLD_DATA/json_2.1.1/train`) in place of generated tasks: the pool draws
    /// `pool_size` of them (seeded). `~` and `$VARIABLE`s are expanded; a relative path is read
    /// from the config's folder.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub train_games: Option<PathBuf>,
    /// Game folders in place of the fixed evaluation splits (`{ in_domain = "…", ood = "…",
    /// validation = "…" }`); `[eval]`'s counts take the first games of each, in path order.
    pub eval_games: EvalGames,
    /// A game folder that does not load, or whose `traj_data.json` disagrees with its game, is
    /// left out and counted (printed at the start) instead of stopping the run.
    pub skip_bad_games: bool,
    /// A training episode whose last `train_end_loops` actions repeat one action or alternate
    /// between two ends there, lost, instead of playing its loop to the step limit (0: never;
    /// else at least 2). Its steps until then are trained on as usual; evaluation episodes
    /// always play on.
    pub train_end_loops: usize,
    /// Generated training tasks (the pool, a warm start's demonstrations, DAgger's rounds) hold
    /// a share of their floor plan's other object classes, drawn for each task uniformly
    /// between this and 1 (`rla_env::household::splits::train_tasks_sparse`): ALFWorld's own
    /// games hold about half the objects of ALFRED's full scenes. 1: every class, as the
    /// evaluation splits do.
    pub train_object_share: f64,
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
            notes_style: super::notes::NotesStyle::Full,
            judge_notes: false,
            rewriter: RewriterKind::Structured,
            oracle_verdicts: false,
            train_games: None,
            eval_games: EvalGames::default(),
            skip_bad_games: false,
            train_end_loops: 0,
            train_object_share: 1.0,
        }
    }
}

impl SettingConfig for HouseholdConfig {
    fn resolve_paths(&mut self, folder: &Path) -> Result<(), String> {
        let resolve = |key: &str, p: &mut Option<PathBuf>| -> Result<(), String> {
            let Some(given) = p.as_ref() else {
                return Ok(());
            };
            let text = given.to_string_lossy().into_owned();
            let mut path = rla_env::household::source::expand_path(&text).map_err(|e| {
                if text.contains("ALFWORLD_DATA") && std::env::var_os("ALFWORLD_DATA").is_none() {
                    format!(
                        "household.{key} = {text:?}: ALFWORLD_DATA is not set. Point it at ALFWorld's data (`alfworld-download` writes json_2.1.1/train, valid_seen and valid_unseen), or at a stand-in in the same layout: `rlanything env generate --alfworld-data DIR` then ALFWORLD_DATA=DIR"
                    )
                } else {
                    format!("household.{key}: {e}")
                }
            })?;
            if path.is_relative() {
                path = folder.join(path);
            }
            *p = Some(crate::config::data_path(&path));
            Ok(())
        };
        resolve("train_games", &mut self.train_games)?;
        resolve("eval_games.in_domain", &mut self.eval_games.in_domain)?;
        resolve("eval_games.ood", &mut self.eval_games.ood)?;
        resolve("eval_games.validation", &mut self.eval_games.validation)?;
        Ok(())
    }

    fn data_sources(&self) -> Vec<(String, PathBuf)> {
        let mut v: Vec<(String, PathBuf)> = (self.train_games.clone())
            .map(|p| ("household.train_games".to_string(), p))
            .into_iter()
            .collect();
        v.extend(self.eval_games.named("household.eval_games"));
        v
    }

    fn validate(&self, run: &RunConfig, active: bool) -> Result<(), String> {
        if self.prompt_style == super::PromptStyle::Unlisted && !self.constrain_actions {
            return Err(
                "household.prompt_style = \"unlisted\" needs household.constrain_actions = true (the constraint carries the admissible commands)".into(),
            );
        }
        if self.notes_style != super::notes::NotesStyle::Full && !self.notes {
            return Err(
                "household.notes_style = \"compact\" needs household.notes = true (it shapes the notes)".into(),
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
        for (name, v) in [
            ("household.train_step_limit", self.train_step_limit),
            ("household.eval_step_limit", self.eval_step_limit),
            ("household.history_window", self.history_window),
            ("household.train_end_loops", self.train_end_loops),
        ] {
            crate::config::at_most(name, v, MAX_STEP_LIMIT)?;
        }
        if !(self.train_object_share > 0.0 && self.train_object_share <= 1.0) {
            return Err(format!(
                "household.train_object_share = {}: a share of the object classes, above 0 and at most 1",
                self.train_object_share
            ));
        }
        if self.train_end_loops == 1 {
            return Err(
                "household.train_end_loops = 1: a loop shows in at least 2 actions (0 turns it off)"
                    .into(),
            );
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

    #[test]
    fn a_loop_needs_two_actions() {
        let run = RunConfig::default();
        for (n, ok) in [(0, true), (1, false), (2, true), (6, true)] {
            let h = HouseholdConfig {
                train_end_loops: n,
                ..Default::default()
            };
            assert_eq!(h.validate(&run, true).is_ok(), ok, "{n}");
        }
    }

    #[test]
    fn the_object_share_is_a_share_and_thins_the_pool() {
        use crate::setting::Setting;
        let run = RunConfig::default();
        for (v, ok) in [
            (0.0, false),
            (-0.5, false),
            (0.3, true),
            (1.0, true),
            (1.5, false),
        ] {
            let h = HouseholdConfig {
                train_object_share: v,
                ..Default::default()
            };
            let r = h.validate(&run, true);
            assert_eq!(r.is_ok(), ok, "{v}: {r:?}");
            if !ok {
                assert!(r.unwrap_err().contains("household.train_object_share"));
            }
        }
        // the pool's tasks thinned, the same tasks otherwise
        let mut cfg = RunConfig::with_table("household", HouseholdConfig::default());
        cfg.pool_size = 24;
        let pool = |cfg: &RunConfig| -> Vec<rla_env::household::TaskSpec> {
            crate::household::Household {
                cfg: HouseholdConfig::of(cfg).clone(),
            }
            .initial_pool(cfg)
            .unwrap()
            .into_iter()
            .filter_map(|t| match t {
                rla_env::household::HouseTask::Generated(t) => Some(t),
                _ => None,
            })
            .collect()
        };
        let full = pool(&cfg);
        HouseholdConfig::of_mut(&mut cfg).train_object_share = 0.3;
        let thin = pool(&cfg);
        assert_eq!(full.len(), 24);
        assert_eq!(thin.len(), 24);
        let sum =
            |ts: &[rla_env::household::TaskSpec]| ts.iter().map(|t| t.distractors).sum::<usize>();
        assert!(sum(&thin) < sum(&full));
        for (a, b) in thin.iter().zip(&full) {
            assert_eq!((&a.id, a.scene_seed), (&b.id, b.scene_seed));
        }
    }
}
