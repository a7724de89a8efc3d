//! A sheet's data rows: the run of a column's numbers and row formulas, and the pattern of a row
//! formula (`=B2-C2` is `=B-C`), which the expert and the tiny vocabulary both read.

use crate::sheet::addr::Addr;
use crate::sheet::workbook::{Content, Workbook};

/// The pattern of a row formula `=X<r>opY<r>` with its row numbers taken out (`=X-Y`).
pub fn row_pattern(formula: &str, row: u32) -> Option<String> {
    let f = formula.strip_prefix('=')?;
    let n = (row + 1).to_string();
    let op = f.find(['-', '+', '*'])?;
    let (a, b) = (&f[..op], &f[op + 1..]);
    let x = a.strip_suffix(n.as_str())?;
    let y = b.strip_suffix(n.as_str())?;
    let letters = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_uppercase());
    (letters(x) && letters(y)).then(|| format!("={x}{}{y}", &f[op..op + 1]))
}

/// The data rows of a column: the run of numbers and row formulas (`=B2-C2`, not aggregates)
/// that starts under its header (the first text cell of the column with one below it),
/// wherever the table lies.
pub fn plain_run(book: &Workbook, sheet: usize, col: u32) -> Option<(u32, u32)> {
    let cells = &book.sheets[sheet].cells;
    let plain = |r: u32| match cells.get(&Addr::new(r, col)) {
        Some(Content::Number(_)) => true,
        Some(Content::Formula(f)) => row_pattern(&format!("={f}"), r).is_some(),
        _ => false,
    };
    let first = cells
        .iter()
        .filter(|(a, c)| a.col == col && matches!(c, Content::Text(_)))
        .map(|(a, _)| a.row + 1)
        .find(|&r| plain(r))?;
    let mut last = first;
    while plain(last + 1) {
        last += 1;
    }
    Some((first, last))
}

/// The thresholds an instruction counts values above (`above 50`).
pub fn thresholds(instruction: &str) -> Vec<i64> {
    let words: Vec<&str> = instruction
        .split(|c: char| c.is_whitespace() || c == ',' || c == '.' || c == ';' || c == ')')
        .collect();
    words
        .windows(2)
        .filter(|w| w[0] == "above")
        .filter_map(|w| w[1].parse().ok())
        .collect()
}
