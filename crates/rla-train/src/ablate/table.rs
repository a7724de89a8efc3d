//! The ablation's table: each mode's success on the splits it evaluated — sampled, with its
//! standard error over the tasks — and its paired difference from the base (the warm start
//! evaluated on the same tasks with the same draws: the runs' initial evaluation, kept task by
//! task in `RUN/evals/`), greedy success where the runs recorded it, the judge's quality and μ,
//! the setting's own extra evaluations, and the SFT controls' rows.

use super::{equal_minutes, spread, AblationRun, Control};
use crate::config::{EvalConfig, Mode};
use crate::control::{ControlKind, ControlResult};
use crate::evals::{recorded, SplitEval};
use crate::run::IterMetrics;
use crate::setting::Split;
use anyhow::Result;
use rla_core::stats::Paired;
use std::path::Path;

/// A success and its standard error where it was sampled.
type Scored = (f64, Option<f64>);

/// One split's results of a run or a control: the base's success and its own, their paired
/// difference, and greedy success where the run recorded it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct SplitResult {
    /// The split.
    pub split: Split,
    /// The base's success (the run's first evaluation).
    pub base: Scored,
    /// The run's last evaluation's (the control's final one).
    pub after: Scored,
    /// `after − base` task by task, where both evaluations were kept.
    pub paired: Option<Paired>,
    /// Greedy success of the base and after, with `eval.greedy`.
    pub greedy: (Option<f64>, Option<f64>),
}

/// A setting's extra evaluation of a seed's base and of a run: won by the base, won by the
/// run's policy, of how many.
pub(super) type Extra = (usize, usize, usize);

/// The paired difference of two kept evaluations, where both were kept.
fn pair(after: Option<SplitEval>, base: Option<SplitEval>) -> Result<Option<Paired>> {
    match (after, base) {
        (Some(a), Some(b)) => a.paired(&b).map(Some),
        _ => Ok(None),
    }
}

/// A run's results on each split it evaluated: its first evaluation (the base) against its
/// last, paired through the per-task scores it kept in `dir/evals/`.
pub(super) fn of_run(dir: &Path, ms: &[IterMetrics]) -> Result<Vec<SplitResult>> {
    let mut out = vec![];
    let Some(first) = ms.first() else {
        return Ok(out);
    };
    for split in Split::EVALUATION {
        let (Some(b), b_se, b_greedy) = recorded(first, split) else {
            continue;
        };
        let Some(last) = ms.iter().rev().find(|m| recorded(m, split).0.is_some()) else {
            continue;
        };
        let (a, a_se, a_greedy) = recorded(last, split);
        let paired = pair(
            SplitEval::read(dir, split, last.iteration)?,
            SplitEval::read(dir, split, first.iteration)?,
        )?;
        out.push(SplitResult {
            split,
            base: (b, b_se),
            after: (a.unwrap_or(b), a_se),
            paired,
            greedy: (b_greedy, a_greedy),
        });
    }
    Ok(out)
}

/// A control's results: the compared run's base (the same warm start, kept in `full_dir`)
/// against the control's final evaluation (kept in `sft` at `iteration`, the run's last).
pub(super) fn of_control(
    (full_dir, full): (&Path, &[SplitResult]),
    sft: &Path,
    r: &ControlResult,
    iteration: usize,
) -> Result<Vec<SplitResult>> {
    full.iter()
        .map(|f| {
            let success = match f.split {
                Split::Ood => r.ood,
                Split::Validation => r.validation.unwrap_or(0.0),
                Split::InDomain | Split::Train => r.in_domain,
            };
            let kept = SplitEval::read(sft, f.split, iteration)?;
            let se = kept.as_ref().map(|k| k.std_error);
            Ok(SplitResult {
                split: f.split,
                base: f.base,
                after: (success, se),
                paired: pair(kept, SplitEval::read(full_dir, f.split, 0)?)?,
                greedy: (f.greedy.0, None),
            })
        })
        .collect()
}

