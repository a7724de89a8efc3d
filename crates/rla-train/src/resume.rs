//! A pretrain that resumes after a kill: `OUT/pretrain-progress.json` holds the config it was
//! started with and what each finished phase said (a model fitted, a DAgger round played). A
//! pretrain started again on the same folder with the same config skips the finished phases and
//! goes on with the others: an SFT from the last point of its curve (the model saved there with
//! its optimiser's state, the batches drawn again up to that step, so the result is the one an
//! uninterrupted pretrain gives), DAgger from its last round. With another config it stops with
//! an error rather than mix two pretrains; a finished pretrain removes the record, so the folder
//! can be made again.
//!
//! One invocation of a pretrain is a session ([`enter`], by [`crate::launch::pretrain`]): its
//! budget (SFT steps, minutes) stops it cleanly where the budget is spent, saved there
//! ([`spent`], [`stop`]), and every save is copied to its state folder when it has one
//! ([`crate::pretrain_state`]), so the pretrain goes on from there on another machine.

use crate::config::RunConfig;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

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

/// The config as the record (and a state folder's index) keeps it: TOML.
pub(crate) fn config_text(cfg: &RunConfig) -> Result<String> {
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

/// The phases the record in `out` names, begun or finished (none without a record).
pub(crate) fn phases(out: &Path) -> Result<Vec<String>> {
    let Some(p) = read(out)? else {
        return Ok(Vec::new());
    };
    let mut v = p.started;
    for k in p.done.into_keys() {
        if !v.contains(&k) {
            v.push(k);
        }
    }
    Ok(v)
}

/// Records `phase` finished with `value`.
pub fn finish(out: &Path, phase: &str, value: serde_json::Value) -> Result<()> {
    let Some(mut p) = read(out)? else {
        return Ok(());
    };
    p.done.insert(phase.to_string(), value);
    write(out, &p)
}

/// Called after each save a pretrain can be taken up from, with where it stands (`at`: "policy:
/// SFT step 1000 of 4000"): the session's state folder, if it has one, is replaced by a copy of
/// the save. In tests, a kill right after the n-th (`stop_after`): the state on disk is then what
/// a kill anywhere before the next save leaves.
pub(crate) fn saved(at: &str) -> Result<()> {
    let copy = SESSION.with(|s| {
        let mut s = s.borrow_mut();
        let s = s.as_mut()?;
        s.last = Some(at.to_string());
        let state = s.state.clone()?;
        let seconds = s.earlier + s.began.elapsed().as_secs_f64();
        Some((s.out.clone(), state, s.config.clone(), seconds))
    });
    if let Some((out, state, config, seconds)) = copy {
        crate::pretrain_state::write(&out, &state, &config, at, seconds)?;
    }
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

/// What one invocation of a pretrain may spend: SFT steps (of every model and DAgger round
/// together), minutes, or both, the first spent stopping it; neither, no limit. Spent, the
/// pretrain stops before its next SFT step or DAgger round, saved there (a round's play and a
/// probe are not cut short; at least one step is taken).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Budget {
    /// SFT steps.
    pub steps: Option<usize>,
    /// Minutes since the invocation began.
    pub minutes: Option<f64>,
}

impl Budget {
    /// Checks the figures, naming the first that cannot be spent.
    pub fn check(&self) -> std::result::Result<(), String> {
        if self.steps == Some(0) {
            return Err("--steps 0: at least one SFT step".into());
        }
        if let Some(m) = self.minutes.filter(|m| !(m.is_finite() && *m > 0.0)) {
            return Err(format!("--minutes {m}: a positive number of minutes"));
        }
        Ok(())
    }

    /// Whether `steps` SFT steps in `elapsed` spend it.
    fn spent(&self, steps: usize, elapsed: std::time::Duration) -> bool {
        self.steps.is_some_and(|n| steps >= n)
            || self
                .minutes
                .is_some_and(|m| elapsed.as_secs_f64() >= m * 60.0)
    }
}

/// Where an invocation stopped on its budget.
#[derive(Debug, Clone, PartialEq)]
pub struct Stopped {
    /// Where the pretrain stands, as its last save said ("policy: SFT step 3 of 4").
    pub at: String,
    /// The SFT steps the invocation took.
    pub steps: usize,
    /// The minutes it ran.
    pub minutes: f64,
}

/// One invocation of a pretrain into `out`.
struct Session {
    out: PathBuf,
    state: Option<PathBuf>,
    config: String,
    budget: Budget,
    began: Instant,
    /// The seconds the invocations before spent, as the state folder counted them.
    earlier: f64,
    steps: usize,
    last: Option<String>,
    stopped: bool,
}

thread_local! {
    /// The session of the pretrain this thread runs.
    static SESSION: RefCell<Option<Session>> = const { RefCell::new(None) };
}

/// A session entered for this thread ([`enter`]); dropped, the thread has none.
pub(crate) struct Entered(());

impl Drop for Entered {
    fn drop(&mut self) {
        SESSION.with(|s| *s.borrow_mut() = None);
    }
}

/// Enters the session of a pretrain into `out` with config `config` (as [`config_text`] gives
/// it) for this thread, which runs it: its saves are copied to `state` where one is given (with
/// the seconds spent, `earlier` by the invocations before), and `budget` stops it.
pub(crate) fn enter(
    out: &Path,
    state: Option<&Path>,
    config: &str,
    budget: Budget,
    earlier: f64,
) -> Entered {
    SESSION.with(|s| {
        *s.borrow_mut() = Some(Session {
            out: out.to_path_buf(),
            state: state.map(Path::to_path_buf),
            config: config.to_string(),
            budget,
            began: Instant::now(),
            earlier,
            steps: 0,
            last: None,
            stopped: false,
        })
    });
    Entered(())
}

/// Counts an SFT step of the session's.
pub(crate) fn step_taken() {
    SESSION.with(|s| {
        if let Some(s) = s.borrow_mut().as_mut() {
            s.steps += 1;
        }
    })
}

/// Whether the session's budget is spent, so that the pretrain stops before its next SFT step
/// (or DAgger round): never before the session's first step, nor without a session.
pub(crate) fn spent() -> bool {
    SESSION.with(|s| {
        s.borrow()
            .as_ref()
            .is_some_and(|s| s.steps > 0 && s.budget.spent(s.steps, s.began.elapsed()))
    })
}

/// The error an SFT returns once saved where the budget stopped it; the session is marked
/// stopped, so that [`stopped`] tells this stop from a failure.
pub(crate) fn stop() -> anyhow::Error {
    SESSION.with(|s| {
        if let Some(s) = s.borrow_mut().as_mut() {
            s.stopped = true;
        }
    });
    anyhow::anyhow!(
        "the budget of this invocation is spent: the pretrain stopped where it was saved"
    )
}

/// Where the session stopped on its budget, if it did.
pub(crate) fn stopped() -> Option<Stopped> {
    SESSION.with(|s| {
        let s = s.borrow();
        let s = s.as_ref().filter(|s| s.stopped)?;
        Some(Stopped {
            at: s.last.clone().unwrap_or_default(),
            steps: s.steps,
            minutes: s.began.elapsed().as_secs_f64() / 60.0,
        })
    })
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
                crate::pretrain::SFT_POSITION,
                "dagger-state.json",
            ] {
                assert!(!out.join("policy").join(f).exists(), "{f}");
            }
        }
    }

    #[test]
    fn a_pretrain_killed_goes_on_from_its_state_folder_in_another_output_folder() {
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
        let want = files(&whole);
        let curve = std::fs::read_to_string(whole.join("curve-policy.jsonl")).unwrap();
        let session = crate::launch::Session {
            state: Some(dir.path().join("state")),
            budget: Budget::default(),
        };
        // killed after DAgger's first round (the SFT's points at steps 2 and 4 saved before it)
        let killed = dir.path().join("killed");
        STOP_AFTER.with(|s| s.set(Some(3)));
        let e = crate::launch::pretrain(&rla_model::Candle, &cfg, &killed, false, &session)
            .unwrap_err();
        STOP_AFTER.with(|s| s.set(None));
        assert!(format!("{e:#}").contains("a test's kill"), "{e:#}");
        // the state holds the round's save; the output folder it was copied from is gone
        let at = crate::pretrain_state::restore(
            session.state.as_ref().unwrap(),
            &dir.path().join("look"),
            &config_text(&cfg).unwrap(),
        )
        .unwrap();
        assert!(
            matches!(&at, crate::pretrain_state::Restored::At(a, _) if a == "DAgger: 1 of 2 rounds done"),
            "{at:?}"
        );
        std::fs::remove_dir_all(&killed).unwrap();
        let elsewhere = dir.path().join("elsewhere");
        match crate::launch::pretrain(&rla_model::Candle, &cfg, &elsewhere, false, &session)
            .unwrap()
        {
            crate::launch::Pretrained::Finished { lines: again, .. } => assert_eq!(again, lines),
            other => panic!("{other:?}"),
        }
        assert!(
            files(&elsewhere) == want,
            "the models differ from the pretrain never stopped"
        );
        assert_eq!(
            std::fs::read_to_string(elsewhere.join("curve-policy.jsonl")).unwrap(),
            curve
        );
    }
}

