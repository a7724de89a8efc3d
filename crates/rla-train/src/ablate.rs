//! The ablation: one run per mode (`outcome`, `policy`, `policy+reward`, `full`) and seed from
//! one config, each seed's warm starts shared by its modes, and optionally the SFT controls (the
//! minutes of each seed's `full` run spent on more SFT of its warm start: `sft`, the base's own
//! recipe, and `sft-demos`, demonstrations alone); the table of greedy
//! success before and after, the judge's quality and μ, written to `OUT/ablation.md`, and the
//! modes' evaluation curves with their seed ranges as PNG files. Finished run folders are reused.

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
    /// Game folders in ALFWorld's layout (a household's): each run's final policy, the SFT
    /// control's and each seed's starting policy play them greedily, and the table gains their
    /// games won.
    pub games: Option<PathBuf>,
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

/// A seed's SFT control, the (in-domain, OOD) success of the base it started from, and the
/// games of `--games` won by that base and by the control.
type Control = (ControlResult, (f64, f64), Option<(usize, usize, usize)>);

/// One finished run of the ablation.
struct AblationRun {
    before: (f64, f64),
    after: (f64, f64),
    judge: (Option<f64>, Option<f64>),
    mu: Option<f64>,
    metrics: Vec<IterMetrics>,
    /// Games won of `--games` by the starting and the final policy, and the games played.
    games: Option<(usize, usize, usize)>,
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

/// `mean (min–max)` in percent, or the single value for one seed.
fn pct(xs: &[f64]) -> String {
    let (m, lo, hi) = spread(xs);
    if xs.len() == 1 {
        format!("{:.1}", 100.0 * m)
    } else {
        format!("{:.1} ({:.1}–{:.1})", 100.0 * m, 100.0 * lo, 100.0 * hi)
    }
}

/// `mean (min–max)` of counts, or the single count for one seed.
fn count(xs: &[f64]) -> String {
    let (m, lo, hi) = spread(xs);
    if xs.len() == 1 {
        format!("{m:.0}")
    } else {
        format!("{m:.1} ({lo:.0}–{hi:.0})")
    }
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
    if a.games.is_some() && base.setting != "household" {
        bail!(
            "--games plays ALFWorld's game folders, a household's; this config's setting is {}",
            base.setting
        );
    }
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
        // games won by a policy: (won, played), kept beside what it evaluates
        let games = |policy: &Path, record: &Path| -> Result<Option<(usize, usize)>> {
            a.games
                .as_deref()
                .map(|g| crate::household::eval::games_won(backend, &seeded, policy, g, record))
                .transpose()
        };
        let base_games = games(&start, &out.join("games-start.json"))?;
        let with_base =
            |after: Option<(usize, usize)>| base_games.zip(after).map(|((b, n), (w, _))| (b, w, n));
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
            let (before, after) = crate::report::before_after(&ms)?;
            let last = ms.last().context("no metrics")?;
            let won = games(&dir.join("checkpoint/policy"), &dir.join("games.json"))?;
            runs[mi].push(AblationRun {
                before,
                after,
                judge: (last.process_acc, last.outcome_acc),
                mu: last.mu,
                metrics: ms,
                games: with_base(won),
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
            let won = games(&sft.join("policy"), &sft.join("games.json"))?;
            controls.push((r, run.before, with_base(won)));
        }
    }
    let (judge_a, judge_b) = crate::registry::setting(base)?.judge_columns();
    let table = table(modes, &runs, &controls, (judge_a, judge_b));
    let table_file = out.join("ablation.md");
    crate::run::write_atomic(&table_file, &table)?;
    let curves = curves(out, modes, &runs, &controls, a.seeds)?;
    Ok(Ablated {
        table,
        table_file,
        curves,
    })
}

/// The ablation's table: a row per mode, and the control's.
fn table(
    modes: &[Mode],
    runs: &[Vec<AblationRun>],
    controls: &[Control],
    (judge_a, judge_b): (&str, &str),
) -> String {
    // games won of `--games`: before and after, mean (min–max) over seeds
    let played = runs
        .iter()
        .flatten()
        .filter_map(|r| r.games)
        .chain(controls.iter().filter_map(|c| c.2))
        .map(|g| g.2)
        .next();
    let games_cols = |gs: Vec<(usize, usize, usize)>| -> String {
        match played {
            None => String::new(),
            Some(_) if gs.is_empty() => " — | — |".to_string(),
            Some(_) => format!(
                " {} | {} |",
                count(&gs.iter().map(|g| g.0 as f64).collect::<Vec<_>>()),
                count(&gs.iter().map(|g| g.1 as f64).collect::<Vec<_>>())
            ),
        }
    };
    let (games_head, games_rule) = match played {
        Some(n) => (
            format!(" games won before (of {n}) | games won after (of {n}) |"),
            "---|---|",
        ),
        None => (String::new(), ""),
    };
    let mut table = format!(
        "| mode | in-domain before | in-domain after | OOD before | OOD after | {judge_a} | {judge_b} | μ (last) |{games_head}\n|---|---|---|---|---|---|---|---|{games_rule}\n"
    );
    for (mode, rs) in modes.iter().zip(runs) {
        let col = |f: &dyn Fn(&AblationRun) -> Option<f64>| {
            let xs: Vec<f64> = rs.iter().filter_map(f).collect();
            if xs.is_empty() {
                "—".to_string()
            } else {
                pct(&xs)
            }
        };
        let mu: Vec<f64> = rs.iter().filter_map(|r| r.mu).collect();
        let mu = if mu.is_empty() {
            "—".to_string()
        } else {
            let (m, lo, hi) = spread(&mu);
            format!("{m:.2} ({lo:.2}–{hi:.2})")
        };
        table.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |{}\n",
            mode.name(),
            col(&|r| Some(r.before.0)),
            col(&|r| Some(r.after.0)),
            col(&|r| Some(r.before.1)),
            col(&|r| Some(r.after.1)),
            col(&|r| r.judge.0),
            col(&|r| r.judge.1),
            mu,
            games_cols(rs.iter().filter_map(|r| r.games).collect())
        ));
    }
    for kind in ControlKind::ALL {
        let controls: Vec<Control> = controls
            .iter()
            .filter(|c| c.0.kind == kind)
            .cloned()
            .collect();
        if controls.is_empty() {
            continue;
        }
        let col = |f: &dyn Fn(&Control) -> f64| pct(&controls.iter().map(f).collect::<Vec<_>>());
        table.push_str(&format!(
            "| {} (control) | {} | {} | {} | {} | — | — | — |{}\n",
            kind.name(),
            col(&|c| c.1 .0),
            col(&|c| c.0.in_domain),
            col(&|c| c.1 .1),
            col(&|c| c.0.ood),
            games_cols(controls.iter().filter_map(|c| c.2).collect())
        ));
        if let Some(full) = modes.iter().position(|&m| m == Mode::Full) {
            table.push_str(&equal_minutes(&runs[full], &controls, kind.name()));
        }
    }
    table
}

/// `full` and an SFT control (`name`, one a seed) side by side at full's evaluations, after
/// equal minutes of training (means over seeds, in percent), when the control was evaluated
/// there.
fn equal_minutes(full: &[AblationRun], controls: &[Control], name: &str) -> String {
    let mut at: std::collections::BTreeMap<usize, [Vec<f64>; 5]> = Default::default();
    for ((c, _, _), r) in controls.iter().zip(full) {
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
            let of_kind = controls.iter().filter(|c| c.0.kind == kind);
            for ((c, _, _), r) in of_kind.zip(full) {
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
                "greedy {split} success by mode ({seeds} seed{})",
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
            before: (0.5, 0.5),
            after: (v, v),
            judge: (None, None),
            mu: None,
            metrics: vec![
                evaluated(0, 0.5, 0.5),
                evaluated(10, v, v),
                evaluated(20, v, v),
            ],
            games: None,
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
        let controls: Vec<Control> = vec![
            (control(0.4), (0.5, 0.5), None),
            (control(0.6), (0.5, 0.5), None),
        ];
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
            .map(|(mut c, b, g)| {
                c.curve.clear();
                (c, b, g)
            })
            .collect();
        assert_eq!(equal_minutes(&full, &bare, "sft"), "");
    }
}