/// Successes in percent: one seed's `x ± se`; several seeds' mean, ± the standard error of that
/// mean (√Σse² / seeds), and their range. `signed` differences carry their sign. No ± where one
/// was not sampled; `—` for none.
fn scored(xs: &[Scored], signed: bool) -> String {
    if xs.is_empty() {
        return "—".into();
    }
    let values: Vec<f64> = xs.iter().map(|x| x.0).collect();
    let (m, lo, hi) = spread(&values);
    let v = |x: f64| {
        if signed {
            format!("{:+.1}", 100.0 * x)
        } else {
            format!("{:.1}", 100.0 * x)
        }
    };
    let mut s = v(m);
    if let Some(ses) = xs.iter().map(|x| x.1).collect::<Option<Vec<f64>>>() {
        let se = ses.iter().map(|e| e * e).sum::<f64>().sqrt() / ses.len() as f64;
        s.push_str(&format!(" ± {:.1}", 100.0 * se));
    }
    if xs.len() > 1 {
        let sep = if signed { " to " } else { "–" };
        s.push_str(&format!(" ({}{sep}{})", v(lo), v(hi)));
    }
    s
}

/// `mean (min–max)` of counts, or the single count for one seed; `—` for none.
fn count(xs: &[usize]) -> String {
    let xs: Vec<f64> = xs.iter().map(|&x| x as f64).collect();
    if xs.is_empty() {
        return "—".into();
    }
    let (m, lo, hi) = spread(&xs);
    if xs.len() == 1 {
        format!("{m:.0}")
    } else {
        format!("{m:.1} ({lo:.0}–{hi:.0})")
    }
}

/// The split's name in the table.
fn name(split: Split) -> &'static str {
    match split {
        Split::InDomain => "in-domain",
        Split::Ood => "OOD",
        Split::Validation => "validation",
        Split::Train => "train",
    }
}

/// The cells of one row's splits: success and Δ from the base for each split, then greedy
/// success for each where `greedy`.
fn split_cells(
    splits: &[Split],
    results: &[&[SplitResult]],
    greedy: bool,
    pick: impl Fn(&SplitResult) -> (Scored, Option<Scored>, Option<f64>),
) -> String {
    let of = |s: Split| -> Vec<(Scored, Option<Scored>, Option<f64>)> {
        results
            .iter()
            .filter_map(|r| r.iter().find(|x| x.split == s))
            .map(&pick)
            .collect()
    };
    let mut cells = String::new();
    for &s in splits {
        let xs = of(s);
        let success: Vec<Scored> = xs.iter().map(|x| x.0).collect();
        // the difference over seeds only where every seed's was paired
        let delta: Option<Vec<Scored>> = xs.iter().map(|x| x.1).collect();
        let delta = match delta {
            Some(d) if !d.is_empty() => scored(&d, true),
            _ => "—".into(),
        };
        cells.push_str(&format!(" {} | {delta} |", scored(&success, false)));
    }
    if greedy {
        for &s in splits {
            let g: Vec<Scored> = of(s)
                .iter()
                .filter_map(|x| x.2)
                .map(|g| (g, None))
                .collect();
            cells.push_str(&format!(" {} |", scored(&g, false)));
        }
    }
    cells
}

