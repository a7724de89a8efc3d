//! The one list of settings. Each entry is a [`Registered`] setting: its name (which is also
//! its table's in the config), its table's type, and its constructor. The built-in settings are
//! listed once, in [`builtins`]; a program of its own adds one with [`register`], the same call.
//!
//! A config names its setting (`setting = "…"`, the household by default); reading it parses the
//! shared keys, that setting's table, and any other setting's table (checked on its own, then
//! dropped: a run keeps only its setting's). Everything that depends on which setting runs goes
//! through [`setting`], which builds it from the config as an [`AnySetting`].

use crate::config::{RunConfig, SettingTable};
use crate::setting::{Ctx, EvalEpisode, Example, Registered, Setting, Split, WarmStart};
use anyhow::Result;
use rla_lm::{Backend, Sampler};
use serde::{Deserialize, Deserializer};
use std::path::Path;
use std::sync::{LazyLock, RwLock};

/// The built-in settings, the first the default.
fn builtins() -> Vec<Entry> {
    vec![
        Entry::of::<crate::household::Household>(),
        Entry::of::<crate::coding::Coding>(),
        Entry::of::<crate::desktop::Desktop>(),
    ]
}

/// Adds a setting to the registry (a setting of the same name is replaced), so that configs may
/// name it and every command trains, evaluates and warm-starts it.
pub fn register<S: Registered>() {
    let mut r = REGISTRY.write().unwrap_or_else(|e| e.into_inner());
    let e = Entry::of::<S>();
    match r.iter_mut().find(|x| x.name == e.name) {
        Some(x) => *x = e,
        None => r.push(e),
    }
}

/// The names of the registered settings, the default first.
pub fn names() -> Vec<&'static str> {
    entries().iter().map(|e| e.name).collect()
}

/// The setting the config names, built from its table.
pub fn setting(cfg: &RunConfig) -> Result<Box<dyn AnySetting>> {
    let r = entries();
    let e = find(&r, &cfg.setting).map_err(anyhow::Error::msg)?;
    (e.build)(cfg)
}

/// A registered setting, whichever it is: what the commands do with it, written once.
pub trait AnySetting {
    /// Its name.
    fn name(&self) -> &'static str;
    /// How many tasks a fixed evaluation split holds ([`Setting::split_size`]).
    fn split_size(&self, split: Split) -> Option<usize>;
    /// Greedy success of `policy` on the first `n` tasks of `split` ([`Setting::evaluate`]).
    fn evaluate(&mut self, ctx: Ctx, policy: &dyn Sampler, split: Split, n: usize) -> Result<f64>;
    /// The same, episode by episode with each task's kind ([`Setting::evaluate_episodes`]).
    fn evaluate_episodes(
        &mut self,
        ctx: Ctx,
        policy: &dyn Sampler,
        split: Split,
        n: usize,
    ) -> Result<Option<Vec<EvalEpisode>>>;
    /// Each task's sampled episode scores ([`Setting::evaluate_sampled`]).
    fn evaluate_sampled(
        &mut self,
        ctx: Ctx,
        policy: &dyn Sampler,
        split: Split,
        n: usize,
        sampling: crate::setting::Sampling,
    ) -> Result<Option<Vec<Vec<f64>>>>;
    /// Expert demonstrations for the SFT control ([`Setting::demonstrations`]).
    fn demonstrations(&self, cfg: &RunConfig, chunk: u64) -> Result<Vec<Example>>;
    /// DAgger's labels of the policy's own states for the SFT control
    /// ([`Setting::own_state_labels`]).
    fn own_state_labels(
        &self,
        cfg: &RunConfig,
        policy: &dyn Sampler,
        chunk: u64,
        tasks: usize,
    ) -> Result<Vec<Example>>;
    /// Files recorded beside the policy in every checkpoint ([`Setting::policy_files`]).
    fn policy_files(&self, cfg: &RunConfig) -> Result<Vec<(String, String)>>;
    /// The names of the ablation table's two judge-quality columns.
    fn judge_columns(&self) -> (&'static str, &'static str);
    /// The setting's own evaluations beyond the splits ([`Setting::extra_evaluations`]).
    fn extra_evaluations(
        &self,
        cfg: &RunConfig,
        data: &Path,
    ) -> Result<Vec<Box<dyn crate::setting::ExtraEvaluation>>>;
    /// How a rewrite is checked before it is proposed ([`Setting::rewrite_check`]).
    fn rewrite_check(&self) -> Option<&'static str>;
    /// Warm-starts the run's tiny models ([`Setting::warm_start`]).
    fn warm_start(&self, w: WarmStart) -> Result<Vec<String>>;
    /// Starts (or with `resume`, continues) the run in `dir` and trains it to its last
    /// iteration.
    fn train(
        self: Box<Self>,
        backend: &'static dyn Backend,
        cfg: RunConfig,
        dir: &Path,
        resume: bool,
        progress: bool,
    ) -> Result<()>;
}

