//! Metrics of a run: a judge's process and outcome accuracy, success rate, task accuracies.

use crate::reward::StepScore;
use serde::{Deserialize, Serialize};

/// Agreement of judge verdicts with boolean labels.
///
/// *Process accuracy* uses per-step labels (the expert oracle: did the step make progress);
/// *outcome accuracy* uses the outcome of the step's trajectory. A verdict is correct when it is
/// `+1` on a positive label or `−1` on a negative one; unparsed verdicts are wrong.
pub fn judge_accuracy(verdicts: &[(StepScore, bool)]) -> Option<f64> {
    if verdicts.is_empty() {
        return None;
    }
    let correct = verdicts
        .iter()
        .filter(|(s, label)| {
            matches!(
                (s, label),
                (StepScore::Positive, true) | (StepScore::Negative, false)
            )
        })
        .count();
    Some(correct as f64 / verdicts.len() as f64)
}

/// Agreement of the judge's *aggregated* verdict — the sign of the mean of its m samples — with
/// the labels. A mean of 0 counts as wrong.
pub fn majority_accuracy(steps: &[(Vec<StepScore>, bool)]) -> Option<f64> {
    if steps.is_empty() {
        return None;
    }
    let correct = steps
        .iter()
        .filter(|(scores, label)| {
            let s: f64 = scores.iter().map(|s| s.value()).sum();
            (s > 0.0 && *label) || (s < 0.0 && !*label)
        })
        .count();
    Some(correct as f64 / steps.len() as f64)
}

/// Share of `true` in `won`; `None` when empty.
pub fn success_rate(won: &[bool]) -> Option<f64> {
    if won.is_empty() {
        None
    } else {
        Some(won.iter().filter(|&&w| w).count() as f64 / won.len() as f64)
    }
}

/// A histogram of task accuracies over `[0, 1]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccuracyHistogram {
    /// Left edges of the bins; the last bin is closed on the right.
    pub edges: Vec<f64>,
    /// Tasks per bin.
    pub counts: Vec<u64>,
}

/// Distribution of task accuracies in `bins` equal bins over `[0, 1]` (values are clamped).
pub fn accuracy_histogram(accs: &[f64], bins: usize) -> AccuracyHistogram {
    let bins = bins.max(1);
    let mut counts = vec![0u64; bins];
    for &a in accs {
        let a = a.clamp(0.0, 1.0);
        let i = ((a * bins as f64) as usize).min(bins - 1);
        counts[i] += 1;
    }
    AccuracyHistogram {
        edges: (0..bins).map(|i| i as f64 / bins as f64).collect(),
        counts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use StepScore::{Negative as N, Positive as P, Unparsed as U};

    #[test]
    fn accuracies() {
        let v = [(P, true), (N, false), (P, false), (U, true)];
        assert_eq!(judge_accuracy(&v), Some(0.5));
        assert_eq!(judge_accuracy(&[]), None);
        let steps = vec![
            (vec![P, P, N], true),
            (vec![P, N, U], true),
            (vec![N, N, P], false),
            (vec![P, P, P], false),
        ];
        assert_eq!(majority_accuracy(&steps), Some(0.5));
    }

    #[test]
    fn success_and_histogram() {
        assert_eq!(success_rate(&[true, false, false, true]), Some(0.5));
        assert_eq!(success_rate(&[]), None);
        let h = accuracy_histogram(&[0.0, 0.1, 0.5, 1.0, 1.0, 0.99], 4);
        assert_eq!(h.counts, vec![2, 0, 1, 3]);
        assert_eq!(h.edges, vec![0.0, 0.25, 0.5, 0.75]);
    }
}
