//! The four kinds of task every setting draws: training tasks and the three evaluation splits.
//! Each setting maps a [`Split`] to its own tasks (the household's generated games, the coding
//! problems, the desktop's task families) and its own sizes.

use serde::{Deserialize, Serialize};

/// Which distribution a task comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Split {
    /// Training tasks.
    Train,
    /// Evaluation, the training distribution under a seed of its own.
    InDomain,
    /// Evaluation out of the training distribution.
    Ood,
    /// Validation: the in-domain distribution drawn with a seed of its own, for tuning
    /// settings; the fixed splits above are the ones reported.
    Validation,
}

impl Split {
    /// The three evaluation splits, in the order they are reported.
    pub const EVALUATION: [Split; 3] = [Split::InDomain, Split::Ood, Split::Validation];

    /// The split's name as configs, metrics and the command line write it.
    pub fn name(self) -> &'static str {
        match self {
            Split::Train => "train",
            Split::InDomain => "in_domain",
            Split::Ood => "ood",
            Split::Validation => "validation",
        }
    }

    /// The split a [`Split::name`] names.
    pub fn from_name(name: &str) -> Option<Split> {
        [Split::Train, Split::InDomain, Split::Ood, Split::Validation]
            .into_iter()
            .find(|s| s.name() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_serialised_forms() {
        for s in [Split::Train, Split::InDomain, Split::Ood, Split::Validation] {
            let json = serde_json::to_string(&s).unwrap();
            assert_eq!(json, format!("\"{}\"", s.name()));
            assert_eq!(Split::from_name(s.name()), Some(s));
        }
        assert_eq!(Split::from_name("in-domain"), None);
    }
}
