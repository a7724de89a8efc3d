//! A sheet as `pandas.read_excel(book, sheet)` reads it (pandas 2.2 with openpyxl, the
//! versions OSWorld's `desktop-env` pins), and `DataFrame.round(n).equals` between two of them:
//! what OSWorld's `sheet_data` rule compares.
//!
//! What follows from pandas' reading, and is reproduced here:
//! - cells are read from A1; each row loses its trailing empty cells, trailing empty rows are
//!   dropped, rows are padded to the widest; empty rows in the middle stay (as missing values);
//! - the first row is the header: an empty header cell is `Unnamed: i`, a repeated one gets
//!   `.1`, `.2`, … (names compared as Python compares them: `1 == 1.0 == True`);
//! - error cells, empty cells and NA-like strings (`NA`, `N/A`, `null`, `#N/A`, …) are missing;
//! - a column whose other values are all numbers or numeric text (`" 5 "`, `"007"`, `"1e3"`)
//!   becomes numbers: `int64` when all are integers (booleans count as 1 and 0), `float64` when
//!   any is fractional or missing, `bool` when all are booleans; otherwise it keeps the Python
//!   objects, except that a column of only booleans and `True`/`false`-like strings is `bool`;
//! - `equals` needs the same shape, the same labels, the same dtype per column and the same
//!   values, missing values equal to each other; rounding applies to `float64` columns only
//!   (NumPy's: scale, round half to even, unscale).

use crate::sheet::xlsx::{Stored, StoredSheet};

/// A Python value as pandas holds it.
#[derive(Debug, Clone, PartialEq)]
pub enum Py {
    /// NaN (a missing value).
    Nan,
    /// An int.
    Int(i64),
    /// A float.
    Float(f64),
    /// A str.
    Str(String),
    /// A bool.
    Bool(bool),
    /// A datetime (its serial number).
    Date(f64),
}

impl Py {
    fn number(&self) -> Option<f64> {
        match self {
            Py::Int(i) => Some(*i as f64),
            Py::Float(x) => Some(*x),
            Py::Bool(b) => Some(*b as u8 as f64),
            _ => None,
        }
    }

    /// Python's `==` (NaN never equals, except through [`Py::equivalent`]).
    pub fn py_eq(&self, o: &Py) -> bool {
        match (self, o) {
            (Py::Str(a), Py::Str(b)) => a == b,
            (Py::Date(a), Py::Date(b)) => a == b,
            (Py::Nan, _) | (_, Nan) => false,
            _ => match (self.number(), o.number()) {
                (Some(a), Some(b)) => a == b,
                _ => false,
            },
        }
    }

    /// pandas' `array_equivalent` on objects: missing equals missing, else `==`.
    pub fn equivalent(&self, o: &Py) -> bool {
        let nan = |p: &Py| matches!(p, Py::Nan) || matches!(p, Py::Float(x) if x.is_nan());
        if nan(self) || nan(o) {
            return nan(self) && nan(o);
        }
        self.py_eq(o)
    }
}

use Py::Nan;

/// A column's dtype.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    /// `int64`.
    Int64,
    /// `float64`.
    Float64,
    /// `bool`.
    Bool,
    /// `datetime64[ns]`.
    DateTime,
    /// `object`.
    Object,
}

/// A DataFrame: column labels, dtypes and values (column-major).
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// Column labels.
    pub columns: Vec<Py>,
    /// Each column's dtype.
    pub dtypes: Vec<Dtype>,
    /// Each column's values.
    pub data: Vec<Vec<Py>>,
    /// Rows.
    pub rows: usize,
}

/// pandas' default NA strings.
pub const NA_VALUES: [&str; 19] = [
    "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
    "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null",
];

/// The cell as pandas' openpyxl reader converts it (`""` for an empty cell).
fn convert(v: Option<&Stored>) -> Py {
    match v {
        None => Py::Str(String::new()),
        Some(Stored::Error(_)) => Nan,
        Some(Stored::Bool(b)) => Py::Bool(*b),
        Some(Stored::Text(s)) => Py::Str(s.clone()),
        Some(Stored::Date(d)) => Py::Date(*d),
        Some(Stored::Number(x)) => {
            if x.is_finite() && *x == x.trunc() && x.abs() < 9.2e18 {
                Py::Int(*x as i64)
            } else {
                Py::Float(*x)
            }
        }
    }
}

/// Text as `maybe_convert_numeric` reads it: an int, a float, or not a number.
fn numeric_text(s: &str) -> Option<Py> {
    let t = s.trim();
    if t.is_empty() {
        return None;
    }
    let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(i) = t.parse::<i64>() {
            return Some(Py::Int(i));
        }
    }
    let lower = digits.to_ascii_lowercase();
    if matches!(lower.as_str(), "inf" | "infinity") {
        let neg = t.starts_with('-');
        return Some(Py::Float(if neg {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        }));
    }
    let ok = digits
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
        && digits.bytes().any(|b| b.is_ascii_digit());
    if !ok {
        return None;
    }
    t.parse::<f64>().ok().map(Py::Float)
}

