//! A workbook: named sheets of cells holding numbers, text, booleans, errors or formulas, with
//! the formulas computed on demand.

use crate::sheet::addr::{Addr, Range};
use crate::sheet::formula::{self, Cells, Value};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashSet};

/// What a cell holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// A number.
    Number(f64),
    /// Text.
    Text(String),
    /// TRUE or FALSE.
    Bool(bool),
    /// An error value stored in the file (`#N/A`, …).
    Error(String),
    /// A formula, without its `=`.
    Formula(String),
}

impl Content {
    /// What typing `text` into a cell stores: `=…` a formula, a number, TRUE/FALSE, otherwise
    /// text; `None` for an empty entry (the cell is cleared).
    pub fn typed(text: &str) -> Option<Content> {
        if text.is_empty() {
            return None;
        }
        if let Some(f) = text.strip_prefix('=') {
            if !f.is_empty() {
                return Some(Content::Formula(f.to_string()));
            }
        }
        let t = text.trim();
        if let Some(x) = parse_number(t) {
            return Some(Content::Number(x));
        }
        match t.to_ascii_uppercase().as_str() {
            "TRUE" => Some(Content::Bool(true)),
            "FALSE" => Some(Content::Bool(false)),
            _ => Some(Content::Text(text.to_string())),
        }
    }

    /// The text the formula bar shows for it.
    pub fn input_text(&self) -> String {
        match self {
            Content::Number(x) => formula::format_number(*x),
            Content::Text(s) => s.clone(),
            Content::Bool(b) => if *b { "TRUE" } else { "FALSE" }.into(),
            Content::Error(e) => e.clone(),
            Content::Formula(f) => format!("={f}"),
        }
    }
}

/// A number as a spreadsheet recognises typed input: decimal, with an optional sign and
/// exponent, or a percentage.
pub fn parse_number(t: &str) -> Option<f64> {
    let (t, scale) = match t.strip_suffix('%') {
        Some(x) => (x, 0.01),
        None => (t, 1.0),
    };
    let ok = !t.is_empty()
        && t.bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E'))
        && t.bytes().any(|b| b.is_ascii_digit());
    if !ok {
        return None;
    }
    t.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite())
        .map(|x| x * scale)
}

/// One sheet.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Sheet {
    /// Its name (unique in the workbook).
    pub name: String,
    /// Its non-empty cells.
    pub cells: BTreeMap<Addr, Content>,
}

impl Sheet {
    /// An empty sheet.
    pub fn new(name: &str) -> Sheet {
        Sheet {
            name: name.into(),
            cells: BTreeMap::new(),
        }
    }

    /// Whether the sheet's rectangle from A1 to its last used cell stays within
    /// [`MAX_SHEET_CELLS`] with `extra` used too (every dense reader — pandas' frame, CSV, the
    /// saved file's readers — holds that rectangle).
    pub fn has_room_for(&self, extra: Addr) -> bool {
        let e = self.extent().unwrap_or(Addr::new(0, 0));
        rectangle(Addr::new(e.row.max(extra.row), e.col.max(extra.col))) <= MAX_SHEET_CELLS
    }

    /// The last used row and column (0-based), if any cell is used.
    pub fn extent(&self) -> Option<Addr> {
        let mut it = self.cells.keys();
        let first = it.next()?;
        let (mut r, mut c) = (first.row, first.col);
        for a in self.cells.keys() {
            r = r.max(a.row);
            c = c.max(a.col);
        }
        Some(Addr::new(r, c))
    }
}

/// Most cells in a sheet's rectangle from A1 to its last used cell (4 Mi cells): what any
/// reader of a sheet as a dense grid may have to hold. OSWorld's tasks use small sheets.
pub const MAX_SHEET_CELLS: u64 = 1 << 22;

/// The cells from A1 to `last`.
pub fn rectangle(last: Addr) -> u64 {
    (last.row as u64 + 1) * (last.col as u64 + 1)
}

/// Why a workbook operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BookError {
    /// A sheet name that is empty, too long, has a forbidden character or is taken.
    #[error("invalid sheet name `{name}`: {why}")]
    SheetName {
        /// The name.
        name: String,
        /// Why.
        why: String,
    },
    /// No sheet of that name.
    #[error("no sheet named `{0}`")]
    NoSheet(String),
    /// The last sheet cannot be deleted.
    #[error("a workbook must keep at least one sheet")]
    LastSheet,
}

/// A workbook.
#[derive(Debug, Clone, PartialEq)]
pub struct Workbook {
    /// Its sheets in tab order.
    pub sheets: Vec<Sheet>,
}

impl Default for Workbook {
    fn default() -> Self {
        Workbook {
            sheets: vec![Sheet::new("Sheet1")],
        }
    }
}

