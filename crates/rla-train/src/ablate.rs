//! The ablation: one run per mode (`outcome`, `policy`, `policy+reward`, `full`) and seed from
//! one config, each seed's warm starts shared by its modes, and optionally the SFT controls (the
//! minutes of each seed's `full` run spent on more SFT of its warm start: `sft`, the base's own
//! recipe, and `sft-demos`, demonstrations alone); the table ([`table`]) of each mode's sampled
//! success with its standard error and its paired difference from the base (the warm start on
//! the same tasks and draws), the judge's quality and μ, and the setting's own extra evaluations
//! ([`crate::setting::Setting::extra_evaluations`]), written to `OUT/ablation.md`, and the
//! modes' evaluation curves with their seed ranges as PNG files. Finished run folders are reused.

mod table;

use crate::config::{Mode, RunConfig};
use crate::control::{ControlKind, ControlResult};
use crate::run::IterMetrics;
use anyhow::{bail, Context, Result};
use rla_lm::Backend;
use std::path::{Path, PathBuf};

/// What to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Ablation {
    /// Seeds per mode: the config's seed, then the next ones. With more than one, runs go to
    /// `OUT/seed-S/MODE`.
    pub seeds: u64,
    /// The modes, in the table's order.
    pub modes: Vec<Mode>,
    /// The SFT controls to run (with `full` among the modes), each in `OUT/NAME`.
    pub controls: Vec<ControlKind>,
    /// Progress bars on stderr.
    pub progress: bool,
    /// What the setting's own extra evaluations read (`ablate --games DATA`,
    /// [`crate::setting::Setting::extra_evaluations`]): each run's final policy, the SFT
    /// controls' and each seed's starting policy are evaluated on it, and the table gains a
    /// column for each.
    pub extra: Option<PathBuf>,
}

/// What the ablation wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Ablated {
    /// The table (Markdown), also in `OUT/ablation.md`.
    pub table: String,
    /// The table's file.
    pub table_file: PathBuf,
    /// The curves written, one per split the runs evaluated.
    pub curves: Vec<PathBuf>,
}

/// A seed's SFT control.
#[derive(Debug, Clone)]
struct Control {
    /// What it did and scored.
    result: ControlResult,
    /// Its results on each split beside the base's ([`table::of_control`]).
    splits: Vec<table::SplitResult>,
    /// The setting's extra evaluations of the base and of the control.
    extras: Vec<table::Extra>,
}

/// One finished run of the ablation.
struct AblationRun {
    judge: (Option<f64>, Option<f64>),
    mu: Option<f64>,
    metrics: Vec<IterMetrics>,
    /// Its results on each split it evaluated, beside the base's ([`table::of_run`]).
    splits: Vec<table::SplitResult>,
    /// The setting's extra evaluations of the starting and the final policy.
    extras: Vec<table::Extra>,
}

/// A run's training seconds: its iterations' rollouts, judging, updates and adaptation (its
/// evaluations not counted).
fn training_seconds(ms: &[IterMetrics]) -> f64 {
    ms.iter()
        .map(|m| m.time_rollout + m.time_judge + m.time_update + m.time_adapt)
        .sum()
}

/// Mean, min and max.
fn spread(xs: &[f64]) -> (f64, f64, f64) {
    let mean = xs.iter().sum::<f64>() / xs.len().max(1) as f64;
    let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (mean, min, max)
}

/// A curve's points with their seed range: (iteration, mean, min, max) of each iteration's values.
fn band(by_iter: std::collections::BTreeMap<usize, Vec<f64>>) -> Vec<(f64, f64, f64, f64)> {
    by_iter
        .into_iter()
        .map(|(k, xs)| {
            let (m, lo, hi) = spread(&xs);
            (k as f64, m, lo, hi)
        })
        .collect()
}

