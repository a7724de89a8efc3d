//! rla-desktop's evaluators against OSWorld's own (`desktop-env` 1.0.2's `table.py`, run by
//! `tests/osworld/score.py` with the Python packages of `tests/osworld/requirements.txt`), on
//! a seeded corpus of workbooks written three ways: by this crate (`rust_xlsxwriter`), by
//! openpyxl (formulas without cached results), and re-saved by LibreOffice Calc (`soffice
//! --convert-to xlsx`: shared strings, cached formula results, its own sheet XML).
//!
//! The Python interpreter is `$RLA_OSWORLD_PYTHON`, else the one `scripts/osworld-evaluators.sh`
//! installs (`target/osworld-venv`), else `python3`.

use rand::{Rng, SeedableRng};
use rla_desktop::osworld::compare::{compare_csv, compare_table};
use rla_desktop::sheet::addr::Addr;
use rla_desktop::sheet::workbook::{Content, Sheet, Workbook};
use rla_desktop::sheet::xlsx;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn python() -> String {
    if let Ok(p) = std::env::var("RLA_OSWORLD_PYTHON") {
        return p;
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/osworld-venv/bin/python");
    if venv.exists() {
        return venv.display().to_string();
    }
    "python3".into()
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/osworld")
        .join(name)
}

fn run_python(script_name: &str, input: &Value) -> String {
    let mut child = Command::new(python())
        .arg(script(script_name))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {} ({e}); set RLA_OSWORLD_PYTHON", python()));
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{script_name} failed — install OSWorld's evaluators with `scripts/osworld-evaluators.sh`:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Re-saves files with LibreOffice Calc (`soffice --convert-to xlsx`), in place: its own sheet
/// XML, shared strings, styles, cached formula results.
fn libreoffice_resave(dir: &Path, files: &[&PathBuf]) {
    let lo_dir = dir.join("lo");
    let status = Command::new("soffice")
        .args([
            "--headless",
            "--convert-to",
            "xlsx:Calc MS Excel 2007 XML",
            "--outdir",
        ])
        .arg(&lo_dir)
        .args(files)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("LibreOffice (soffice) runs: scripts/desktop-real.sh installs it");
    assert!(status.success());
    for p in files {
        std::fs::rename(lo_dir.join(p.file_name().unwrap()), p).unwrap();
    }
}

/// What OSWorld scored against what this crate scored, case by case: the cases that differ
/// (`excused` ones aside), and OSWorld's ones, zeros and exceptions.
struct Agreement {
    mismatches: Vec<String>,
    ones: usize,
    zeros: usize,
    errors: usize,
}

fn agreement(
    cases: &[Value],
    theirs: &[Value],
    ours: &[Result<f64, String>],
    excused: impl Fn(&Result<f64, String>) -> bool,
) -> Agreement {
    assert_eq!(theirs.len(), ours.len());
    let mut a = Agreement {
        mismatches: vec![],
        ones: 0,
        zeros: 0,
        errors: 0,
    };
    for ((case, t), o) in cases.iter().zip(theirs).zip(ours) {
        match t.as_f64() {
            Some(1.0) => a.ones += 1,
            Some(_) => a.zeros += 1,
            None => a.errors += 1,
        }
        let agree = match (t.as_f64(), o) {
            (Some(x), Ok(y)) => x == *y,
            (None, Err(_)) => true,
            _ => false,
        };
        if !agree && !excused(o) {
            a.mismatches
                .push(format!("{case}\n  OSWorld: {t}\n  ours: {o:?}"));
        }
    }
    assert!(
        a.mismatches.is_empty(),
        "{} of {} cases differ:\n{}",
        a.mismatches.len(),
        cases.len(),
        a.mismatches
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    a
}

/// Scores every rule of `rules_of()` (called once per pair) on each pair, one `compare_table` case per
/// rule, with this crate and with OSWorld: (the cases, OSWorld's scores, this crate's).
fn score_rules(
    pairs: &[(PathBuf, PathBuf)],
    mut rules_of: impl FnMut() -> Vec<Value>,
) -> (Vec<Value>, Vec<Value>, Vec<Result<f64, String>>) {
    let (mut cases, mut ours) = (vec![], vec![]);
    for (pa, pb) in pairs {
        for rule in rules_of() {
            let options = json!({ "rules": [rule] });
            cases.push(
                json!({"func": "compare_table", "result": pa, "expected": pb, "options": options}),
            );
            ours.push(compare_table(Some(pa), Some(pb), &options));
        }
    }
    let theirs: Vec<Value> =
        serde_json::from_str(&run_python("score.py", &Value::Array(cases.clone()))).unwrap();
    (cases, theirs, ours)
}

const WORDS: [&str; 8] = [
    "Revenue", "Cost", "north", "South", "a,b", "x", "Profit", "tea",
];
const HEADERS: [&str; 8] = ["Name", "Rev", "Rev", "", "Cost", "1", "True", "Region"];

fn random_content(rng: &mut impl Rng, row: u32, col: u32) -> Option<Content> {
    Some(match rng.gen_range(0..16) {
        0 => return None,
        1..=3 => Content::Number(rng.gen_range(-50..200) as f64),
        4 | 5 => Content::Number((rng.gen_range(-5000.0..5000.0f64) * 1e5).round() / 1e5),
        6 | 7 => Content::Text(WORDS[rng.gen_range(0..WORDS.len())].into()),
        8 => Content::Text(
            ["007", " 5 ", "1e3", "2.50", "-3", "0x10", "5%"][rng.gen_range(0..7)].into(),
        ),
        9 => {
            Content::Text(["NA", "n/a", "null", "NULL", "None", "#N/A"][rng.gen_range(0..6)].into())
        }
        10 => Content::Bool(rng.gen()),
        11 => Content::Text(["True", "false", "TRUE"][rng.gen_range(0..3)].into()),
        12 if row > 1 => Content::Formula(format!(
            "{}{}+1",
            rla_desktop::sheet::addr::col_name(col),
            row // the cell above
        )),
        13 if row > 1 => Content::Formula(format!("SUM(A2:A{row})")),
        14 => Content::Error("#N/A".into()),
        _ => Content::Number(rng.gen_range(0..5) as f64 + 0.5),
    })
}

fn random_book(rng: &mut impl Rng) -> Workbook {
    let mut b = Workbook { sheets: vec![] };
    let n_sheets = rng.gen_range(1..=2);
    for s in 0..n_sheets {
        let mut sheet = Sheet::new(&format!("Sheet{}", s + 1));
        let (rows, cols) = (rng.gen_range(1..7), rng.gen_range(1..5));
        for c in 0..cols {
            let h = HEADERS[rng.gen_range(0..HEADERS.len())];
            if let Some(x) = Content::typed(h) {
                sheet.cells.insert(Addr::new(0, c), x);
            }
        }
        // a column of one kind most of the time, so that numeric dtypes occur
        for c in 0..cols {
            let kind = rng.gen_range(0..3);
            for r in 1..rows {
                let v = match kind {
                    0 => Some(Content::Number(rng.gen_range(0..100) as f64)),
                    1 => Some(Content::Number(rng.gen_range(0..10000) as f64 / 7.0)),
                    _ => random_content(rng, r, c),
                };
                if let Some(v) = v {
                    sheet.cells.insert(Addr::new(r, c), v);
                }
            }
        }
        b.sheets.push(sheet);
    }
    b
}

/// A variant of `b` that differs (or not) in one of the ways the rules see.
fn mutate(b: &Workbook, rng: &mut impl Rng) -> Workbook {
    let mut m = b.clone();
    let s = rng.gen_range(0..m.sheets.len());
    let keys: Vec<Addr> = m.sheets[s].cells.keys().copied().collect();
    let pick = |rng: &mut dyn rand::RngCore| {
        keys[rng
            .gen_range(0..keys.len().max(1))
            .min(keys.len().saturating_sub(1))]
    };
    match rng.gen_range(0..11) {
        0 | 1 => {}
        2 if !keys.is_empty() => {
            let a = pick(rng);
            let v = random_content(rng, a.row, a.col);
            match v {
                Some(v) => m.sheets[s].cells.insert(a, v),
                None => m.sheets[s].cells.remove(&a),
            };
        }
        3 if !keys.is_empty() => {
            let a = pick(rng);
            if let Some(Content::Number(x)) = m.sheets[s].cells.get(&a).cloned() {
                let d = [1e-5, 4e-5, 1e-3, 0.5][rng.gen_range(0..4)];
                m.sheets[s].cells.insert(a, Content::Number(x + d));
            }
        }
        4 if !keys.is_empty() => {
            let a = pick(rng);
            match m.sheets[s].cells.get(&a).cloned() {
                Some(Content::Number(x)) => {
                    m.sheets[s].cells.insert(
                        a,
                        Content::Text(rla_desktop::sheet::formula::format_number(x)),
                    );
                }
                Some(Content::Text(t)) => {
                    if let Some(x) = rla_desktop::sheet::workbook::parse_number(t.trim()) {
                        m.sheets[s].cells.insert(a, Content::Number(x));
                    }
                }
                _ => {}
            }
        }
        5 => {
            let ext = m.sheets[s].extent().unwrap_or(Addr::new(0, 0));
            m.sheets[s]
                .cells
                .insert(Addr::new(ext.row + 2, 0), Content::Text("NA".into()));
        }
        6 => m.sheets[s].name = "Data".into(),
        7 => m.sheets.push(Sheet::new("Extra")),
        8 if m.sheets.len() > 1 => m.sheets.swap(0, 1),
        9 => {
            let ext = m.sheets[s].extent().unwrap_or(Addr::new(0, 0));
            m.sheets[s]
                .cells
                .insert(Addr::new(ext.row + 1, ext.col + 1), Content::Bool(true));
        }
        _ if !keys.is_empty() => {
            let a = pick(rng);
            m.sheets[s].cells.remove(&a);
        }
        _ => {}
    }
    m
}

fn book_json(path: &Path, b: &Workbook) -> Value {
    let sheets: Vec<Value> = b
        .sheets
        .iter()
        .map(|s| {
            let cells: Vec<Value> = s
                .cells
                .iter()
                .map(|(a, c)| {
                    let v = match c {
                        Content::Number(x) => json!(x),
                        Content::Text(t) => json!(t),
                        Content::Bool(x) => json!(x),
                        Content::Error(e) => json!(e),
                        Content::Formula(f) => json!(format!("={f}")),
                    };
                    json!([a.to_string(), v])
                })
                .collect();
            json!({"name": s.name, "cells": cells})
        })
        .collect();
    json!({"path": path, "sheets": sheets})
}

fn rules(rng: &mut impl Rng, b: &Workbook) -> Vec<Value> {
    let sheet0 = b.sheets[0].name.clone();
    let coord = Addr::new(rng.gen_range(0..5), rng.gen_range(0..3)).to_string();
    let value = b.value(0, Addr::parse(&coord).unwrap());
    let refv = match value {
        rla_desktop::sheet::formula::Value::Number(x) => json!(x),
        rla_desktop::sheet::formula::Value::Text(t) => json!(t),
        _ => json!("Revenue"),
    };
    let idx0 = [
        json!(0),
        json!("RI0"),
        json!(format!("RN{sheet0}")),
        json!("RI1"),
        json!(1),
    ][rng.gen_range(0..5)]
    .clone();
    let idx1 = [json!("EI0"), json!("ENSheet1"), json!("EI1")][rng.gen_range(0..3)].clone();
    let method = [
        "eq",
        "ne",
        "lt",
        "ge",
        "approx:0.01",
        "str_set_eq",
        "range.te",
    ][rng.gen_range(0..7)];
    let refv = match method {
        "str_set_eq" => json!(["Revenue", "Cost"]),
        "range.te" => json!([0, 50]),
        "approx:0.01" => json!(refv.as_f64().unwrap_or(3.0)),
        _ => refv,
    };
    let fuzzy = ["includes", "included_by", "fuzzy_match", "exact_match"][rng.gen_range(0..4)];
    let precision = [4, 2, 0][rng.gen_range(0..3)];
    let ignore_case: bool = rng.gen();
    vec![
        json!({"type": "sheet_data", "sheet_idx0": idx0, "sheet_idx1": idx1, "precision": precision}),
        json!({"type": "sheet_name"}),
        json!({"type": "check_cell", "sheet_idx": idx0, "coordinate": coord, "props": {"value": {"method": method, "ref": refv}}}),
        json!({"type": "sheet_fuzzy", "sheet_idx0": idx0, "sheet_idx1": idx1, "rules": [
            {"range": ["A1:C3"], "type": fuzzy, "threshold": 80, "ignore_case": ignore_case, "trim_leadings": " ", "normalization": [["Rev", "Revenue"]]}]}),
        json!({"type": "sheet_print", "sheet_idx0": idx0, "sheet_idx1": idx1, "ignore_case": false}),
    ]
}

/// The per-sheet CSV exports `sheet_print` reads, written beside a workbook.
fn export_csvs(path: &Path, b: &Workbook) {
    for (i, s) in b.sheets.iter().enumerate() {
        let p = format!("{}-{}.csv", path.with_extension("").display(), s.name);
        std::fs::write(p, xlsx::to_csv(b, i)).unwrap();
    }
}

#[test]
fn scores_equal_osworlds_on_a_seeded_corpus() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(14);
    let (mut cases, mut ours): (Vec<Value>, Vec<Result<f64, String>>) = (vec![], vec![]);
    let mut openpyxl_books = vec![];
    let mut pairs: Vec<(PathBuf, PathBuf, Workbook)> = vec![];
    for i in 0..120 {
        let a = random_book(&mut rng);
        let b = mutate(&a, &mut rng);
        let (pa, pb) = (
            dir.path().join(format!("r{i}.xlsx")),
            dir.path().join(format!("e{i}.xlsx")),
        );
        match i % 3 {
            // written by this crate
            0 => {
                xlsx::save(&a, &pa).unwrap();
                xlsx::save(&b, &pb).unwrap();
            }
            // written by openpyxl (formulas without cached results); some re-saved by LibreOffice
            _ => {
                openpyxl_books.push(book_json(&pa, &a));
                openpyxl_books.push(book_json(&pb, &b));
            }
        }
        export_csvs(&pa, &a);
        export_csvs(&pb, &b);
        pairs.push((pa, pb, a));
    }
    run_python("write_openpyxl.py", &Value::Array(openpyxl_books));
    // LibreOffice re-saves every third pair written by openpyxl, computing the formulas
    let lo: Vec<&PathBuf> = pairs
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 3 == 2)
        .flat_map(|(_, (a, b, _))| [a, b])
        .collect();
    libreoffice_resave(dir.path(), &lo);
    for (pa, pb, a) in &pairs {
        for rule in rules(&mut rng, a) {
            let options = json!({ "rules": [rule] });
            cases.push(
                json!({"func": "compare_table", "result": pa, "expected": pb, "options": options}),
            );
            ours.push(compare_table(Some(pa), Some(pb), &options));
        }
        let ca = PathBuf::from(format!("{}-Sheet1.csv", pa.with_extension("").display()));
        let cb = PathBuf::from(format!("{}-Sheet1.csv", pb.with_extension("").display()));
        for opts in [json!({}), json!({"strict": false, "ignore_case": true})] {
            cases.push(
                json!({"func": "compare_csv", "result": ca, "expected": [cb], "options": opts}),
            );
            ours.push(Ok(compare_csv(Some(&ca), std::slice::from_ref(&cb), &opts)));
        }
    }
    // a result that does not exist, and one that is not a workbook
    let junk = dir.path().join("junk.xlsx");
    std::fs::write(&junk, b"not a zip").unwrap();
    for r in [dir.path().join("missing.xlsx"), junk] {
        let options = json!({"rules": [{"type": "sheet_name"}]});
        cases.push(json!({"func": "compare_table", "result": r, "expected": pairs[0].1, "options": options}));
        ours.push(compare_table(Some(&r), Some(&pairs[0].1), &options));
    }
    let theirs: Vec<Value> =
        serde_json::from_str(&run_python("score.py", &Value::Array(cases.clone()))).unwrap();
    assert_eq!(theirs.len(), ours.len());
    let Agreement {
        ones,
        zeros,
        errors,
        ..
    } = agreement(&cases, &theirs, &ours, |_| false);
    // the corpus exercises every outcome
    assert!(
        ones > 50 && zeros > 50 && errors > 0,
        "ones {ones}, zeros {zeros}, errors {errors}"
    );
}

/// A workbook in memory scores as the file this crate saves for it does (the training loop
/// scores episodes without writing files).
#[test]
fn memory_books_score_as_their_saved_files() {
    use rla_desktop::osworld::compare::{compare_books, Book};
    let dir = tempfile::tempdir().unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(41);
    let (mut n, mut ones) = (0, 0);
    for i in 0..150 {
        let a = random_book(&mut rng);
        let b = mutate(&a, &mut rng);
        let (pa, pb) = (
            dir.path().join(format!("r{i}.xlsx")),
            dir.path().join(format!("e{i}.xlsx")),
        );
        xlsx::save(&a, &pa).unwrap();
        xlsx::save(&b, &pb).unwrap();
        export_csvs(&pa, &a);
        export_csvs(&pb, &b);
        for rule in rules(&mut rng, &a) {
            let options = json!({ "rules": [rule] });
            let file = compare_table(Some(&pa), Some(&pb), &options);
            let memory = compare_books(&Book::memory(&a), Some(&Book::memory(&b)), &options);
            assert_eq!(
                file.is_ok(),
                memory.is_ok(),
                "{options}: {file:?} vs {memory:?}"
            );
            if let (Ok(x), Ok(y)) = (&file, &memory) {
                assert_eq!(x, y, "{options}");
                ones += (*x == 1.0) as usize;
            }
            n += 1;
        }
    }
    assert!(ones > 100 && ones < n - 100, "{ones} of {n} pass");
}

const FORMATS: [&str; 8] = [
    "0.00%",
    "#,##0.00",
    "0.00",
    "yyyy-mm-dd",
    "\"$\"#,##0",
    "General",
    "@",
    "[Red]0.0",
];
const COLORS: [&str; 4] = ["FFFF0000", "FF0000FF", "FF000000", "theme:1"];
const FILLS: [&str; 3] = ["FFFFFF00", "FF00B050", "gradient"];
const FONTS: [&str; 3] = ["Arial", "Calibri", "Liberation Serif"];

/// A style as `write_openpyxl.py` applies it, drawn at random.
fn random_style(rng: &mut impl Rng) -> Value {
    let mut s = serde_json::Map::new();
    if rng.gen_bool(0.5) {
        s.insert("bold".into(), json!(rng.gen_bool(0.7)));
    }
    if rng.gen_bool(0.3) {
        s.insert("italic".into(), json!(true));
    }
    if rng.gen_bool(0.25) {
        s.insert(
            "underline".into(),
            json!(["single", "double"][rng.gen_range(0..2)]),
        );
    }
    if rng.gen_bool(0.4) {
        s.insert(
            "size".into(),
            json!([9.0, 11.0, 14.0, 20.5][rng.gen_range(0..4)]),
        );
    }
    if rng.gen_bool(0.4) {
        s.insert("name".into(), json!(FONTS[rng.gen_range(0..FONTS.len())]));
    }
    if rng.gen_bool(0.4) {
        s.insert(
            "color".into(),
            json!(COLORS[rng.gen_range(0..COLORS.len())]),
        );
    }
    if rng.gen_bool(0.35) {
        s.insert("fill".into(), json!(FILLS[rng.gen_range(0..FILLS.len())]));
    }
    if rng.gen_bool(0.5) {
        s.insert(
            "number_format".into(),
            json!(FORMATS[rng.gen_range(0..FORMATS.len())]),
        );
    }
    Value::Object(s)
}

/// A styled sheet: numbers, texts (some with outer spaces), formulas and empty styled cells, a
/// merged range and a hyperlink.
fn styled_book(path: &Path, rng: &mut impl Rng) -> Value {
    let mut cells = vec![];
    for r in 1..=5 {
        for c in 0..3u32 {
            let coord = format!("{}{r}", rla_desktop::sheet::addr::col_name(c));
            let v = match rng.gen_range(0..8) {
                0 => Value::Null,
                1 | 2 => json!(rng.gen_range(-20..500) as f64 / 4.0),
                3 => json!(["Bob", " Bob ", "Revenue", "north 7", "A-12"][rng.gen_range(0..5)]),
                4 if r > 1 => json!(format!("=A{}+1", r - 1)),
                5 => json!(rng.gen_range(0..40)),
                _ => json!(WORDS[rng.gen_range(0..WORDS.len())]),
            };
            cells.push(json!([coord, v, random_style(rng)]));
        }
    }
    json!({"path": path, "sheets": [{
        "name": "Sheet1",
        "cells": cells,
        "merged": if rng.gen_bool(0.6) { json!(["B2:C2"]) } else { json!([]) },
        "links": if rng.gen_bool(0.6) { json!([["A3", "https://example.com/a"]]) } else { json!([]) },
    }]})
}

/// The check_cell rules a styled book is scored with: every property, compared with values it
/// may hold (so both scores occur), and regular expressions on values.
fn style_rules(rng: &mut impl Rng) -> Vec<Value> {
    let mut out = vec![];
    for prop in rla_desktop::osworld::style::PROPERTIES {
        let coord = format!(
            "{}{}",
            ["A", "B", "C", "D"][rng.gen_range(0..4)],
            rng.gen_range(1..6)
        );
        let refs: Vec<Value> = match prop {
            "number_format" => FORMATS.iter().map(|f| json!(f)).collect(),
            "font_name" => FONTS.iter().map(|f| json!(f)).collect(),
            "font_family" => vec![json!(2.0), json!(1)],
            "font_color" => COLORS[..3].iter().map(|c| json!(c)).collect(),
            "font_bold" | "font_italic" | "merge" => vec![json!(true), json!(false)],
            "font_underline" => vec![json!("single"), json!("double"), Value::Null],
            "font_size" => vec![json!(11.0), json!(14), json!(20.5), json!(10)],
            "fill_type" => vec![json!("patternFill"), json!("gradientFill")],
            "bgcolor" | "fgcolor" => vec![json!("FFFFFF00"), json!("00000000"), json!("FF00B050")],
            _ => vec![json!(""), json!("https://example.com/a")], // hyperlink
        };
        let r = refs[rng.gen_range(0..refs.len())].clone();
        let method = match (prop, rng.gen_range(0..4)) {
            ("font_size", 0) => "approx:0.5",
            ("font_size", 1) => "ge",
            (_, 0) => "ne",
            _ => "eq",
        };
        out.push(
            json!({"type": "check_cell", "sheet_idx": 0, "coordinate": coord,
            "props": {prop: {"method": method, "ref": r}}}),
        );
    }
    for r in 1..=5 {
        for c in ["A", "B", "C"] {
            let (method, pattern) = [
                ("re", r"^\d+(\.\d+)?$"),
                ("re.I", "bob"),
                ("re", r"\bBob\b"),
                ("re.I.M", "^rev"),
                ("re", r"(?P<w>[a-z]+) \d"),
                ("re", "[Rr]ev(enue)?$"),
                ("re.S", "a.b"),
                ("re", "o"),
                ("re", "("), // Python refuses to compile it: 0
                ("re.NOSUCHFLAG", "x"),
            ][rng.gen_range(0..10)];
            out.push(
                json!({"type": "check_cell", "sheet_idx": "RI0", "coordinate": format!("{c}{r}"),
                "props": {"value": {"method": method, "ref": pattern}}}),
            );
        }
    }
    out
}

/// Rewrites one part of an .xlsx file.
fn rewrite_part(path: &Path, part: &str, edit: impl Fn(String) -> String) {
    let mut z = zip::ZipArchive::new(std::fs::File::open(path).unwrap()).unwrap();
    let mut parts = vec![];
    for i in 0..z.len() {
        let mut f = z.by_index(i).unwrap();
        let mut bytes = vec![];
        std::io::Read::read_to_end(&mut f, &mut bytes).unwrap();
        parts.push((f.name().unwrap().to_string(), bytes));
    }
    let mut w = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    for (name, bytes) in parts {
        w.start_file(&name, zip::write::SimpleFileOptions::default())
            .unwrap();
        let bytes = if name == part {
            edit(String::from_utf8(bytes).unwrap()).into_bytes()
        } else {
            bytes
        };
        std::io::Write::write_all(&mut w, &bytes).unwrap();
    }
    w.finish().unwrap();
}

#[test]
fn styles_regexes_and_string_quirks_score_as_osworlds() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(32);
    let n = 60;
    let paths: Vec<PathBuf> = (0..n)
        .map(|i| dir.path().join(format!("s{i}.xlsx")))
        .collect();
    let books: Vec<Value> = paths.iter().map(|p| styled_book(p, &mut rng)).collect();
    run_python("write_openpyxl.py", &Value::Array(books));
    // LibreOffice re-saves every other book: its own styles.xml, shared strings, cached results
    let lo: Vec<&PathBuf> = paths.iter().step_by(2).collect();
    libreoffice_resave(dir.path(), &lo);
    // the shared-string quirk: one empty <si> makes every shared string unreadable to OSWorld
    let quirk = dir.path().join("empty-si.xlsx");
    std::fs::copy(&paths[0], &quirk).unwrap();
    rewrite_part(&quirk, "xl/sharedStrings.xml", |x| {
        x.replacen("<si>", "<si><t/></si><si>", 1)
            .replace("<si><t/></si><si>", "<si><t></t></si><si>")
    });
    let mut all = paths.clone();
    all.push(quirk);
    let same: Vec<(PathBuf, PathBuf)> = all.iter().map(|p| (p.clone(), p.clone())).collect();
    let (cases, theirs, ours) = score_rules(&same, || {
        let mut rules = style_rules(&mut rng);
        for coord in ["A1", "A2", "B1", "C3"] {
            for (m, r) in [
                ("eq", json!(" Bob ")),
                ("eq", json!("Bob")),
                ("ne", json!("Bob")),
            ] {
                rules.push(
                    json!({"type": "check_cell", "sheet_idx": 0, "coordinate": coord,
                    "props": {"value": {"method": m, "ref": r}}}),
                );
            }
        }
        rules
    });
    let Agreement { ones, zeros, .. } = agreement(&cases, &theirs, &ours, |_| false);
    // every property, and the quirks, decide some cases both ways
    let mut by_prop: std::collections::BTreeMap<String, (usize, usize)> = Default::default();
    for (case, t) in cases.iter().zip(&theirs) {
        let props = &case["options"]["rules"][0]["props"];
        let (prop, rule) = props.as_object().unwrap().iter().next().unwrap();
        let key = if prop == "value" {
            let m = rule["method"].as_str().unwrap();
            if m.starts_with("re") {
                "value re".to_string()
            } else {
                format!("value {}", rule["ref"])
            }
        } else {
            prop.clone()
        };
        let e = by_prop.entry(key).or_default();
        if t.as_f64() == Some(1.0) {
            e.0 += 1
        } else {
            e.1 += 1
        }
    }
    eprintln!("ones {ones}, zeros {zeros}: {by_prop:?}");
    for (k, (one, zero)) in &by_prop {
        assert!(
            *one > 0 && *zero > 0,
            "{k}: OSWorld scored {one} ones and {zero} zeros"
        );
    }
    assert!(ones > 100 && zeros > 100, "ones {ones}, zeros {zeros}");
}

