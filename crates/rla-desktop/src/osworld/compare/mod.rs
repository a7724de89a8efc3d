//! OSWorld's spreadsheet evaluators on saved files, scoring as `desktop-env` 1.0.2's
//! `compare_table` and `compare_csv` do: `compare_table`'s rules `sheet_name`, `sheet_data`
//! (sheets read as pandas reads them, [`crate::osworld::frame`]), `sheet_print` (the per-sheet CSV
//! exports), `sheet_fuzzy` and `check_cell` (values read from the file's XML as OSWorld's
//! `read_cell_value` reads them, styles as openpyxl reads them, [`crate::osworld::style`]), `style`,
//! `freeze`, `zoom`, `row_props`, `data_validation`, `chart` ([`crate::osworld::chart`]) and
//! `pivot_table` ([`crate::osworld::pivot`]), and an evaluator's list of functions
//! joined by `conj`.
//!
//! Where OSWorld scores 0 (a result file that does not load, a missing result sheet, a failed
//! check) these give `Ok(0.0)`; where OSWorld raises (a rule it does not know, an expected file
//! that does not load, a sheet index it cannot parse) they give an error that says what.

use crate::osworld::frame::Frame;
use crate::osworld::rawcell::{read_cell_value, CellValue};
use crate::osworld::style::{read_cell_style, PyValue as StyleValue, StyledSheet};
use crate::osworld::task::Evaluator;
use crate::sheet::workbook::{Content, Workbook};
use crate::sheet::xlsx::{self, StoredSheet};
use serde_json::Value as Json;
use std::path::{Path, PathBuf};

mod rule;
mod sheet_rules;
pub use rule::fuzz_ratio;
use rule::{match_rule, PyV};
use sheet_rules::{data_validation, sheet_styles};

/// A workbook as the evaluators read it: its sheets' stored values, and where its cells' XML
/// and CSV exports come from — a file, or a workbook in memory read as if this crate had saved
/// it (the same scores, without the file).
pub struct Book {
    source: Source,
    sheets: Vec<StoredSheet>,
}

enum Source {
    File(PathBuf),
    Memory(Workbook),
}

impl Book {
    /// Loads a saved .xlsx file.
    pub fn load(path: &Path) -> Result<Book, String> {
        let sheets = xlsx::cached(path).map_err(|e| e.to_string())?;
        // what makes openpyxl refuse a file that this reader takes
        crate::osworld::pivot::check_caches(path)?;
        Ok(Book {
            source: Source::File(path.into()),
            sheets,
        })
    }

    /// A workbook in memory, read as its saved file would be.
    pub fn memory(book: &Workbook) -> Book {
        Book {
            sheets: xlsx::stored(book),
            source: Source::Memory(book.clone()),
        }
    }

    fn names(&self) -> Vec<String> {
        self.sheets.iter().map(|s| s.name.clone()).collect()
    }

    fn sheet(&self, name: &str) -> Option<&StoredSheet> {
        self.sheets.iter().find(|s| s.name == name)
    }

    /// `read_cell_value` on this book.
    fn cell_value(&self, sheet: &str, coordinate: &str) -> Result<CellValue, String> {
        match &self.source {
            Source::File(p) => read_cell_value(p, sheet, coordinate),
            Source::Memory(b) => Ok(memory_cell_value(b, sheet, coordinate)),
        }
    }

    /// `_read_cell_style` on this book: a saved file's styles; a workbook in memory has none to
    /// read (the native desktop keeps no cell styles), which is an error naming the property.
    fn cell_style(
        &self,
        sheet: &str,
        coordinate: &str,
        prop: &str,
    ) -> Result<Result<StyleValue, String>, String> {
        match &self.source {
            Source::File(p) => read_cell_style(p, sheet, coordinate, prop),
            Source::Memory(_) => Err(format!(
                "check_cell's {prop:?} reads the styles of a saved file; this workbook is in memory"
            )),
        }
    }

    /// A sheet as openpyxl reads its styles, view, rows and validations (`None`: openpyxl's
    /// `book[name]` fails); a workbook in memory has no such file to read, an error naming `what`.
    fn styled(&self, sheet: &str, what: &str) -> Result<Option<StyledSheet>, String> {
        match &self.source {
            Source::File(p) => Ok(StyledSheet::open(p, sheet).ok()),
            Source::Memory(_) => Err(format!(
                "{what} reads a saved file's sheet XML; this workbook is in memory"
            )),
        }
    }