/// Runs the ablation of `base` into `out`; `say` is given the warm starts' lines as they come.
pub fn ablate(
    backend: &'static dyn Backend,
    base: &RunConfig,
    out: &Path,
    a: &Ablation,
    say: &mut dyn FnMut(&str),
) -> Result<Ablated> {
    base.check_paths().map_err(anyhow::Error::msg)?;
    if a.seeds == 0 {
        bail!("--seeds 0: run at least one seed");
    }
    let setting = crate::registry::setting(base)?;
    let extras = match &a.extra {
        Some(data) => {
            let x = setting.extra_evaluations(base, data)?;
            if x.is_empty() {
                bail!(
                    "--games {}: the {} setting has no evaluation of its own to make beyond the \
                     splits",
                    data.display(),
                    setting.name()
                );
            }
            x
        }
        None => vec![],
    };
    if let Some(k) = a
        .controls
        .first()
        .filter(|_| !a.modes.contains(&Mode::Full))
    {
        bail!(
            "--modes {}: the control is given the minutes of `full`; name full too",
            k.name()
        );
    }
    if out.exists() && !out.is_dir() {
        bail!(
            "--out {}: is a file, not a folder; choose a folder",
            out.display()
        );
    }
    std::fs::create_dir_all(out).with_context(|| format!("--out {}", out.display()))?;
    let modes = &a.modes;
    let mut runs: Vec<Vec<AblationRun>> = modes.iter().map(|_| vec![]).collect();
    let mut controls: Vec<Control> = vec![];
    for s in 0..a.seeds {
        let mut seeded = base.clone();
        seeded.seed = base.seed + s;
        let out = if a.seeds == 1 {
            out.to_path_buf()
        } else {
            out.join(format!("seed-{}", seeded.seed))
        };
        // the seed's folder holds its records even when nothing is pretrained into it
        std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
        crate::launch::ensure_pretrained(backend, &seeded, &out, a.progress, say)?;
        let start = seeded
            .policy
            .path
            .clone()
            .unwrap_or_else(|| out.join("pretrained/policy"));
        // the setting's extra evaluations of a policy: (won, played) each, kept beside what
        // they evaluate (`KEY.json`, the starting policy's `KEY-start.json`)
        let extra = |policy: &Path, dir: &Path, suffix: &str| -> Result<Vec<(usize, usize)>> {
            extras
                .iter()
                .map(|e| {
                    let record = dir.join(format!("{}{suffix}.json", e.key()));
                    e.evaluate(backend, policy, &record)
                })
                .collect()
        };
        let base_extras = extra(&start, &out, "-start")?;
        let with_base = |after: Vec<(usize, usize)>| -> Vec<table::Extra> {
            base_extras
                .iter()
                .zip(after)
                .map(|(&(b, n), (w, _))| (b, w, n))
                .collect()
        };
        for (mi, &mode) in modes.iter().enumerate() {
            let mut cfg = seeded.clone();
            cfg.mode = mode;
            if cfg.policy.path.is_none() {
                cfg.policy.path = Some(out.join("pretrained/policy"));
            }
            if cfg.reward.path.is_none() {
                cfg.reward.path = Some(out.join("pretrained/reward"));
            }
            let dir = out.join(mode.name().replace('+', "-"));
            let resume = dir.join("checkpoint/state.json").exists();
            let ms = crate::launch::train_to_end(backend, cfg, &dir, (resume, a.progress), say)?;
            let last = ms.last().context("no metrics")?;
            let won = extra(&dir.join("checkpoint/policy"), &dir, "")?;
            runs[mi].push(AblationRun {
                judge: (last.process_acc, last.outcome_acc),
                mu: last.mu,
                splits: table::of_run(&dir, &ms)?,
                metrics: ms,
                extras: with_base(won),
            });
        }
        for &kind in &a.controls {
            let full = modes
                .iter()
                .position(|&m| m == Mode::Full)
                .context("full")?;
            let run = runs[full].last().context("full's run")?;
            let mut cfg = seeded.clone();
            if cfg.policy.path.is_none() {
                cfg.policy.path = Some(out.join("pretrained/policy"));
            }
            let budget = training_seconds(&run.metrics);
            // the control evaluated at full's evaluations, after as many seconds as full had
            // trained by then
            let mut marks: Vec<(usize, f64)> = Vec::new();
            let mut spent = 0.0;
            for m in &run.metrics {
                spent += training_seconds(std::slice::from_ref(m));
                if m.iteration > 0 && m.eval_in_domain.is_some() {
                    marks.push((m.iteration, spent));
                }
            }
            let sft = out.join(kind.name());
            let r =
                crate::control::sft_control(backend, &cfg, kind, &sft, budget, &marks, a.progress)?;
            let won = extra(&sft.join("policy"), &sft, "")?;
            let full_dir = out.join(Mode::Full.name());
            controls.push(Control {
                splits: table::of_control((&full_dir, &run.splits), &sft, &r, seeded.iterations)?,
                result: r,
                extras: with_base(won),
            });
        }
    }
    let names: Vec<String> = extras.iter().map(|e| e.name()).collect();
    let table = table::table(
        modes,
        &runs,
        &controls,
        setting.judge_columns(),
        (&base.eval, &names),
    );
    let table_file = out.join("ablation.md");
    crate::run::write_atomic(&table_file, &table)?;
    let curves = curves(out, modes, &runs, &controls, a.seeds)?;
    Ok(Ablated {
        table,
        table_file,
        curves,
    })
}

