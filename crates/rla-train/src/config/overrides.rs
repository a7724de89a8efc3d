//! `--set KEY=VALUE` overrides of the command line, and what a resumed run may be given.

use super::*;

/// One `--set KEY=VALUE` of the command line: a dotted key of the run config (`policy.lr`,
/// `household.train_step_limit`) and its value, read as TOML (`3`, `1e-4`, `true`, `"text"`,
/// `[1, 2]`, `{ project = "p" }`) or else as a string (`mode=full`). The key and the value are
/// checked as the config file's own would be.
#[derive(Debug, Clone, PartialEq)]
pub struct Override {
    /// The dotted key.
    pub key: String,
    /// The value.
    pub value: toml::Value,
}

impl Override {
    /// `seed = n`, as `--seed` gives it.
    pub fn seed(n: u64) -> Override {
        Override {
            key: "seed".into(),
            value: toml::Value::Integer(n as i64),
        }
    }

    /// The key's parts.
    pub fn path(&self) -> Vec<&str> {
        self.key.split('.').collect()
    }

    /// Sets the key in a config's table, making the tables on its way.
    pub fn apply(&self, t: &mut toml::Table) -> Result<(), String> {
        let parts = self.path();
        let (last, tables) = parts.split_last().expect("a key has a part");
        let mut at = t;
        for (i, part) in tables.iter().enumerate() {
            let v = at
                .entry(part.to_string())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            at = v.as_table_mut().ok_or_else(|| {
                format!(
                    "--set {}: `{}` is a value, not a table",
                    self.key,
                    parts[..=i].join(".")
                )
            })?;
        }
        at.insert(last.to_string(), self.value.clone());
        Ok(())
    }
}

impl std::str::FromStr for Override {
    type Err = String;

    fn from_str(s: &str) -> Result<Override, String> {
        let Some((key, raw)) = s.split_once('=') else {
            return Err(format!("--set {s}: write KEY=VALUE (say, policy.lr=1e-4)"));
        };
        let key = key.trim();
        if key.is_empty() || key.split('.').any(|p| p.trim().is_empty() || p != p.trim()) {
            return Err(format!(
                "--set {s}: `{key}` is not a key (dotted names: policy.lr)"
            ));
        }
        let raw = raw.trim();
        let value = toml::from_str::<toml::Table>(&format!("v = {raw}"))
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or_else(|| toml::Value::String(raw.to_string()));
        Ok(Override {
            key: key.to_string(),
            value,
        })
    }
}

/// What a resumed run may be given that differs from its recorded config: keys that only
/// extend it (more `iterations`) or change how it is tracked (`logging`).
pub fn extends_the_run(key: &str) -> bool {
    key == "iterations" || key == "logging" || key.starts_with("logging.")
}

/// Refuses overrides that would change a finished part of the run recorded in `recorded`: each
/// override's key must read the same in `recorded` and `next` (both as written to
/// `config.toml`), unless it only extends the run ([`extends_the_run`]); fewer `iterations` than
/// recorded are refused too.
pub fn check_resume_overrides(
    recorded: &RunConfig,
    next: &RunConfig,
    overrides: &[Override],
) -> Result<(), String> {
    let a = toml::Value::try_from(recorded).map_err(|e| e.to_string())?;
    let b = toml::Value::try_from(next).map_err(|e| e.to_string())?;
    let at = |v: &toml::Value, o: &Override| -> Option<toml::Value> {
        let mut v = v;
        for p in o.path() {
            v = v.get(p)?;
        }
        Some(v.clone())
    };
    for o in overrides {
        let (old, new) = (at(&a, o), at(&b, o));
        if o.key == "iterations" && next.iterations < recorded.iterations {
            return Err(format!(
                "--set iterations={}: the run was started with iterations = {}; a resumed run \
                 may only be given more",
                next.iterations, recorded.iterations
            ));
        }
        if old != new && !extends_the_run(&o.key) {
            let show = |v: Option<toml::Value>| v.map_or("(unset)".to_string(), |v| v.to_string());
            return Err(format!(
                "--set {}: the run was started with {} = {} and this would make it {}; a resumed \
                 run keeps its configuration (only iterations and logging may change): start a \
                 new run to change it",
                o.key,
                o.key,
                show(old),
                show(new)
            ));
        }
    }
    Ok(())
}