impl Workbook {
    /// The index of a sheet.
    pub fn index(&self, name: &str) -> Option<usize> {
        self.sheets.iter().position(|s| s.name == name)
    }

    /// The sheet named `name`.
    pub fn sheet(&self, name: &str) -> Option<&Sheet> {
        self.sheets.iter().find(|s| s.name == name)
    }

    /// The names in tab order.
    pub fn names(&self) -> Vec<String> {
        self.sheets.iter().map(|s| s.name.clone()).collect()
    }

    /// Checks a new name for a sheet (the one at `except` may keep its own).
    pub fn check_name(&self, name: &str, except: Option<usize>) -> Result<(), BookError> {
        let bad = |why: &str| {
            Err(BookError::SheetName {
                name: name.into(),
                why: why.into(),
            })
        };
        if name.trim().is_empty() {
            return bad("it is empty");
        }
        if name.chars().count() > 31 {
            return bad("it is longer than 31 characters");
        }
        if let Some(c) = name.chars().find(|c| "[]*?:/\\".contains(*c)) {
            return bad(&format!("it contains `{c}`"));
        }
        if name.starts_with('\'') || name.ends_with('\'') {
            return bad("it starts or ends with an apostrophe");
        }
        let taken = self
            .sheets
            .iter()
            .enumerate()
            .any(|(i, s)| Some(i) != except && s.name.eq_ignore_ascii_case(name));
        if taken {
            return bad("a sheet of that name exists");
        }
        Ok(())
    }

    /// Inserts an empty sheet at `at` (clamped to the end).
    pub fn insert_sheet(&mut self, at: usize, name: &str) -> Result<(), BookError> {
        self.check_name(name, None)?;
        let at = at.min(self.sheets.len());
        self.sheets.insert(at, Sheet::new(name));
        Ok(())
    }

    /// Renames sheet `i`.
    pub fn rename_sheet(&mut self, i: usize, name: &str) -> Result<(), BookError> {
        self.check_name(name, Some(i))?;
        let s = self
            .sheets
            .get_mut(i)
            .ok_or_else(|| BookError::NoSheet(format!("#{i}")))?;
        s.name = name.into();
        Ok(())
    }

    /// Deletes sheet `i`.
    pub fn delete_sheet(&mut self, i: usize) -> Result<(), BookError> {
        if self.sheets.len() <= 1 {
            return Err(BookError::LastSheet);
        }
        if i >= self.sheets.len() {
            return Err(BookError::NoSheet(format!("#{i}")));
        }
        self.sheets.remove(i);
        Ok(())
    }

    /// A name not yet used, like the application proposes (`Sheet2`, `Sheet3`, …).
    pub fn fresh_name(&self) -> String {
        (1..)
            .map(|n| format!("Sheet{n}"))
            .find(|n| self.check_name(n, None).is_ok())
            .expect("some name is free")
    }

    /// The computed value of a cell of sheet `i`.
    pub fn value(&self, i: usize, at: Addr) -> Value {
        Eval::new(self, i).value(i, at)
    }

    /// The computed values of some cells of sheet `i` (one evaluation shared by all).
    pub fn values_at(&self, i: usize, at: &[Addr]) -> Vec<Value> {
        let e = Eval::new(self, i);
        at.iter().map(|&a| e.value(i, a)).collect()
    }

    /// Every used cell of sheet `i` with its computed value, in row order.
    pub fn values(&self, i: usize) -> Vec<(Addr, Value)> {
        let e = Eval::new(self, i);
        self.sheets[i]
            .cells
            .keys()
            .map(|&a| (a, e.value(i, a)))
            .collect()
    }
}

/// Evaluation of formulas with a memo and cycle detection. A formula's cells are computed
/// before it, in dependency order, on an explicit stack: a chain of references thousands of
/// cells long (a running total) computes without deep recursion, and a circular reference is
/// `#REF!`.
struct Eval<'a> {
    book: &'a Workbook,
    sheet: RefCell<usize>,
    memo: RefCell<std::collections::HashMap<(usize, Addr), Value>>,
    /// The formula cells being computed: the path from the cell asked for to the one computing
    /// now. A reference back into it is circular.
    visiting: RefCell<HashSet<(usize, Addr)>>,
}

/// A formula cell on the evaluation's stack: its parsed formula, the formula cells it refers to
/// and how many of them have been looked at.
struct Frame {
    at: (usize, Addr),
    expr: Option<formula::Expr>,
    deps: Vec<(usize, Addr)>,
    next: usize,
}

impl<'a> Eval<'a> {
    fn new(book: &'a Workbook, sheet: usize) -> Self {
        Eval {
            book,
            sheet: RefCell::new(sheet),
            memo: RefCell::default(),
            visiting: RefCell::default(),
        }
    }

