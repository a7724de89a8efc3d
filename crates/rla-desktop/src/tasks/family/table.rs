//! A task's table and where it lies: the plain sheet's names and values, or the sheets world's
//! draw, with a perturbation applied.

use super::{Perturb, Spec, World};
use crate::sheet::addr::Addr;
use crate::sheet::workbook::{Content, Sheet, Workbook};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::json;

pub(super) const KEYS: [&str; 4] = ["Region", "Product", "Store", "Team"];
pub(super) const NAMES: [[&str; 7]; 4] = [
    [
        "north", "south", "east", "west", "central", "coast", "hills",
    ],
    ["tea", "coffee", "juice", "water", "cocoa", "milk", "soda"],
    ["Leeds", "Paris", "Lyon", "Turin", "Graz", "Bern", "Oslo"],
    ["red", "blue", "green", "gold", "gray", "teal", "pink"],
];
pub(super) const NUMERIC: [&str; 6] = ["Revenue", "Cost", "Units", "Price", "Tax", "Budget"];
pub(super) const NEW_NAMES: [&str; 6] = ["Profit", "Margin", "Net", "Score", "Gain", "Amount"];
/// The numeric columns a wide table adds after its first three.
pub(super) const MORE_NUMERIC: [&str; 6] =
    ["Weight", "Stock", "Orders", "Fees", "Hours", "Returns"];
pub(super) const TITLES: [&str; 4] = [
    "Quarterly figures",
    "Sales report",
    "Summary",
    "Figures by line",
];
pub(super) const NOTES: [&str; 4] = ["Source: ledger", "Draft", "Checked", "Figures rounded"];

/// Where a task's table lies and how its instruction is worded: its world's draw (the plain
/// sheet, or [`crate::tasks::sheets::draw`]), with one [`Perturb`] applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Layout {
    /// The header row (0-based).
    pub(super) top: u32,
    /// The key column (0-based).
    pub(super) left: u32,
    /// A title two rows above the header (a blank row between).
    pub(super) title: Option<String>,
    /// A note in the header row, right of the table and its new columns with a blank column
    /// between.
    pub(super) note: Option<String>,
    /// Numeric columns.
    pub(super) numeric: usize,
    /// Data rows, when not the family's own count.
    pub(super) rows: Option<usize>,
    /// Whether the instruction names columns and rows by letter and number.
    pub(super) located: bool,
    /// Whether the source and new-column names trade lists.
    pub(super) swapped: bool,
    /// Blank columns between the table and its first new column.
    pub(super) gap: u32,
    /// The sheets world's draw and pools (none: the plain wording).
    pub(super) draw: Option<(crate::tasks::sheets::Draw, crate::tasks::sheets::Pools)>,
}

impl Layout {
    pub(super) fn of(spec: &Spec) -> Layout {
        use crate::tasks::sheets::{draw, Pools};
        let mut l = Layout {
            top: 0,
            left: 0,
            title: None,
            note: None,
            numeric: 3,
            rows: None,
            located: true,
            swapped: false,
            gap: 0,
            draw: None,
        };
        if spec.world != World::Plain {
            let pools = if spec.world == World::HeldOut {
                Pools::HeldOut
            } else {
                Pools::Seen
            };
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(spec.seed ^ 0x5EE7_5000);
            let d = draw(&mut rng, pools);
            l.top = d.top;
            l.left = d.left;
            l.title = d.title.map(String::from);
            l.note = d.note.map(String::from);
            l.numeric = d.numeric;
            l.rows = Some(d.rows);
            l.located = d.located;
            l.gap = d.gap;
            l.draw = Some((d, pools));
        }
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(spec.seed ^ 0x1A70_u64);
        match spec.perturb {
            None => {}
            Some(Perturb::ShiftRight) => l.left += rng.gen_range(1..=3),
            Some(Perturb::ShiftDown) => l.top += rng.gen_range(1..=4),
            Some(Perturb::Gaps) => {
                l.top = l.top.max(2);
                if l.title.is_none() {
                    l.title = Some(TITLES[(spec.seed % TITLES.len() as u64) as usize].into());
                }
                if l.note.is_none() {
                    l.note = Some(NOTES[(spec.seed / 7 % NOTES.len() as u64) as usize].into());
                }
            }
            Some(Perturb::Wide) => l.numeric = 3 + rng.gen_range(2..=5),
            Some(Perturb::Long) => l.rows = Some(rng.gen_range(7..=30)),
            Some(Perturb::Unlocated) => l.located = false,
            Some(Perturb::SwappedNames) => l.swapped = true,
        }
        l
    }

    /// A cell of the table: `r` rows below the header, `c` columns right of the key column.
    pub(super) fn at(&self, r: u32, c: u32) -> Addr {
        Addr::new(self.top + r, self.left + c)
    }

    /// The sheet a copy goes to.
    pub(super) fn new_sheet(&self) -> String {
        self.draw
            .as_ref()
            .map_or("Sheet2", |(d, _)| d.sheet)
            .to_string()
    }
}

/// The table of a seed: a text key column and its numeric columns.
pub(super) struct Table {
    pub(super) headers: Vec<String>,
    pub(super) keys: Vec<String>,
    pub(super) values: Vec<Vec<i64>>,
    /// Names for new columns, in order.
    pub(super) new_names: Vec<String>,
}

