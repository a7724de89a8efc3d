//! Real spreadsheet files: .xlsx read with `calamine` and written with `rust_xlsxwriter` (shared
//! strings, formulas with their cached results, as LibreOffice writes them), and .csv.
//!
//! Two readings of an .xlsx file: [`open`] gives the [`Workbook`] the desktop edits (formulas
//! kept as formulas), [`cached`] gives what a reader of stored values sees — each formula's
//! cached result, or nothing where the file holds none — which is what OSWorld's evaluators read.

use crate::sheet::addr::Addr;
use crate::sheet::formula::Value;
use crate::sheet::workbook::{Content, Sheet, Workbook};
use crate::DesktopError;
use calamine::{Data, Reader};
use std::path::Path;

/// A stored cell as a reader of values sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum Stored {
    /// A number.
    Number(f64),
    /// Text.
    Text(String),
    /// A boolean.
    Bool(bool),
    /// An error value (`#N/A`, `#DIV/0!`, …).
    Error(String),
    /// A date or time, as its serial number.
    Date(f64),
}

/// One sheet's stored values.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredSheet {
    /// The sheet's name.
    pub name: String,
    /// Its non-empty cells in row order.
    pub cells: Vec<(Addr, Stored)>,
}

fn bad(path: &Path, e: impl std::fmt::Display) -> DesktopError {
    DesktopError::invalid(path, "xlsx", format!("not a readable .xlsx workbook ({e})"))
}

fn xlsx(path: &Path) -> Result<calamine::Xlsx<std::io::BufReader<std::fs::File>>, DesktopError> {
    if !path.exists() {
        return Err(DesktopError::Io {
            path: path.into(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
        });
    }
    crate::sheet::bounds::check_xlsx(path)?;
    // hostile parts are checked before calamine reads them (crate::sheet::bounds); a panic of
    // calamine's that no check foresaw is caught at each call and is the file's error
    calm(path, || calamine::open_workbook(path))
}

/// A calamine call on `path`, its error or panic as the file's error.
fn calm<T>(
    path: &Path,
    f: impl FnOnce() -> Result<T, calamine::XlsxError>,
) -> Result<T, DesktopError> {
    rla_core::file::catch_quiet(f)
        .map_err(|p| bad(path, format!("the reader failed: {p}")))?
        .map_err(|e| bad(path, e))
}

fn of_data(d: &Data) -> Option<Stored> {
    Some(match d {
        Data::Empty => return None,
        Data::Int(i) => Stored::Number(*i as f64),
        Data::Float(x) => Stored::Number(*x),
        Data::String(s) => Stored::Text(s.clone()),
        Data::Bool(b) => Stored::Bool(*b),
        Data::DateTime(t) => Stored::Date(t.as_f64()),
        Data::DateTimeIso(s) | Data::DurationIso(s) => Stored::Text(s.clone()),
        Data::Error(e) => Stored::Error(e.to_string()),
    })
}

/// The stored values of every sheet of an .xlsx file, in tab order.
pub fn cached(path: &Path) -> Result<Vec<StoredSheet>, DesktopError> {
    cached_of(&mut xlsx(path)?, path)
}

/// [`cached`] of a workbook already open.
fn cached_of(
    wb: &mut calamine::Xlsx<std::io::BufReader<std::fs::File>>,
    path: &Path,
) -> Result<Vec<StoredSheet>, DesktopError> {
    let names = wb.sheet_names();
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let range = calm(path, || wb.worksheet_range(&name))?;
        let (r0, c0) = range.start().unwrap_or((0, 0));
        let cells = range
            .used_cells()
            .filter_map(|(r, c, d)| {
                of_data(d).map(|v| (Addr::new(r0 + r as u32, c0 + c as u32), v))
            })
            .collect();
        out.push(StoredSheet { name, cells });
    }
    Ok(out)
}

/// Opens an .xlsx file as a workbook: formulas as formulas, other cells as their values.
pub fn open(path: &Path) -> Result<Workbook, DesktopError> {
    // one open: the file's bounds are checked once
    let mut wb = xlsx(path)?;
    let values = cached_of(&mut wb, path)?;
    let mut sheets = Vec::with_capacity(values.len());
    for s in values {
        let mut sheet = Sheet::new(&s.name);
        for (a, v) in s.cells {
            let c = match v {
                Stored::Number(x) | Stored::Date(x) => Content::Number(x),
                Stored::Text(t) => Content::Text(t),
                Stored::Bool(b) => Content::Bool(b),
                Stored::Error(e) => Content::Error(e),
            };
            sheet.cells.insert(a, c);
        }
        let formulas = calm(path, || wb.worksheet_formula(&s.name))?;
        let (r0, c0) = formulas.start().unwrap_or((0, 0));
        for (r, c, f) in formulas.used_cells() {
            if !f.is_empty() {
                let a = Addr::new(r0 + r as u32, c0 + c as u32);
                sheet
                    .cells
                    .insert(a, Content::Formula(f.trim_start_matches('=').to_string()));
            }
        }
        sheets.push(sheet);
    }
    if sheets.is_empty() {
        return Err(DesktopError::invalid(
            path,
            "xlsx",
            "the workbook has no sheets",
        ));
    }
    Ok(Workbook { sheets })
}