/// `full` and an SFT control (`name`, one a seed) side by side at full's evaluations, after
/// equal minutes of training (means over seeds, in percent), when the control was evaluated
/// there.
fn equal_minutes(full: &[AblationRun], controls: &[Control], name: &str) -> String {
    let mut at: std::collections::BTreeMap<usize, [Vec<f64>; 5]> = Default::default();
    for (c, r) in controls.iter().map(|c| &c.result).zip(full) {
        for p in &c.curve {
            let Some(m) = r.metrics.iter().find(|m| m.iteration == p.iteration) else {
                continue;
            };
            let row = at.entry(p.iteration).or_default();
            row[0].push(p.seconds / 60.0);
            row[1].extend(m.eval_in_domain);
            row[2].push(p.in_domain);
            row[3].extend(m.eval_validation);
            row[4].extend(p.validation);
        }
    }
    if at.is_empty() {
        return String::new();
    }
    let mean = |xs: &[f64], scale: f64| -> String {
        if xs.is_empty() {
            "—".into()
        } else {
            format!("{:.1}", scale * xs.iter().sum::<f64>() / xs.len() as f64)
        }
    };
    let mut s = format!(
        "\nAt full's evaluations, after equal minutes of training (means over seeds, %):\n\n\
         | iteration | minutes | full in-domain | {name} in-domain | full validation | {name} validation |\n\
         |---|---|---|---|---|---|\n",
    );
    for (k, row) in at {
        s.push_str(&format!(
            "| {k} | {} | {} | {} | {} | {} |\n",
            mean(&row[0], 1.0),
            mean(&row[1], 100.0),
            mean(&row[2], 100.0),
            mean(&row[3], 100.0),
            mean(&row[4], 100.0)
        ));
    }
    s
}

