//! The one place that builds a setting from the configuration. Everything else is generic over
//! [`Setting`]: a caller states what to do with a setting as a [`WithSetting`] and gets it done
//! with the run's.

use crate::config::{RunConfig, SettingName};
use crate::setting::{Setting, WarmStart};
use anyhow::Result;
use rla_lm::Backend;
use std::path::Path;

/// Something to do with a setting, whichever it is.
pub trait WithSetting {
    /// What it gives.
    type Output;
    /// Does it with `setting`.
    fn with<S: Setting>(self, setting: S) -> Result<Self::Output>;
}

/// Does `w` with the setting the config names.
pub fn with_setting<W: WithSetting>(cfg: &RunConfig, w: W) -> Result<W::Output> {
    match cfg.setting {
        SettingName::Household => w.with(crate::household::Household),
        SettingName::Coding => w.with(crate::coding::Coding::default()),
        SettingName::Desktop => w.with(crate::desktop::Gui),
    }
}

/// Warm-starts the run's tiny models into `out/policy` and `out/reward`.
pub fn warm_start(
    backend: &dyn Backend,
    cfg: &RunConfig,
    out: &Path,
    progress: bool,
) -> Result<Vec<String>> {
    struct W<'a>(WarmStart<'a>);
    impl WithSetting for W<'_> {
        type Output = Vec<String>;
        fn with<S: Setting>(self, s: S) -> Result<Vec<String>> {
            s.warm_start(self.0)
        }
    }
    let w = WarmStart {
        backend,
        cfg,
        out,
        progress,
    };
    with_setting(cfg, W(w))
}

/// Starts (or with `resume`, continues) the run in `dir` and trains it to its last iteration.
pub fn train(
    backend: &'static dyn Backend,
    cfg: RunConfig,
    dir: &Path,
    resume: bool,
    progress: bool,
) -> Result<()> {
    struct T<'a>(&'static dyn Backend, RunConfig, &'a Path, bool, bool);
    impl WithSetting for T<'_> {
        type Output = ();
        fn with<S: Setting>(self, s: S) -> Result<()> {
            let mut t = crate::open::open(self.0, s, self.1, self.2, self.3, self.4)?;
            t.run()
        }
    }
    let c = cfg.clone();
    with_setting(&c, T(backend, cfg, dir, resume, progress))
}

/// The names of the ablation table's two judge-quality columns in the run's setting.
pub fn judge_columns(cfg: &RunConfig) -> Result<(&'static str, &'static str)> {
    struct J;
    impl WithSetting for J {
        type Output = (&'static str, &'static str);
        fn with<S: Setting>(self, s: S) -> Result<Self::Output> {
            Ok(s.judge_columns())
        }
    }
    with_setting(cfg, J)
}