#[cfg(test)]
mod budget_tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_budget_is_spent_by_steps_or_minutes_whichever_comes_first() {
        let two_minutes = Duration::from_secs(120);
        let b = Budget {
            steps: Some(5),
            minutes: Some(10.0),
        };
        assert!(!b.spent(4, two_minutes));
        assert!(b.spent(5, two_minutes));
        let b = Budget {
            steps: Some(5),
            minutes: Some(1.5),
        };
        assert!(b.spent(1, two_minutes));
        assert!(!Budget::default().spent(usize::MAX, two_minutes));
        assert!(Budget::default().check().is_ok());
        for bad in [
            Budget {
                steps: Some(0),
                minutes: None,
            },
            Budget {
                steps: None,
                minutes: Some(f64::NAN),
            },
            Budget {
                steps: None,
                minutes: Some(-1.0),
            },
        ] {
            assert!(bad.check().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_session_counts_steps_and_tells_a_stop_from_a_failure() {
        let d = tempfile::tempdir().unwrap();
        step_taken();
        assert!(!spent(), "no session: no budget");
        let budget = Budget {
            steps: Some(2),
            minutes: None,
        };
        let entered = enter(d.path(), None, "", budget, 0.0);
        assert!(!spent());
        step_taken();
        assert!(!spent());
        step_taken();
        assert!(spent());
        assert_eq!(stopped(), None, "spent is not stopped");
        saved("policy: SFT step 2 of 4").unwrap();
        let _ = stop();
        let s = stopped().unwrap();
        assert_eq!((s.at.as_str(), s.steps), ("policy: SFT step 2 of 4", 2));
        drop(entered);
        assert_eq!(stopped(), None);
        assert!(!spent());
    }
}
