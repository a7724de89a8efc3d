//! The spreadsheet's formula language: numbers, strings, `TRUE`/`FALSE`, references (`B3`,
//! `$B$3`, `Sheet2!B3`, `'My sheet'!B3`), ranges (`A1:B6`, `A:A`), `+ − * /`, unary minus, `&`,
//! comparisons, parentheses, and the functions SUM, AVERAGE, MIN, MAX and COUNT. Formulas are
//! written as in an .xlsx file (without the leading `=`).

use crate::sheet::addr::{Addr, Range};
use std::fmt;

/// A computed value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// No content.
    Empty,
    /// A number.
    Number(f64),
    /// Text.
    Text(String),
    /// TRUE or FALSE.
    Bool(bool),
    /// An error such as `#DIV/0!`.
    Error(String),
}

impl fmt::Display for Value {
    /// The value as the grid shows it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Empty => Ok(()),
            Value::Number(x) => write!(f, "{}", format_number(*x)),
            Value::Text(s) => write!(f, "{s}"),
            Value::Bool(b) => write!(f, "{}", if *b { "TRUE" } else { "FALSE" }),
            Value::Error(e) => write!(f, "{e}"),
        }
    }
}

/// A number as the grid shows it: integers without a decimal point, others with up to ten
/// significant decimals.
pub fn format_number(x: f64) -> String {
    if x.is_finite() && x == x.trunc() && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else if x.is_finite() {
        let s = format!("{:.10}", x);
        let s = s.trim_end_matches('0').trim_end_matches('.');
        s.to_string()
    } else {
        "#NUM!".into()
    }
}

/// A parsed formula.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A number.
    Number(f64),
    /// A string.
    Text(String),
    /// TRUE or FALSE.
    Bool(bool),
    /// A cell of a sheet (`None`: the formula's own sheet).
    Cell(Option<String>, Addr),
    /// A range of a sheet.
    Range(Option<String>, Range),
    /// Unary minus.
    Neg(Box<Expr>),
    /// A binary operator.
    Binary(Op, Box<Expr>, Box<Expr>),
    /// A function call.
    Call(Func, Vec<Expr>),
}

/// Binary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `&`
    Concat,
    /// `=`
    Eq,
    /// `<>`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

/// The functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    /// Sum of the numbers.
    Sum,
    /// Mean of the numbers.
    Average,
    /// Smallest number (0 when none).
    Min,
    /// Largest number (0 when none).
    Max,
    /// How many numbers.
    Count,
    /// How many cells of a range meet a criterion (`">50"`, `"<=3"`, `"<>0"`, `"tea"`).
    CountIf,
}

impl Func {
    fn parse(name: &str) -> Option<Func> {
        Some(match name.to_ascii_uppercase().as_str() {
            "SUM" => Func::Sum,
            "AVERAGE" => Func::Average,
            "MIN" => Func::Min,
            "MAX" => Func::Max,
            "COUNT" => Func::Count,
            "COUNTIF" => Func::CountIf,
            _ => return None,
        })
    }
}

/// Why a formula did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("formula `{formula}`: {message}")]
pub struct FormulaError {
    /// The formula.
    pub formula: String,
    /// What is wrong.
    pub message: String,
}

/// The longest formula read, in characters: Excel's limit. It bounds the depth of a formula's
/// tree too (a chain `B2+B2+…` is as deep as it has terms), and with it the stack its
/// evaluation needs.
pub const MAX_FORMULA_CHARS: usize = 8192;

/// Parses a formula (without its leading `=`).
pub fn parse(formula: &str) -> Result<Expr, FormulaError> {
    if formula.chars().count() > MAX_FORMULA_CHARS {
        return Err(FormulaError {
            formula: formula.chars().take(64).collect::<String>() + "…",
            message: format!("longer than {MAX_FORMULA_CHARS} characters (Excel's limit)"),
        });
    }
    let mut p = Parser {
        s: formula.as_bytes(),
        i: 0,
        depth: 0,
    };
    let fail = |m: String| FormulaError {
        formula: formula.to_string(),
        message: m,
    };
    let e = p.expr().map_err(fail)?;
    p.ws();
    if p.i != p.s.len() {
        return Err(fail(format!("unexpected `{}`", &formula[p.i..])));
    }
    Ok(e)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    depth: usize,
}

