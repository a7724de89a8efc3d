//! Task filters: which tasks contribute training samples (the reference implementation's bands).

use serde::{Deserialize, Serialize};

/// A closed accuracy band `[low, high]`.
///
/// Policy samples come only from tasks whose rollout accuracy lies in [`Band::POLICY`]
/// (`[1/8, 7/8]`); reward-model samples only from tasks in [`Band::REWARD`] (`[0.2, 0.8]`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Band {
    /// Lowest accuracy admitted (inclusive).
    pub low: f64,
    /// Highest accuracy admitted (inclusive).
    pub high: f64,
}

impl Band {
    /// The policy's band `[1/8, 7/8]`.
    pub const POLICY: Band = Band {
        low: 0.125,
        high: 0.875,
    };
    /// The reward model's band `[0.2, 0.8]`.
    pub const REWARD: Band = Band {
        low: 0.2,
        high: 0.8,
    };

    /// `low ≤ acc ≤ high`.
    pub fn contains(&self, acc: f64) -> bool {
        self.low <= acc && acc <= self.high
    }

    /// Checks `0 ≤ low ≤ high ≤ 1`; the message names the offending bound.
    pub fn validate(&self) -> Result<(), String> {
        if !(0.0..=1.0).contains(&self.low) {
            return Err(format!("band low = {} must lie in [0, 1]", self.low));
        }
        if !(0.0..=1.0).contains(&self.high) {
            return Err(format!("band high = {} must lie in [0, 1]", self.high));
        }
        if self.low > self.high {
            return Err(format!(
                "band low = {} must not exceed high = {}",
                self.low, self.high
            ));
        }
        Ok(())
    }
}

/// Rollout accuracy of a task: the share of successful rollouts (0 for no rollouts).
pub fn task_accuracy(successes: usize, rollouts: usize) -> f64 {
    if rollouts == 0 {
        0.0
    } else {
        successes as f64 / rollouts as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_band_with_eight_rollouts() {
        let accs: Vec<bool> = (0..=8)
            .map(|k| Band::POLICY.contains(task_accuracy(k, 8)))
            .collect();
        assert_eq!(
            accs,
            vec![false, true, true, true, true, true, true, true, false]
        );
    }

    #[test]
    fn reward_band_edges() {
        assert!(Band::REWARD.contains(0.2));
        assert!(Band::REWARD.contains(0.8));
        assert!(!Band::REWARD.contains(0.125));
        assert!(!Band::REWARD.contains(0.875));
        assert!(Band::REWARD.contains(0.5));
    }

    #[test]
    fn validation_names_the_bound() {
        assert!(Band {
            low: 0.9,
            high: 0.1
        }
        .validate()
        .unwrap_err()
        .contains("low"));
        assert!(Band {
            low: 0.0,
            high: 1.5
        }
        .validate()
        .unwrap_err()
        .contains("high"));
        assert!(Band::POLICY.validate().is_ok());
    }
}