/// Converts one column as pandas' parser does.
fn infer(values: Vec<Py>) -> (Dtype, Vec<Py>) {
    let values: Vec<Py> = values
        .into_iter()
        .map(|v| match v {
            Py::Str(s) if NA_VALUES.contains(&s.as_str()) => Nan,
            Py::Float(x) if x.is_nan() => Nan,
            v => v,
        })
        .collect();
    if values.is_empty() {
        return (Dtype::Object, values);
    }
    // numbers?
    let mut nums = Vec::with_capacity(values.len());
    let (mut any_nan, mut any_float, mut all_bool) = (false, false, true);
    let mut numeric = true;
    for v in &values {
        let n = match v {
            Nan => {
                any_nan = true;
                Nan
            }
            Py::Int(i) => Py::Int(*i),
            Py::Float(x) => Py::Float(*x),
            Py::Bool(b) => Py::Bool(*b),
            Py::Str(s) => match numeric_text(s) {
                Some(n) => n,
                None => {
                    numeric = false;
                    break;
                }
            },
            Py::Date(_) => {
                numeric = false;
                break;
            }
        };
        match n {
            Py::Float(_) => any_float = true,
            Py::Bool(_) | Nan => {}
            _ => {}
        }
        if !matches!(n, Py::Bool(_) | Nan) {
            all_bool = false;
        }
        nums.push(n);
    }
    if numeric {
        if any_nan || any_float {
            let col = nums
                .iter()
                .map(|n| match n.number() {
                    Some(x) => Py::Float(x),
                    None => Nan,
                })
                .collect();
            return (Dtype::Float64, col);
        }
        if all_bool {
            return (Dtype::Bool, nums);
        }
        let col = nums
            .iter()
            .map(|n| Py::Int(n.number().unwrap_or(0.0) as i64))
            .collect();
        return (Dtype::Int64, col);
    }
    // all datetimes
    if values.iter().all(|v| matches!(v, Py::Date(_) | Nan))
        && values.iter().any(|v| matches!(v, Py::Date(_)))
    {
        return (Dtype::DateTime, values);
    }
    // booleans and True/false-like strings, nothing missing
    let as_bool = |v: &Py| match v {
        Py::Bool(b) => Some(*b),
        Py::Str(s) if matches!(s.as_str(), "True" | "TRUE" | "true") => Some(true),
        Py::Str(s) if matches!(s.as_str(), "False" | "FALSE" | "false") => Some(false),
        _ => None,
    };
    if let Some(bs) = values.iter().map(as_bool).collect::<Option<Vec<bool>>>() {
        return (Dtype::Bool, bs.into_iter().map(Py::Bool).collect());
    }
    (Dtype::Object, values)
}

/// A label's key for de-duplication (Python's `==` and `hash`: `1`, `1.0` and `True` collide).
fn same_label(a: &Py, b: &Py) -> bool {
    a.py_eq(b)
}

fn label_text(p: &Py) -> String {
    match p {
        Nan => "nan".into(),
        Py::Int(i) => i.to_string(),
        Py::Float(x) => py_float_repr(*x),
        Py::Str(s) => s.clone(),
        Py::Bool(b) => if *b { "True" } else { "False" }.into(),
        Py::Date(d) => d.to_string(),
    }
}

/// pandas' de-duplication of header names (`_dedup_names`).
fn dedup(mut cols: Vec<Py>) -> Vec<Py> {
    let mut counts: Vec<(Py, usize)> = Vec::new();
    let count = |counts: &Vec<(Py, usize)>, k: &Py| {
        counts
            .iter()
            .find(|(c, _)| same_label(c, k))
            .map(|x| x.1)
            .unwrap_or(0)
    };
    let set = |counts: &mut Vec<(Py, usize)>, k: &Py, n: usize| match counts
        .iter_mut()
        .find(|(c, _)| same_label(c, k))
    {
        Some(x) => x.1 = n,
        None => counts.push((k.clone(), n)),
    };
    for i in 0..cols.len() {
        let old = cols[i].clone();
        let mut col = old.clone();
        let mut cur = count(&counts, &col);
        if cur > 0 {
            while cur > 0 {
                set(&mut counts, &old, cur + 1);
                col = Py::Str(format!("{}.{cur}", label_text(&old)));
                if cols.iter().any(|c| same_label(c, &col)) {
                    cur += 1;
                } else {
                    cur = count(&counts, &col);
                }
            }
        }
        cols[i] = col.clone();
        set(&mut counts, &col, cur + 1);
    }
    cols
}

