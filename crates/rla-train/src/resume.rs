//! A pretrain that resumes after a kill: `OUT/pretrain-progress.json` holds the config it was
//! started with and what each finished phase said (a model fitted, a DAgger round played). A
//! pretrain started again on the same folder with the same config skips the finished phases and
//! goes on with the others: an SFT from the last point of its curve (the model saved there with
//! its optimiser's state, the batches drawn again up to that step, so the result is the one an
//! uninterrupted pretrain gives), DAgger from its last round. With another config it stops with
//! an error rather than mix two pretrains; a finished pretrain removes the record, so the folder
//! can be made again.

use crate::config::RunConfig;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The record's file in a pretrain's folder.
pub const FILE: &str = "pretrain-progress.json";

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
struct Progress {
    /// The config the pretrain was started with (TOML).
    config: String,
    /// Phases begun in an earlier attempt: their saved state may be taken up.
    started: Vec<String>,
    /// What each finished phase recorded.
    done: BTreeMap<String, serde_json::Value>,
}

fn path(out: &Path) -> PathBuf {
    out.join(FILE)
}

fn read(out: &Path) -> Result<Option<Progress>> {
    let p = path(out);
    if !p.exists() {
        return Ok(None);
    }
    let text = rla_core::file::read_to_string(&p)?;
    serde_json::from_str(&text)
        .map(Some)
        .with_context(|| format!("{} is not a pretrain's progress record", p.display()))
}

fn write(out: &Path, p: &Progress) -> Result<()> {
    std::fs::create_dir_all(out)?;
    crate::run::write_atomic(&path(out), &serde_json::to_string_pretty(p)?)
}

fn config_text(cfg: &RunConfig) -> Result<String> {
    Ok(toml::to_string(cfg)?)
}

/// Opens (or starts) the record of a pretrain into `out`; returns whether an earlier attempt
/// with this config is being resumed. An earlier attempt with another config is an error.
pub fn begin(cfg: &RunConfig, out: &Path) -> Result<bool> {
    let config = config_text(cfg)?;
    match read(out)? {
        Some(p) if p.config == config => Ok(true),
        // an attempt that stopped before saving anything holds nothing to protect
        Some(p) if !p.started.is_empty() || !p.done.is_empty() => anyhow::bail!(
            "{} holds an unfinished pretrain of another config ({}): run it again with that \
             config to finish it, or give another --out (or delete the folder)",
            out.display(),
            path(out).display()
        ),
        _ => {
            write(
                out,
                &Progress {
                    config,
                    ..Default::default()
                },
            )?;
            Ok(false)
        }
    }
}

/// The pretrain into `out` is finished: its record goes.
pub fn end(out: &Path) -> Result<()> {
    match std::fs::remove_file(path(out)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
        _ => Ok(()),
    }
}

/// What `phase` recorded when it finished, if it did (nothing without a record: a pretrain not
/// begun through [`begin`], as in tests, never skips).
pub fn finished(out: &Path, phase: &str) -> Result<Option<serde_json::Value>> {
    Ok(read(out)?.and_then(|p| p.done.get(phase).cloned()))
}

/// The line a phase that says what it made recorded when it finished, if it did.
pub fn finished_line(out: &Path, phase: &str) -> Result<Option<String>> {
    Ok(finished(out, phase)?.map(|v| v.as_str().unwrap_or_default().to_string()))
}

/// Marks `phase` begun; returns whether an earlier attempt had begun it (its saved state may be
/// taken up).
pub fn start(out: &Path, phase: &str) -> Result<bool> {
    let Some(mut p) = read(out)? else {
        return Ok(false);
    };
    if p.started.iter().any(|s| s == phase) {
        return Ok(true);
    }
    p.started.push(phase.to_string());
    write(out, &p)?;
    Ok(false)
}

/// Records `phase` finished with `value`.
pub fn finish(out: &Path, phase: &str, value: serde_json::Value) -> Result<()> {
    let Some(mut p) = read(out)? else {
        return Ok(());
    };
    p.done.insert(phase.to_string(), value);
    write(out, &p)
}

/// Called after each save a pretrain can be taken up from. In tests, a kill right after the
/// n-th (`stop_after`): the state on disk is then what a kill anywhere before the next save
/// leaves.
pub(crate) fn saved() -> Result<()> {
    #[cfg(test)]
    {
        let stop = STOP_AFTER.with(|s| {
            let n = s.get();
            s.set(n.map(|n| n.saturating_sub(1)));
            n == Some(1)
        });
        if stop {
            anyhow::bail!("stopped after a save (a test's kill)");
        }
    }
    Ok(())
}

