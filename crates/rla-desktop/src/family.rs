//! Spreadsheet task families generated from a seed, in OSWorld's task format with RLAnything's
//! evaluator variants: each task has `evaluator1` and `evaluator2` (a harder variant) in its
//! `task_template` and `evaluator_list`, expected workbooks for both, and 1–3 objects (columns)
//! for difficulty.
//!
//! | family | evaluator1 | evaluator2 |
//! |---|---|---|
//! | copy | copy the column(s) to a new sheet `Sheet2` | … and rename the first copied header |
//! | computed (`-`, `+`, `*`) | add column(s) X = A op B | … and their total in a `Total` row |
//! | total (SUM, AVERAGE, MAX) | a `Total` row with the aggregate of the column(s) | … and an `Average` row |
//! | sort (ascending, descending) | sort the table by a column | … then copy its first column to `Sheet2` |
//!
//! The fixed splits: in-domain tasks are copy, computed `-`/`+` and total SUM; OOD tasks are the
//! families and variants never trained on — sort, computed `*`, total AVERAGE and MAX.

use crate::addr::{col_name, Addr};
use crate::task::DesktopTask;
use crate::workbook::{Content, Sheet, Workbook};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;

/// An arithmetic operator of a computed column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arith {
    /// A − B.
    Sub,
    /// A + B.
    Add,
    /// A × B.
    Mul,
}

/// An aggregate of a total row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Agg {
    /// SUM.
    Sum,
    /// AVERAGE.
    Average,
    /// MAX.
    Max,
}

/// A task family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "with")]
pub enum Family {
    /// Copy columns to a new sheet.
    Copy,
    /// Add computed columns.
    Computed(Arith),
    /// A row of aggregates under the table.
    Total(Agg),
    /// Sort the table (descending if true).
    Sort(bool),
    /// A row counting the values of column(s) above a threshold (COUNTIF): reading the sheet's
    /// values, not only its layout.
    CountIf,
}

impl Family {
    /// A short name (`copy`, `computed-sub`, …).
    pub fn name(&self) -> String {
        match self {
            Family::Copy => "copy".into(),
            Family::Computed(a) => format!(
                "computed-{}",
                serde_json::to_value(a).unwrap().as_str().unwrap()
            ),
            Family::Total(a) => format!(
                "total-{}",
                serde_json::to_value(a).unwrap().as_str().unwrap()
            ),
            Family::Sort(d) => if *d { "sort-desc" } else { "sort-asc" }.into(),
            Family::CountIf => "count-if".into(),
        }
    }

    /// The in-domain families.
    pub const IN_DOMAIN: [Family; 4] = [
        Family::Copy,
        Family::Computed(Arith::Sub),
        Family::Computed(Arith::Add),
        Family::Total(Agg::Sum),
    ];
    /// The sheets world's in-domain families: the plain ones and a count of values.
    pub const SHEETS_IN_DOMAIN: [Family; 5] = [
        Family::Copy,
        Family::Computed(Arith::Sub),
        Family::Computed(Arith::Add),
        Family::Total(Agg::Sum),
        Family::CountIf,
    ];
    /// The OOD families.
    pub const OOD: [Family; 5] = [
        Family::Sort(false),
        Family::Sort(true),
        Family::Computed(Arith::Mul),
        Family::Total(Agg::Average),
        Family::Total(Agg::Max),
    ];
}

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
    /// OSWorld-like sheets ([`crate::sheets`]): tables anywhere, 2–8 numeric columns, up to 30
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

/// A task: its family, the seed of its table, how many objects, which evaluator is active,
/// how many hints its instruction carries and how its sheet departs from the plain one.
/// Everything else is generated from these.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spec {
    /// The family.
    pub family: Family,
    /// The table's seed.
    pub seed: u64,
    /// Objects involved, 1–3.
    pub objects: u8,
    /// The active evaluator: 1 or 2.
    pub variant: u8,
    /// Hints added to the instruction, 0–2.
    pub hints: u8,
    /// How the sheet departs from its world's draw (none: as drawn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perturb: Option<Perturb>,
    /// The world it is drawn in.
    #[serde(default, skip_serializing_if = "World::is_plain")]
    pub world: World,
}

/// The most hints an instruction carries.
pub const MAX_HINTS: u8 = 2;

/// A generated task: the OSWorld task, its start workbook and the expected workbook of each
/// evaluator key.
#[derive(Debug, Clone)]
pub struct Generated {
    /// The spec it came from.
    pub spec: Spec,
    /// The task file.
    pub task: DesktopTask,
    /// The file name the task opens (`/home/user/<file>`).
    pub file: String,
    /// The workbook the task starts from.
    pub start: Workbook,
    /// The expected workbook of each evaluator key.
    pub expected: BTreeMap<String, Workbook>,
}

impl Generated {
    /// The active evaluator key.
    pub fn key(&self) -> String {
        format!("evaluator{}", self.spec.variant)
    }
    /// The expected workbook of the active evaluator.
    pub fn target(&self) -> &Workbook {
        &self.expected[&self.key()]
    }
}