/// A sheet's view, rows, validations and styles, drawn at random, as `write_openpyxl.py` writes
/// them: some pairs of books differ in one of them.
fn sheet_extras(rng: &mut impl Rng) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    if rng.gen_bool(0.6) {
        m.insert(
            "zoom".into(),
            json!([75, 100, 150, 260, 300][rng.gen_range(0..5)]),
        );
    }
    if rng.gen_bool(0.5) {
        m.insert(
            "freeze".into(),
            json!(["A2", "B2", "B3"][rng.gen_range(0..3)]),
        );
    }
    if rng.gen_bool(0.5) {
        m.insert(
            "hidden_rows".into(),
            [json!([2]), json!([3]), json!([2, 4])][rng.gen_range(0..3)].clone(),
        );
    }
    if rng.gen_bool(0.6) {
        let (formula, sqref) = [
            ("\"Pass,Fail,Held\"", "D2:D29"),
            ("\"Pass,Fail\"", "D2:D29"),
            ("\"Pass,Fail,Held\"", "D2:D40"),
            ("\"Held,Pass,Fail\"", "D3:D20"),
        ][rng.gen_range(0..4)];
        m.insert(
            "validations".into(),
            json!([{"type": "list", "formula1": formula, "sqref": sqref}]),
        );
    }
    if rng.gen_bool(0.1) {
        m.insert("conditional".into(), json!(true));
    }
    m
}

