//! A base's recipe, machine-readable: `recipe.json` in the base's folder (beside `policy/`),
//! written by the pretrain (SFT on demonstrations) and by DAgger's rounds (demonstrations and
//! labels of the policy's own states at a share of each batch), so that the SFT control that
//! continues the base's own recipe ([`crate::control`]) reads how it was made.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The file's name, in a base's folder.
pub const FILE: &str = "recipe.json";

/// How a base's policy was last trained.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Recipe {
    /// The share of each SFT batch that was DAgger's labels of the policy's own states (0: SFT
    /// on demonstrations alone).
    pub label_share: f64,
    /// Training tasks a DAgger round played (0 without DAgger).
    pub dagger_tasks: usize,
    /// SFT steps a DAgger round took after labelling them (0 without DAgger).
    pub dagger_steps: usize,
    /// The learning rate of the last SFT step.
    pub last_lr: f64,
    /// Whether the policy's folder ships its optimiser's state (`optimizer.safetensors`).
    pub optimizer_state: bool,
    /// Where the figures come from (the step that wrote them, or the manifest they were read
    /// from).
    #[serde(default)]
    pub source: String,
}

impl Recipe {
    /// Checks that the figures can be trained from, naming the first that cannot.
    pub fn check(&self) -> std::result::Result<(), String> {
        if !(0.0..1.0).contains(&self.label_share) {
            return Err(format!(
                "label_share = {}: a share of each batch, at least 0 and below 1",
                self.label_share
            ));
        }
        if !(self.last_lr.is_finite() && self.last_lr > 0.0) {
            return Err(format!("last_lr = {}: a positive rate", self.last_lr));
        }
        if self.label_share > 0.0 && (self.dagger_tasks == 0 || self.dagger_steps == 0) {
            return Err(format!(
                "label_share = {} with dagger_tasks = {} and dagger_steps = {}: labels come from \
                 rounds of at least one task and one step",
                self.label_share, self.dagger_tasks, self.dagger_steps
            ));
        }
        Ok(())
    }

    /// The recipe's file for a policy's folder: `recipe.json` in the folder above it.
    pub fn path_for(policy: &Path) -> PathBuf {
        policy.parent().unwrap_or_else(|| Path::new(".")).join(FILE)
    }

    /// The recipe beside a policy's folder (`policy/../recipe.json`), checked; `None` where
    /// there is none.
    pub fn for_policy(policy: &Path) -> Result<Option<Recipe>> {
        let path = Self::path_for(policy);
        if !path.is_file() {
            return Ok(None);
        }
        let text = rla_core::file::read_to_string(&path)?;
        let r: Recipe = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a base's recipe", path.display()))?;
        r.check()
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        Ok(Some(r))
    }

    /// Writes the recipe into a base's folder `out`.
    pub fn write(&self, out: &Path) -> Result<()> {
        std::fs::create_dir_all(out)?;
        crate::run::write_atomic(&out.join(FILE), &serde_json::to_string_pretty(self)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recipe() -> Recipe {
        Recipe {
            label_share: 0.5,
            dagger_tasks: 1000,
            dagger_steps: 600,
            last_lr: 3e-4,
            optimizer_state: false,
            source: "dagger".into(),
        }
    }

    #[test]
    fn a_recipe_is_read_beside_its_policy_and_bad_figures_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let policy = dir.path().join("policy");
        assert_eq!(Recipe::for_policy(&policy).unwrap(), None);
        recipe().write(dir.path()).unwrap();
        assert_eq!(Recipe::for_policy(&policy).unwrap(), Some(recipe()));
        for (bad, says) in [
            (
                Recipe {
                    label_share: 1.0,
                    ..recipe()
                },
                "label_share = 1",
            ),
            (
                Recipe {
                    last_lr: 0.0,
                    ..recipe()
                },
                "last_lr = 0",
            ),
            (
                Recipe {
                    dagger_steps: 0,
                    ..recipe()
                },
                "dagger_steps = 0",
            ),
        ] {
            bad.write(dir.path()).unwrap();
            let e = Recipe::for_policy(&policy).unwrap_err();
            assert!(
                format!("{e:#}").contains(says) && format!("{e:#}").contains(FILE),
                "{e:#}"
            );
        }
        std::fs::write(dir.path().join(FILE), r#"{"label_share": 0.5}"#).unwrap();
        let e = Recipe::for_policy(&policy).unwrap_err();
        assert!(format!("{e:#}").contains("not a base's recipe"), "{e:#}");
    }

    /// The shipped household base records the recipe its manifest states.
    #[test]
    fn the_shipped_household_base_records_its_recipe() {
        let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models/household");
        let r = Recipe::for_policy(&base.join("policy")).unwrap().unwrap();
        assert_eq!((r.label_share, r.last_lr), (0.5, 3e-4));
        assert_eq!(
            r.optimizer_state,
            base.join("policy/optimizer.safetensors").is_file()
        );
        let manifest = std::fs::read_to_string(base.join("MANIFEST.md")).unwrap();
        assert!(manifest.contains("pretrain.dagger_label_share=0.5"));
        assert!(manifest.contains(&format!("dagger_tasks = {}", r.dagger_tasks)));
        assert!(manifest.contains(&format!("dagger_steps = {}", r.dagger_steps)));
    }
}