/// The modes' evaluation curves with their seed ranges, one chart per split the runs evaluated.
fn curves(
    out: &Path,
    modes: &[Mode],
    runs: &[Vec<AblationRun>],
    controls: &[Control],
    seeds: u64,
) -> Result<Vec<PathBuf>> {
    type Pick = fn(&IterMetrics) -> Option<f64>;
    type PickControl = fn(&crate::control::ControlPoint) -> Option<f64>;
    let mut curves: Vec<PathBuf> = vec![];
    for (split, file, pick, pick_control, end) in [
        (
            "in-domain",
            "ablation-in-domain.png",
            (|m: &IterMetrics| m.eval_in_domain) as Pick,
            (|p: &crate::control::ControlPoint| Some(p.in_domain)) as PickControl,
            (|r: &ControlResult| Some(r.in_domain)) as fn(&ControlResult) -> Option<f64>,
        ),
        (
            "OOD",
            "ablation-ood.png",
            |m| m.eval_ood,
            |p| Some(p.ood),
            |r| Some(r.ood),
        ),
        (
            "validation",
            "ablation-validation.png",
            |m| m.eval_validation,
            |p| p.validation,
            |r| r.validation,
        ),
    ] {
        if !runs
            .iter()
            .flatten()
            .flat_map(|r| &r.metrics)
            .any(|m| pick(m).is_some())
        {
            continue; // a split the runs did not evaluate
        }
        curves.push(out.join(file));
        let series: Vec<crate::plots::BandSeries> = modes
            .iter()
            .zip(runs)
            .map(|(mode, rs)| {
                let mut by_iter: std::collections::BTreeMap<usize, Vec<f64>> = Default::default();
                for r in rs {
                    for m in &r.metrics {
                        if let Some(v) = pick(m) {
                            by_iter.entry(m.iteration).or_default().push(100.0 * v);
                        }
                    }
                }
                (mode.name().to_string(), band(by_iter))
            })
            .collect();
        // each SFT control at full's evaluations (equal minutes), from full's starting point
        let mut series = series;
        let full: &[AblationRun] = modes
            .iter()
            .position(|&m| m == Mode::Full)
            .map_or(&[], |f| &runs[f]);
        for kind in ControlKind::ALL {
            let mut by_iter: std::collections::BTreeMap<usize, Vec<f64>> = Default::default();
            let of_kind = controls
                .iter()
                .map(|c| &c.result)
                .filter(|c| c.kind == kind);
            for (c, r) in of_kind.zip(full) {
                let start = r.metrics.iter().find(|m| m.iteration == 0).and_then(pick);
                let last = r.metrics.last().map(|m| m.iteration);
                let points = start
                    .map(|v| (0, v))
                    .into_iter()
                    .chain(
                        c.curve
                            .iter()
                            .filter_map(|p| pick_control(p).map(|v| (p.iteration, v))),
                    )
                    .chain(last.zip(end(c)));
                for (k, v) in points {
                    by_iter.entry(k).or_default().push(100.0 * v);
                }
            }
            if !by_iter.is_empty() {
                series.push((
                    format!("{} (control, full's minutes)", kind.name()),
                    band(by_iter),
                ));
            }
        }
        let top = series
            .iter()
            .flat_map(|s| s.1.iter().map(|p| p.3))
            .fold(0.0, f64::max);
        crate::plots::band_chart(
            &out.join(file),
            &format!(
                "{split} success by mode ({seeds} seed{})",
                if seeds == 1 { "" } else { "s" }
            ),
            "success %",
            &series,
            (0.0, (top + 5.0).clamp(10.0, 100.0)),
        )?;
    }
    Ok(curves)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::ControlPoint;

    fn evaluated(k: usize, in_domain: f64, validation: f64) -> IterMetrics {
        IterMetrics {
            iteration: k,
            eval_in_domain: Some(in_domain),
            eval_validation: Some(validation),
            time_update: 30.0,
            ..Default::default()
        }
    }

    #[test]
    fn full_and_the_control_side_by_side_at_equal_minutes() {
        let run = |v: f64| AblationRun {
            judge: (None, None),
            mu: None,
            metrics: vec![
                evaluated(0, 0.5, 0.5),
                evaluated(10, v, v),
                evaluated(20, v, v),
            ],
            splits: vec![],
            extras: vec![],
        };
        let point = |k: usize, v: f64| ControlPoint {
            iteration: k,
            seconds: 60.0 * k as f64,
            steps: 10 * k,
            in_domain: v,
            ood: v,
            validation: Some(v),
        };
        let control = |v: f64| ControlResult {
            kind: ControlKind::Recipe,
            labels: 40,
            label_share: 0.5,
            rows: (6400, 3200),
            optimizer: "fresh".into(),
            budget_seconds: 1200.0,
            seconds: 1200.0,
            steps: 200,
            examples: 1000,
            lr: 3e-4,
            loss: (1.0, 0.5),
            in_domain: v,
            ood: v,
            validation: Some(v),
            curve: vec![point(10, v)],
        };
        let full = vec![run(0.6), run(0.8)];
        let controls: Vec<Control> = [control(0.4), control(0.6)]
            .into_iter()
            .map(|result| Control {
                result,
                splits: vec![],
                extras: vec![],
            })
            .collect();
        let t = equal_minutes(&full, &controls, "sft");
        // iteration 10: 10 minutes; full 70% (60, 80), the control 50% (40, 60)
        assert!(
            t.contains("| 10 | 10.0 | 70.0 | 50.0 | 70.0 | 50.0 |"),
            "{t}"
        );
        // no control point at iteration 20: no row
        assert!(!t.contains("| 20 |"), "{t}");
        // controls without a curve: nothing
        let bare: Vec<Control> = controls
            .into_iter()
            .map(|mut c| {
                c.result.curve.clear();
                c
            })
            .collect();
        assert_eq!(equal_minutes(&full, &bare, "sft"), "");
    }
}