#[test]
fn sheet_rules_score_as_osworlds() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(33);
    let n = 40;
    let mut books = vec![];
    let mut pairs = vec![];
    for i in 0..n {
        let (pa, pb) = (
            dir.path().join(format!("r{i}.xlsx")),
            dir.path().join(format!("e{i}.xlsx")),
        );
        let mut a = styled_book(&pa, &mut rng);
        let extras = sheet_extras(&mut rng);
        for (k, v) in &extras {
            a["sheets"][0][k] = v.clone();
        }
        // the expected book: the same, or one thing changed
        let mut b = a.clone();
        b["path"] = json!(pb);
        match rng.gen_range(0..6) {
            0 => b["sheets"][0] = styled_book(&pb, &mut rng)["sheets"][0].clone(),
            1 => {
                for (k, v) in sheet_extras(&mut rng) {
                    b["sheets"][0][k] = v;
                }
            }
            _ => {}
        }
        books.push(a);
        books.push(b);
        pairs.push((pa, pb));
    }
    run_python("write_openpyxl.py", &Value::Array(books));
    // LibreOffice re-saves every third pair: its own views, row attributes and validations
    let lo: Vec<&PathBuf> = pairs.iter().step_by(3).flat_map(|(a, b)| [a, b]).collect();
    libreoffice_resave(dir.path(), &lo);
    let (cases, theirs, ours) = score_rules(&pairs, || {
        let dv_props = [
            json!([{"ranges": {"method": "spreadsheet_range", "ref": ["D2:D29", "D2:D1048576"]},
                "type": {"method": "eq", "ref": "list"},
                "formula1": {"method": "str_set_eq", "ref": ["Pass", "Fail", "Held"]}}]),
            json!([{"type": {"method": "eq", "ref": "list"}, "allowBlank": {"method": "eq", "ref": true}}]),
            json!([{"type": {"method": "eq", "ref": "whole"}}, {"formula1": {"method": "re", "ref": "Pass"}}]),
        ];
        let mut rules = vec![
            json!({"type": "freeze", "sheet_idx0": 0, "sheet_idx1": "EI0"}),
            json!({"type": "row_props", "sheet_idx0": 0, "sheet_idx1": "EI0", "props": ["hidden"]}),
            json!({"type": "zoom", "sheet_idx": 0, "method": "lt", "ref": 260}),
            json!({"type": "zoom", "sheet_idx": "EI0", "method": "ge", "ref": 100}),
            json!({"type": "data_validation", "sheet_idx": 0, "dv_props": dv_props[rng.gen_range(0..3)]}),
            json!({"type": "style", "sheet_idx0": 0, "sheet_idx1": "EI0", "props": ["font_color"]}),
            json!({"type": "style", "sheet_idx0": 0, "sheet_idx1": "EI0", "props": ["bgcolor"]}),
            json!({"type": "style", "sheet_idx0": 0, "sheet_idx1": "EI0", "props": ["font_bold", "number_format", "merge"]}),
        ];
        rules.push(
            json!({"type": "zoom", "sheet_idx": "RNNoSuchSheet", "method": "lt", "ref": 260}),
        );
        rules
    });
    // conditional formatting is refused here where OSWorld evaluates it
    let refused =
        |o: &Result<f64, String>| matches!(o, Err(m) if m.contains("conditional formatting"));
    agreement(&cases, &theirs, &ours, refused);
    let refused_n = ours.iter().filter(|o| refused(o)).count();
    let mut by_rule: std::collections::BTreeMap<String, (usize, usize, usize)> = Default::default();
    for (case, t) in cases.iter().zip(&theirs) {
        let key = case["options"]["rules"][0]["type"]
            .as_str()
            .unwrap()
            .to_string();
        let e = by_rule.entry(key).or_default();
        match t.as_f64() {
            Some(1.0) => e.0 += 1,
            Some(_) => e.1 += 1,
            None => e.2 += 1,
        }
    }
    eprintln!("ones, zeros, errors by rule: {by_rule:?}; {refused_n} style rules refused over conditional formatting");
    assert!(refused_n < cases.len() / 10, "{refused_n} refused");
    for (k, (one, zero, _)) in &by_rule {
        assert!(
            *one > 0 && *zero > 0,
            "{k}: OSWorld scored {one} ones and {zero} zeros"
        );
    }
}