    /// `load_charts` on this book's sheet: a saved file's charts; a workbook in memory has none
    /// to read (the native desktop draws no charts), an error.
    #[allow(clippy::type_complexity)]
    fn charts(
        &self,
        sheet: &str,
        props: &[String],
    ) -> Result<std::collections::BTreeMap<String, Vec<(String, StyleValue)>>, String> {
        match &self.source {
            Source::File(p) => crate::osworld::chart::load_charts(p, sheet, props),
            Source::Memory(_) => {
                Err("the chart rule reads a saved file's charts; this workbook is in memory".into())
            }
        }
    }

    /// `load_pivot_tables` on this book's sheet: a saved file's pivot tables; a workbook in
    /// memory has none, an error.
    #[allow(clippy::type_complexity)]
    fn pivots(
        &self,
        sheet: &str,
        props: &[String],
    ) -> Result<std::collections::BTreeMap<String, std::collections::BTreeMap<String, Json>>, String>
    {
        match &self.source {
            Source::File(p) => crate::osworld::pivot::load_pivot_tables(p, sheet, props),
            Source::Memory(_) => Err(
                "the pivot_table rule reads a saved file's pivot tables; this workbook is in memory"
                    .into(),
            ),
        }
    }

    /// The per-sheet CSV export `sheet_print` reads.
    fn printed(&self, sheet: &str) -> Option<Vec<String>> {
        let lines = match &self.source {
            Source::File(p) => {
                let name = format!("{}-{sheet}.csv", p.with_extension("").display());
                read_lines(Path::new(&name)).ok()?
            }
            Source::Memory(b) => splitlines(&xlsx::to_csv(b, b.index(sheet)?)),
        };
        Some(
            lines
                .iter()
                .rev()
                .map(|l| l.trim().to_string())
                .skip_while(|l| l.is_empty())
                .collect(),
        )
    }
}

/// What `read_cell_value` reads from the file this crate writes for `book`.
fn memory_cell_value(book: &Workbook, sheet: &str, coordinate: &str) -> CellValue {
    let (Some(i), Some(at)) = (
        book.index(sheet),
        crate::sheet::addr::Addr::parse(coordinate),
    ) else {
        return CellValue::None;
    };
    match book.sheets[i].cells.get(&at) {
        None | Some(Content::Bool(_)) => CellValue::None,
        Some(Content::Number(x)) => CellValue::Float(*x),
        Some(Content::Text(t)) | Some(Content::Error(t)) => CellValue::Str(t.clone()),
        Some(Content::Formula(_)) => match xlsx::formula_result(book, i, at) {
            xlsx::Stored::Number(x) | xlsx::Stored::Date(x) => CellValue::Float(x),
            xlsx::Stored::Bool(_) => CellValue::None,
            xlsx::Stored::Text(t) | xlsx::Stored::Error(t) => CellValue::Str(t),
        },
    }
}

/// Which book a sheet index names.
#[derive(Clone, Copy, PartialEq)]
enum Side {
    Result,
    Expected,
}

/// `_parse_sheet_idx`: an int (a result sheet by position), `RI0`, `RNname`, `EI0`, `ENname`.
fn parse_idx(
    idx: &Json,
    result: &[String],
    expected: Option<&[String]>,
) -> Result<(Side, String), String> {
    let by_pos = |names: Option<&[String]>, i: &str| -> String {
        i.parse::<usize>()
            .ok()
            .and_then(|i| names.and_then(|n| n.get(i)).cloned())
            .unwrap_or_default()
    };
    match idx {
        Json::Number(n) => {
            let i = n
                .as_i64()
                .ok_or_else(|| format!("sheet index {n} is not an integer"))?;
            let name = usize::try_from(i)
                .ok()
                .and_then(|i| result.get(i).cloned())
                .unwrap_or_default();
            Ok((Side::Result, name))
        }
        Json::String(s) => {
            if let Some(i) = s.strip_prefix("RI") {
                Ok((Side::Result, by_pos(Some(result), i)))
            } else if let Some(n) = s.strip_prefix("RN") {
                Ok((Side::Result, n.to_string()))
            } else if let Some(i) = s.strip_prefix("EI") {
                Ok((Side::Expected, by_pos(expected, i)))
            } else if let Some(n) = s.strip_prefix("EN") {
                Ok((Side::Expected, n.to_string()))
            } else {
                Err(format!(
                    "unrecognized sheet index {s:?} (use an integer, RI0, RNname, EI0 or ENname)"
                ))
            }
        }
        other => Err(format!("unrecognized sheet index {other}")),
    }
}