impl<S: Registered> AnySetting for S {
    fn name(&self) -> &'static str {
        Setting::name(self)
    }
    fn rewrite_check(&self) -> Option<&'static str> {
        Setting::rewrite_check(self)
    }
    fn split_size(&self, split: Split) -> Option<usize> {
        Setting::split_size(self, split)
    }
    fn evaluate(&mut self, ctx: Ctx, policy: &dyn Sampler, split: Split, n: usize) -> Result<f64> {
        Setting::evaluate(self, ctx, policy, split, n)
    }
    fn evaluate_episodes(
        &mut self,
        ctx: Ctx,
        policy: &dyn Sampler,
        split: Split,
        n: usize,
    ) -> Result<Option<Vec<EvalEpisode>>> {
        Setting::evaluate_episodes(self, ctx, policy, split, n)
    }
    fn evaluate_sampled(
        &mut self,
        ctx: Ctx,
        policy: &dyn Sampler,
        split: Split,
        n: usize,
        sampling: crate::setting::Sampling,
    ) -> Result<Option<Vec<Vec<f64>>>> {
        Setting::evaluate_sampled(self, ctx, policy, split, n, sampling)
    }
    fn demonstrations(&self, cfg: &RunConfig, chunk: u64) -> Result<Vec<Example>> {
        Setting::demonstrations(self, cfg, chunk)
    }
    fn own_state_labels(
        &self,
        cfg: &RunConfig,
        policy: &dyn Sampler,
        chunk: u64,
        tasks: usize,
    ) -> Result<Vec<Example>> {
        Setting::own_state_labels(self, cfg, policy, chunk, tasks)
    }
    fn policy_files(&self, cfg: &RunConfig) -> Result<Vec<(String, String)>> {
        Setting::policy_files(self, cfg)
    }
    fn judge_columns(&self) -> (&'static str, &'static str) {
        Setting::judge_columns(self)
    }
    fn extra_evaluations(
        &self,
        cfg: &RunConfig,
        data: &Path,
    ) -> Result<Vec<Box<dyn crate::setting::ExtraEvaluation>>> {
        Setting::extra_evaluations(self, cfg, data)
    }
    fn warm_start(&self, w: WarmStart) -> Result<Vec<String>> {
        Setting::warm_start(self, w)
    }
    fn train(
        self: Box<Self>,
        backend: &'static dyn Backend,
        cfg: RunConfig,
        dir: &Path,
        resume: bool,
        progress: bool,
    ) -> Result<()> {
        crate::open::open(backend, *self, cfg, dir, resume, progress)?.run()
    }
}

/// What the registry keeps of a setting.
struct Entry {
    name: &'static str,
    /// Its table read from TOML.
    parse: fn(toml::Value) -> Result<SettingTable, String>,
    /// Its table's defaults.
    default: fn() -> SettingTable,
    /// The setting built from a config whose table is its own.
    build: fn(&RunConfig) -> Result<Box<dyn AnySetting>>,
}

impl Entry {
    fn of<S: Registered>() -> Entry {
        Entry {
            name: S::NAME,
            parse: |v| {
                S::Config::deserialize(v)
                    .map(SettingTable::new)
                    .map_err(|e| format!("[{}] {}", S::NAME, e.message()))
            },
            default: || SettingTable::new(S::Config::default()),
            build: |cfg| {
                let table = cfg.table.get::<S::Config>().ok_or_else(|| {
                    anyhow::anyhow!("the config's table is not the {} setting's", S::NAME)
                })?;
                Ok(Box::new(S::new(table.clone())))
            },
        }
    }
}

static REGISTRY: LazyLock<RwLock<Vec<Entry>>> = LazyLock::new(|| RwLock::new(builtins()));

fn entries() -> std::sync::RwLockReadGuard<'static, Vec<Entry>> {
    REGISTRY.read().unwrap_or_else(|e| e.into_inner())
}

fn find<'a>(r: &'a [Entry], name: &str) -> Result<&'a Entry, String> {
    r.iter().find(|e| e.name == name).ok_or_else(|| {
        let names: Vec<&str> = r.iter().map(|e| e.name).collect();
        format!(
            "setting = \"{name}\": no such setting (the settings are {})",
            names.join(", ")
        )
    })
}