type P<T> = Result<T, String>;

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i] == b' ' {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, t: &str) -> bool {
        self.ws();
        if self.s[self.i..].starts_with(t.as_bytes()) {
            self.i += t.len();
            true
        } else {
            false
        }
    }

    fn expr(&mut self) -> P<Expr> {
        self.depth += 1;
        if self.depth > 64 {
            return Err("nested too deeply".into());
        }
        let mut a = self.concat()?;
        loop {
            let op = if self.eat("<>") {
                Op::Ne
            } else if self.eat("<=") {
                Op::Le
            } else if self.eat(">=") {
                Op::Ge
            } else if self.eat("=") {
                Op::Eq
            } else if self.eat("<") {
                Op::Lt
            } else if self.eat(">") {
                Op::Gt
            } else {
                break;
            };
            let b = self.concat()?;
            a = Expr::Binary(op, Box::new(a), Box::new(b));
        }
        self.depth -= 1;
        Ok(a)
    }

    fn concat(&mut self) -> P<Expr> {
        let mut a = self.additive()?;
        while self.eat("&") {
            let b = self.additive()?;
            a = Expr::Binary(Op::Concat, Box::new(a), Box::new(b));
        }
        Ok(a)
    }

    fn additive(&mut self) -> P<Expr> {
        let mut a = self.term()?;
        loop {
            let op = match self.peek() {
                Some(b'+') => Op::Add,
                Some(b'-') => Op::Sub,
                _ => break,
            };
            self.i += 1;
            let b = self.term()?;
            a = Expr::Binary(op, Box::new(a), Box::new(b));
        }
        Ok(a)
    }

    fn term(&mut self) -> P<Expr> {
        let mut a = self.unary()?;
        loop {
            let op = match self.peek() {
                Some(b'*') => Op::Mul,
                Some(b'/') => Op::Div,
                _ => break,
            };
            self.i += 1;
            let b = self.unary()?;
            a = Expr::Binary(op, Box::new(a), Box::new(b));
        }
        Ok(a)
    }

    fn unary(&mut self) -> P<Expr> {
        if self.eat("-") {
            self.depth += 1;
            if self.depth > 64 {
                return Err("nested too deeply".into());
            }
            let e = self.unary()?;
            self.depth -= 1;
            return Ok(Expr::Neg(Box::new(e)));
        }
        if self.eat("+") {
            return self.unary();
        }
        self.primary()
    }

    fn primary(&mut self) -> P<Expr> {
        match self.peek() {
            None => Err("ends too early".into()),
            Some(b'(') => {
                self.i += 1;
                let e = self.expr()?;
                if !self.eat(")") {
                    return Err("a `(` is not closed".into());
                }
                Ok(e)
            }
            Some(b'"') => {
                self.i += 1;
                let mut out = Vec::new();
                loop {
                    match self.s.get(self.i) {
                        None => return Err("a string is not closed".into()),
                        Some(b'"') if self.s.get(self.i + 1) == Some(&b'"') => {
                            out.push(b'"');
                            self.i += 2;
                        }
                        Some(b'"') => {
                            self.i += 1;
                            break;
                        }
                        Some(&c) => {
                            out.push(c);
                            self.i += 1;
                        }
                    }
                }
                Ok(Expr::Text(String::from_utf8_lossy(&out).into_owned()))
            }
            Some(c) if c.is_ascii_digit() || c == b'.' => {
                let st = self.i;
                while self.i < self.s.len()
                    && (self.s[self.i].is_ascii_digit() || self.s[self.i] == b'.')
                {
                    self.i += 1;
                }
                if self.i < self.s.len() && matches!(self.s[self.i], b'e' | b'E') {
                    let save = self.i;
                    self.i += 1;
                    if self.i < self.s.len() && matches!(self.s[self.i], b'+' | b'-') {
                        self.i += 1;
                    }
                    let d = self.i;
                    while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
                        self.i += 1;
                    }
                    if d == self.i {
                        self.i = save;
                    }
                }
                let t = std::str::from_utf8(&self.s[st..self.i]).unwrap_or("");
                // a number followed by `:` is a row range (`2:5`)
                if self.s.get(self.i) == Some(&b':') && t.bytes().all(|b| b.is_ascii_digit()) {
                    self.i = st;
                    return self.reference(None);
                }
                t.parse::<f64>()
                    .map(Expr::Number)
                    .map_err(|_| format!("`{t}` is not a number"))
            }
            Some(b'\'') => {
                self.i += 1;
                let mut name = Vec::new();
                loop {
                    match self.s.get(self.i) {
                        None => return Err("a quoted sheet name is not closed".into()),
                        Some(b'\'') if self.s.get(self.i + 1) == Some(&b'\'') => {
                            name.push(b'\'');
                            self.i += 2;
                        }
                        Some(b'\'') => {
                            self.i += 1;
                            break;
                        }
                        Some(&c) => {
                            name.push(c);
                            self.i += 1;
                        }
                    }
                }
                if !self.eat("!") {
                    return Err("a quoted sheet name must be followed by `!`".into());
                }
                self.reference(Some(String::from_utf8_lossy(&name).into_owned()))
            }
            Some(c) if c.is_ascii_alphabetic() || c == b'$' || c == b'_' => {
                let st = self.i;
                while self.i < self.s.len()
                    && (self.s[self.i].is_ascii_alphanumeric()
                        || matches!(self.s[self.i], b'$' | b'_' | b'.'))
                {
                    self.i += 1;
                }
                let word = std::str::from_utf8(&self.s[st..self.i])
                    .unwrap_or("")
                    .to_string();
                if self.peek() == Some(b'(') {
                    let f = Func::parse(&word).ok_or_else(|| format!("unknown function {word}"))?;
                    self.i += 1;
                    let mut args = Vec::new();
                    if !self.eat(")") {
                        loop {
                            args.push(self.expr()?);
                            if self.eat(")") {
                                break;
                            }
                            if !self.eat(",") && !self.eat(";") {
                                return Err(format!("expected `,` or `)` in {word}(…)"));
                            }
                        }
                    }
                    return Ok(Expr::Call(f, args));
                }
                if self.s.get(self.i) == Some(&b'!') {
                    self.i += 1;
                    return self.reference(Some(word));
                }
                match word.to_ascii_uppercase().as_str() {
                    "TRUE" => return Ok(Expr::Bool(true)),
                    "FALSE" => return Ok(Expr::Bool(false)),
                    _ => {}
                }
                self.i = st;
                self.reference(None)
            }
            Some(c) => Err(format!("unexpected `{}`", c as char)),
        }
    }

    /// A cell or range reference at the cursor.
    fn reference(&mut self, sheet: Option<String>) -> P<Expr> {
        let part = |p: &mut Parser| -> String {
            let st = p.i;
            while p.i < p.s.len() && (p.s[p.i].is_ascii_alphanumeric() || p.s[p.i] == b'$') {
                p.i += 1;
            }
            String::from_utf8_lossy(&p.s[st..p.i]).into_owned()
        };
        let a = part(self);
        if self.s.get(self.i) == Some(&b':') {
            self.i += 1;
            let b = part(self);
            let r = Range::parse(&format!("{a}:{b}"))
                .ok_or_else(|| format!("`{a}:{b}` is not a range"))?;
            return Ok(Expr::Range(sheet, r));
        }
        let c = Addr::parse(&a).ok_or_else(|| format!("`{a}` is not a cell reference"))?;
        Ok(Expr::Cell(sheet, c))
    }
}