impl Frame {
    /// The sheet as `pd.read_excel` reads it (header on the first row).
    pub fn read(sheet: &StoredSheet) -> Frame {
        let mut grid: Vec<Vec<Py>> = Vec::new();
        let mut by_row: std::collections::BTreeMap<u32, Vec<(u32, &Stored)>> = Default::default();
        for (a, v) in &sheet.cells {
            by_row.entry(a.row).or_default().push((a.col, v));
        }
        let last_row = by_row.keys().next_back().copied();
        if let Some(last) = last_row {
            for r in 0..=last {
                let cells = by_row.get(&r);
                let width = cells
                    .map(|c| c.iter().map(|x| x.0 + 1).max().unwrap_or(0))
                    .unwrap_or(0);
                let mut row: Vec<Py> = (0..width)
                    .map(|c| {
                        convert(cells.and_then(|cs| cs.iter().find(|x| x.0 == c).map(|x| x.1)))
                    })
                    .collect();
                while matches!(row.last(), Some(Py::Str(s)) if s.is_empty()) {
                    row.pop();
                }
                grid.push(row);
            }
        }
        while grid.last().is_some_and(|r| r.is_empty()) {
            grid.pop();
        }
        if grid.is_empty() {
            return Frame {
                columns: vec![],
                dtypes: vec![],
                data: vec![],
                rows: 0,
            };
        }
        let width = grid.iter().map(Vec::len).max().unwrap_or(0);
        for row in &mut grid {
            row.resize(width, Py::Str(String::new()));
        }
        let header: Vec<Py> = grid[0]
            .iter()
            .enumerate()
            .map(|(i, h)| match h {
                Py::Str(s) if s.is_empty() => Py::Str(format!("Unnamed: {i}")),
                h => h.clone(),
            })
            .collect();
        let columns = dedup(header);
        let rows = grid.len() - 1;
        let mut dtypes = Vec::with_capacity(width);
        let mut data = Vec::with_capacity(width);
        for c in 0..width {
            let (d, v) = infer(grid[1..].iter().map(|r| r[c].clone()).collect());
            dtypes.push(d);
            data.push(v);
        }
        Frame {
            columns,
            dtypes,
            data,
            rows,
        }
    }

    /// `DataFrame.round(decimals)`: `float64` columns rounded as NumPy does.
    pub fn round(&self, decimals: i32) -> Frame {
        let mut f = self.clone();
        let scale = 10f64.powi(decimals);
        for (d, col) in f.dtypes.iter().zip(&mut f.data) {
            if *d == Dtype::Float64 {
                for v in col {
                    if let Py::Float(x) = v {
                        *x = if decimals >= 0 {
                            (*x * scale).round_ties_even() / scale
                        } else {
                            (*x / 10f64.powi(-decimals)).round_ties_even() * 10f64.powi(-decimals)
                        };
                    }
                }
            }
        }
        f
    }

    /// `DataFrame.equals`.
    pub fn equals(&self, o: &Frame) -> bool {
        self.rows == o.rows
            && self.columns.len() == o.columns.len()
            && self
                .columns
                .iter()
                .zip(&o.columns)
                .all(|(a, b)| a.equivalent(b))
            && self.dtypes == o.dtypes
            && self
                .data
                .iter()
                .zip(&o.data)
                .all(|(a, b)| a.iter().zip(b).all(|(x, y)| x.equivalent(y)))
    }
}

