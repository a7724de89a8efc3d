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

mod splits;
mod table;
#[cfg(test)]
mod tests;
mod world;

pub use splits::{easier, harder, perturbed, split, split_in, split_size};
pub use world::{Perturb, World};

use crate::osworld::task::DesktopTask;
use crate::sheet::addr::{col_name, Addr};
use crate::sheet::workbook::{Content, Workbook};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;
use table::{column, list, sheet_data, Layout, Table, NEW_NAMES, NUMERIC};

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

/// Generates a task.
pub fn generate(spec: &Spec) -> Generated {
    use crate::tasks::sheets::{fill, pick};
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
                i1 = fill(pick(&crate::tasks::sheets::COPY, template, pools), &slots);
                let body = i1.trim_end_matches('.');
                i2 = format!(
                    "{body}{}.",
                    fill(pick(&crate::tasks::sheets::RENAME, template, pools), &slots)
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
                i1 = fill(
                    pick(&crate::tasks::sheets::COMPUTED, template, pools),
                    &slots,
                );
                i2 = format!(
                    "{i1}{}",
                    fill(
                        pick(&crate::tasks::sheets::COMPUTED_TOTAL, template, pools),
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
            let saved =
                |x: f64| -> f64 { crate::sheet::formula::format_number(x).parse().unwrap_or(x) };
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
                i1 = fill(
                    pick(&crate::tasks::sheets::AGGREGATE, template, pools),
                    &slots,
                );
                let again = [("LABEL", label2), ("F", f2)];
                i2 = format!(
                    "{i1}{}",
                    fill(
                        pick(&crate::tasks::sheets::AGGREGATE_AGAIN, template, pools),
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
                i1 = fill(pick(&crate::tasks::sheets::SORT, template, pools), &slots);
                let copy = [("KEY", t.headers[0].as_str()), ("SHEET", sheet.as_str())];
                i2 = format!(
                    "{i1}{}",
                    fill(
                        pick(&crate::tasks::sheets::SORT_COPY, template, pools),
                        &copy
                    )
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
