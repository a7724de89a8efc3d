//! The worlds tasks are drawn in, and the perturbations the robustness check applies to them.

use super::Family;
use rla_core::Split;
use serde::{Deserialize, Serialize};

/// One way a generated task departs from the plain sheet (a table at A1 with one text key
/// column, three numeric columns and 3–6 rows, an instruction that names where things go), as
/// OSWorld's real sheets do: the robustness check (`rlanything desktop eval --perturb KIND`,
/// `[desktop] perturb`) plays a split with one of them applied, everything else kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Perturb {
    /// The table starts one to three columns right of A.
    ShiftRight,
    /// The table starts one to four rows down.
    ShiftDown,
    /// A title row and a blank row above the table, and a note one blank column right of it.
    Gaps,
    /// Five to eight numeric columns instead of three.
    Wide,
    /// Seven to thirty data rows instead of three to six.
    Long,
    /// The instruction names no column letter or row number ("in a new column", "in a new row
    /// under the table").
    Unlocated,
    /// Source headers drawn from the new columns' names and new columns named from the source
    /// headers' list.
    SwappedNames,
}

impl Perturb {
    /// Every kind, in the order the robustness table lists them.
    pub const ALL: [Perturb; 7] = [
        Perturb::ShiftRight,
        Perturb::ShiftDown,
        Perturb::Gaps,
        Perturb::Wide,
        Perturb::Long,
        Perturb::Unlocated,
        Perturb::SwappedNames,
    ];

    /// The kind's name (`shift-right`, …).
    pub fn name(self) -> &'static str {
        match self {
            Perturb::ShiftRight => "shift-right",
            Perturb::ShiftDown => "shift-down",
            Perturb::Gaps => "gaps",
            Perturb::Wide => "wide",
            Perturb::Long => "long",
            Perturb::Unlocated => "unlocated",
            Perturb::SwappedNames => "swapped-names",
        }
    }

    /// The kind a name calls; the error lists the kinds.
    pub fn parse(name: &str) -> Result<Perturb, String> {
        Perturb::ALL
            .into_iter()
            .find(|p| p.name() == name)
            .ok_or_else(|| {
                let all: Vec<&str> = Perturb::ALL.iter().map(|p| p.name()).collect();
                format!("perturbation {name:?}: not one of {}", all.join(", "))
            })
    }
}

/// The world a task is drawn in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum World {
    /// The plain sheet: a table at A1 with one text key column, three numeric columns and 3–6
    /// rows, instructions that name where things go (what the shipped base learnt).
    #[default]
    Plain,
    /// OSWorld-like sheets ([`crate::tasks::sheets`]): tables anywhere, 2–8 numeric columns, up to 30
    /// rows, headers from one shared pool, paraphrased instructions without row numbers.
    Sheets,
    /// The sheets world's held-out pools (its OOD split): names, layouts and paraphrases never
    /// trained on.
    HeldOut,
}

impl World {
    /// Whether it is the plain world (the default, left out of files).
    pub fn is_plain(&self) -> bool {
        *self == World::Plain
    }

    /// The world a split's tasks are drawn in: the sheets world's OOD split is its held-out one.
    pub fn of_split(self, which: Split) -> World {
        match (self, which) {
            (World::Plain, _) => World::Plain,
            (_, Split::Ood) => World::HeldOut,
            _ => World::Sheets,
        }
    }

    /// The families of a split in this world (the training pool's are the in-domain ones).
    pub fn families(self, split: Split) -> &'static [Family] {
        match (self, split) {
            (_, Split::Ood) => &Family::OOD,
            (World::Plain, _) => &Family::IN_DOMAIN,
            _ => &Family::SHEETS_IN_DOMAIN,
        }
    }
}