/// A chart drawn at random, as `write_openpyxl.py` adds it.
fn random_chart(rng: &mut impl Rng) -> Value {
    let kind = ["bar", "bar3d", "line", "pie", "scatter"][rng.gen_range(0..5)];
    let dir = ["col", "bar"][rng.gen_range(0..2)];
    let title =
        [json!("Sales"), json!("Revenue by region"), Value::Null][rng.gen_range(0..3)].clone();
    let values = [[2, 1, 5], [3, 1, 5], [2, 2, 4]][rng.gen_range(0..3)];
    let cats = [json!([1, 2, 5]), Value::Null][rng.gen_range(0..2)].clone();
    let at = ["E2", "G10"][rng.gen_range(0..2)];
    let mut c =
        json!({"kind": kind, "dir": dir, "title": title, "values": values, "cats": cats, "at": at});
    if rng.gen_bool(0.3) {
        c["legend"] = [json!("b"), Value::Null][rng.gen_range(0..2)].clone();
    }
    c
}

#[test]
fn charts_score_as_osworlds() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(34);
    let mut books = vec![];
    let mut pairs = vec![];
    for i in 0..30 {
        let (pa, pb) = (
            dir.path().join(format!("r{i}.xlsx")),
            dir.path().join(format!("e{i}.xlsx")),
        );
        let mut a = styled_book(&pa, &mut rng);
        let charts: Vec<Value> = (0..rng.gen_range(0..3))
            .map(|_| random_chart(&mut rng))
            .collect();
        a["sheets"][0]["charts"] = json!(charts);
        let mut b = a.clone();
        b["path"] = json!(pb);
        match rng.gen_range(0..4) {
            0 => b["sheets"][0]["charts"] = json!([random_chart(&mut rng)]),
            1 if !charts.is_empty() => b["sheets"][0]["charts"][0]["title"] = json!("Other"),
            _ => {}
        }
        books.push(a);
        books.push(b);
        pairs.push((pa, pb));
    }
    run_python("write_openpyxl.py", &Value::Array(books));
    // LibreOffice re-saves every third pair: its own chart XML
    let lo: Vec<&PathBuf> = pairs.iter().step_by(3).flat_map(|(a, b)| [a, b]).collect();
    libreoffice_resave(dir.path(), &lo);
    let (cases, theirs, ours) = score_rules(&pairs, || {
        [
            json!(["type", "title"]),
            json!(["type"]),
            json!(["type", "direction"]),
            json!(["legend", "width", "height"]),
        ]
        .into_iter()
        .map(|props| json!({"type": "chart", "sheet_idx0": 0, "sheet_idx1": "EI0", "chart_props": props}))
        .collect()
    });
    let Agreement {
        ones,
        zeros,
        errors,
        ..
    } = agreement(&cases, &theirs, &ours, |_| false);
    eprintln!("charts: ones {ones}, zeros {zeros}, errors {errors}");
    assert!(
        ones > 10 && zeros > 10 && errors > 0,
        "ones {ones}, zeros {zeros}, errors {errors}"
    );
}