impl Table {
    pub(super) fn new(seed: u64, rows: usize, l: &Layout) -> Table {
        if let Some((d, _)) = &l.draw {
            return Table::drawn(seed, rows, l, d);
        }
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let k = rng.gen_range(0..KEYS.len());
        let mut names: Vec<&str> = NAMES[k].to_vec();
        names.shuffle(&mut rng);
        let mut numeric: Vec<&str> = if l.swapped { NEW_NAMES } else { NUMERIC }.to_vec();
        numeric.shuffle(&mut rng);
        let mut values: Vec<Vec<i64>> = (0..rows)
            .map(|_| {
                vec![
                    rng.gen_range(1..200),
                    rng.gen_range(1..200),
                    rng.gen_range(1..50),
                ]
            })
            .collect();
        let mut headers: Vec<String> = std::iter::once(KEYS[k])
            .chain(numeric[..3].iter().copied())
            .map(String::from)
            .collect();
        let extra = l.numeric.saturating_sub(3);
        if extra > 0 {
            let mut more = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x3113);
            let mut extra_names: Vec<&str> = MORE_NUMERIC.to_vec();
            extra_names.shuffle(&mut more);
            headers.extend(extra_names[..extra].iter().map(|h| h.to_string()));
            for v in values.iter_mut() {
                v.extend((0..extra).map(|_| more.gen_range(1..200)));
            }
        }
        Table {
            headers,
            keys: numbered(&names, rows),
            values,
            // drawn in `generate`, after the columns
            new_names: vec![],
        }
    }

    /// The sheets world's table: the draw's key, names and counts.
    fn drawn(seed: u64, rows: usize, l: &Layout, d: &crate::tasks::sheets::Draw) -> Table {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let (mut numeric, mut new_names) = crate::tasks::sheets::split_names(d, 3);
        if l.numeric > numeric.len() {
            // a wide perturbation: more of the pool's names become columns
            let (more, rest) = crate::tasks::sheets::split_names(
                &crate::tasks::sheets::Draw {
                    numeric: l.numeric,
                    ..d.clone()
                },
                3,
            );
            numeric = more;
            new_names = rest;
        }
        if l.swapped {
            // the pool's names trade roles: new columns first, then the table's
            let n = new_names.len();
            let all: Vec<String> = new_names.iter().chain(&numeric).cloned().collect();
            new_names = all[all.len() - n..].to_vec();
            numeric = all[..all.len() - n].to_vec();
        }
        let values = (0..rows)
            .map(|_| {
                numeric
                    .iter()
                    .enumerate()
                    .map(|(i, _)| {
                        if i % 3 == 2 {
                            rng.gen_range(1..50)
                        } else {
                            rng.gen_range(1..200)
                        }
                    })
                    .collect()
            })
            .collect();
        let mut keys: Vec<&str> = d.key.1.to_vec();
        keys.shuffle(&mut rng);
        Table {
            headers: std::iter::once(d.key.0.to_string())
                .chain(numeric)
                .collect(),
            keys: numbered(&keys, rows),
            values,
            new_names,
        }
    }

    pub(super) fn book(&self, l: &Layout) -> Workbook {
        let mut s = Sheet::new("Sheet1");
        for (c, h) in self.headers.iter().enumerate() {
            s.cells.insert(l.at(0, c as u32), Content::Text(h.clone()));
        }
        for (r, (k, v)) in self.keys.iter().zip(&self.values).enumerate() {
            let r = r as u32 + 1;
            s.cells.insert(l.at(r, 0), Content::Text(k.clone()));
            for (c, x) in v.iter().enumerate() {
                s.cells
                    .insert(l.at(r, c as u32 + 1), Content::Number(*x as f64));
            }
        }
        if let Some(t) = &l.title {
            s.cells
                .insert(Addr::new(l.top - 2, l.left), Content::Text(t.clone()));
        }
        if let Some(t) = &l.note {
            // right of the table and its (up to three) new columns, a blank column between
            let c = self.headers.len() as u32 + l.gap + 4;
            s.cells.insert(l.at(0, c), Content::Text(t.clone()));
        }
        Workbook { sheets: vec![s] }
    }
}

/// `rows` key values from `names`, repeated with a number past the list's end (`tea 2`).
fn numbered(names: &[&str], rows: usize) -> Vec<String> {
    (0..rows)
        .map(|i| match i / names.len() {
            0 => names[i].to_string(),
            n => format!("{} {}", names[i % names.len()], n + 1),
        })
        .collect()
}

pub(super) fn list(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [a] => a.clone(),
        [a, b] => format!("{a} and {b}"),
        _ => format!(
            "{} and {}",
            names[..names.len() - 1].join(", "),
            names[names.len() - 1]
        ),
    }
}

/// Column `c` of the table (`c` counted from the key column) from the header down, rows
/// counted from the header.
pub(super) fn column(book: &Workbook, l: &Layout, c: u32, rows: usize) -> Vec<(u32, Content)> {
    (0..=rows as u32)
        .filter_map(|r| {
            book.sheets[0]
                .cells
                .get(&l.at(r, c))
                .map(|v| (r, v.clone()))
        })
        .collect()
}

pub(super) fn sheet_data(i0: &str, i1: &str) -> serde_json::Value {
    json!({"type": "sheet_data", "sheet_idx0": i0, "sheet_idx1": i1})
}