const KEYS: [&str; 4] = ["Region", "Product", "Store", "Team"];
const NAMES: [[&str; 7]; 4] = [
    [
        "north", "south", "east", "west", "central", "coast", "hills",
    ],
    ["tea", "coffee", "juice", "water", "cocoa", "milk", "soda"],
    ["Leeds", "Paris", "Lyon", "Turin", "Graz", "Bern", "Oslo"],
    ["red", "blue", "green", "gold", "gray", "teal", "pink"],
];
const NUMERIC: [&str; 6] = ["Revenue", "Cost", "Units", "Price", "Tax", "Budget"];
const NEW_NAMES: [&str; 6] = ["Profit", "Margin", "Net", "Score", "Gain", "Amount"];
/// The numeric columns a wide table adds after its first three.
const MORE_NUMERIC: [&str; 6] = ["Weight", "Stock", "Orders", "Fees", "Hours", "Returns"];
const TITLES: [&str; 4] = [
    "Quarterly figures",
    "Sales report",
    "Summary",
    "Figures by line",
];
const NOTES: [&str; 4] = ["Source: ledger", "Draft", "Checked", "Figures rounded"];

/// Where a task's table lies and how its instruction is worded: its world's draw (the plain
/// sheet, or [`crate::sheets::draw`]), with one [`Perturb`] applied.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Layout {
    /// The header row (0-based).
    top: u32,
    /// The key column (0-based).
    left: u32,
    /// A title two rows above the header (a blank row between).
    title: Option<String>,
    /// A note in the header row, right of the table and its new columns with a blank column
    /// between.
    note: Option<String>,
    /// Numeric columns.
    numeric: usize,
    /// Data rows, when not the family's own count.
    rows: Option<usize>,
    /// Whether the instruction names columns and rows by letter and number.
    located: bool,
    /// Whether the source and new-column names trade lists.
    swapped: bool,
    /// Blank columns between the table and its first new column.
    gap: u32,
    /// The sheets world's draw and pools (none: the plain wording).
    draw: Option<(crate::sheets::Draw, crate::sheets::Pools)>,
}

