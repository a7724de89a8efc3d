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
    /// `seed = n`, as `--seed` gives it; a seed past what a config's integers hold (2^63 − 1) is
    /// an error naming it.
    pub fn seed(n: u64) -> Result<Override, String> {
        let value = i64::try_from(n).map_err(|_| {
            format!(
                "--seed {n}: at most {} (a config's integers are signed 64-bit)",
                i64::MAX
            )
        })?;
        Ok(Override {
            key: "seed".into(),
            value: toml::Value::Integer(value),
        })
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
        let bare = |p: &str| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        };
        if key.is_empty() || !key.split('.').all(bare) {
            return Err(format!(
                "--set {}: `{}` is not a key (dotted names: policy.lr)",
                s.escape_debug(),
                key.escape_debug()
            ));
        }
        if raw.contains(['\n', '\r']) {
            return Err(format!(
                "--set {}: the value holds a line break; give one value a --set (repeat --set for \
                 more keys)",
                s.escape_debug()
            ));
        }
        let raw = raw.trim();
        let value = match toml::from_str::<toml::Table>(&format!("v = {raw}"))
            .ok()
            .and_then(|mut t| t.remove("v"))
        {
            // `1e9` is a count as the command line writes one: a whole number reads as an
            // integer (a float key reads it back as the same number)
            Some(toml::Value::Float(x)) if x.fract() == 0.0 && x.abs() <= (1u64 << 53) as f64 => {
                toml::Value::Integer(x as i64)
            }
            Some(v) => v,
            None => toml::Value::String(raw.to_string()),
        };
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(sets: &[&str]) -> Result<RunConfig, String> {
        let ov: Vec<Override> = sets
            .iter()
            .map(|s| s.parse())
            .collect::<Result<_, String>>()?;
        RunConfig::parse_in_with("", Path::new("."), &ov).map_err(|e| e.to_string())
    }

    #[test]
    fn a_value_holding_a_line_break_is_refused() {
        let e = "policy.lr=1e-4\nlambda=0.5"
            .parse::<Override>()
            .unwrap_err();
        assert!(e.contains("line break"), "{e}");
        assert!("policy.lr=1e-4\r".parse::<Override>().is_err());
        let e = "policy\nx.lr=1".parse::<Override>().unwrap_err();
        assert!(e.contains("is not a key"), "{e}");
    }

    #[test]
    fn a_seed_past_a_configs_integers_is_refused_as_given() {
        let e = Override::seed(u64::MAX).unwrap_err();
        assert!(e.contains("--seed 18446744073709551615"), "{e}");
        let top = Override::seed(i64::MAX as u64).unwrap();
        assert_eq!(
            RunConfig::parse_in_with("", Path::new("."), &[top])
                .unwrap()
                .seed,
            i64::MAX as u64
        );
    }

    #[test]
    fn every_count_is_bounded_and_named() {
        for (set, named) in [
            (
                "policy.max_new_tokens=1e9",
                "policy.max_new_tokens = 1000000000",
            ),
            ("reward.max_new_tokens=1000000000", "reward.max_new_tokens"),
            ("update_epochs=1e9", "update_epochs = 1000000000"),
            ("iterations=1e12", "iterations"),
            ("policy.micro_batch=1e9", "policy.micro_batch"),
            ("pretrain.policy_steps=1e12", "pretrain.policy_steps"),
            ("pretrain.batch=1e9", "pretrain.batch"),
            ("pretrain.dagger_rounds=1e9", "pretrain.dagger_rounds"),
            ("eval.every=1e12", "eval.every"),
            (
                "household.train_step_limit=1e12",
                "household.train_step_limit = 1000000000000",
            ),
            ("household.history_window=1e9", "household.history_window"),
            ("policy.tiny.hidden_size=1e9", "hidden_size"),
            ("policy.lora={r = 1000000000}", "policy.lora.r"),
        ] {
            let e = parsed(&[set]).unwrap_err();
            assert!(e.contains(named) && e.contains("at most"), "{set}: {e}");
        }
        // a whole number written as a float is the number
        assert_eq!(
            parsed(&["policy.max_new_tokens=1e3"])
                .unwrap()
                .policy
                .max_new_tokens,
            1000
        );
        assert_eq!(parsed(&["lambda=1e0"]).unwrap().lambda, 1.0);
    }

    #[test]
    fn a_band_given_one_key_keeps_the_papers_other() {
        let c = parsed(&["policy_band.low=0.25", "reward_band.high=0.7"]).unwrap();
        assert_eq!((c.policy_band.low, c.policy_band.high), (0.25, 0.875));
        assert_eq!((c.reward_band.low, c.reward_band.high), (0.2, 0.7));
        let e = parsed(&["policy_band.low=0.9"]).unwrap_err();
        assert!(e.contains("must not exceed high = 0.875"), "{e}");
        let e = parsed(&["policy_band.lo=0.1"]).unwrap_err();
        assert!(e.contains("lo"), "{e}");
    }
}