    fn value(&self, i: usize, at: Addr) -> Value {
        if let Some(v) = self.memo.borrow().get(&(i, at)) {
            return v.clone();
        }
        let Some(c) = self.book.sheets.get(i).and_then(|s| s.cells.get(&at)) else {
            return Value::Empty;
        };
        let v = match c {
            Content::Number(x) => Value::Number(*x),
            Content::Text(s) => Value::Text(s.clone()),
            Content::Bool(b) => Value::Bool(*b),
            Content::Error(e) => Value::Error(e.clone()),
            Content::Formula(_) => {
                if self.visiting.borrow().contains(&(i, at)) {
                    return Value::Error("#REF!".into()); // a circular reference
                }
                self.settle(i, at);
                return self
                    .memo
                    .borrow()
                    .get(&(i, at))
                    .cloned()
                    .unwrap_or(Value::Empty);
            }
        };
        self.memo.borrow_mut().insert((i, at), v.clone());
        v
    }

    /// The formula of cell `at` of sheet `i`, if it holds one.
    fn formula(&self, i: usize, at: Addr) -> Option<&'a str> {
        match self.book.sheets.get(i)?.cells.get(&at)? {
            Content::Formula(f) => Some(f),
            _ => None,
        }
    }

    /// A formula cell on the stack, with the formula cells it refers to that are not computed.
    fn frame(&self, i: usize, at: Addr, f: &str) -> Frame {
        let expr = formula::parse(f).ok();
        let mut deps = Vec::new();
        if let Some(e) = &expr {
            let mut todo = vec![e];
            while let Some(e) = todo.pop() {
                match e {
                    formula::Expr::Cell(sheet, a) => {
                        if let Some(j) = self.sheet_index(i, sheet.as_deref()) {
                            deps.push((j, *a));
                        }
                    }
                    formula::Expr::Range(sheet, r) => {
                        if let Some(j) = self.sheet_index(i, sheet.as_deref()) {
                            let cells = &self.book.sheets[j].cells;
                            deps.extend(
                                cells
                                    .range(r.start..=Addr::new(r.end.row, r.end.col))
                                    .filter(|(a, c)| {
                                        r.contains(**a) && matches!(c, Content::Formula(_))
                                    })
                                    .map(|(a, _)| (j, *a)),
                            );
                        }
                    }
                    formula::Expr::Neg(x) => todo.push(x),
                    formula::Expr::Binary(_, x, y) => {
                        todo.push(y);
                        todo.push(x);
                    }
                    formula::Expr::Call(_, args) => todo.extend(args.iter().rev()),
                    _ => {}
                }
            }
        }
        deps.retain(|d| self.formula(d.0, d.1).is_some() && !self.memo.borrow().contains_key(d));
        Frame {
            at: (i, at),
            expr,
            deps,
            next: 0,
        }
    }

    /// Computes the formula cell `at` of sheet `i` and every formula cell it depends on, each
    /// after the cells it refers to, into the memo.
    fn settle(&self, i: usize, at: Addr) {
        let Some(f) = self.formula(i, at) else {
            return;
        };
        self.visiting.borrow_mut().insert((i, at));
        let mut stack = vec![self.frame(i, at, f)];
        while let Some(top) = stack.last_mut() {
            if let Some(&d) = top.deps.get(top.next) {
                top.next += 1;
                // computed already, or on the path (circular: `value` says `#REF!` there)
                if self.memo.borrow().contains_key(&d) || self.visiting.borrow().contains(&d) {
                    continue;
                }
                if let Some(f) = self.formula(d.0, d.1) {
                    self.visiting.borrow_mut().insert(d);
                    let frame = self.frame(d.0, d.1, f);
                    stack.push(frame);
                }
                continue;
            }
            let done = stack.pop().expect("a frame on the stack");
            let outer = self.sheet.replace(done.at.0);
            let v = match &done.expr {
                Some(e) => formula::eval(e, self),
                None => Value::Error("#NAME?".into()),
            };
            self.sheet.replace(outer);
            self.visiting.borrow_mut().remove(&done.at);
            self.memo.borrow_mut().insert(done.at, v);
        }
    }

    /// The sheet a reference names from a formula on sheet `i` (`None`: its own).
    fn sheet_index(&self, i: usize, name: Option<&str>) -> Option<usize> {
        match name {
            None => Some(i),
            Some(n) => self.book.index(n),
        }
    }

    fn sheet_of(&self, name: Option<&str>) -> Option<usize> {
        match name {
            None => Some(*self.sheet.borrow()),
            Some(n) => self.book.index(n),
        }
    }
}