#[cfg(test)]
thread_local! {
    /// The save after which [`saved`] stops the pretrain.
    pub(crate) static STOP_AFTER: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_are_recorded_for_one_config_and_another_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("pre");
        let cfg = crate::pretrain::tiny_test_config();
        // nothing recorded yet: nothing to skip, nothing to take up
        assert_eq!(finished(&out, "policy").unwrap(), None);
        assert!(!start(&out, "policy").unwrap());
        // an attempt that began nothing leaves nothing to protect: another config starts afresh
        let mut first = cfg.clone();
        first.pretrain.policy_steps += 7;
        assert!(!begin(&first, &out).unwrap());
        assert!(!begin(&cfg, &out).unwrap());
        assert!(!start(&out, "policy").unwrap());
        // a second attempt finds the phase begun
        assert!(begin(&cfg, &out).unwrap());
        assert!(start(&out, "policy").unwrap());
        finish(&out, "policy", serde_json::json!("policy: fitted")).unwrap();
        assert_eq!(
            finished(&out, "policy").unwrap(),
            Some(serde_json::json!("policy: fitted"))
        );
        // another config is refused, naming the record
        let mut other = cfg.clone();
        other.pretrain.policy_steps += 1;
        let e = format!("{:#}", begin(&other, &out).unwrap_err());
        assert!(e.contains("another config") && e.contains(FILE), "{e}");
        // finished: the record goes, and the folder can be made again with any config
        end(&out).unwrap();
        assert!(!path(&out).exists());
        assert!(!begin(&other, &out).unwrap());
        // a record that is not one
        std::fs::write(path(&out), "{").unwrap();
        let e = format!("{:#}", begin(&cfg, &out).unwrap_err());
        assert!(e.contains(FILE), "{e}");
    }
}

#[cfg(test)]
mod kill_tests {
    use super::*;

    fn files(out: &Path) -> Vec<(String, Vec<u8>)> {
        let mut v = Vec::new();
        for name in ["policy/model.safetensors", "reward/model.safetensors"] {
            v.push((name.to_string(), std::fs::read(out.join(name)).unwrap()));
        }
        v
    }

    #[test]
    fn a_pretrain_killed_after_a_save_ends_as_one_never_stopped() {
        let mut cfg = crate::pretrain::tiny_test_config();
        cfg.pretrain.held_out = 1;
        cfg.pretrain.validation = 1;
        cfg.pretrain.eval_every = 2;
        cfg.pretrain.policy_steps = 4;
        cfg.pretrain.dagger_rounds = 2;
        cfg.pretrain.dagger_tasks = 2;
        cfg.pretrain.dagger_steps = 2;
        cfg.validate().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let whole = dir.path().join("whole");
        let lines = crate::launch::warm_start(&rla_model::Candle, &cfg, &whole, false).unwrap();
        assert!(
            !whole.join(FILE).exists(),
            "the record outlives its pretrain"
        );
        let want = files(&whole);
        let curve = std::fs::read_to_string(whole.join("curve-policy.jsonl")).unwrap();
        // saves: the SFT's points at steps 2 and 4, then DAgger's rounds 1 and 2
        for stop in [1, 2, 3] {
            let out = dir.path().join(format!("stopped-{stop}"));
            STOP_AFTER.with(|s| s.set(Some(stop)));
            let e = crate::launch::warm_start(&rla_model::Candle, &cfg, &out, false).unwrap_err();
            STOP_AFTER.with(|s| s.set(None));
            assert!(format!("{e:#}").contains("a test's kill"), "{e:#}");
            assert!(out.join(FILE).exists());
            // another config is refused on the unfinished folder
            let mut other = cfg.clone();
            other.pretrain.dagger_steps = 3;
            let e = crate::launch::warm_start(&rla_model::Candle, &other, &out, false).unwrap_err();
            assert!(format!("{e:#}").contains("another config"), "{e:#}");
            let again = crate::launch::warm_start(&rla_model::Candle, &cfg, &out, false).unwrap();
            assert_eq!(again, lines, "stopped after save {stop}");
            assert!(
                files(&out) == want,
                "stopped after save {stop}: the models differ from the pretrain never stopped"
            );
            assert_eq!(
                std::fs::read_to_string(out.join("curve-policy.jsonl")).unwrap(),
                curve,
                "stopped after save {stop}"
            );
            assert!(!out.join(FILE).exists());
            // the kept policy holds its weights, not what a pretrain would be taken up from
            for f in [
                "optimizer.safetensors",
                crate::pretrain::TAKE_UP_CURVE,
                "dagger-state.json",
            ] {
                assert!(!out.join("policy").join(f).exists(), "{f}");
            }
        }
    }
}