/// A pivot table over the styled sheet's first columns, drawn at random, as `write_openpyxl.py`
/// builds it with openpyxl's pivot classes.
fn random_pivot(rng: &mut impl Rng) -> Value {
    let n = rng.gen_range(2..5);
    let fields: Vec<Value> = (0..n)
        .map(|k| {
            // empty fields at either end narrow the source's columns
            if (k == 0 || k == n - 1) && rng.gen_bool(0.3) {
                json!([])
            } else {
                let items: Vec<Value> = (0..rng.gen_range(1..4))
                    .map(|x| json!([x, rng.gen_bool(0.3)]))
                    .collect();
                json!(items)
            }
        })
        .collect();
    let source = ["A1:C5", "A1:D5", "B1:C4"][rng.gen_range(0..3)];
    let rows = [json!([0]), json!([1]), json!([])][rng.gen_range(0..3)].clone();
    let cols = [json!([]), json!([1]), json!([-2])][rng.gen_range(0..3)].clone();
    let data = [
        json!([[2, "Sum of F2", "sum"]]),
        json!([[1, null, "count"]]),
        json!([]),
    ][rng.gen_range(0..3)]
    .clone();
    let pages = [json!([]), json!([0]), json!([1, 0])][rng.gen_range(0..3)].clone();
    json!({"source": source, "fields": fields, "rows": rows, "cols": cols, "data": data,
        "pages": pages, "location": "H3:J8"})
}