impl Default for RunConfig {
    /// The default setting's run.
    fn default() -> Self {
        let r = entries();
        let mut cfg = RunConfig::with_table(r[0].name, crate::config::NoTable {});
        cfg.table = (r[0].default)();
        cfg
    }
}

impl<'de> Deserialize<'de> for RunConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let t = toml::Table::deserialize(d)?;
        read(t).map_err(serde::de::Error::custom)
    }
}

/// A config from its TOML table: the shared keys, the named setting's table, and every other
/// setting's table checked on its own.
fn read(mut t: toml::Table) -> Result<RunConfig, String> {
    let r = entries();
    let name = match t.get("setting") {
        None => r[0].name.to_string(),
        Some(toml::Value::String(s)) => s.clone(),
        Some(v) => return Err(format!("setting = {v}: a setting's name in quotes")),
    };
    let active = find(&r, &name)?;
    let mut tables = vec![];
    for e in r.iter() {
        if let Some(v) = t.remove(e.name) {
            tables.push((e, v));
        }
    }
    // a setting's key at the top names the table it belongs in
    let shared = toml::Value::try_from(Shared(&RunConfig::with_table(
        "",
        crate::config::NoTable {},
    )))
    .map_err(|e| e.to_string())?;
    for k in t.keys() {
        if shared.get(k).is_some() {
            continue;
        }
        for e in r.iter() {
            if let Ok(toml::Value::Table(d)) = (e.default)().to_toml() {
                if d.contains_key(k) {
                    return Err(format!(
                        "`{k}` is a {0} setting: put it in the [{0}] table",
                        e.name
                    ));
                }
            }
        }
    }
    let mut cfg = RunConfig::deserialize(toml::Value::Table(t)).map_err(|e| e.to_string())?;
    cfg.setting = name;
    cfg.table = (active.default)();
    for (e, v) in tables {
        let table = (e.parse)(v)?;
        if std::ptr::eq(e, active) {
            cfg.table = table;
        } else {
            table.validate(&cfg, false)?;
        }
    }
    Ok(cfg)
}

/// The shared keys alone, as TOML.
struct Shared<'a>(&'a RunConfig);

impl serde::Serialize for Shared<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        RunConfig::serialize(self.0, s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SettingConfig;
    use crate::desktop::config::DesktopConfig;
    use crate::household::config::HouseholdConfig;

    #[test]
    fn a_config_keeps_its_settings_table_and_reads_back_as_it_was_written() {
        let cfg: RunConfig = toml::from_str(
            "setting = \"desktop\"\n[desktop]\nhistory = 5\n[household]\nnotes = true\n",
        )
        .unwrap();
        assert_eq!(cfg.setting, "desktop");
        assert_eq!(DesktopConfig::of(&cfg).history, 5);
        let text = toml::to_string_pretty(&cfg).unwrap();
        assert!(
            text.contains("[desktop]") && !text.contains("[household]"),
            "{text}"
        );
        let back: RunConfig = toml::from_str(&text).unwrap();
        assert_eq!(back, cfg);
        // the default is the household's, with its table's defaults
        let d = RunConfig::default();
        assert_eq!(d.setting, "household");
        assert_eq!(HouseholdConfig::of(&d), &HouseholdConfig::default());
    }

    #[test]
    fn a_run_folder_written_with_every_settings_table_still_reads() {
        // run folders saved before a run kept only its own table held all three
        let text = "seed = 3\nsetting = \"household\"\n[household]\nhistory_window = 4\n\
                    [coding]\nmax_ops = 3\n[desktop]\nhistory = 3\n";
        let cfg: RunConfig = toml::from_str(text).unwrap();
        assert_eq!(HouseholdConfig::of(&cfg).history_window, 4);
        let mut fresh = RunConfig {
            seed: 3,
            ..Default::default()
        };
        HouseholdConfig::of_mut(&mut fresh).history_window = 4;
        assert_eq!(cfg, fresh);
    }

    #[test]
    fn another_settings_table_is_checked_and_a_settings_key_at_the_top_is_named() {
        let e = toml::from_str::<RunConfig>("[coding]\ntests = 2\n").unwrap_err();
        assert!(e.to_string().contains("coding.tests"), "{e}");
        let e = toml::from_str::<RunConfig>("[desktop]\nhistry = 2\n").unwrap_err();
        assert!(e.to_string().contains("histry"), "{e}");
        let e = toml::from_str::<RunConfig>("history_window = 2\n").unwrap_err();
        assert!(e.to_string().contains("[household] table"), "{e}");
        let e = toml::from_str::<RunConfig>("setting = \"gui\"\n").unwrap_err();
        assert!(e.to_string().contains("household, coding, desktop"), "{e}");
    }
}
