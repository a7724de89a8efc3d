//! Arguments several commands share.

use rla_core::Split;

/// `--split`: which of a setting's splits.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum SplitArg {
    /// The in-domain evaluation split.
    InDomain,
    /// The out-of-domain evaluation split.
    Ood,
    /// The validation split.
    Validation,
    /// Training tasks.
    Train,
}

impl From<SplitArg> for Split {
    fn from(s: SplitArg) -> Split {
        match s {
            SplitArg::InDomain => Split::InDomain,
            SplitArg::Ood => Split::Ood,
            SplitArg::Validation => Split::Validation,
            SplitArg::Train => Split::Train,
        }
    }
}