/// What a formula can read: cells by sheet (`None` is the formula's own) and the used cells of
/// a range.
pub trait Cells {
    /// The value of a cell; an unknown sheet is `#REF!`.
    fn get(&self, sheet: Option<&str>, at: Addr) -> Value;
    /// The non-empty values inside a range, in row order.
    fn range(&self, sheet: Option<&str>, r: Range) -> Vec<Value>;
}

fn num(v: &Value) -> Result<f64, Value> {
    match v {
        Value::Empty => Ok(0.0),
        Value::Number(x) => Ok(*x),
        Value::Bool(b) => Ok(*b as u8 as f64),
        Value::Text(s) => s.trim().parse::<f64>().map_err(|_| err("#VALUE!")),
        Value::Error(_) => Err(v.clone()),
    }
}

fn err(e: &str) -> Value {
    Value::Error(e.into())
}

/// Evaluates a formula against `cells`.
pub fn eval(e: &Expr, cells: &dyn Cells) -> Value {
    match e {
        Expr::Number(x) => Value::Number(*x),
        Expr::Text(s) => Value::Text(s.clone()),
        Expr::Bool(b) => Value::Bool(*b),
        Expr::Cell(s, a) => match cells.get(s.as_deref(), *a) {
            Value::Empty => Value::Number(0.0),
            v => v,
        },
        Expr::Range(s, r) if r.height() == 1 && r.width() == 1 => {
            eval(&Expr::Cell(s.clone(), r.start), cells)
        }
        Expr::Range(..) => err("#VALUE!"),
        Expr::Neg(x) => match num(&eval(x, cells)) {
            Ok(x) => Value::Number(-x),
            Err(e) => e,
        },
        Expr::Binary(op, a, b) => {
            let (a, b) = (eval(a, cells), eval(b, cells));
            binary(*op, &a, &b)
        }
        Expr::Call(f, args) => call(*f, args, cells),
    }
}

