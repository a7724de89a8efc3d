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
        }
    }

    /// The in-domain families.
    pub const IN_DOMAIN: [Family; 4] = [
        Family::Copy,
        Family::Computed(Arith::Sub),
        Family::Computed(Arith::Add),
        Family::Total(Agg::Sum),
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

/// A task: its family, the seed of its table, how many objects, which evaluator is active and
/// how many hints its instruction carries. Everything else is generated from these.
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

/// The table of a seed: a text key column and three numeric columns.
struct Table {
    headers: Vec<String>,
    keys: Vec<String>,
    values: Vec<[i64; 3]>,
}

impl Table {
    fn new(seed: u64, rows: usize) -> Table {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let k = rng.gen_range(0..KEYS.len());
        let mut names: Vec<&str> = NAMES[k].to_vec();
        names.shuffle(&mut rng);
        let mut numeric: Vec<&str> = NUMERIC.to_vec();
        numeric.shuffle(&mut rng);
        let values = (0..rows)
            .map(|_| {
                [
                    rng.gen_range(1..200),
                    rng.gen_range(1..200),
                    rng.gen_range(1..50),
                ]
            })
            .collect();
        Table {
            headers: std::iter::once(KEYS[k])
                .chain(numeric[..3].iter().copied())
                .map(String::from)
                .collect(),
            keys: names[..rows].iter().map(|s| s.to_string()).collect(),
            values,
        }
    }

    fn book(&self) -> Workbook {
        let mut s = Sheet::new("Sheet1");
        for (c, h) in self.headers.iter().enumerate() {
            s.cells
                .insert(Addr::new(0, c as u32), Content::Text(h.clone()));
        }
        for (r, (k, v)) in self.keys.iter().zip(&self.values).enumerate() {
            let r = r as u32 + 1;
            s.cells.insert(Addr::new(r, 0), Content::Text(k.clone()));
            for (c, x) in v.iter().enumerate() {
                s.cells
                    .insert(Addr::new(r, c as u32 + 1), Content::Number(*x as f64));
            }
        }
        Workbook { sheets: vec![s] }
    }
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

fn column(book: &Workbook, sheet: usize, c: u32) -> Vec<(u32, Content)> {
    book.sheets[sheet]
        .cells
        .iter()
        .filter(|(a, _)| a.col == c)
        .map(|(a, v)| (a.row, v.clone()))
        .collect()
}

fn sheet_data(i0: &str, i1: &str) -> serde_json::Value {
    json!({"type": "sheet_data", "sheet_idx0": i0, "sheet_idx1": i1})
}

/// Generates a task.
pub fn generate(spec: &Spec) -> Generated {
    let objects = spec.objects.clamp(1, 3) as usize;
    let rows = match spec.family {
        Family::Sort(_) => 3 + objects, // more rows to order
        _ => 3 + (spec.seed % 3) as usize,
    };
    let t = Table::new(spec.seed, rows);
    let start = t.book();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(spec.seed ^ 0x5EED);
    let mut cols: Vec<usize> = vec![1, 2, 3];
    cols.shuffle(&mut rng);
    let n = rows as u32; // data rows; the header is row 0
    let name = |c: usize| t.headers[c].clone();
    let mut new_names: Vec<&str> = NEW_NAMES.to_vec();
    new_names.shuffle(&mut rng);
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
            a.insert_sheet(1, "Sheet2").expect("a fresh name");
            for (j, &c) in picked.iter().enumerate() {
                for (r, v) in column(&start, 0, c as u32) {
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
            i1 = format!("Copy {what} to a new sheet named Sheet2, starting in column A.");
            i2 = format!(
                "Copy {what} to a new sheet named Sheet2, starting in column A, then rename the copied {} header to {renamed}.",
                names[0]
            );
            let rules = vec![
                json!({"type": "sheet_name"}),
                sheet_data("RI0", "EI0"),
                sheet_data("RNSheet2", "ENSheet2"),
            ];
            (e1, e2, r1, r2) = (a, b, rules.clone(), rules);
            hints = [
                "Hint: click a column's header to select it, press Ctrl+C, add a sheet with the + button next to the sheet tabs, click cell A1 there and press Ctrl+V.".into(),
                format!("Hint: the {} column is column {}.", names[0], col_name(picked[0] as u32)),
            ];
        }
        Family::Computed(op) => {
            let pairs = [(cols[0], cols[1]), (cols[1], cols[2]), (cols[0], cols[2])];
            let sym = match op {
                Arith::Sub => "-",
                Arith::Add => "+",
                Arith::Mul => "*",
            };
            let mut a = start.clone();
            let mut descr = Vec::new();
            let mut first_new = 0u32;
            for j in 0..objects {
                let (x, y) = pairs[j];
                let c = 4 + j as u32;
                if j == 0 {
                    first_new = c;
                }
                let h = new_names[j].to_string();
                a.sheets[0]
                    .cells
                    .insert(Addr::new(0, c), Content::Text(h.clone()));
                for r in 0..n as usize {
                    let [p, q] = [t.values[r][x - 1], t.values[r][y - 1]];
                    let v = match op {
                        Arith::Sub => p - q,
                        Arith::Add => p + q,
                        Arith::Mul => p * q,
                    };
                    a.sheets[0]
                        .cells
                        .insert(Addr::new(r as u32 + 1, c), Content::Number(v as f64));
                }
                descr.push(format!(
                    "{h} = {} {sym} {} in column {}",
                    name(x),
                    name(y),
                    col_name(c)
                ));
            }
            let mut b = a.clone();
            b.sheets[0]
                .cells
                .insert(Addr::new(n + 1, 0), Content::Text("Total".into()));
            let total: f64 = (1..=n)
                .map(|r| match b.sheets[0].cells.get(&Addr::new(r, first_new)) {
                    Some(Content::Number(x)) => *x,
                    _ => 0.0,
                })
                .sum();
            b.sheets[0]
                .cells
                .insert(Addr::new(n + 1, first_new), Content::Number(total));
            let what = if objects == 1 { "a column" } else { "columns" };
            i1 = format!(
                "Add {what} {} for every row, with the header in row 1.",
                descr.join("; ")
            );
            i2 = format!(
                "{} Then, in row {}, write Total in column A and the total of {} in column {}.",
                i1,
                n + 2,
                new_names[0],
                col_name(first_new)
            );
            r1 = vec![sheet_data("RI0", "EI0")];
            r2 = vec![sheet_data("RI0", "EI0")];
            (e1, e2) = (a, b);
            let (x, y) = pairs[0];
            hints = [
                format!(
                    "Hint: click {}1, type {}, press Enter, then type ={}2{sym}{}2 and press Enter for each row.",
                    col_name(first_new),
                    new_names[0],
                    col_name(x as u32),
                    col_name(y as u32)
                ),
                format!("Hint: the data are in rows 2 to {}.", n + 1),
            ];
        }
        Family::Total(agg) => {
            let picked: Vec<usize> = {
                let mut p = cols[..objects].to_vec();
                p.sort();
                p
            };
            let (label, f) = match agg {
                Agg::Sum => ("Total", "sum"),
                Agg::Average => ("Average", "average"),
                Agg::Max => ("Maximum", "largest value"),
            };
            let aggregate = |c: usize, g: Agg| -> f64 {
                let xs: Vec<f64> = t.values.iter().map(|v| v[c - 1] as f64).collect();
                match g {
                    Agg::Sum => xs.iter().sum(),
                    Agg::Average => xs.iter().sum::<f64>() / xs.len() as f64,
                    Agg::Max => xs.iter().copied().fold(f64::MIN, f64::max),
                }
            };
            let mut a = start.clone();
            a.sheets[0]
                .cells
                .insert(Addr::new(n + 1, 0), Content::Text(label.into()));
            for &c in &picked {
                a.sheets[0].cells.insert(
                    Addr::new(n + 1, c as u32),
                    Content::Number(aggregate(c, agg)),
                );
            }
            let mut b = a.clone();
            let second = if agg == Agg::Average {
                Agg::Max
            } else {
                Agg::Average
            };
            let label2 = if second == Agg::Average {
                "Average"
            } else {
                "Maximum"
            };
            b.sheets[0]
                .cells
                .insert(Addr::new(n + 2, 0), Content::Text(label2.into()));
            for &c in &picked {
                b.sheets[0].cells.insert(
                    Addr::new(n + 2, c as u32),
                    Content::Number(aggregate(c, second)),
                );
            }
            let names: Vec<String> = picked.iter().map(|&c| name(c)).collect();
            i1 = format!(
                "In row {}, write {label} in column A and the {f} of {} under {}.",
                n + 2,
                list(&names),
                if objects == 1 {
                    "its column"
                } else {
                    "each of those columns"
                }
            );
            i2 = format!(
                "{i1} Then, in row {}, write {label2} in column A and the {} of the same columns under them.",
                n + 3,
                if second == Agg::Average { "average" } else { "largest value" }
            );
            let cell = Addr::new(n + 1, picked[0] as u32).to_string();
            let check = json!({"type": "check_cell", "sheet_idx": 0, "coordinate": cell,
                "props": {"value": {"method": "approx:0.01", "ref": aggregate(picked[0], agg)}}});
            r1 = vec![check.clone(), sheet_data("RI0", "EI0")];
            r2 = vec![check, sheet_data("RI0", "EI0")];
            (e1, e2) = (a, b);
            let fname = match agg {
                Agg::Sum => "SUM",
                Agg::Average => "AVERAGE",
                Agg::Max => "MAX",
            };
            let c0 = col_name(picked[0] as u32);
            hints = [
                format!(
                    "Hint: click {c0}{}, type ={fname}({c0}2:{c0}{}) and press Enter.",
                    n + 2,
                    n + 1
                ),
                format!("Hint: the label goes in A{}.", n + 2),
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
                    .insert(Addr::new(r, 0), Content::Text(t.keys[old_r].clone()));
                for c in 0..3 {
                    a.sheets[0].cells.insert(
                        Addr::new(r, c + 1),
                        Content::Number(t.values[old_r][c as usize] as f64),
                    );
                }
            }
            let mut b = a.clone();
            b.insert_sheet(1, "Sheet2").expect("a fresh name");
            for (r, v) in column(&a, 0, 0) {
                b.sheets[1].cells.insert(Addr::new(r, 0), v);
            }
            let dir = if desc { "descending" } else { "ascending" };
            i1 = format!(
                "Sort the table by {} in {dir} order, keeping the header row at the top.",
                name(key)
            );
            i2 = format!(
                "{i1} Then copy the sorted {} column to a new sheet named Sheet2, starting in A1.",
                t.headers[0]
            );
            r1 = vec![sheet_data("RI0", "EI0")];
            r2 = vec![
                json!({"type": "sheet_name"}),
                sheet_data("RI0", "EI0"),
                sheet_data("RNSheet2", "ENSheet2"),
            ];
            (e1, e2) = (a, b);
            hints = [
                format!(
                    "Hint: click a cell of the {} column, open the Data menu and choose Sort {}.",
                    name(key),
                    if desc { "Descending" } else { "Ascending" }
                ),
                format!("Hint: {} is column {}.", name(key), col_name(key as u32)),
            ];
        }
    }
    let id = format!(
        "calc-{}-{:016x}-o{}-e{}-h{}",
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

/// The first `n` specs of a split (evaluation splits are capped at their size). Evaluation
/// tasks mix both evaluators and 1–3 objects; the training pool starts at evaluator1 with one
/// object.
pub fn split(which: Split, n: usize) -> Vec<Spec> {
    let n = n.min(which.size());
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(which.seed());
    let fams: &[Family] = match which {
        Split::Ood => &Family::OOD,
        _ => &Family::IN_DOMAIN,
    };
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
                }
            } else {
                Spec {
                    family,
                    seed,
                    objects: rng.gen_range(1..=3),
                    variant: rng.gen_range(1..=2),
                    hints: 0,
                }
            }
        })
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
}