/// A text file's lines as OSWorld's `_safe_read_file` reads them: UTF-8 (a byte-order mark
/// kept), else Latin-1; split as Python's `str.splitlines` splits.
pub fn read_lines(path: &Path) -> std::io::Result<Vec<String>> {
    let bytes = rla_core::file::read(path)?;
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => e.into_bytes().iter().map(|&b| b as char).collect(),
    };
    Ok(splitlines(&text))
}

/// Python's `str.splitlines()`.
pub fn splitlines(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '\r' => {
                if it.peek() == Some(&'\n') {
                    it.next();
                }
                out.push(std::mem::take(&mut cur));
            }
            '\n' | '\x0b' | '\x0c' | '\x1c' | '\x1d' | '\x1e' | '\u{85}' | '\u{2028}'
            | '\u{2029}' => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn cells_of(range: &Json) -> Result<Vec<String>, String> {
    let parts: Vec<String> = match range {
        Json::String(s) => s.split_whitespace().map(str::to_string).collect(),
        Json::Array(a) => a
            .iter()
            .filter_map(|x| x.as_str().map(str::to_string))
            .collect(),
        _ => {
            return Err("a sheet_fuzzy rule's `range` must be a string or a list of strings".into())
        }
    };
    let mut out = Vec::new();
    for p in parts {
        let r = crate::sheet::addr::Range::parse(&p)
            .filter(|r| !r.is_columns() && !r.is_rows())
            .ok_or_else(|| format!("{p:?} is not a cell range"))?;
        for row in r.start.row..=r.end.row {
            for col in r.start.col..=r.end.col {
                out.push(crate::sheet::addr::Addr::new(row, col).to_string());
            }
        }
    }
    Ok(out)
}

/// A rule's list of property names (`props`, `chart_props`), or an error naming the rule and
/// the key.
fn names(kind: &str, key: &str, list: &Json) -> Result<Vec<String>, String> {
    list.as_array()
        .ok_or_else(|| format!("{kind}'s `{key}` must be a list"))?
        .iter()
        .map(|p| {
            p.as_str()
                .map(str::to_string)
                .ok_or_else(|| format!("{kind}'s `{key}` are names, not {p}"))
        })
        .collect()
}

/// `compare_table(result, expected, rules=…)` on files.
pub fn compare_table(
    result: Option<&Path>,
    expected: Option<&Path>,
    options: &Json,
) -> Result<f64, String> {
    let Some(result) = result else {
        return Ok(0.0);
    };
    if !result.exists() {
        return Ok(0.0);
    }
    let r = match Book::load(result) {
        Ok(r) => r,
        Err(e) => {
            // OSWorld logs the failure and scores 0
            tracing::warn!("the result file does not load, so it scores 0 as in OSWorld: {e}");
            return Ok(0.0);
        }
    };
    let e = match expected {
        Some(p) => {
            Some(Book::load(p).map_err(|m| format!("the expected file does not load: {m}"))?)
        }
        None => None,
    };
    compare_books(&r, e.as_ref(), options)
}

/// `compare_table` on loaded books.
pub fn compare_books(r: &Book, e: Option<&Book>, options: &Json) -> Result<f64, String> {
    let rnames = r.names();
    let enames = e.map(Book::names);
    let rules = options
        .get("rules")
        .and_then(Json::as_array)
        .ok_or("compare_table needs `options.rules`, a list")?;
    let book = |side: Side| -> Result<&Book, String> {
        match side {
            Side::Result => Ok(r),
            Side::Expected => e.ok_or_else(|| {
                "a rule names the expected workbook (EI…/EN…) but the evaluator has none"
                    .to_string()
            }),
        }
    };
    let field = |rule: &Json, k: &str| -> Result<Json, String> {
        rule.get(k).cloned().ok_or_else(|| {
            format!(
                "rule {} needs `{k}`",
                rule.get("type").and_then(Json::as_str).unwrap_or("?")
            )
        })
    };
    for rule in rules {
        let kind = rule
            .get("type")
            .and_then(Json::as_str)
            .ok_or("each rule needs a string `type`")?;
        let pass = match kind {
            // without an expected workbook the names compare against None: never equal
            "sheet_name" => enames.as_ref() == Some(&rnames),
            "sheet_data" => {
                let precision = rule.get("precision").and_then(Json::as_i64).unwrap_or(4) as i32;
                let (s0, n0) = parse_idx(&field(rule, "sheet_idx0")?, &rnames, enames.as_deref())?;
                let (s1, n1) = parse_idx(&field(rule, "sheet_idx1")?, &rnames, enames.as_deref())?;
                let Some(a) = book(s0)?.sheet(&n0) else {
                    return Ok(0.0);
                };
                let b = book(s1)?.sheet(&n1).ok_or_else(|| {
                    format!("sheet_idx1 names sheet {n1:?}, which its workbook does not have")
                })?;
                Frame::read(a).round(precision).equals(&Frame::read(b).round(precision))
            }
            "sheet_print" => {
                let (s0, n0) = parse_idx(&field(rule, "sheet_idx0")?, &rnames, enames.as_deref())?;
                let (s1, n1) = parse_idx(&field(rule, "sheet_idx1")?, &rnames, enames.as_deref())?;
                let Some(mut a) = book(s0)?.printed(&n0) else {
                    return Ok(0.0);
                };
                let b = book(s1)?.printed(&n1);
                let ignore_case = rule.get("ignore_case").and_then(Json::as_bool).unwrap_or(false);
                match b {
                    None if ignore_case => {
                        return Err(format!("sheet_print: no CSV export of sheet {n1:?}"))
                    }
                    None => false,
                    Some(mut b) => {
                        if ignore_case {
                            a = a.iter().map(|l| l.to_lowercase()).collect();
                            b = b.iter().map(|l| l.to_lowercase()).collect();
                        }
                        a == b
                    }
                }
            }
            "sheet_fuzzy" => {
                let (s0, n0) = parse_idx(&field(rule, "sheet_idx0")?, &rnames, enames.as_deref())?;
                let (s1, n1) = parse_idx(&field(rule, "sheet_idx1")?, &rnames, enames.as_deref())?;
                let (p0, p1) = (book(s0).ok(), book(s1).ok());
                let read = |p: &Option<&Book>, sheet: &str, coord: &str| -> Result<String, String> {
                    match p {
                        Some(b) => b.cell_value(sheet, coord).map(|v| v.py_str()),
                        None => Err("sheet_fuzzy names the expected workbook, but there is none".into()),
                    }
                };
                let subrules = field(rule, "rules")?;
                let subrules = subrules.as_array().ok_or("sheet_fuzzy's `rules` must be a list")?;
                let mut all = true;
                for rl in subrules {
                    let kind = rl.get("type").and_then(Json::as_str).unwrap_or("");
                    if !matches!(kind, "includes" | "included_by" | "fuzzy_match" | "exact_match") {
                        return Err(format!("sheet_fuzzy rule type {kind:?} is not one of includes, included_by, fuzzy_match, exact_match"));
                    }
                    for coord in cells_of(&field(rl, "range")?)? {
                        let mut v1 = read(&p0, &n0, &coord)?;
                        let mut v2 = read(&p1, &n1, &coord)?;
                        if let Some(norm) = rl.get("normalization").and_then(Json::as_array) {
                            for pair in norm {
                                if let (Some(f), Some(t)) = (
                                    pair.get(0).and_then(Json::as_str),
                                    pair.get(1).and_then(Json::as_str),
                                ) {
                                    v1 = v1.replace(f, t);
                                    v2 = v2.replace(f, t);
                                }
                            }
                        }
                        if let Some(t) = rl.get("trim_leadings").and_then(Json::as_str) {
                            let set: Vec<char> = t.chars().collect();
                            v1 = v1.trim_start_matches(&set[..]).to_string();
                            v2 = v2.trim_start_matches(&set[..]).to_string();
                        }
                        if let Some(t) = rl.get("trim_trailings").and_then(Json::as_str) {
                            let set: Vec<char> = t.chars().collect();
                            v1 = v1.trim_end_matches(&set[..]).to_string();
                            v2 = v2.trim_end_matches(&set[..]).to_string();
                        }
                        if let Some(t) = rl.get("ignore_chars").and_then(Json::as_str) {
                            v1.retain(|c| !t.contains(c));
                            v2.retain(|c| !t.contains(c));
                        }
                        if rl.get("ignore_case").and_then(Json::as_bool).unwrap_or(false) {
                            v1 = v1.to_lowercase();
                            v2 = v2.to_lowercase();
                        }
                        let m = match kind {
                            "includes" => v1.contains(&v2),
                            "included_by" => v2.contains(&v1),
                            "fuzzy_match" => {
                                let th = rl.get("threshold").and_then(Json::as_f64).unwrap_or(85.0);
                                fuzz_ratio(&v1, &v2) >= th
                            }
                            _ => v1 == v2,
                        };
                        all = all && m;
                    }
                }
                all
            }
            "freeze" => {
                let (s0, n0) = parse_idx(&field(rule, "sheet_idx0")?, &rnames, enames.as_deref())?;
                let (s1, n1) = parse_idx(&field(rule, "sheet_idx1")?, &rnames, enames.as_deref())?;
                let Some(a) = book(s0)?.styled(&n0, "freeze")? else {
                    return Ok(0.0);
                };
                let b = book(s1)?.styled(&n1, "freeze")?.ok_or_else(|| {
                    format!("freeze: sheet_idx1 names sheet {n1:?}, which its workbook does not have")
                })?;
                a.pane.flatten() == b.pane.flatten()
            }
            "zoom" => {
                let (s, n) = parse_idx(&field(rule, "sheet_idx")?, &rnames, enames.as_deref())?;
                let Some(sh) = book(s)?.styled(&n, "zoom")? else {
                    return Ok(0.0);
                };
                // `zoomScale or 100.0`
                let zoom = sh.zoom.filter(|z| *z != 0.0).unwrap_or(100.0);
                match match_rule(PyV::Num(zoom), rule)? {
                    Some(x) => x,
                    None => return Err(format!("zoom: OSWorld raises comparing {zoom} with {rule}")),
                }
            }
            "row_props" => {
                let props = names(kind, "props", &field(rule, "props")?)?;
                if let Some(p) = props.iter().find(|p| p.as_str() != "hidden") {
                    return Err(format!("row_props: the row property {p:?} is not read here (hidden is)"));
                }
                let mut sides = vec![];
                for k in ["sheet_idx0", "sheet_idx1"] {
                    let (s, n) = parse_idx(&field(rule, k)?, &rnames, enames.as_deref())?;
                    // a missing sheet loads as no rows
                    let rows: Vec<(u32, Vec<bool>)> = match book(s)?.styled(&n, "row_props")? {
                        None => vec![],
                        Some(sh) => {
                            let mut rows: Vec<(u32, Vec<bool>)> = sh
                                .rows
                                .iter()
                                .map(|(r, hidden)| (*r, props.iter().map(|_| *hidden).collect()))
                                .collect();
                            rows.sort_by_key(|r| r.0);
                            rows.dedup_by_key(|r| r.0);
                            rows
                        }
                    };
                    sides.push(rows);
                }
                sides[0] == sides[1]
            }
            "data_validation" => {
                let (s, n) = parse_idx(&field(rule, "sheet_idx")?, &rnames, enames.as_deref())?;
                let Some(sh) = book(s)?.styled(&n, "data_validation")? else {
                    return Ok(0.0);
                };
                data_validation(&sh, &field(rule, "dv_props")?)?
            }
            "style" => {
                let props = names(kind, "props", &field(rule, "props")?)?;
                for p in &props {
                    crate::osworld::style::check_property(p)?;
                }
                let mut sides = vec![];
                for k in ["sheet_idx0", "sheet_idx1"] {
                    let (s, n) = parse_idx(&field(rule, k)?, &rnames, enames.as_deref())?;
                    sides.push(match book(s)?.styled(&n, "style")? {
                        None => None, // {} in OSWorld
                        Some(sh) => Some(sheet_styles(&sh, &props)?),
                    });
                }
                sides[0].clone().unwrap_or_default() == sides[1].clone().unwrap_or_default()
            }
            "chart" => {
                let props = match rule.get("chart_props") {
                    None => vec![],
                    Some(p) => names(kind, "chart_props", p)?,
                };
                let mut sides = vec![];
                for k in ["sheet_idx0", "sheet_idx1"] {
                    let (s, n) = parse_idx(&field(rule, k)?, &rnames, enames.as_deref())?;
                    sides.push(book(s)?.charts(&n, &props)?);
                }
                sides[0] == sides[1]
            }
            "pivot_table" => {
                let props: Vec<String> = rule
                    .get("pivot_props")
                    .and_then(Json::as_array)
                    .map(|a| a.iter().filter_map(|p| p.as_str().map(str::to_string)).collect())
                    .unwrap_or_default();
                let mut sides = vec![];
                for k in ["sheet_idx0", "sheet_idx1"] {
                    let (s, n) = parse_idx(&field(rule, k)?, &rnames, enames.as_deref())?;
                    sides.push(book(s)?.pivots(&n, &props)?);
                }
                sides[0] == sides[1]
            }
            "check_cell" => {
                let (side, name) =
                    parse_idx(&field(rule, "sheet_idx")?, &rnames, enames.as_deref())?;
                let Ok(b) = book(side) else {
                    return Ok(0.0);
                };
                if b.sheet(&name).is_none() {
                    return Ok(0.0);
                }
                let coord = field(rule, "coordinate")?;
                let Some(coord) = coord.as_str().filter(|c| crate::sheet::addr::Addr::parse(c).is_some()) else {
                    return Ok(0.0);
                };
                let props = field(rule, "props")?;
                let props = props.as_object().ok_or("check_cell's `props` must be an object")?;
                let mut ok = true;
                for (prop, m) in props {
                    let v = if prop == "value" {
                        // check_cell catches what read_cell_value raises: the value is then None
                        match b.cell_value(&name, coord).unwrap_or(CellValue::None) {
                            CellValue::None => PyV::None,
                            CellValue::Float(x) => PyV::Num(x),
                            CellValue::Str(s) => PyV::Str(s),
                            CellValue::Dict(_) => PyV::Other,
                        }
                    } else if crate::osworld::style::check_property(prop).is_err() {
                        // a property _read_cell_style does not know raises NotImplementedError,
                        // which check_cell catches too: None, whatever the file holds
                        PyV::None
                    } else {
                        // and what _read_cell_style raises reading a known one
                        match b.cell_style(&name, coord, prop)? {
                            Ok(StyleValue::None) | Err(_) => PyV::None,
                            Ok(StyleValue::Bool(x)) => PyV::Num(x as u8 as f64),
                            Ok(StyleValue::Num(x)) => PyV::Num(x),
                            Ok(StyleValue::Str(s)) => PyV::Str(s),
                            Ok(StyleValue::Object) => PyV::Other,
                        }
                    };
                    match match_rule(v, m)? {
                        Some(x) => ok = ok && x,
                        None => return Ok(0.0),
                    }
                }
                ok
            }
            other => {
                return Err(format!(
                    "compare_table rule type {other:?} is not implemented (sheet_name, sheet_data, sheet_print, sheet_fuzzy, check_cell, chart, pivot_table, style, freeze, zoom, row_props and data_validation are)"
                ))
            }
        };
        if !pass {
            return Ok(0.0);
        }
    }
    Ok(1.0)
}

/// `compare_csv(result, expected, strict=True, ignore_case=False)`: 1 if the result's lines
/// equal those of any expected file.
pub fn compare_csv(result: Option<&Path>, expected: &[PathBuf], options: &Json) -> f64 {
    let Some(result) = result else {
        return 0.0;
    };
    let Ok(r) = read_lines(result) else {
        return 0.0;
    };
    let strict = options
        .get("strict")
        .and_then(Json::as_bool)
        .unwrap_or(true);
    let ignore_case = options
        .get("ignore_case")
        .and_then(Json::as_bool)
        .unwrap_or(false);
    let norm = |lines: &[String]| -> Vec<String> {
        lines
            .iter()
            .map(|l| {
                let l = if strict {
                    l.clone()
                } else {
                    l.trim().to_string()
                };
                if ignore_case {
                    l.to_lowercase()
                } else {
                    l
                }
            })
            .collect()
    };
    let r = norm(&r);
    for e in expected {
        if let Ok(lines) = read_lines(e) {
            if norm(&lines) == r {
                return 1.0;
            }
        }
    }
    0.0
}

/// The files an evaluator's getters name, resolved by the caller: `None` where a getter finds
/// no file.
pub struct Resolved {
    /// Each result getter's file.
    pub result: Vec<Option<PathBuf>>,
    /// Each expected getter's files (a getter may name several).
    pub expected: Vec<Vec<PathBuf>>,
}

/// Scores an evaluator as OSWorld's `DesktopEnv.evaluate` does: each function on its result and
/// expected files with its options; with several, `conj = "and"` (the default) is 0 at the first
/// 0 and else the mean, `"or"` is 1 at the first 1 and else the maximum.
pub fn evaluate(ev: &Evaluator, files: &Resolved) -> Result<f64, String> {
    let funcs = ev.func.as_slice();
    let options: Vec<Json> = match &ev.options {
        None => vec![Json::Object(Default::default()); funcs.len()],
        Some(o) => o
            .as_slice()
            .iter()
            .map(|x| serde_json::to_value(x).map_err(|e| e.to_string()))
            .collect::<Result<_, _>>()?,
    };
    let conj = ev.conj.as_deref().unwrap_or("and");
    let mut scores = Vec::new();
    for (i, f) in funcs.iter().enumerate() {
        let opt = options
            .get(i)
            .cloned()
            .unwrap_or(Json::Object(Default::default()));
        let result = files.result.get(i).cloned().flatten();
        let expected = files.expected.get(i).cloned().unwrap_or_default();
        let s = match f.as_str() {
            "compare_table" => {
                if expected.len() > 1 {
                    return Err("compare_table takes one expected file".into());
                }
                compare_table(
                    result.as_deref(),
                    expected.first().map(PathBuf::as_path),
                    &opt,
                )?
            }
            "compare_csv" => compare_csv(result.as_deref(), &expected, &opt),
            other => return Err(format!("evaluator function {other:?} is not implemented")),
        };
        if funcs.len() == 1 {
            return Ok(s);
        }
        if conj == "and" && s == 0.0 {
            return Ok(0.0);
        }
        if conj == "or" && s == 1.0 {
            return Ok(1.0);
        }
        scores.push(s);
    }
    Ok(if conj == "and" {
        scores.iter().sum::<f64>() / scores.len().max(1) as f64
    } else {
        scores.iter().copied().fold(0.0, f64::max)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sheet::workbook::{Content, Workbook};
    use serde_json::json;

    #[test]
    fn a_property_osworld_does_not_know_reads_as_none() {
        // `_read_cell_style` raises NotImplementedError for it, which check_cell catches
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.xlsx");
        let mut b = Workbook::default();
        b.sheets[0].cells.insert(
            crate::sheet::addr::Addr::new(0, 0),
            Content::Text("x".into()),
        );
        crate::sheet::xlsx::save(&b, &p).unwrap();
        let rule = |prop: &str, r: Json| {
            json!({"rules": [{"type": "check_cell", "sheet_idx": 0, "coordinate": "A1",
                "props": {prop: {"method": "eq", "ref": r}}}]})
        };
        let score = |o: &Json| compare_table(Some(&p), Some(&p), o);
        assert_eq!(score(&rule("font_weight", Json::Null)), Ok(1.0));
        assert_eq!(score(&rule("font_weight", json!("bold"))), Ok(0.0));
        // a property it knows is read from the file
        assert_eq!(score(&rule("font_bold", json!(false))), Ok(1.0));
        // and the style rule, which does not catch, still names an unknown property
        let style = json!({"rules": [{"type": "style", "sheet_idx0": 0, "sheet_idx1": "EI0",
            "props": ["font_weight"]}]});
        assert!(score(&style).unwrap_err().contains("font_weight"));
    }
}
