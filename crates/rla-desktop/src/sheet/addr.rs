//! Cell addresses and ranges in A1 notation: `B3`, `$B$3`, `A1:C4`, whole columns `A:A` and rows
//! `2:2`.

use std::fmt;

/// The largest column (XFD, as in Excel and LibreOffice's large sheets) and row.
pub const MAX_COL: u32 = 16_384;
/// The largest row.
pub const MAX_ROW: u32 = 1_048_576;

/// A cell's position, 0-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Addr {
    /// Row (0 is row 1).
    pub row: u32,
    /// Column (0 is column A).
    pub col: u32,
}

impl Addr {
    /// The address of row `row` and column `col` (0-based).
    pub const fn new(row: u32, col: u32) -> Addr {
        Addr { row, col }
    }

    /// Parses `B3` or `$B$3`.
    pub fn parse(s: &str) -> Option<Addr> {
        let s = s.trim();
        let b = s.as_bytes();
        let mut i = 0;
        if b.get(i) == Some(&b'$') {
            i += 1;
        }
        let c0 = i;
        while i < b.len() && b[i].is_ascii_alphabetic() {
            i += 1;
        }
        let letters = &s[c0..i];
        if b.get(i) == Some(&b'$') {
            i += 1;
        }
        let digits = &s[i..];
        if letters.is_empty() || digits.is_empty() || !digits.bytes().all(|d| d.is_ascii_digit()) {
            return None;
        }
        let col = col_index(letters)?;
        let row: u32 = digits.parse().ok()?;
        (1..=MAX_ROW)
            .contains(&row)
            .then(|| Addr::new(row - 1, col))
    }
}

impl fmt::Display for Addr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", col_name(self.col), self.row + 1)
    }
}

/// The letters of column `col` (0 → `A`, 26 → `AA`).
pub fn col_name(col: u32) -> String {
    let mut n = col + 1;
    let mut out = Vec::new();
    while n > 0 {
        let r = (n - 1) % 26;
        out.push(b'A' + r as u8);
        n = (n - 1) / 26;
    }
    out.reverse();
    String::from_utf8(out).expect("ASCII letters")
}

/// The column of letters `A`…`XFD` (any case), 0-based.
pub fn col_index(letters: &str) -> Option<u32> {
    if letters.is_empty() || letters.len() > 3 {
        return None;
    }
    let mut n: u32 = 0;
    for c in letters.bytes() {
        if !c.is_ascii_alphabetic() {
            return None;
        }
        n = n * 26 + (c.to_ascii_uppercase() - b'A') as u32 + 1;
    }
    (n <= MAX_COL).then(|| n - 1)
}

/// A rectangle of cells, corners included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Range {
    /// Top-left cell.
    pub start: Addr,
    /// Bottom-right cell.
    pub end: Addr,
}

impl Range {
    /// The range from `a` to `b` whichever corners they are.
    pub fn new(a: Addr, b: Addr) -> Range {
        Range {
            start: Addr::new(a.row.min(b.row), a.col.min(b.col)),
            end: Addr::new(a.row.max(b.row), a.col.max(b.col)),
        }
    }

    /// One cell.
    pub fn cell(a: Addr) -> Range {
        Range { start: a, end: a }
    }

    /// Whole column(s) `c0..=c1`.
    pub fn columns(c0: u32, c1: u32) -> Range {
        Range::new(Addr::new(0, c0), Addr::new(MAX_ROW - 1, c1))
    }

    /// Whole row(s) `r0..=r1`.
    pub fn rows(r0: u32, r1: u32) -> Range {
        Range::new(Addr::new(r0, 0), Addr::new(r1, MAX_COL - 1))
    }

    /// Parses `A1:C4`, `B3`, `A:B` or `2:5`.
    pub fn parse(s: &str) -> Option<Range> {
        let s = s.trim();
        let Some((a, b)) = s.split_once(':') else {
            return Addr::parse(s).map(Range::cell);
        };
        if let (Some(a), Some(b)) = (Addr::parse(a), Addr::parse(b)) {
            return Some(Range::new(a, b));
        }
        let strip = |x: &str| x.trim().trim_start_matches('$').to_string();
        let (a, b) = (strip(a), strip(b));
        if let (Some(x), Some(y)) = (col_index(&a), col_index(&b)) {
            return Some(Range::columns(x.min(y), x.max(y)));
        }
        let row = |x: &str| -> Option<u32> {
            let r: u32 = x.parse().ok()?;
            (1..=MAX_ROW).contains(&r).then(|| r - 1)
        };
        let (x, y) = (row(&a)?, row(&b)?);
        Some(Range::rows(x.min(y), x.max(y)))
    }

    /// Whether `a` lies inside.
    pub fn contains(&self, a: Addr) -> bool {
        (self.start.row..=self.end.row).contains(&a.row)
            && (self.start.col..=self.end.col).contains(&a.col)
    }

    /// Whether it spans whole columns.
    pub fn is_columns(&self) -> bool {
        self.start.row == 0 && self.end.row == MAX_ROW - 1
    }

    /// Whether it spans whole rows.
    pub fn is_rows(&self) -> bool {
        self.start.col == 0 && self.end.col == MAX_COL - 1
    }

    /// Rows spanned.
    pub fn height(&self) -> u32 {
        self.end.row - self.start.row + 1
    }

    /// Columns spanned.
    pub fn width(&self) -> u32 {
        self.end.col - self.start.col + 1
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_columns() && !self.is_rows() {
            write!(f, "{}:{}", col_name(self.start.col), col_name(self.end.col))
        } else if self.is_rows() && !self.is_columns() {
            write!(f, "{}:{}", self.start.row + 1, self.end.row + 1)
        } else if self.start == self.end {
            write!(f, "{}", self.start)
        } else {
            write!(f, "{}:{}", self.start, self.end)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_and_cells_round_trip() {
        for (c, n) in [
            (0, "A"),
            (25, "Z"),
            (26, "AA"),
            (701, "ZZ"),
            (702, "AAA"),
            (16_383, "XFD"),
        ] {
            assert_eq!(col_name(c), n);
            assert_eq!(col_index(n), Some(c));
        }
        assert_eq!(col_index("XFE"), None);
        assert_eq!(Addr::parse("$b$3"), Some(Addr::new(2, 1)));
        assert_eq!(Addr::parse("A0"), None);
        assert_eq!(Addr::parse("3A"), None);
        assert_eq!(Addr::parse("A1048577"), None);
        assert_eq!(Range::parse("C4:A1").unwrap().to_string(), "A1:C4");
        assert_eq!(Range::parse("B:A").unwrap().to_string(), "A:B");
        assert_eq!(Range::parse("2:2").unwrap().to_string(), "2:2");
        assert!(Range::parse("A1:").is_none());
        assert!(Range::parse("A1:C4").unwrap().contains(Addr::new(3, 2)));
    }
}
