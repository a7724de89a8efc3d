//! A setting's own table of the run config (`[household]`, `[coding]`, `[desktop]`), held
//! whichever setting it is; who rewrites its tasks; files standing in for its fixed splits.

use super::*;

/// A setting's table of the run config (`[household]`, `[coding]`, …): read from the table of
/// the setting's name, written back there, and checked by the setting itself.
pub trait SettingConfig:
    Serialize + DeserializeOwned + Default + Clone + PartialEq + Debug + Send + Sync + 'static
{
    /// Rejects impossible values of the table, naming them; `run` is the whole config and
    /// `active` whether the run trains in this setting (a table of another setting is checked
    /// on its own).
    fn validate(&self, run: &RunConfig, active: bool) -> Result<(), String> {
        let _ = (run, active);
        Ok(())
    }

    /// Makes the table's data paths usable from anywhere: relative ones are read from the config
    /// file's `folder`, `~` and `$VARIABLE`s expanded, and each made canonical ([`data_path`]).
    /// The run folder's copy of the config then records where the data was.
    fn resolve_paths(&mut self, folder: &Path) -> Result<(), String> {
        let _ = folder;
        Ok(())
    }

    /// The files and folders of data the table names, each with its dotted key
    /// (`household.train_games`): a run records a fingerprint of each when it starts and a
    /// resumed run refuses to go on when one changed ([`crate::sources`]).
    fn data_sources(&self) -> Vec<(String, PathBuf)> {
        Vec::new()
    }

    /// The run's table, which is this setting's ([`RunConfig::table`]).
    fn of(run: &RunConfig) -> &Self {
        run.table()
    }

    /// The run's table to change ([`RunConfig::table_mut`]).
    fn of_mut(run: &mut RunConfig) -> &mut Self {
        run.table_mut()
    }
}

/// The active setting's table, whichever setting it is ([`RunConfig::table`] reads it as its
/// own type).
pub struct SettingTable(pub(super) Box<dyn AnyTable>);

/// What [`SettingTable`] needs of a table it holds.
pub(super) trait AnyTable: Any + Debug + Send + Sync {
    fn clone_box(&self) -> Box<dyn AnyTable>;
    fn same(&self, other: &dyn AnyTable) -> bool;
    fn to_toml(&self) -> Result<toml::Value, String>;
    fn check(&self, run: &RunConfig, active: bool) -> Result<(), String>;
    fn resolve(&mut self, folder: &Path) -> Result<(), String>;
    fn sources(&self) -> Vec<(String, PathBuf)>;
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: SettingConfig> AnyTable for T {
    fn clone_box(&self) -> Box<dyn AnyTable> {
        Box::new(self.clone())
    }
    fn same(&self, other: &dyn AnyTable) -> bool {
        other.as_any().downcast_ref::<T>() == Some(self)
    }
    fn to_toml(&self) -> Result<toml::Value, String> {
        toml::Value::try_from(self).map_err(|e| e.to_string())
    }
    fn resolve(&mut self, folder: &Path) -> Result<(), String> {
        self.resolve_paths(folder)
    }
    fn sources(&self) -> Vec<(String, PathBuf)> {
        self.data_sources()
    }
    fn check(&self, run: &RunConfig, active: bool) -> Result<(), String> {
        self.validate(run, active)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// The table of a setting that has no keys.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoTable {}

impl SettingConfig for NoTable {}

impl SettingTable {
    /// Holds `table`.
    pub fn new<T: SettingConfig>(table: T) -> SettingTable {
        SettingTable(Box::new(table))
    }

    /// The table as `T`, if it is one.
    pub fn get<T: SettingConfig>(&self) -> Option<&T> {
        self.0.as_any().downcast_ref()
    }

    /// The table as TOML.
    pub fn to_toml(&self) -> Result<toml::Value, String> {
        self.0.to_toml()
    }

    /// Rejects impossible values of the table (see [`SettingConfig::validate`]).
    pub fn validate(&self, run: &RunConfig, active: bool) -> Result<(), String> {
        self.0.check(run, active)
    }

    /// The data files and folders the table names (see [`SettingConfig::data_sources`]).
    pub fn data_sources(&self) -> Vec<(String, PathBuf)> {
        self.0.sources()
    }
}

impl Default for SettingTable {
    fn default() -> Self {
        SettingTable::new(NoTable {})
    }
}

impl Clone for SettingTable {
    fn clone(&self) -> Self {
        SettingTable(self.0.clone_box())
    }
}

impl PartialEq for SettingTable {
    fn eq(&self, other: &Self) -> bool {
        self.0.same(&*other.0)
    }
}

impl Debug for SettingTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// Who rewrites a setting's tasks and summarises critiques (a setting's `rewriter` key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RewriterKind {
    /// The setting's structured rewriter (and, in the household, the phrase-count summariser).
    #[default]
    Structured,
    /// The reward model prompted as the reference prompts its environment model.
    RewardModel,
}

/// Files or folders standing in for a setting's fixed evaluation splits (a setting's
/// `eval_games`, `eval_problems`, …, read relative to the config's folder); a split not named keeps
/// the generated one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalSources {
    /// In place of the in-domain split.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_domain: Option<PathBuf>,
    /// In place of the OOD split.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ood: Option<PathBuf>,
    /// In place of the validation split.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<PathBuf>,
}

impl EvalSources {
    /// The file or folder standing in for `split`, if any.
    pub fn of(&self, split: rla_core::Split) -> Option<&Path> {
        use rla_core::Split;
        match split {
            Split::InDomain => self.in_domain.as_deref(),
            Split::Ood => self.ood.as_deref(),
            Split::Validation => self.validation.as_deref(),
            Split::Train => None,
        }
    }

    /// Whether no split is named.
    pub fn is_empty(&self) -> bool {
        self == &EvalSources::default()
    }

    /// The splits named, each with its dotted key under `key` (`household.eval_games` gives
    /// `household.eval_games.in_domain`, …).
    pub fn named(&self, key: &str) -> Vec<(String, PathBuf)> {
        [
            ("in_domain", &self.in_domain),
            ("ood", &self.ood),
            ("validation", &self.validation),
        ]
        .into_iter()
        .filter_map(|(split, p)| Some((format!("{key}.{split}"), p.clone()?)))
        .collect()
    }
}

/// A data path of a config as a run records it: canonical (links and `..` resolved) where it
/// exists, else made absolute from the working folder, so the run folder's copy of the config
/// names the same files from any working folder.
pub fn data_path(p: &Path) -> PathBuf {
    std::fs::canonicalize(p)
        .or_else(|_| std::path::absolute(p))
        .unwrap_or_else(|_| p.to_path_buf())
}