/// Python's `repr` of a float (`1.0`, `0.1`, `1e+16`, `1.5e-05`, `nan`, `inf`).
pub fn py_float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    // shortest round-trip digits and exponent
    let e = format!("{:e}", x);
    let (mant, exp) = e.split_once('e').expect("an exponent");
    let exp: i32 = exp.parse().expect("an integer exponent");
    let neg = mant.starts_with('-');
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    let sign = if neg { "-" } else { "" };
    if !(-4..16).contains(&exp) {
        let m = if digits.len() > 1 {
            format!("{}.{}", &digits[..1], &digits[1..])
        } else {
            digits.clone()
        };
        return format!(
            "{sign}{m}e{}{:02}",
            if exp < 0 { "-" } else { "+" },
            exp.abs()
        );
    }
    let n = digits.len() as i32;
    let s = if exp >= n - 1 {
        format!("{digits}{}.0", "0".repeat((exp - (n - 1)) as usize))
    } else if exp >= 0 {
        let k = (exp + 1) as usize;
        format!("{}.{}", &digits[..k], &digits[k..])
    } else {
        format!("0.{}{digits}", "0".repeat((-exp - 1) as usize))
    };
    format!("{sign}{s}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sheet::addr::Addr;

    fn sheet(rows: &[&[Option<Stored>]]) -> StoredSheet {
        let mut cells = vec![];
        for (r, row) in rows.iter().enumerate() {
            for (c, v) in row.iter().enumerate() {
                if let Some(v) = v {
                    cells.push((Addr::new(r as u32, c as u32), v.clone()));
                }
            }
        }
        StoredSheet {
            name: "S".into(),
            cells,
        }
    }
    fn t(s: &str) -> Option<Stored> {
        Some(Stored::Text(s.into()))
    }
    fn n(x: f64) -> Option<Stored> {
        Some(Stored::Number(x))
    }

    #[test]
    fn reads_like_pandas() {
        // the probe's sheet: duplicate and empty headers, a blank row, numeric and NA text
        let s = sheet(&[
            &[t("Name"), t("Rev"), t("Rev"), None, t("Flag")],
            &[t("a"), n(1.0), t("2"), t("NA"), Some(Stored::Bool(true))],
            &[],
            &[t("b"), n(2.5), t("x"), t(""), Some(Stored::Bool(false))],
            &[t("c"), t("007"), t("1e3"), t("n/a"), None],
        ]);
        let f = Frame::read(&s);
        assert_eq!(
            f.columns,
            vec![
                Py::Str("Name".into()),
                Py::Str("Rev".into()),
                Py::Str("Rev.1".into()),
                Py::Str("Unnamed: 3".into()),
                Py::Str("Flag".into())
            ]
        );
        assert_eq!(
            f.dtypes,
            vec![
                Dtype::Object,
                Dtype::Float64,
                Dtype::Object,
                Dtype::Float64,
                Dtype::Float64
            ]
        );
        assert_eq!(f.rows, 4);
        assert_eq!(
            f.data[1],
            vec![Py::Float(1.0), Nan, Py::Float(2.5), Py::Float(7.0)]
        );
        assert_eq!(f.data[4], vec![Py::Float(1.0), Nan, Py::Float(0.0), Nan]);
    }

    #[test]
    fn dtypes_follow_the_values() {
        let col = |v: Vec<Py>| infer(v).0;
        assert_eq!(col(vec![Py::Bool(true), Py::Bool(false)]), Dtype::Bool);
        assert_eq!(col(vec![Py::Bool(true), Py::Int(2)]), Dtype::Int64);
        assert_eq!(col(vec![Py::Int(1), Py::Str("2".into())]), Dtype::Int64);
        assert_eq!(
            col(vec![Py::Str("True".into()), Py::Str("false".into())]),
            Dtype::Bool
        );
        assert_eq!(
            col(vec![Py::Str("TRUE".into()), Py::Str("x".into())]),
            Dtype::Object
        );
        assert_eq!(col(vec![Py::Float(1.5), Py::Int(2)]), Dtype::Float64);
        assert_eq!(col(vec![Py::Str("0x10".into()), Py::Int(1)]), Dtype::Object);
        assert_eq!(col(vec![Py::Str("5%".into())]), Dtype::Object);
        assert_eq!(
            col(vec![Py::Str("NULL".into()), Py::Str("".into())]),
            Dtype::Float64
        );
    }

    #[test]
    fn dedup_matches_pandas() {
        let s = |x: &str| Py::Str(x.into());
        let got = dedup(vec![
            Py::Int(1),
            Py::Float(2.5),
            Py::Bool(true),
            s("Unnamed: 3"),
            s("a"),
            s("a"),
            s("a.1"),
        ]);
        assert_eq!(
            got,
            vec![
                Py::Int(1),
                Py::Float(2.5),
                s("True.1"),
                s("Unnamed: 3"),
                s("a"),
                s("a.2"),
                s("a.1")
            ]
        );
    }

    #[test]
    fn equals_needs_the_same_dtypes_and_rounds_floats_only() {
        let a = Frame::read(&sheet(&[&[t("x")], &[n(1.0)], &[n(2.0)]]));
        let b = Frame::read(&sheet(&[&[t("x")], &[n(1.0)], &[n(2.00001)]]));
        assert!(!a.equals(&b));
        assert!(!a.round(4).equals(&b.round(4)), "int64 against float64");
        let c = Frame::read(&sheet(&[&[t("x")], &[n(1.5)], &[n(2.00001)]]));
        let d = Frame::read(&sheet(&[&[t("x")], &[n(1.5)], &[n(2.00002)]]));
        assert!(c.round(4).equals(&d.round(4)));
        assert!(!c.equals(&d));
    }

    #[test]
    fn floats_print_as_python_does() {
        for (x, s) in [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (1e16, "1e+16"),
            (1.5e-5, "1.5e-05"),
            (123.456, "123.456"),
            (-2.5, "-2.5"),
            (1e15, "1000000000000000.0"),
            (0.0001, "0.0001"),
        ] {
            assert_eq!(py_float_repr(x), s);
        }
    }
}
