//! The coding setting's table of the run config (`[coding]`).

use crate::config::{RunConfig, SettingConfig};
use serde::{Deserialize, Serialize};

/// The coding setting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CodingConfig {
    /// Training problems have 1 to `max_ops` operations; the OOD split has `max_ops + 1`.
    pub max_ops: usize,
    /// Ground-truth tests per problem (at least 4, as the curator requires).
    pub tests: usize,
    /// Sandbox limits of each program run.
    pub limits: rla_env::code::sandbox::Limits,
}

impl Default for CodingConfig {
    fn default() -> Self {
        CodingConfig {
            max_ops: 3,
            tests: 6,
            limits: rla_env::code::sandbox::Limits {
                wall_secs: 5.0,
                cpu_secs: 4,
                ..Default::default()
            },
        }
    }
}

impl SettingConfig for CodingConfig {
    fn validate(&self, run: &RunConfig, active: bool) -> Result<(), String> {
        if self.tests < 4 {
            return Err(format!(
                "coding.tests = {}: a problem needs at least 4 ground-truth tests",
                self.tests
            ));
        }
        if !(2..=5).contains(&self.max_ops) {
            return Err(format!(
                "coding.max_ops = {}: must lie in 2..=5 (the chains of one operation are all \
                 among the evaluated problems, which training problems never repeat)",
                self.max_ops
            ));
        }
        self.limits
            .validate()
            .map_err(|e| format!("coding.limits: {e}"))?;
        if active && run.pretrain.dagger_rounds > 0 {
            return Err(
                "pretrain.dagger_rounds: the coding setting's coder has no expert to label \
                 its own programs' states (DAgger is the household's and the desktop's)"
                    .into(),
            );
        }
        Ok(())
    }
}