/// The result this crate caches for a formula cell: its value as the writer stores it (an
/// empty result as 0; text that reads as a number is stored as one).
pub fn formula_result(book: &Workbook, sheet: usize, at: Addr) -> Stored {
    match book.value(sheet, at) {
        Value::Empty => Stored::Number(0.0),
        // the result is cached as the grid shows it (`to_bytes`), ten decimals at most
        Value::Number(x) => {
            Stored::Number(crate::sheet::formula::format_number(x).parse().unwrap_or(x))
        }
        Value::Bool(b) => Stored::Bool(b),
        Value::Error(e) if ERRORS.contains(&e.as_str()) => Stored::Error(e),
        Value::Error(e) | Value::Text(e) => match e.parse::<f64>() {
            Ok(x) => Stored::Number(x),
            Err(_) => Stored::Text(e),
        },
    }
}

/// The error values an .xlsx file stores as errors.
const ERRORS: [&str; 7] = [
    "#DIV/0!", "#N/A", "#NAME?", "#NULL!", "#NUM!", "#REF!", "#VALUE!",
];

/// What [`cached`] reads back from the file [`save`] writes for `book`, without the file.
pub fn stored(book: &Workbook) -> Vec<StoredSheet> {
    book.sheets
        .iter()
        .enumerate()
        .map(|(i, s)| StoredSheet {
            name: s.name.clone(),
            cells: s
                .cells
                .iter()
                .map(|(a, c)| {
                    let v = match c {
                        Content::Number(x) => Stored::Number(*x),
                        Content::Text(t) => Stored::Text(t.clone()),
                        Content::Bool(b) => Stored::Bool(*b),
                        Content::Error(e) if ERRORS.contains(&e.as_str()) => {
                            Stored::Error(e.clone())
                        }
                        Content::Error(e) => match e.parse::<f64>() {
                            Ok(x) => Stored::Number(x),
                            Err(_) => Stored::Text(e.clone()),
                        },
                        Content::Formula(_) => formula_result(book, i, *a),
                    };
                    (*a, v)
                })
                .collect(),
        })
        .collect()
}

/// The workbook as .xlsx bytes: formulas with their computed results cached.
pub fn to_bytes(book: &Workbook) -> Result<Vec<u8>, String> {
    let mut out = rust_xlsxwriter::Workbook::new();
    for (i, s) in book.sheets.iter().enumerate() {
        let ws = out.add_worksheet();
        ws.set_name(&s.name)
            .map_err(|e| format!("sheet `{}`: {e}", s.name))?;
        for (a, c) in &s.cells {
            let (r, col) = (a.row, a.col as u16);
            let res = match c {
                Content::Number(x) => ws.write_number(r, col, *x).map(|_| ()),
                Content::Text(t) => ws.write_string(r, col, t).map(|_| ()),
                Content::Bool(b) => ws.write_boolean(r, col, *b).map(|_| ()),
                Content::Error(e) => ws
                    .write_formula(r, col, rust_xlsxwriter::Formula::new("=NA()").set_result(e))
                    .map(|_| ()),
                Content::Formula(f) => {
                    let v = book.value(i, *a);
                    let result = match &v {
                        Value::Empty => "0".to_string(),
                        other => other.to_string(),
                    };
                    ws.write_formula(
                        r,
                        col,
                        rust_xlsxwriter::Formula::new(format!("={f}")).set_result(result),
                    )
                    .map(|_| ())
                }
            };
            res.map_err(|e| format!("cell {a} of `{}`: {e}", s.name))?;
        }
    }
    out.save_to_buffer().map_err(|e| e.to_string())
}

/// Writes `bytes` to `path` through a temporary file in the same folder, renamed at the end.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), DesktopError> {
    rla_core::file::write_atomic(path, bytes).map_err(|e| DesktopError::Io {
        path: path.into(),
        source: e,
    })
}

/// Saves the workbook as .xlsx (atomically).
pub fn save(book: &Workbook, path: &Path) -> Result<(), DesktopError> {
    let bytes = to_bytes(book).map_err(|m| DesktopError::invalid(path, "xlsx", m))?;
    write_atomic(path, &bytes)
}

