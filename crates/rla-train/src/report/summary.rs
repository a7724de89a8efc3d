//! The before/after summary of a run's evaluations and its verdict, as `quickstart` and
//! `report` print them.

use crate::config::EvalConfig;
use crate::evals::{recorded, SplitEval};
use crate::run::IterMetrics;
use crate::setting::Split;
use anyhow::Result;
use std::path::Path;

/// A success in percent, with its standard error where it was sampled.
fn cell(v: Option<f64>, se: Option<f64>) -> String {
    match (v, se) {
        (Some(v), Some(se)) => format!("{:.1}% ± {:.1}", 100.0 * v, 100.0 * se),
        (Some(v), None) => format!("{:.1}%", 100.0 * v),
        (None, _) => "—".into(),
    }
}

/// The before/after table of the run in `run` (its metrics `ms`): each split's success at the
/// warm start and at the last evaluation — sampled, ± its standard error over the tasks — and
/// the change, paired task by task where the run kept both evaluations (`run/evals/`,
/// [`crate::evals`]); greedy success beside it where recorded; the validation curve; and a plain
/// verdict on the in-domain change. Paired: the difference from the base on the same tasks and
/// draws against two of its paired standard errors. A run that kept no per-task scores (recorded
/// before, or a setting that cannot sample): the change against two standard errors of the
/// difference of two success rates on `eval.in_domain` tasks. `spread`, the change over seeds
/// measured on the reference machine, is set beside the verdict.
pub fn summary(
    run: &Path,
    ms: &[IterMetrics],
    eval: &EvalConfig,
    spread: Option<&str>,
) -> Result<String> {
    use std::fmt::Write;
    let evals: Vec<&IterMetrics> = ms.iter().filter(|m| m.eval_in_domain.is_some()).collect();
    let (Some(first), Some(last)) = (evals.first(), evals.last()) else {
        anyhow::bail!("the run has no evaluation to summarise");
    };
    let mut s = String::new();
    writeln!(
        s,
        "{:<18} {:>6} {:>14} {:>16} {:>16}",
        "",
        "tasks",
        "warm start",
        format!("iteration {}", last.iteration),
        "change"
    )?;
    let mut in_domain = None;
    for (split, name, n) in [
        (Split::InDomain, "in-domain", eval.in_domain),
        (Split::Ood, "OOD", eval.ood),
        (Split::Validation, "validation", eval.validation),
    ] {
        let (Some(a), a_se, _) = recorded(first, split) else {
            continue;
        };
        let (Some(b), b_se, _) = recorded(last, split) else {
            continue;
        };
        let kept = (
            SplitEval::read(run, split, last.iteration)?,
            SplitEval::read(run, split, first.iteration)?,
        );
        let paired = match &kept {
            (Some(after), Some(base)) => Some((after.paired(base)?, after.sampling)),
            _ => None,
        };
        let change = match &paired {
            Some((p, _)) => format!("{:+.1} ± {:.1}", 100.0 * p.mean, 100.0 * p.std_error),
            None => format!("{:+.1}", 100.0 * (b - a)),
        };
        writeln!(
            s,
            "{name:<18} {n:>6} {:>14} {:>16} {change:>16}",
            cell(Some(a), a_se),
            cell(Some(b), b_se),
        )?;
        if split == Split::InDomain {
            in_domain = Some((a, b, paired));
        }
    }
    for (split, name, n) in [
        (Split::InDomain, "greedy in-domain", eval.in_domain),
        (Split::Ood, "greedy OOD", eval.ood),
        (Split::Validation, "greedy validation", eval.validation),
    ] {
        if let ((_, _, Some(a)), (_, _, Some(b))) = (recorded(first, split), recorded(last, split))
        {
            writeln!(
                s,
                "{name:<18} {n:>6} {:>14} {:>16} {:>+16.1}",
                cell(Some(a), None),
                cell(Some(b), None),
                100.0 * (b - a)
            )?;
        }
    }
    let curve: Vec<String> = evals
        .iter()
        .filter_map(|m| {
            m.eval_validation
                .map(|v| format!("{:.1}% (iter {})", 100.0 * v, m.iteration))
        })
        .collect();
    if !curve.is_empty() {
        writeln!(s, "validation curve: {}", curve.join(" → "))?;
    }
    let (a, b, paired) = in_domain.unwrap_or((0.0, 0.0, None));
    match paired {
        Some((p, sampling)) => {
            let verdict = if !p.beyond(2.0) {
                "within noise"
            } else if p.mean > 0.0 {
                "above the base"
            } else {
                "below the base"
            };
            write!(
                s,
                "verdict: in-domain {:+.1} ± {:.1} points from the base (paired, {} tasks × {} \
                 samples, T={}): {verdict}",
                100.0 * p.mean,
                100.0 * p.std_error,
                p.n,
                sampling.samples,
                sampling.temperature
            )?;
        }
        None => {
            let n_in = eval.in_domain;
            let se = rla_core::stats::difference_std_error(a, b, n_in).unwrap_or(0.0);
            let d = b - a;
            let verdict = if d > 2.0 * se {
                "the policy learned"
            } else if d < -2.0 * se {
                "the policy got worse"
            } else {
                "no change beyond noise"
            };
            write!(
                s,
                "verdict: {verdict}: in-domain {:+.1} points, against ±{:.1} (two standard errors \
                 of a {n_in}-task difference)",
                100.0 * d,
                200.0 * se
            )?;
        }
    }
    match spread {
        Some(sp) => writeln!(
            s,
            "; over 3 seeds on the reference machine the change was {sp}"
        )?,
        None => writeln!(s)?,
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::summary;
    use crate::config::EvalConfig;
    use crate::evals::SplitEval;
    use crate::run::IterMetrics;
    use crate::setting::{Sampling, Split};

    fn evals(pairs: &[(usize, f64, f64, Option<f64>)]) -> Vec<IterMetrics> {
        pairs
            .iter()
            .map(|&(k, i, o, v)| IterMetrics {
                iteration: k,
                eval_in_domain: Some(i),
                eval_ood: Some(o),
                eval_validation: v,
                ..Default::default()
            })
            .collect()
    }

    fn eval(validation: usize) -> EvalConfig {
        EvalConfig {
            in_domain: 140,
            ood: 134,
            validation,
            ..Default::default()
        }
    }

    #[test]
    fn without_kept_evaluations_the_verdict_weighs_the_change_against_the_noise_of_the_split() {
        let run = tempfile::tempdir().unwrap();
        let learned = summary(
            run.path(),
            &evals(&[
                (0, 0.08, 0.06, Some(0.05)),
                (6, 0.2, 0.1, Some(0.15)),
                (12, 0.3, 0.2, Some(0.25)),
            ]),
            &eval(140),
            Some("+1 to +2 points"),
        )
        .unwrap();
        assert!(
            learned.contains("verdict: the policy learned: in-domain +22.0 points"),
            "{learned}"
        );
        assert!(
            learned.contains("validation curve: 5.0% (iter 0) → 15.0% (iter 6) → 25.0% (iter 12)"),
            "{learned}"
        );
        assert!(learned.contains("iteration 12"), "{learned}");
        assert!(
            learned.contains("the change was +1 to +2 points\n"),
            "{learned}"
        );
        // two tasks of 140 is within the noise
        let flat = summary(
            run.path(),
            &evals(&[(0, 0.079, 0.06, None), (12, 0.093, 0.06, None)]),
            &eval(0),
            None,
        )
        .unwrap();
        assert!(flat.contains("verdict: no change beyond noise"), "{flat}");
        assert!(!flat.contains("validation"), "{flat}");
        let worse = summary(
            run.path(),
            &evals(&[(0, 0.3, 0.2, None), (12, 0.1, 0.2, None)]),
            &eval(0),
            None,
        )
        .unwrap();
        assert!(worse.contains("verdict: the policy got worse"), "{worse}");
        assert!(summary(run.path(), &[], &eval(0), None).is_err());
    }

    #[test]
    fn kept_evaluations_give_a_paired_sampled_verdict() {
        let run = tempfile::tempdir().unwrap();
        let sampling = Sampling {
            temperature: 0.8,
            samples: 2,
            seed: 7,
        };
        // four tasks, two episodes each: the base wins 1, 0.5, 0, 0.5; the end 1, 1, 0.5, 0.5
        let keep = |k: usize, scores: &[[f64; 2]]| {
            let per: Vec<Vec<f64>> = scores.iter().map(|s| s.to_vec()).collect();
            let e = SplitEval::of(Split::InDomain, k, sampling, &per).unwrap();
            e.write(run.path()).unwrap();
            e
        };
        let base = keep(0, &[[1.0, 1.0], [1.0, 0.0], [0.0, 0.0], [0.0, 1.0]]);
        let end = keep(8, &[[1.0, 1.0], [1.0, 1.0], [1.0, 0.0], [1.0, 0.0]]);
        let ms = vec![
            IterMetrics {
                iteration: 0,
                eval_in_domain: Some(base.mean),
                eval_in_domain_se: Some(base.std_error),
                eval_ood: Some(0.5),
                eval_ood_se: Some(0.1),
                eval_in_domain_greedy: Some(0.25),
                ..Default::default()
            },
            IterMetrics {
                iteration: 8,
                eval_in_domain: Some(end.mean),
                eval_in_domain_se: Some(end.std_error),
                eval_ood: Some(0.5),
                eval_ood_se: Some(0.1),
                eval_in_domain_greedy: Some(0.5),
                ..Default::default()
            },
        ];
        let cfg = EvalConfig {
            in_domain: 4,
            ood: 4,
            ..Default::default()
        };
        let s = summary(run.path(), &ms, &cfg, None).unwrap();
        // differences 0, 0.5, 0.5, 0: +25 points, sample sd 0.2887, so ± 14.4
        assert!(
            s.contains(
                "verdict: in-domain +25.0 ± 14.4 points from the base (paired, 4 tasks × 2 \
                 samples, T=0.8): within noise\n"
            ),
            "{s}"
        );
        assert!(s.contains("50.0% ± 20.4"), "{s}");
        // no kept OOD evaluation: the plain change
        assert!(s.contains("OOD"), "{s}");
        assert!(s.contains("greedy in-domain"), "{s}");
        // the same evaluation twice: 0.0 ± 0.0, within noise
        end.write(run.path()).unwrap();
        let same = SplitEval {
            iteration: 0,
            ..end.clone()
        };
        same.write(run.path()).unwrap();
        let s = summary(run.path(), &ms, &cfg, None).unwrap();
        assert!(s.contains("in-domain +0.0 ± 0.0 points"), "{s}");
        assert!(s.contains("within noise"), "{s}");
        // a clear gain is above the base
        let up = SplitEval::of(
            Split::InDomain,
            8,
            sampling,
            &[
                vec![1.0, 1.0],
                vec![1.0, 1.0],
                vec![1.0, 1.0],
                vec![1.0, 1.0],
            ],
        )
        .unwrap();
        up.write(run.path()).unwrap();
        SplitEval::of(
            Split::InDomain,
            0,
            sampling,
            &[
                vec![0.0, 0.0],
                vec![0.0, 0.0],
                vec![0.0, 0.0],
                vec![0.0, 1.0],
            ],
        )
        .unwrap()
        .write(run.path())
        .unwrap();
        let s = summary(run.path(), &ms, &cfg, None).unwrap();
        assert!(s.contains(": above the base\n"), "{s}");
    }
}