impl Cells for Eval<'_> {
    fn get(&self, sheet: Option<&str>, at: Addr) -> Value {
        match self.sheet_of(sheet) {
            Some(i) => self.value(i, at),
            None => Value::Error("#REF!".into()),
        }
    }

    fn range(&self, sheet: Option<&str>, r: Range) -> Vec<Value> {
        let Some(i) = self.sheet_of(sheet) else {
            return vec![Value::Error("#REF!".into())];
        };
        let addrs: Vec<Addr> = self.book.sheets[i]
            .cells
            .range(r.start..=Addr::new(r.end.row, r.end.col))
            .map(|(a, _)| *a)
            .filter(|a| r.contains(*a))
            .collect();
        addrs.into_iter().map(|a| self.value(i, a)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> Addr {
        Addr::parse(s).unwrap()
    }

    #[test]
    fn typed_input_becomes_the_right_content() {
        assert_eq!(Content::typed("12"), Some(Content::Number(12.0)));
        assert_eq!(Content::typed(" -3.5e1 "), Some(Content::Number(-35.0)));
        assert_eq!(Content::typed("50%"), Some(Content::Number(0.5)));
        assert_eq!(Content::typed("true"), Some(Content::Bool(true)));
        assert_eq!(
            Content::typed("=A1+1"),
            Some(Content::Formula("A1+1".into()))
        );
        assert_eq!(Content::typed("="), Some(Content::Text("=".into())));
        assert_eq!(Content::typed("1e400"), Some(Content::Text("1e400".into())));
        assert_eq!(
            Content::typed("Revenue"),
            Some(Content::Text("Revenue".into()))
        );
        assert_eq!(Content::typed(""), None);
    }

    #[test]
    fn formulas_compute_across_sheets_and_cycles_are_errors() {
        let mut b = Workbook::default();
        b.insert_sheet(1, "Data").unwrap();
        b.sheets[1].cells.insert(a("A1"), Content::Number(5.0));
        b.sheets[0]
            .cells
            .insert(a("A1"), Content::Formula("Data!A1*2".into()));
        b.sheets[0]
            .cells
            .insert(a("A2"), Content::Formula("A1+A3".into()));
        b.sheets[0]
            .cells
            .insert(a("A3"), Content::Formula("A2".into()));
        b.sheets[0]
            .cells
            .insert(a("B1"), Content::Formula("SUM(A1:A1)+Nope!A1".into()));
        assert_eq!(b.value(0, a("A1")), Value::Number(10.0));
        assert_eq!(b.value(0, a("A2")), Value::Error("#REF!".into()));
        assert_eq!(b.value(0, a("B1")), Value::Error("#REF!".into()));
        assert_eq!(b.value(0, a("C9")), Value::Empty);
    }

    #[test]
    fn long_chains_of_references_compute_and_long_cycles_are_errors() {
        for rows in [400u32, 5_000] {
            // a running total: B1 = A1, B(n) = B(n-1) + A(n)
            let mut b = Workbook::default();
            let cells = &mut b.sheets[0].cells;
            for r in 0..rows {
                cells.insert(Addr::new(r, 0), Content::Number(1.0));
                let f = if r == 0 {
                    "A1".to_string()
                } else {
                    format!("B{}+A{}", r, r + 1)
                };
                cells.insert(Addr::new(r, 1), Content::Formula(f));
            }
            // and a sum over the totals, through a range
            cells.insert(
                Addr::new(0, 2),
                Content::Formula(format!("SUM(B1:B{rows})")),
            );
            let last = Addr::new(rows - 1, 1);
            assert_eq!(b.value(0, last), Value::Number(rows as f64), "{rows}");
            let n = rows as f64;
            assert_eq!(b.value(0, a("C1")), Value::Number(n * (n + 1.0) / 2.0));
            assert_eq!(b.values(0).len(), 2 * rows as usize + 1);
            // the chain closed into a cycle: every cell of it is an error
            b.sheets[0]
                .cells
                .insert(Addr::new(0, 1), Content::Formula(format!("B{rows}+A1")));
            assert_eq!(b.value(0, last), Value::Error("#REF!".into()));
            assert_eq!(b.value(0, a("B1")), Value::Error("#REF!".into()));
        }
    }

    #[test]
    fn sheet_names_follow_the_applications_rules() {
        let mut b = Workbook::default();
        assert_eq!(b.fresh_name(), "Sheet2");
        b.insert_sheet(9, "Sheet2").unwrap();
        assert_eq!(b.names(), ["Sheet1", "Sheet2"]);
        assert!(
            b.insert_sheet(0, "sheet1").is_err(),
            "names are unique ignoring case"
        );
        assert!(b.insert_sheet(0, "a/b").is_err());
        assert!(b.insert_sheet(0, &"x".repeat(32)).is_err());
        b.rename_sheet(1, "Profit").unwrap();
        b.rename_sheet(1, "Profit").unwrap();
        b.delete_sheet(0).unwrap();
        assert_eq!(b.delete_sheet(0), Err(BookError::LastSheet));
        assert_eq!(b.names(), ["Profit"]);
    }
}