/// The sheet as CSV text, as a spreadsheet exports it: computed values, `,` separated, fields
/// with a comma, quote or line break quoted, one line per row up to the last used one.
pub fn to_csv(book: &Workbook, sheet: usize) -> String {
    let s = &book.sheets[sheet];
    let Some(ext) = s.extent() else {
        return String::new();
    };
    let mut out = String::new();
    for r in 0..=ext.row {
        let fields: Vec<String> = (0..=ext.col)
            .map(|c| {
                let t = book.value(sheet, Addr::new(r, c)).to_string();
                if t.contains([',', '"', '\n', '\r']) {
                    format!("\"{}\"", t.replace('"', "\"\""))
                } else {
                    t
                }
            })
            .collect();
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    out
}

/// Reads a CSV file into a one-sheet workbook (the sheet named after the file), each field
/// typed as if entered by hand.
pub fn open_csv(path: &Path) -> Result<Workbook, DesktopError> {
    let bytes = rla_core::file::read(path).map_err(|e| DesktopError::Io {
        path: path.into(),
        source: e,
    })?;
    let text = String::from_utf8_lossy(&bytes);
    let mut sheet = Sheet::new(
        path.file_stem()
            .and_then(|s| s.to_str())
            .filter(|s| !s.is_empty())
            .unwrap_or("Sheet1"),
    );
    for (r, fields) in csv_rows(&text).into_iter().enumerate() {
        for (c, f) in fields.into_iter().enumerate() {
            if let Some(content) = Content::typed(&f) {
                let content = match content {
                    Content::Formula(_) => Content::Text(f), // a CSV field is never a formula
                    x => x,
                };
                sheet.cells.insert(Addr::new(r as u32, c as u32), content);
            }
        }
    }
    Ok(Workbook {
        sheets: vec![sheet],
    })
}

/// The rows of CSV text (RFC 4180 quoting).
pub fn csv_rows(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    let mut any = false;
    while let Some(ch) = chars.next() {
        any = true;
        if quoted {
            if ch == '"' {
                if chars.peek() == Some(&'"') {
                    field.push('"');
                    chars.next();
                } else {
                    quoted = false;
                }
            } else {
                field.push(ch);
            }
            continue;
        }
        match ch {
            '"' if field.is_empty() => quoted = true,
            ',' => row.push(std::mem::take(&mut field)),
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' | '\r' => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
                any = false;
            }
            c => field.push(c),
        }
    }
    if any {
        row.push(field);
        rows.push(row);
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> Addr {
        Addr::parse(s).unwrap()
    }

    #[test]
    fn a_saved_workbook_opens_the_same_with_cached_results() {
        let mut b = Workbook::default();
        let s = &mut b.sheets[0];
        s.cells.insert(a("A1"), Content::Text("Revenue".into()));
        s.cells.insert(a("A2"), Content::Number(10.5));
        s.cells.insert(a("A3"), Content::Number(4.0));
        s.cells.insert(a("B1"), Content::Bool(true));
        s.cells
            .insert(a("A4"), Content::Formula("SUM(A2:A3)".into()));
        s.cells.insert(a("C3"), Content::Formula("A1&\"!\"".into()));
        b.insert_sheet(1, "Profit").unwrap();
        b.sheets[1]
            .cells
            .insert(a("B2"), Content::Formula("Sheet1!A2*2".into()));
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("book.xlsx");
        save(&b, &p).unwrap();
        let back = open(&p).unwrap();
        assert_eq!(back, b);
        let c = cached(&p).unwrap();
        assert_eq!(c[0].name, "Sheet1");
        assert!(c[0].cells.contains(&(a("A4"), Stored::Number(14.5))));
        // what the file caches is what a book in memory reads as: a third to ten decimals
        let mut third = b.clone();
        third.sheets[0]
            .cells
            .insert(a("D1"), Content::Formula("1/3".into()));
        save(&third, &p).unwrap();
        let saved = cached(&p).unwrap();
        assert!(saved[0]
            .cells
            .contains(&(a("D1"), Stored::Number(0.3333333333))));
        assert_eq!(stored(&third), saved);
        assert!(c[0]
            .cells
            .contains(&(a("C3"), Stored::Text("Revenue!".into()))));
        assert_eq!(c[1].cells, vec![(a("B2"), Stored::Number(21.0))]);
    }

    #[test]
    fn corrupt_or_missing_files_are_clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bad.xlsx");
        std::fs::write(&p, b"PK\x03\x04 not really a zip").unwrap();
        let e = open(&p).unwrap_err().to_string();
        assert!(
            e.contains("bad.xlsx") && e.contains("not a readable .xlsx"),
            "{e}"
        );
        let e = cached(&dir.path().join("none.xlsx"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("none.xlsx"), "{e}");
    }

    #[test]
    fn csv_round_trips_quoted_fields() {
        let mut b = Workbook::default();
        b.sheets[0]
            .cells
            .insert(a("A1"), Content::Text("a,b".into()));
        b.sheets[0]
            .cells
            .insert(a("B1"), Content::Text("say \"hi\"".into()));
        b.sheets[0].cells.insert(a("B2"), Content::Number(3.0));
        let text = to_csv(&b, 0);
        assert_eq!(text, "\"a,b\",\"say \"\"hi\"\"\"\n,3\n");
        assert_eq!(
            csv_rows(&text),
            vec![
                vec!["a,b".to_string(), "say \"hi\"".into()],
                vec!["".into(), "3".into()]
            ]
        );
    }
}