fn binary(op: Op, a: &Value, b: &Value) -> Value {
    if let Value::Error(_) = a {
        return a.clone();
    }
    if let Value::Error(_) = b {
        return b.clone();
    }
    match op {
        Op::Concat => Value::Text(format!("{a}{b}")),
        Op::Eq | Op::Ne | Op::Lt | Op::Le | Op::Gt | Op::Ge => {
            let ord = match (num(a), num(b)) {
                (Ok(x), Ok(y)) if !matches!((a, b), (Value::Text(_), _) | (_, Value::Text(_))) => {
                    x.partial_cmp(&y)
                }
                _ => Some(
                    a.to_string()
                        .to_lowercase()
                        .cmp(&b.to_string().to_lowercase()),
                ),
            };
            let Some(o) = ord else {
                return err("#VALUE!");
            };
            use std::cmp::Ordering::*;
            Value::Bool(match op {
                Op::Eq => o == Equal,
                Op::Ne => o != Equal,
                Op::Lt => o == Less,
                Op::Le => o != Greater,
                Op::Gt => o == Greater,
                _ => o != Less,
            })
        }
        _ => {
            let (x, y) = match (num(a), num(b)) {
                (Ok(x), Ok(y)) => (x, y),
                (Err(e), _) | (_, Err(e)) => return e,
            };
            let r = match op {
                Op::Add => x + y,
                Op::Sub => x - y,
                Op::Mul => x * y,
                _ if y == 0.0 => return err("#DIV/0!"),
                _ => x / y,
            };
            if r.is_finite() {
                Value::Number(r)
            } else {
                err("#NUM!")
            }
        }
    }
}

/// Whether a cell's value meets a COUNTIF criterion: an operator (`>`, `>=`, `<`, `<=`, `=`,
/// `<>`; none is `=`) and a number compared with numbers, or a text matched case-insensitively.
fn meets(v: &Value, criterion: &Value) -> bool {
    let c = match criterion {
        Value::Number(x) => format!("{x}"),
        Value::Text(t) => t.clone(),
        Value::Bool(b) => if *b { "TRUE" } else { "FALSE" }.into(),
        _ => String::new(),
    };
    let (op, rest) = ["<>", ">=", "<=", ">", "<", "="]
        .iter()
        .find_map(|op| c.strip_prefix(op).map(|r| (*op, r)))
        .unwrap_or(("=", c.as_str()));
    match (rest.trim().parse::<f64>(), v) {
        (Ok(k), Value::Number(x)) => match op {
            ">" => *x > k,
            ">=" => *x >= k,
            "<" => *x < k,
            "<=" => *x <= k,
            "<>" => *x != k,
            _ => *x == k,
        },
        (Ok(_), _) => op == "<>",
        (Err(_), v) => {
            let equal = v.to_string().eq_ignore_ascii_case(rest);
            if op == "<>" {
                !equal
            } else {
                op == "=" && equal
            }
        }
    }
}