/// The ablation's table (Markdown): the base's row, a row per mode, the controls' rows, then
/// each control beside `full` at equal minutes, and what the figures are. `extras` names the
/// setting's own extra evaluations, in the order the runs hold them.
pub(super) fn table(
    modes: &[Mode],
    runs: &[Vec<AblationRun>],
    controls: &[Control],
    (judge_a, judge_b): (&str, &str),
    (eval, extras): (&EvalConfig, &[String]),
) -> String {
    let all = runs.iter().flatten();
    let splits: Vec<Split> = Split::EVALUATION
        .into_iter()
        .filter(|s| all.clone().any(|r| r.splits.iter().any(|x| x.split == *s)))
        .collect();
    let greedy = all
        .clone()
        .flat_map(|r| &r.splits)
        .any(|x| x.greedy.1.is_some());
    let mut head = String::from("| mode |");
    for &s in &splits {
        head.push_str(&format!(" {} | Δ {} from the base |", name(s), name(s)));
    }
    if greedy {
        for &s in &splits {
            head.push_str(&format!(" greedy {} |", name(s)));
        }
    }
    head.push_str(&format!(" {judge_a} | {judge_b} | μ (last) |"));
    for (i, e) in extras.iter().enumerate() {
        let of = all
            .clone()
            .filter_map(|r| r.extras.get(i))
            .map(|x| x.2)
            .next();
        match of {
            Some(n) => head.push_str(&format!(" {e} (of {n}) |")),
            None => head.push_str(&format!(" {e} |")),
        }
    }
    let columns = head.matches('|').count() - 1;
    let mut t = format!("{head}\n|{}\n", "---|".repeat(columns));
    let extra_cells = |xs: &[&[Extra]], pick: fn(&Extra) -> usize| -> String {
        (0..extras.len())
            .map(|i| {
                let c: Vec<usize> = xs.iter().filter_map(|x| x.get(i)).map(pick).collect();
                format!(" {} |", count(&c))
            })
            .collect()
    };
    // the base: each seed's warm start, as the first mode's runs evaluated it
    if let Some(first) = runs.first().filter(|rs| !rs.is_empty()) {
        let results: Vec<&[SplitResult]> = first.iter().map(|r| r.splits.as_slice()).collect();
        let cells = split_cells(&splits, &results, greedy, |x| (x.base, None, x.greedy.0));
        let ex: Vec<&[Extra]> = first.iter().map(|r| r.extras.as_slice()).collect();
        t.push_str(&format!(
            "| base (warm start) |{cells} — | — | — |{}\n",
            extra_cells(&ex, |x| x.0)
        ));
    }
    let after = |x: &SplitResult| {
        (
            x.after,
            x.paired.map(|p| (p.mean, Some(p.std_error))),
            x.greedy.1,
        )
    };
    for (mode, rs) in modes.iter().zip(runs) {
        let results: Vec<&[SplitResult]> = rs.iter().map(|r| r.splits.as_slice()).collect();
        let judge = |f: fn(&AblationRun) -> Option<f64>| {
            let xs: Vec<Scored> = rs.iter().filter_map(f).map(|x| (x, None)).collect();
            scored(&xs, false)
        };
        let mu: Vec<f64> = rs.iter().filter_map(|r| r.mu).collect();
        let mu = if mu.is_empty() {
            "—".to_string()
        } else {
            let (m, lo, hi) = spread(&mu);
            format!("{m:.2} ({lo:.2}–{hi:.2})")
        };
        let ex: Vec<&[Extra]> = rs.iter().map(|r| r.extras.as_slice()).collect();
        t.push_str(&format!(
            "| {} |{} {} | {} | {mu} |{}\n",
            mode.name(),
            split_cells(&splits, &results, greedy, after),
            judge(|r| r.judge.0),
            judge(|r| r.judge.1),
            extra_cells(&ex, |x| x.1)
        ));
    }
    let kinds: Vec<(ControlKind, Vec<Control>)> = ControlKind::ALL
        .into_iter()
        .map(|k| {
            let of: Vec<Control> = controls
                .iter()
                .filter(|c| c.result.kind == k)
                .cloned()
                .collect();
            (k, of)
        })
        .filter(|(_, of)| !of.is_empty())
        .collect();
    for (kind, cs) in &kinds {
        let results: Vec<&[SplitResult]> = cs.iter().map(|c| c.splits.as_slice()).collect();
        let ex: Vec<&[Extra]> = cs.iter().map(|c| c.extras.as_slice()).collect();
        t.push_str(&format!(
            "| {} (control) |{} — | — | — |{}\n",
            kind.name(),
            split_cells(&splits, &results, greedy, after),
            extra_cells(&ex, |x| x.1)
        ));
    }
    t.push_str(&format!(
        "\nSuccess in %: the mean over the tasks of each task's share of won episodes, {} \
         episodes a task sampled at temperature {}, ± its standard error over the tasks. Δ: the \
         paired difference from the base — the warm start evaluated on the same tasks with the \
         same draws — ± its paired standard error (beyond noise when |Δ| > 2 of them). Over \
         several seeds: the mean over the seeds, ± the standard error of that mean, and the \
         seeds' range.\n",
        eval.samples, eval.temperature
    ));
    if let Some(full) = modes.iter().position(|&m| m == Mode::Full) {
        for (kind, cs) in &kinds {
            t.push_str(&equal_minutes(&runs[full], cs, kind.name()));
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(split: Split, base: f64, after: f64, paired: Option<Paired>) -> SplitResult {
        SplitResult {
            split,
            base: (base, Some(0.01)),
            after: (after, Some(0.02)),
            paired,
            greedy: (None, None),
        }
    }

    fn run(splits: Vec<SplitResult>, extras: Vec<Extra>) -> AblationRun {
        AblationRun {
            judge: (Some(0.7), None),
            mu: Some(1.2),
            metrics: vec![],
            splits,
            extras,
        }
    }

    #[test]
    fn identical_policies_differ_by_nothing_and_a_change_shows_its_paired_error() {
        let same = Paired {
            mean: 0.0,
            std_error: 0.0,
            n: 140,
        };
        let up = Paired {
            mean: 0.023,
            std_error: 0.011,
            n: 140,
        };
        let runs = vec![
            vec![run(
                vec![
                    result(Split::InDomain, 0.9, 0.9, Some(same)),
                    result(Split::Ood, 0.7, 0.7, Some(same)),
                ],
                vec![(3, 3, 20)],
            )],
            vec![run(
                vec![
                    result(Split::InDomain, 0.9, 0.923, Some(up)),
                    result(Split::Ood, 0.7, 0.72, None),
                ],
                vec![(3, 5, 20)],
            )],
        ];
        let t = table(
            &[Mode::Outcome, Mode::Full],
            &runs,
            &[],
            ("process acc", "outcome acc"),
            (&EvalConfig::default(), &["games won".to_string()]),
        );
        assert!(
            t.starts_with(
                "| mode | in-domain | Δ in-domain from the base | OOD | Δ OOD from the base | \
                 process acc | outcome acc | μ (last) | games won (of 20) |\n|---|---|---|---|---|---|---|---|---|\n"
            ),
            "{t}"
        );
        assert!(
            t.contains("| base (warm start) | 90.0 ± 1.0 | — | 70.0 ± 1.0 | — | — | — | — | 3 |\n"),
            "{t}"
        );
        assert!(
            t.contains("| outcome | 90.0 ± 2.0 | +0.0 ± 0.0 | 70.0 ± 2.0 | +0.0 ± 0.0 | 70.0 | — | 1.20 (1.20–1.20) | 3 |\n"),
            "{t}"
        );
        // a split whose evaluations were not both kept has no paired difference
        assert!(
            t.contains("| full | 92.3 ± 2.0 | +2.3 ± 1.1 | 72.0 ± 2.0 | — |"),
            "{t}"
        );
        assert!(
            t.contains("8 episodes a task sampled at temperature 0.8"),
            "{t}"
        );
    }

    #[test]
    fn seeds_give_the_mean_its_standard_error_and_the_range() {
        // two seeds' differences +1 ± 3 and +3 ± 4 (points): mean +2, ± √(9 + 16) / 2 = 2.5
        let d = [(0.01, Some(0.03)), (0.03, Some(0.04))];
        assert_eq!(scored(&d, true), "+2.0 ± 2.5 (+1.0 to +3.0)");
        assert_eq!(
            scored(&[(0.5, Some(0.01)), (0.7, None)], false),
            "60.0 (50.0–70.0)"
        );
        assert_eq!(scored(&[], false), "—");
        assert_eq!(count(&[3, 5]), "4.0 (3–5)");
    }
}
