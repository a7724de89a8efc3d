//! The coding setting's table of the run config (`[coding]`).

use crate::config::{RunConfig, SettingConfig};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Problem files standing in for the fixed evaluation splits (`[coding] eval_problems`: the
/// reference's LiveBench, or HumanEval); a split not named keeps the generated chains.
pub type EvalProblems = crate::config::EvalSources;

/// The coding setting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CodingConfig {
    /// Training problems have 1 to `max_ops` operations; the OOD split has `max_ops + 1`.
    pub max_ops: usize,
    /// Ground-truth tests per problem (at least 4, as the curator requires).
    pub tests: usize,
    /// Sandbox limits of each program run (a problem's own time limit lowers the wall clock's).
    pub limits: rla_env::code::sandbox::Limits,
    /// A problem file as the training pool (the reference's `CodeContests_train.json`,
    /// HumanEval's, MBPP's or the project's format) instead of the generated chains; read
    /// relative to the config's folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub train_problems: Option<PathBuf>,
    /// Problem files in place of the evaluation splits.
    #[serde(default, skip_serializing_if = "EvalProblems::is_empty")]
    pub eval_problems: EvalProblems,
    /// Training problems with fewer ground-truth tests are skipped (and counted in the log).
    pub min_tests: usize,
    /// Whether `full` runs rewrite problems. Generated chains are rewritten by changing their
    /// operations; a file's problems by the reward model, asked for a new statement with its
    /// tests (a rewrite whose tests do not parse, or that no policy program can run, is
    /// rejected). A tiny model cannot write problems: its configs say `rewrites = false`.
    pub rewrites: bool,
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
            train_problems: None,
            eval_problems: EvalProblems::default(),
            min_tests: 4,
            rewrites: true,
        }
    }
}

impl SettingConfig for CodingConfig {
    fn resolve_paths(&mut self, folder: &Path) -> Result<(), String> {
        for p in [
            &mut self.train_problems,
            &mut self.eval_problems.in_domain,
            &mut self.eval_problems.ood,
            &mut self.eval_problems.validation,
        ] {
            if let Some(given) = p.as_ref() {
                *p = Some(crate::config::data_path(&folder.join(given)));
            }
        }
        let files = [
            ("coding.train_problems", &self.train_problems),
            (
                "coding.eval_problems.in_domain",
                &self.eval_problems.in_domain,
            ),
            ("coding.eval_problems.ood", &self.eval_problems.ood),
            (
                "coding.eval_problems.validation",
                &self.eval_problems.validation,
            ),
        ];
        for (key, path) in files {
            let Some(p) = path.as_ref() else {
                continue;
            };
            if let Err(e) = rla_core::file::check_regular(p) {
                let why = if e.kind() == std::io::ErrorKind::NotFound {
                    "no such file".to_string()
                } else {
                    e.to_string()
                };
                return Err(format!(
                    "{key} = {:?}: {why} (a problem file in the reference's, HumanEval's, MBPP's or the project's format)",
                    p.display().to_string()
                ));
            }
        }
        Ok(())
    }

    fn data_sources(&self) -> Vec<(String, PathBuf)> {
        let mut v: Vec<(String, PathBuf)> = (self.train_problems.clone())
            .map(|p| ("coding.train_problems".to_string(), p))
            .into_iter()
            .collect();
        v.extend(self.eval_problems.named("coding.eval_problems"));
        v
    }

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
        if self.min_tests == 0 {
            return Err("coding.min_tests = 0: a training problem needs at least one test".into());
        }
        let most = rla_env::code::problems::MAX_TESTS;
        crate::config::at_most("coding.tests", self.tests, most)?;
        crate::config::at_most("coding.min_tests", self.min_tests, most)?;
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