fn call(f: Func, args: &[Expr], cells: &dyn Cells) -> Value {
    if f == Func::CountIf {
        let [Expr::Range(s, r), criterion] = args else {
            return err("#VALUE!");
        };
        let c = eval(criterion, cells);
        if matches!(c, Value::Error(_)) {
            return c;
        }
        let n = cells
            .range(s.as_deref(), *r)
            .iter()
            .filter(|v| meets(v, &c))
            .count();
        return Value::Number(n as f64);
    }
    let mut xs = Vec::new();
    for a in args {
        match a {
            Expr::Range(s, r) => {
                for v in cells.range(s.as_deref(), *r) {
                    match v {
                        Value::Number(x) => xs.push(x),
                        Value::Error(_) => return v,
                        _ => {} // text, booleans and empty cells in ranges are skipped
                    }
                }
            }
            Expr::Cell(s, at) => match cells.get(s.as_deref(), *at) {
                Value::Number(x) => xs.push(x),
                v @ Value::Error(_) => return v,
                _ => {}
            },
            e => match num(&eval(e, cells)) {
                Ok(x) => xs.push(x),
                Err(e) => return e,
            },
        }
    }
    let r = match f {
        Func::Sum => xs.iter().sum(),
        Func::Count => xs.len() as f64,
        Func::Average if xs.is_empty() => return err("#DIV/0!"),
        Func::Average => xs.iter().sum::<f64>() / xs.len() as f64,
        Func::Min => xs.iter().copied().reduce(f64::min).unwrap_or(0.0),
        Func::Max => xs.iter().copied().reduce(f64::max).unwrap_or(0.0),
        // counted above, before its arguments were read as numbers
        Func::CountIf => return err("#VALUE!"),
    };
    Value::Number(r)
}

/// The formula with its relative references moved by `dr` rows and `dc` columns (what a paste
/// does); a reference moved off the sheet becomes `#REF!`.
pub fn shift(formula: &str, dr: i64, dc: i64) -> String {
    let s = formula.as_bytes();
    let mut out = String::with_capacity(formula.len());
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if c == b'"' {
            // copy a string literal unchanged
            let st = i;
            i += 1;
            while i < s.len() {
                if s[i] == b'"' {
                    if s.get(i + 1) == Some(&b'"') {
                        i += 2;
                        continue;
                    }
                    i += 1;
                    break;
                }
                i += 1;
            }
            out.push_str(&formula[st..i]);
            continue;
        }
        if c == b'\'' {
            let st = i;
            i += 1;
            while i < s.len() && s[i] != b'\'' {
                i += 1;
            }
            i = (i + 1).min(s.len());
            out.push_str(&formula[st..i]);
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'$' {
            let st = i;
            while i < s.len()
                && (s[i].is_ascii_alphanumeric() || matches!(s[i], b'$' | b'_' | b'.'))
            {
                i += 1;
            }
            let word = &formula[st..i];
            let next = s.get(i).copied();
            if next == Some(b'(') || next == Some(b'!') {
                out.push_str(word);
                continue;
            }
            out.push_str(&shift_ref(word, dr, dc).unwrap_or_else(|| word.to_string()));
            continue;
        }
        out.push(c as char);
        i += 1;
        if c >= 0x80 {
            // keep multi-byte characters whole
            out.pop();
            let ch = formula[i - 1..].chars().next().unwrap_or(' ');
            out.push(ch);
            i = i - 1 + ch.len_utf8();
        }
    }
    out
}

fn shift_ref(word: &str, dr: i64, dc: i64) -> Option<String> {
    let b = word.as_bytes();
    let mut i = 0;
    let abs_c = b.first() == Some(&b'$');
    if abs_c {
        i += 1;
    }
    let c0 = i;
    while i < b.len() && b[i].is_ascii_alphabetic() {
        i += 1;
    }
    let letters = &word[c0..i];
    let abs_r = b.get(i) == Some(&b'$');
    if abs_r {
        i += 1;
    }
    let digits = &word[i..];
    if letters.is_empty() || digits.is_empty() || !digits.bytes().all(|d| d.is_ascii_digit()) {
        return None;
    }
    let col = crate::sheet::addr::col_index(letters)? as i64;
    let row: i64 = digits.parse::<i64>().ok()? - 1;
    let (nc, nr) = (
        if abs_c { col } else { col + dc },
        if abs_r { row } else { row + dr },
    );
    if nc < 0
        || nr < 0
        || nc >= crate::sheet::addr::MAX_COL as i64
        || nr >= crate::sheet::addr::MAX_ROW as i64
    {
        return Some("#REF!".into());
    }
    Some(format!(
        "{}{}{}{}",
        if abs_c { "$" } else { "" },
        crate::sheet::addr::col_name(nc as u32),
        if abs_r { "$" } else { "" },
        nr + 1
    ))
}

#[cfg(test)]
mod tests;
