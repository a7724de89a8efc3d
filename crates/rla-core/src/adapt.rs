//! Environment adaptation: which way to rewrite a task, and when to accept the rewrite (paper §3.4).

use serde::{Deserialize, Serialize};

/// The difficulty band of environment adaptation.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AdaptConfig {
    /// α_low: at or below this accuracy a task is too hard (default 0.2).
    pub acc_low: f64,
    /// α_high: above this accuracy a task is too easy (default 0.8).
    pub acc_high: f64,
}

impl Default for AdaptConfig {
    fn default() -> Self {
        AdaptConfig {
            acc_low: 0.2,
            acc_high: 0.8,
        }
    }
}

impl AdaptConfig {
    /// Checks `0 ≤ acc_low < acc_high ≤ 1`.
    pub fn validate(&self) -> Result<(), String> {
        if !(0.0..=1.0).contains(&self.acc_low) {
            return Err(format!("acc_low = {} must lie in [0, 1]", self.acc_low));
        }
        if !(0.0..=1.0).contains(&self.acc_high) {
            return Err(format!("acc_high = {} must lie in [0, 1]", self.acc_high));
        }
        if self.acc_low >= self.acc_high {
            return Err(format!(
                "acc_low = {} must be below acc_high = {}",
                self.acc_low, self.acc_high
            ));
        }
        Ok(())
    }
}

/// Which rewrite a task needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// The task is too easy: propose a harder variant.
    Harder,
    /// The task is too hard: propose an easier variant.
    Easier,
    /// The task is in the band: keep it.
    Keep,
}

/// ```text
/// acc > α_high  → harder
/// acc ≤ α_low   → easier
/// otherwise     → keep
/// ```
pub fn adaptation_direction(acc: f64, cfg: &AdaptConfig) -> Direction {
    if acc > cfg.acc_high {
        Direction::Harder
    } else if acc <= cfg.acc_low {
        Direction::Easier
    } else {
        Direction::Keep
    }
}

/// Acceptance of a pending rewrite with measured accuracy `acc_new` of a task whose accuracy was
/// `acc`:
///
/// ```text
/// accept ⇔ acc' > 0 ∧ { harder: α_low ≤ acc' < acc
///                       easier: acc < acc' ≤ α_high }
/// ```
///
/// The rewrite must move toward the band without overshooting it. `Keep` never accepts.
pub fn accept_rewrite(direction: Direction, acc: f64, acc_new: f64, cfg: &AdaptConfig) -> bool {
    if acc_new <= 0.0 {
        return false;
    }
    match direction {
        Direction::Harder => cfg.acc_low <= acc_new && acc_new < acc,
        Direction::Easier => acc < acc_new && acc_new <= cfg.acc_high,
        Direction::Keep => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directions() {
        let c = AdaptConfig::default();
        assert_eq!(adaptation_direction(1.0, &c), Direction::Harder);
        assert_eq!(adaptation_direction(0.875, &c), Direction::Harder);
        assert_eq!(adaptation_direction(0.8, &c), Direction::Keep);
        assert_eq!(adaptation_direction(0.5, &c), Direction::Keep);
        assert_eq!(adaptation_direction(0.25, &c), Direction::Keep);
        assert_eq!(adaptation_direction(0.2, &c), Direction::Easier);
        assert_eq!(adaptation_direction(0.0, &c), Direction::Easier);
    }

    #[test]
    fn acceptance_harder() {
        let c = AdaptConfig::default();
        assert!(accept_rewrite(Direction::Harder, 1.0, 0.5, &c));
        assert!(accept_rewrite(Direction::Harder, 1.0, 0.2, &c));
        assert!(!accept_rewrite(Direction::Harder, 1.0, 0.125, &c)); // overshoot
        assert!(!accept_rewrite(Direction::Harder, 0.875, 0.875, &c)); // not harder
        assert!(!accept_rewrite(Direction::Harder, 0.875, 1.0, &c));
    }

    #[test]
    fn acceptance_easier() {
        let c = AdaptConfig::default();
        assert!(!accept_rewrite(Direction::Easier, 0.0, 0.0, &c)); // acc' must be > 0
        assert!(accept_rewrite(Direction::Easier, 0.0, 0.125, &c));
        assert!(accept_rewrite(Direction::Easier, 0.125, 0.8, &c));
        assert!(!accept_rewrite(Direction::Easier, 0.125, 0.875, &c)); // overshoot
        assert!(!accept_rewrite(Direction::Easier, 0.125, 0.125, &c));
        assert!(!accept_rewrite(Direction::Keep, 0.5, 0.6, &c));
    }

    #[test]
    fn validation() {
        assert!(AdaptConfig {
            acc_low: 0.8,
            acc_high: 0.2
        }
        .validate()
        .unwrap_err()
        .contains("acc_low"));
        assert!(AdaptConfig {
            acc_low: 0.5,
            acc_high: 0.5
        }
        .validate()
        .is_err());
        assert!(AdaptConfig::default().validate().is_ok());
    }
}