impl Layout {
    fn of(spec: &Spec) -> Layout {
        use crate::sheets::{draw, Pools};
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
    fn at(&self, r: u32, c: u32) -> Addr {
        Addr::new(self.top + r, self.left + c)
    }

    /// The sheet a copy goes to.
    fn new_sheet(&self) -> String {
        self.draw
            .as_ref()
            .map_or("Sheet2", |(d, _)| d.sheet)
            .to_string()
    }
}

/// The table of a seed: a text key column and its numeric columns.
struct Table {
    headers: Vec<String>,
    keys: Vec<String>,
    values: Vec<Vec<i64>>,
    /// Names for new columns, in order.
    new_names: Vec<String>,
}

impl Table {
    fn new(seed: u64, rows: usize, l: &Layout) -> Table {
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
    fn drawn(seed: u64, rows: usize, l: &Layout, d: &crate::sheets::Draw) -> Table {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let (mut numeric, mut new_names) = crate::sheets::split_names(d, 3);
        if l.numeric > numeric.len() {
            // a wide perturbation: more of the pool's names become columns
            let (more, rest) = crate::sheets::split_names(
                &crate::sheets::Draw {
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

    fn book(&self, l: &Layout) -> Workbook {
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

fn list(names: &[String]) -> String {
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
fn column(book: &Workbook, l: &Layout, c: u32, rows: usize) -> Vec<(u32, Content)> {
    (0..=rows as u32)
        .filter_map(|r| {
            book.sheets[0]
                .cells
                .get(&l.at(r, c))
                .map(|v| (r, v.clone()))
        })
        .collect()
}

fn sheet_data(i0: &str, i1: &str) -> serde_json::Value {
    json!({"type": "sheet_data", "sheet_idx0": i0, "sheet_idx1": i1})
}

/// Generates a task.
pub fn generate(spec: &Spec) -> Generated {
    use crate::sheets::{fill, pick};
    let objects = spec.objects.clamp(1, 3) as usize;
    let l = Layout::of(spec);
    let rows = l.rows.unwrap_or(match spec.family {
        Family::Sort(_) => 3 + objects, // more rows to order
        _ => 3 + (spec.seed % 3) as usize,
    });
    let t = Table::new(spec.seed, rows, &l);
    let start = t.book(&l);
    let numeric = t.headers.len() - 1;
    // a table of two numeric columns has room for two objects
    let objects = objects.min(numeric);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(spec.seed ^ 0x5EED);
    let mut cols: Vec<usize> = (1..=numeric).collect();
    cols.shuffle(&mut rng);
    let n = rows as u32; // data rows; the header is row 0
                         // the sheets world quotes a name of several words, as OSWorld's instructions do
    let quoted = |h: &str| -> String {
        if l.draw.is_some() && h.contains(' ') {
            format!("\"{h}\"")
        } else {
            h.to_string()
        }
    };
    let name = |c: usize| quoted(&t.headers[c]);
    let new_names: Vec<String> = if l.draw.is_some() {
        t.new_names.clone()
    } else {
        let mut v: Vec<&str> = if l.swapped { NUMERIC } else { NEW_NAMES }.to_vec();
        v.shuffle(&mut rng);
        v.into_iter().map(String::from).collect()
    };
    // the sheets world's paraphrase, when drawn there
    let words = l.draw.as_ref().map(|(d, pools)| (d.template, *pools));
    // a sheet row's number and a table column's letters, as the instruction names them
    let row_no = |r: u32| l.top + r + 1;
    let letters = |c: u32| col_name(l.left + c);
    let key_letters = letters(0);
    let sheet = l.new_sheet();
    let sheet_rules = vec![
        json!({"type": "sheet_name"}),
        sheet_data("RI0", "EI0"),
        sheet_data(&format!("RN{sheet}"), &format!("EN{sheet}")),
    ];
    let (i1, i2, e1, e2, r1, r2, hints): (
        String,
        String,
        Workbook,
        Workbook,
        Vec<serde_json::Value>,
        Vec<serde_json::Value>,
        [String; 2],
    );
    match spec.family {
        Family::Copy => {
            let picked: Vec<usize> = cols[..objects].to_vec();
            let names: Vec<String> = picked.iter().map(|&c| name(c)).collect();
            let mut a = start.clone();
            a.insert_sheet(1, &sheet).expect("a fresh name");
            for (j, &c) in picked.iter().enumerate() {
                for (r, v) in column(&start, &l, c as u32, rows) {
                    a.sheets[1].cells.insert(Addr::new(r, j as u32), v);
                }
            }
            let mut b = a.clone();
            let renamed = new_names[0].to_string();
            b.sheets[1]
                .cells
                .insert(Addr::new(0, 0), Content::Text(renamed.clone()));
            let what = if objects == 1 {
                format!("the {} column", names[0])
            } else {
                format!("the {} columns", list(&names))
            };
            let place = if l.located {
                ", starting in column A"
            } else {
                ""
            };
            if let Some((template, pools)) = words {
                let slots = [
                    ("WHAT", what.as_str()),
                    ("SHEET", sheet.as_str()),
                    ("WHERE", place),
                    ("OLD", names[0].as_str()),
                    ("NEW", &quoted(&renamed)),
                ];
                i1 = fill(pick(&crate::sheets::COPY, template, pools), &slots);
                let body = i1.trim_end_matches('.');
                i2 = format!(
                    "{body}{}.",
                    fill(pick(&crate::sheets::RENAME, template, pools), &slots)
                );
            } else {
                i1 = format!("Copy {what} to a new sheet named Sheet2{place}.");
                i2 = format!(
                    "Copy {what} to a new sheet named Sheet2{place}, then rename the copied {} header to {renamed}.",
                    names[0]
                );
            }
            (e1, e2, r1, r2) = (a, b, sheet_rules.clone(), sheet_rules);
            hints = [
                format!("Hint: click a column's header to select it, press Ctrl+C, add a sheet with the + button next to the sheet tabs, click cell A1 there and press Ctrl+V.{}", if sheet == "Sheet2" { String::new() } else { format!(" Name the sheet {sheet}.") }),
                format!("Hint: the {} column is column {}.", names[0], letters(picked[0] as u32)),
            ];
        }
        Family::Computed(op) => {
            let pairs = if numeric >= 3 {
                vec![(cols[0], cols[1]), (cols[1], cols[2]), (cols[0], cols[2])]
            } else {
                vec![(cols[0], cols[1]), (cols[1], cols[0])]
            };
            let sym = match op {
                Arith::Sub => "-",
                Arith::Add => "+",
                Arith::Mul => "*",
            };
            let mut a = start.clone();
            let mut descr = Vec::new();
            let mut bare = Vec::new();
            let first_new = numeric as u32 + 1 + l.gap;
            for (j, &(x, y)) in pairs.iter().enumerate().take(objects) {
                let c = first_new + j as u32;
                let h = new_names[j].to_string();
                a.sheets[0]
                    .cells
                    .insert(l.at(0, c), Content::Text(h.clone()));
                for r in 0..n as usize {
                    let [p, q] = [t.values[r][x - 1], t.values[r][y - 1]];
                    let v = match op {
                        Arith::Sub => p - q,
                        Arith::Add => p + q,
                        Arith::Mul => p * q,
                    };
                    a.sheets[0]
                        .cells
                        .insert(l.at(r as u32 + 1, c), Content::Number(v as f64));
                }
                let qh = quoted(&h);
                descr.push(if l.located {
                    format!(
                        "{qh} = {} {sym} {} in column {}",
                        name(x),
                        name(y),
                        letters(c)
                    )
                } else {
                    format!("{qh} = {} {sym} {}", name(x), name(y))
                });
                bare.push(format!("{qh} = {} {sym} {}", name(x), name(y)));
            }
            let mut b = a.clone();
            b.sheets[0]
                .cells
                .insert(l.at(n + 1, 0), Content::Text("Total".into()));
            let total: f64 = (1..=n)
                .map(|r| match b.sheets[0].cells.get(&l.at(r, first_new)) {
                    Some(Content::Number(x)) => *x,
                    _ => 0.0,
                })
                .sum();
            b.sheets[0]
                .cells
                .insert(l.at(n + 1, first_new), Content::Number(total));
            if let Some((template, pools)) = words {
                let where_ = match (l.located, l.gap) {
                    (true, _) if objects == 1 => format!(" (column {})", letters(first_new)),
                    (true, _) => format!(
                        " (columns {} to {})",
                        letters(first_new),
                        letters(first_new + objects as u32 - 1)
                    ),
                    (false, 0) => String::new(),
                    (false, _) => ", leaving one blank column after the table".into(),
                };
                let (a_column, new_columns) = if objects == 1 {
                    ("a column", "a new column")
                } else {
                    ("columns", "new columns, in this order,")
                };
                let what = bare.join("; ");
                let slots = [
                    ("WHAT", what.as_str()),
                    ("WHERE", where_.as_str()),
                    ("A_COLUMN", a_column),
                    ("NEW_COLUMNS", new_columns),
                    ("NAME", &quoted(&new_names[0])),
                ];
                i1 = fill(pick(&crate::sheets::COMPUTED, template, pools), &slots);
                i2 = format!(
                    "{i1}{}",
                    fill(
                        pick(&crate::sheets::COMPUTED_TOTAL, template, pools),
                        &slots
                    )
                );
            } else if l.located {
                let what = if objects == 1 { "a column" } else { "columns" };
                i1 = format!(
                    "Add {what} {} for every row, with the header in row {}.",
                    descr.join("; "),
                    row_no(0)
                );
                i2 = format!(
                    "{} Then, in row {}, write Total in column {key_letters} and the total of {} in column {}.",
                    i1,
                    row_no(n + 1),
                    new_names[0],
                    letters(first_new)
                );
            } else {
                let what = if objects == 1 {
                    "a new column"
                } else {
                    "new columns, in this order,"
                };
                i1 = format!(
                    "Add {what} {} to the right of the table, for every row.",
                    descr.join("; ")
                );
                i2 = format!(
                    "{i1} Then, in a new row under the table, write Total in its first column and the total of {} under it.",
                    new_names[0]
                );
            }
            r1 = vec![sheet_data("RI0", "EI0")];
            r2 = vec![sheet_data("RI0", "EI0")];
            (e1, e2) = (a, b);
            let (x, y) = pairs[0];
            hints = [
                format!(
                    "Hint: click {}{}, type {}, press Enter, then type ={}{}{sym}{}{} and press Enter for each row.",
                    letters(first_new),
                    row_no(0),
                    new_names[0],
                    letters(x as u32),
                    row_no(1),
                    letters(y as u32),
                    row_no(1)
                ),
                format!("Hint: the data are in rows {} to {}.", row_no(1), row_no(n)),
            ];
        }
        Family::Total(_) | Family::CountIf => {
            let picked: Vec<usize> = {
                let mut p = cols[..objects].to_vec();
                p.sort();
                p
            };
            // the count's threshold: a round number inside the values' range
            let threshold = 10 * rng.gen_range(4..=14) as i64;
            let agg = match spec.family {
                Family::Total(a) => Some(a),
                _ => None,
            };
            let (label, f) = match agg {
                Some(Agg::Sum) => ("Total", "sum".to_string()),
                Some(Agg::Average) => ("Average", "average".to_string()),
                Some(Agg::Max) => ("Maximum", "largest value".to_string()),
                None => ("Count", format!("number of values above {threshold}")),
            };
            let aggregate = |c: usize, g: Option<Agg>| -> f64 {
                let xs: Vec<f64> = t.values.iter().map(|v| v[c - 1] as f64).collect();
                match g {
                    Some(Agg::Sum) => xs.iter().sum(),
                    Some(Agg::Average) => xs.iter().sum::<f64>() / xs.len() as f64,
                    Some(Agg::Max) => xs.iter().copied().fold(f64::MIN, f64::max),
                    None => xs.iter().filter(|&&x| x > threshold as f64).count() as f64,
                }
            };
            // the expected cell holds what a formula's result is saved as: a column that
            // pandas reads as objects (a table below row 1 puts its header among the values)
            // compares it exactly, unrounded
            let saved = |x: f64| -> f64 { crate::formula::format_number(x).parse().unwrap_or(x) };
            let mut a = start.clone();
            a.sheets[0]
                .cells
                .insert(l.at(n + 1, 0), Content::Text(label.into()));
            for &c in &picked {
                a.sheets[0].cells.insert(
                    l.at(n + 1, c as u32),
                    Content::Number(saved(aggregate(c, agg))),
                );
            }
            let mut b = a.clone();
            let second = match agg {
                Some(Agg::Average) => Agg::Max,
                Some(_) => Agg::Average,
                None => Agg::Sum,
            };
            let (label2, f2) = match second {
                Agg::Average => ("Average", "average"),
                Agg::Max => ("Maximum", "largest value"),
                Agg::Sum => ("Total", "sum"),
            };
            b.sheets[0]
                .cells
                .insert(l.at(n + 2, 0), Content::Text(label2.into()));
            for &c in &picked {
                b.sheets[0].cells.insert(
                    l.at(n + 2, c as u32),
                    Content::Number(saved(aggregate(c, Some(second)))),
                );
            }
            let names: Vec<String> = picked.iter().map(|&c| name(c)).collect();
            let under = if objects == 1 {
                "under its column"
            } else {
                "under each of those columns"
            };
            if let Some((template, pools)) = words {
                let columns = list(&names);
                let slots = [
                    ("LABEL", label),
                    ("F", f.as_str()),
                    ("COLUMNS", columns.as_str()),
                    ("UNDER", under),
                ];
                i1 = fill(pick(&crate::sheets::AGGREGATE, template, pools), &slots);
                let again = [("LABEL", label2), ("F", f2)];
                i2 = format!(
                    "{i1}{}",
                    fill(
                        pick(&crate::sheets::AGGREGATE_AGAIN, template, pools),
                        &again
                    )
                );
            } else if l.located {
                i1 = format!(
                    "In row {}, write {label} in column {key_letters} and the {f} of {} {under}.",
                    row_no(n + 1),
                    list(&names),
                );
                i2 = format!(
                    "{i1} Then, in row {}, write {label2} in column {key_letters} and the {f2} of the same columns under them.",
                    row_no(n + 2),
                );
            } else {
                i1 = format!(
                    "In a new row under the table, write {label} in its first column and the {f} of {} {under}.",
                    list(&names),
                );
                i2 = format!(
                    "{i1} Then, in the row below that, write {label2} in the first column and the {f2} of the same columns under them.",
                );
            }
            let cell = l.at(n + 1, picked[0] as u32).to_string();
            let check = json!({"type": "check_cell", "sheet_idx": 0, "coordinate": cell,
                "props": {"value": {"method": "approx:0.01", "ref": aggregate(picked[0], agg)}}});
            r1 = vec![check.clone(), sheet_data("RI0", "EI0")];
            r2 = vec![check, sheet_data("RI0", "EI0")];
            (e1, e2) = (a, b);
            let c0 = letters(picked[0] as u32);
            let range = format!("{c0}{}:{c0}{}", row_no(1), row_no(n));
            let formula = match agg {
                Some(Agg::Sum) => format!("=SUM({range})"),
                Some(Agg::Average) => format!("=AVERAGE({range})"),
                Some(Agg::Max) => format!("=MAX({range})"),
                None => format!("=COUNTIF({range},\">{threshold}\")"),
            };
            hints = [
                format!(
                    "Hint: click {c0}{}, type {formula} and press Enter.",
                    row_no(n + 1),
                ),
                format!("Hint: the label goes in {key_letters}{}.", row_no(n + 1)),
            ];
        }
        Family::Sort(desc) => {
            let key = cols[0];
            let mut order: Vec<usize> = (0..n as usize).collect();
            order.sort_by(|&x, &y| {
                let o = t.values[x][key - 1].cmp(&t.values[y][key - 1]);
                if desc {
                    o.reverse()
                } else {
                    o
                }
            });
            let mut a = start.clone();
            for (new_r, &old_r) in order.iter().enumerate() {
                let r = new_r as u32 + 1;
                a.sheets[0]
                    .cells
                    .insert(l.at(r, 0), Content::Text(t.keys[old_r].clone()));
                for c in 0..numeric {
                    a.sheets[0].cells.insert(
                        l.at(r, c as u32 + 1),
                        Content::Number(t.values[old_r][c] as f64),
                    );
                }
            }
            let mut b = a.clone();
            b.insert_sheet(1, &sheet).expect("a fresh name");
            for (r, v) in column(&a, &l, 0, rows) {
                b.sheets[1].cells.insert(Addr::new(r, 0), v);
            }
            let dir = if desc { "descending" } else { "ascending" };
            if let Some((template, pools)) = words {
                let slots = [
                    ("KEY", name(key)),
                    ("DIR", dir.to_string()),
                    ("SHEET", sheet.clone()),
                ];
                let slots: Vec<(&str, &str)> =
                    slots.iter().map(|(k, v)| (*k, v.as_str())).collect();
                i1 = fill(pick(&crate::sheets::SORT, template, pools), &slots);
                let copy = [("KEY", t.headers[0].as_str()), ("SHEET", sheet.as_str())];
                i2 = format!(
                    "{i1}{}",
                    fill(pick(&crate::sheets::SORT_COPY, template, pools), &copy)
                );
            } else {
                i1 = format!(
                    "Sort the table by {} in {dir} order, keeping the header row at the top.",
                    name(key)
                );
                let place = if l.located { ", starting in A1" } else { "" };
                i2 = format!(
                    "{i1} Then copy the sorted {} column to a new sheet named Sheet2{place}.",
                    t.headers[0]
                );
            }
            r1 = vec![sheet_data("RI0", "EI0")];
            r2 = sheet_rules;
            (e1, e2) = (a, b);
            hints = [
                format!(
                    "Hint: click a cell of the {} column, open the Data menu and choose Sort {}.",
                    name(key),
                    if desc { "Descending" } else { "Ascending" }
                ),
                format!("Hint: {} is column {}.", name(key), letters(key as u32)),
            ];
        }
    }
    let perturbed = spec
        .perturb
        .map(|p| format!("-{}", p.name()))
        .unwrap_or_default();
    let id = format!(
        "calc-{}-{:016x}-o{}-e{}-h{}{perturbed}",
        spec.family.name(),
        spec.seed,
        objects,
        spec.variant.clamp(1, 2),
        spec.hints.min(MAX_HINTS)
    );
    let file = format!(
        "{}_{:04x}.xlsx",
        t.headers[0].to_lowercase(),
        spec.seed & 0xffff
    );
    let vm_path = format!("/home/user/{file}");
    let evaluator = |key: &str, rules: &[serde_json::Value]| {
        json!({
            "postconfig": [
                {"type": "activate_window", "parameters": {"window_name": format!("{file} - LibreOffice Calc"), "strict": true}},
                {"type": "sleep", "parameters": {"seconds": 0.5}},
                {"type": "execute", "parameters": {"command": ["python", "-c", "import pyautogui; pyautogui.hotkey(\"ctrl\", \"s\");"]}},
                {"type": "sleep", "parameters": {"seconds": 0.5}}
            ],
            "func": "compare_table",
            "result": {"type": "vm_file", "path": vm_path, "dest": file},
            "expected": {"type": "cloud_file", "path": format!("{id}/{key}.xlsx"), "dest": format!("{key}_gold.xlsx")},
            "options": {"rules": rules}
        })
    };
    let with_hints = |base: &str| -> String {
        let mut s = base.to_string();
        for h in hints.iter().take(spec.hints.min(MAX_HINTS) as usize) {
            s.push(' ');
            s.push_str(h);
        }
        s
    };
    let key = format!("evaluator{}", spec.variant.clamp(1, 2));
    let (active_instr, active_rules) = if key == "evaluator1" {
        (with_hints(&i1), &r1)
    } else {
        (with_hints(&i2), &r2)
    };
    let v = json!({
        "id": id,
        "snapshot": "libreoffice_calc",
        "instruction": active_instr,
        "source": "rlanything:family",
        "config": [
            {"type": "download", "parameters": {"files": [{"url": format!("{id}/start.xlsx"), "path": vm_path}]}},
            {"type": "open", "parameters": {"path": vm_path}}
        ],
        "related_apps": ["libreoffice_calc"],
        "evaluator": evaluator(&key, active_rules),
        "task_template": {"evaluator1": i1, "evaluator2": i2},
        "evaluator_list": {"evaluator1": evaluator("evaluator1", &r1), "evaluator2": evaluator("evaluator2", &r2)},
        "current_task": {key.clone(): active_instr},
        "history": serde_json::to_value(spec).expect("a spec serialises"),
    });
    let task: DesktopTask = serde_json::from_value(v).expect("a generated task is a valid task");
    Generated {
        spec: spec.clone(),
        task,
        file,
        start,
        expected: BTreeMap::from([
            ("evaluator1".to_string(), e1),
            ("evaluator2".to_string(), e2),
        ]),
    }
}

/// The harder rewrite of a spec: evaluator1 → evaluator2, else one more object; `None` at the
/// hardest.
pub fn harder(s: &Spec) -> Option<(String, Spec)> {
    if s.hints > 0 {
        return Some((
            "one hint fewer".into(),
            Spec {
                hints: s.hints - 1,
                ..s.clone()
            },
        ));
    }
    if s.variant < 2 {
        return Some((
            "switched to evaluator2".into(),
            Spec {
                variant: 2,
                ..s.clone()
            },
        ));
    }
    (s.objects < 3).then(|| {
        (
            format!("{} objects", s.objects + 1),
            Spec {
                objects: s.objects + 1,
                ..s.clone()
            },
        )
    })
}

/// The easier rewrite: a hint more, else evaluator2 → evaluator1, else one object fewer;
/// `None` at the easiest.
pub fn easier(s: &Spec) -> Option<(String, Spec)> {
    if s.hints < MAX_HINTS {
        return Some((
            "added a hint".into(),
            Spec {
                hints: s.hints + 1,
                ..s.clone()
            },
        ));
    }
    if s.variant > 1 {
        return Some((
            "switched to evaluator1".into(),
            Spec {
                variant: 1,
                ..s.clone()
            },
        ));
    }
    (s.objects > 1).then(|| {
        (
            format!("{} objects", s.objects - 1),
            Spec {
                objects: s.objects - 1,
                ..s.clone()
            },
        )
    })
}

/// A fixed split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    /// In-domain evaluation (230 tasks, as the paper's OSWorld in-domain set).
    InDomain,
    /// Out-of-domain evaluation (139 tasks).
    Ood,
    /// Validation: in-domain families under their own seed.
    Validation,
    /// The training pool.
    Train,
}

impl Split {
    /// The split's size (the training pool: as many as asked).
    pub fn size(self) -> usize {
        match self {
            Split::InDomain => 230,
            Split::Ood => 139,
            Split::Validation => 140,
            Split::Train => usize::MAX,
        }
    }
    fn seed(self) -> u64 {
        match self {
            Split::InDomain => 0xDE5C_0001,
            Split::Ood => 0xDE5C_0002,
            Split::Validation => 0xDE5C_0003,
            Split::Train => 0xDE5C_0004,
        }
    }
}

/// The first `n` specs of a split of the plain world (evaluation splits are capped at their
/// size). Evaluation tasks mix both evaluators and 1–3 objects; the training pool starts at
/// evaluator1 with one object.
pub fn split(which: Split, n: usize) -> Vec<Spec> {
    split_in(World::Plain, which, n)
}

/// [`split`] in a world: the sheets world's OOD split is drawn from its held-out pools.
pub fn split_in(world: World, which: Split, n: usize) -> Vec<Spec> {
    let n = n.min(which.size());
    let salt = match world {
        World::Plain => 0,
        _ => 0x5EE7_0000_0000,
    };
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(which.seed() ^ salt);
    let fams = world.families(which);
    let world = world.of_split(which);
    (0..n)
        .map(|i| {
            let family = fams[i % fams.len()];
            let seed = rng.gen();
            if which == Split::Train {
                Spec {
                    family,
                    seed,
                    objects: 1,
                    variant: 1,
                    hints: 0,
                    perturb: None,
                    world,
                }
            } else {
                Spec {
                    family,
                    seed,
                    objects: rng.gen_range(1..=3),
                    variant: rng.gen_range(1..=2),
                    hints: 0,
                    perturb: None,
                    world,
                }
            }
        })
        .collect()
}

/// The same tasks with `p` applied to each (`None`: as they are).
pub fn perturbed(specs: Vec<Spec>, p: Option<Perturb>) -> Vec<Spec> {
    specs
        .into_iter()
        .map(|s| Spec { perturb: p, ..s })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_are_valid_osworld_tasks_with_both_evaluators() {
        for f in Family::IN_DOMAIN.iter().chain(&Family::OOD) {
            for objects in 1..=3 {
                let g = generate(&Spec {
                    family: *f,
                    seed: 7,
                    objects,
                    variant: 2,
                    hints: 1,
                    perturb: None,
                    world: World::Plain,
                });
                g.task.check().unwrap();
                let back =
                    DesktopTask::from_json(&g.task.to_json(), std::path::Path::new("t.json"))
                        .unwrap();
                assert_eq!(back, g.task);
                assert_ne!(g.expected["evaluator1"], g.start, "{f:?}");
                assert_ne!(g.expected["evaluator2"], g.expected["evaluator1"], "{f:?}");
                assert!(g.task.instruction.contains("Hint:"));
                let t1 = g.task.switched_to("evaluator1").unwrap();
                assert_eq!(
                    t1.current_task.unwrap().keys().next().unwrap(),
                    "evaluator1"
                );
            }
        }
    }

    #[test]
    fn rewrites_walk_the_difficulty_ladder_both_ways() {
        let mut s = Spec {
            family: Family::Copy,
            seed: 1,
            objects: 1,
            variant: 1,
            hints: 0,
            perturb: None,
            world: World::Plain,
        };
        let mut steps = 0;
        while let Some((_, h)) = harder(&s) {
            s = h;
            steps += 1;
        }
        assert_eq!((s.variant, s.objects, steps), (2, 3, 3));
        let mut down = 0;
        while let Some((_, e)) = easier(&s) {
            s = e;
            down += 1;
        }
        assert_eq!((s.variant, s.objects, s.hints, down), (1, 1, 2, 5));
    }

    #[test]
    fn splits_are_fixed_sized_and_disjoint_in_families() {
        let a = split(Split::InDomain, 1000);
        let b = split(Split::Ood, 1000);
        assert_eq!((a.len(), b.len()), (230, 139));
        assert_eq!(a, split(Split::InDomain, 230));
        assert!(a.iter().all(|s| Family::IN_DOMAIN.contains(&s.family)));
        assert!(b.iter().all(|s| Family::OOD.contains(&s.family)));
        let v = split(Split::Validation, 140);
        assert!(v.iter().all(|s| !a.iter().any(|x| x.seed == s.seed)));
    }
    /// The start sheet's header row and key column: where the key header lies.
    fn origin(g: &Generated) -> Addr {
        let key = ["Region", "Product", "Store", "Team"];
        *g.start.sheets[0]
            .cells
            .iter()
            .find(|(_, c)| matches!(c, Content::Text(t) if key.contains(&t.as_str())))
            .unwrap()
            .0
    }

    #[test]
    fn each_perturbation_changes_its_one_aspect_and_the_expert_solves_it() {
        let plain = split(Split::InDomain, 24);
        let ood = split(Split::Ood, 10);
        for p in Perturb::ALL {
            assert_eq!(Perturb::parse(p.name()), Ok(p));
            for (a, b) in plain.iter().chain(&ood).zip(
                perturbed(plain.clone(), Some(p))
                    .iter()
                    .chain(&perturbed(ood.clone(), Some(p))),
            ) {
                let (ga, gb) = (generate(a), generate(b));
                gb.task.check().unwrap();
                assert_ne!(ga.task.id, gb.task.id, "{p:?}");
                let (oa, ob) = (origin(&ga), origin(&gb));
                let headers = |g: &Generated, o: Addr| -> Vec<String> {
                    (o.col..o.col + 12)
                        .filter_map(
                            |c| match g.start.sheets[0].cells.get(&Addr::new(o.row, c)) {
                                Some(Content::Text(t)) => Some(t.clone()),
                                _ => None,
                            },
                        )
                        .collect()
                };
                let rows = |g: &Generated, o: Addr| {
                    (o.row + 1..o.row + 40)
                        .take_while(|&r| g.start.sheets[0].cells.contains_key(&Addr::new(r, o.col)))
                        .count()
                };
                match p {
                    Perturb::ShiftRight => {
                        assert_eq!(oa, Addr::new(0, 0));
                        assert!(ob.row == 0 && (1..=3).contains(&ob.col), "{ob}");
                    }
                    Perturb::ShiftDown => {
                        assert!(ob.col == 0 && (1..=4).contains(&ob.row), "{ob}")
                    }
                    Perturb::Gaps => {
                        assert_eq!(ob, Addr::new(2, 0));
                        assert!(gb.start.sheets[0].cells.contains_key(&Addr::new(0, 0)));
                        assert!(!gb.start.sheets[0].cells.keys().any(|x| x.row == 1));
                    }
                    Perturb::Wide => {
                        let n = headers(&gb, ob).len() - 1;
                        assert!((5..=8).contains(&n), "{n} numeric columns");
                        assert_eq!(headers(&ga, oa)[..4], headers(&gb, ob)[..4]);
                    }
                    Perturb::Long => {
                        let n = rows(&gb, ob);
                        assert!((7..=30).contains(&n), "{n} rows");
                    }
                    Perturb::Unlocated => {
                        assert_eq!(ga.start, gb.start);
                        let i = &gb.task.instruction;
                        // no column letters (`E`) or cells (`A1`)
                        let letters = |w: &str| {
                            w.len() <= 3
                                && w.starts_with(|c: char| c.is_ascii_uppercase())
                                && w.chars()
                                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
                        };
                        assert!(
                            !i.split(' ')
                                .any(|w| letters(w.trim_end_matches([',', '.', ';']))),
                            "a column letter: {i}"
                        );
                        assert!(
                            !i.split(' ')
                                .any(|w| w.trim_end_matches([',', '.']).parse::<u32>().is_ok()),
                            "a row number: {i}"
                        );
                    }
                    Perturb::SwappedNames => {
                        for h in &headers(&gb, ob)[1..] {
                            assert!(NEW_NAMES.contains(&h.as_str()), "{h}");
                        }
                    }
                }
                if !matches!(p, Perturb::Wide | Perturb::Long | Perturb::SwappedNames) {
                    assert_eq!(rows(&ga, oa), rows(&gb, ob), "{p:?} keeps the rows");
                }
                let ep = crate::episode::Episode::new(gb.clone(), 1920, 1080).unwrap();
                let steps = crate::expert::solve(&ep).unwrap_or_else(|e| panic!("{p:?}: {e}"));
                assert!(steps.len() <= 31, "{}: {} steps", gb.task.id, steps.len());
            }
        }
        // the plain sheet's tasks keep their files: no perturbation field in them
        assert!(!serde_json::to_string(&plain[0])
            .unwrap()
            .contains("perturb"));
    }
    #[test]
    fn averages_below_row_one_score_from_the_saved_file() {
        // a table below row 1 puts its header among the values pandas reads, so the column is
        // compared unrounded: the expected average must be what a formula's result saves as
        let specs = perturbed(split(Split::InDomain, 230), Some(Perturb::ShiftDown));
        let mut played = 0;
        for s in specs
            .iter()
            .filter(|s| s.family == Family::Total(Agg::Sum) && s.variant == 2)
        {
            let g = generate(s);
            let dir = tempfile::tempdir().unwrap();
            let path = crate::local::export(&g, dir.path()).unwrap();
            let mut screen = crate::runner::Native::new(1920, 1080);
            let mut agent = crate::runner::ExpertAgent::new(g, false, (1920, 1080)).unwrap();
            let p = crate::runner::play(&mut screen, &path, &mut agent, 30, dir.path()).unwrap();
            assert_eq!(p.score, 1.0, "{:?}", p.steps);
            played += 1;
        }
        assert!(played >= 10, "{played}");
    }
    #[test]
    fn the_sheets_world_names_no_row_and_few_columns_and_the_expert_solves_it() {
        // a cell (`E7`), a lone column letter (`E`) or a number not a threshold ("above 50")
        let cell = |w: &str| {
            let letters = w.chars().take_while(|c| c.is_ascii_uppercase()).count();
            (1..=2).contains(&letters)
                && w.len() > letters
                && w[letters..].chars().all(|c| c.is_ascii_digit())
        };
        let mut steps_needed = vec![];
        for (which, n) in [
            (Split::InDomain, 230),
            (Split::Validation, 140),
            (Split::Ood, 139),
        ] {
            let specs = split_in(World::Sheets, which, n);
            assert_eq!(specs.len(), n);
            let (mut lettered, mut total) = (0, 0);
            for s in &specs {
                let g = generate(s);
                g.task.check().unwrap();
                let i = &g.task.instruction;
                let words: Vec<&str> = i
                    .split([' ', ',', '.', ';', '(', ')', ':'])
                    .filter(|w| !w.is_empty())
                    .collect();
                for (k, w) in words.iter().enumerate() {
                    assert!(!cell(w), "a cell in {i}");
                    if w.parse::<u32>().is_ok() {
                        assert_eq!(k.checked_sub(1).map(|p| words[p]), Some("above"), "{i}");
                    }
                }
                assert!(!i.contains(" row 1") && !i.contains("in row"), "{i}");
                total += 1;
                if words.windows(2).any(|p| {
                    matches!(p[0], "column" | "columns")
                        && p[1].len() <= 2
                        && p[1].chars().all(|c| c.is_ascii_uppercase())
                }) {
                    lettered += 1;
                }
                let ep = crate::episode::Episode::new(g.clone(), 1920, 1080).unwrap();
                let plan =
                    crate::expert::solve(&ep).unwrap_or_else(|e| panic!("{}: {e}", g.task.id));
                steps_needed.push(plan.len() - 1);
                if which == Split::Ood {
                    assert_eq!(s.world, World::HeldOut);
                    assert!(Family::OOD.contains(&s.family));
                } else {
                    assert_eq!(s.world, World::Sheets);
                    assert!(Family::SHEETS_IN_DOMAIN.contains(&s.family));
                }
            }
            assert!(
                4 * lettered <= total,
                "{lettered} of {total} name a column letter"
            );
        }
        let within = |k: usize| steps_needed.iter().filter(|&&s| s <= k).count();
        let n = steps_needed.len();
        eprintln!(
            "expert plans within 15 steps: {} of {n}; 20: {}; 30: {}",
            within(15),
            within(20),
            within(30)
        );
        assert!(
            within(20) * 100 >= 95 * n,
            "{} of {n} within 20 steps",
            within(20)
        );
    }
}