#[test]
fn pivot_tables_score_as_osworlds() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(35);
    let mut books = vec![];
    let mut pairs = vec![];
    for i in 0..40 {
        let (pa, pb) = (
            dir.path().join(format!("r{i}.xlsx")),
            dir.path().join(format!("e{i}.xlsx")),
        );
        let mut a = styled_book(&pa, &mut rng);
        let pivots: Vec<Value> = (0..rng.gen_range(0..3))
            .map(|_| random_pivot(&mut rng))
            .collect();
        a["sheets"][0]["pivots"] = json!(pivots);
        let mut b = a.clone();
        b["path"] = json!(pb);
        if rng.gen_bool(0.4) {
            b["sheets"][0]["pivots"] = json!([random_pivot(&mut rng)]);
        }
        books.push(a);
        books.push(b);
        pairs.push((pa, pb));
    }
    run_python("write_openpyxl.py", &Value::Array(books));
    let (cases, theirs, ours) = score_rules(&pairs, || {
        [
            json!(["col_fields", "filter", "row_fields", "data_fields"]),
            json!(["selection", "ordered", "data_fields", "data_fields_name"]),
            json!(["name", "show_total", "show_empty_row", "show_headers", "location"]),
            json!(["no_such_property"]),
        ]
        .into_iter()
        .map(|props| json!({"type": "pivot_table", "sheet_idx0": "RNSheet1", "sheet_idx1": "ENSheet1", "pivot_props": props}))
        .collect()
    });
    let Agreement { ones, zeros, .. } = agreement(&cases, &theirs, &ours, |_| false);
    eprintln!("pivots: ones {ones}, zeros {zeros}");
    assert!(ones > 20 && zeros > 20, "ones {ones}, zeros {zeros}");
}
