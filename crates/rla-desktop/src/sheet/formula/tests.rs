//! The tests of `formula`.

use super::*;
use std::collections::HashMap;

struct Grid(HashMap<(Option<String>, Addr), Value>);
impl Cells for Grid {
    fn get(&self, sheet: Option<&str>, at: Addr) -> Value {
        self.0
            .get(&(sheet.map(str::to_string), at))
            .cloned()
            .unwrap_or(Value::Empty)
    }
    fn range(&self, sheet: Option<&str>, r: Range) -> Vec<Value> {
        let mut v: Vec<_> = self
            .0
            .iter()
            .filter(|((s, a), _)| s.as_deref() == sheet && r.contains(*a))
            .map(|((_, a), v)| (*a, v.clone()))
            .collect();
        v.sort_by_key(|x| x.0);
        v.into_iter().map(|x| x.1).collect()
    }
}

fn grid() -> Grid {
    let mut g = HashMap::new();
    let a = |s: &str| Addr::parse(s).unwrap();
    g.insert((None, a("A1")), Value::Number(2.0));
    g.insert((None, a("A2")), Value::Number(3.0));
    g.insert((None, a("A3")), Value::Text("x".into()));
    g.insert((None, a("B1")), Value::Text("4".into()));
    g.insert((Some("Data".into()), a("A1")), Value::Number(10.0));
    Grid(g)
}

fn ev(f: &str) -> Value {
    eval(&parse(f).unwrap(), &grid())
}

#[test]
fn arithmetic_references_and_functions() {
    assert_eq!(ev("1+2*3"), Value::Number(7.0));
    assert_eq!(ev("(1+2)*3"), Value::Number(9.0));
    assert_eq!(ev("-A1+A2"), Value::Number(1.0));
    assert_eq!(ev("A1/0"), Value::Error("#DIV/0!".into()));
    assert_eq!(ev("A3+1"), Value::Error("#VALUE!".into()));
    assert_eq!(
        ev("B1*2"),
        Value::Number(8.0),
        "numeric text counts in arithmetic"
    );
    assert_eq!(
        ev("SUM(A1:A3)"),
        Value::Number(5.0),
        "text in a range is skipped"
    );
    assert_eq!(ev("sum(A:A)"), Value::Number(5.0));
    assert_eq!(ev("AVERAGE(A1:A2)"), Value::Number(2.5));
    assert_eq!(ev("MIN(A1:A3, 1)"), Value::Number(1.0));
    assert_eq!(ev("MAX(A1:A3)"), Value::Number(3.0));
    assert_eq!(ev("COUNT(A1:B3)"), Value::Number(2.0));
    assert_eq!(ev("AVERAGE(C1:C9)"), Value::Error("#DIV/0!".into()));
    assert_eq!(ev("Data!A1*2"), Value::Number(20.0));
    assert_eq!(ev("'Data'!A1"), Value::Number(10.0));
    assert_eq!(ev("\"a\"\"b\"&A1"), Value::Text("a\"b2".into()));
    assert_eq!(ev("A1<A2"), Value::Bool(true));
    assert_eq!(ev("C5"), Value::Number(0.0), "an empty cell is 0");
}

#[test]
fn countif_counts_the_cells_meeting_its_criterion() {
    assert_eq!(ev("COUNTIF(A1:A3,\">2\")"), Value::Number(1.0));
    assert_eq!(ev("COUNTIF(A1:A3,\">=2\")"), Value::Number(2.0));
    assert_eq!(ev("countif(A1:A3,\"<3\")"), Value::Number(1.0));
    assert_eq!(
        ev("COUNTIF(A1:A3,3)"),
        Value::Number(1.0),
        "a bare number is ="
    );
    assert_eq!(
        ev("COUNTIF(A1:A3,\"X\")"),
        Value::Number(1.0),
        "texts, any case"
    );
    assert_eq!(
        ev("COUNTIF(A1:A3,\"<>2\")"),
        Value::Number(2.0),
        "<> counts texts too"
    );
    assert_eq!(ev("COUNTIF(A1,\">1\")"), Value::Error("#VALUE!".into()));
    assert_eq!(ev("COUNTIF(A1:A3)"), Value::Error("#VALUE!".into()));
}

#[test]
fn bad_formulas_are_errors_that_say_what() {
    for f in ["1+", "FOO(1)", "(1", "\"abc", "A1:", "1 2", "'x", "$", ""] {
        let e = parse(f).unwrap_err();
        assert!(!e.message.is_empty(), "{f}");
    }
    let deep = "-".repeat(10_000) + "1";
    assert!(parse(&deep).is_err());
    let deep = "(".repeat(10_000) + "1" + &")".repeat(10_000);
    assert!(parse(&deep).is_err());
}

#[test]
fn a_chain_of_60000_terms_is_refused_and_the_longest_allowed_evaluates() {
    let long = vec!["B2"; 60_000].join("+");
    let e = parse(&long).unwrap_err();
    assert!(e.message.contains("longer than 8192"), "{}", e.message);
    // the deepest tree a formula within the limit can make: evaluated and dropped on a
    // thread with the 2 MiB stack of Rust's spawned threads
    let deepest = vec!["1"; MAX_FORMULA_CHARS / 2].join("+");
    assert!(deepest.len() < MAX_FORMULA_CHARS);
    let v = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || eval(&parse(&deepest).unwrap(), &grid()))
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(v, Value::Number((MAX_FORMULA_CHARS / 2) as f64));
}

#[test]
fn shifting_moves_relative_references_only() {
    assert_eq!(shift("B2-C2", 1, 0), "B3-C3");
    assert_eq!(shift("$B$2+B$2+$B2", 2, 1), "$B$2+C$2+$B4");
    assert_eq!(shift("SUM(A1:A3)&\"A1\"", 0, 2), "SUM(C1:C3)&\"A1\"");
    assert_eq!(shift("Sheet2!A1", 1, 1), "Sheet2!B2");
    assert_eq!(shift("A1", -1, 0), "#REF!");
}

#[test]
fn numbers_display_as_the_grid_shows_them() {
    assert_eq!(format_number(3.0), "3");
    assert_eq!(format_number(-2.5), "-2.5");
    assert_eq!(format_number(1.0 / 3.0), "0.3333333333");
}
