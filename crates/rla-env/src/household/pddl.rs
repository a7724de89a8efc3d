//! A small PDDL reader: s-expressions, the `:objects`, `:init` and `:goal` of a problem, and
//! goal formulas.

use std::fmt;

/// An s-expression: an atom or a parenthesised list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sexp {
    /// A symbol such as `inReceptacle`, `?o` or `-`.
    Atom(String),
    /// `( … )`.
    List(Vec<Sexp>),
}

impl Sexp {
    /// The atom's text, if this is an atom.
    pub fn atom(&self) -> Option<&str> {
        match self {
            Sexp::Atom(a) => Some(a),
            Sexp::List(_) => None,
        }
    }

    /// The list's items, if this is a list.
    pub fn list(&self) -> Option<&[Sexp]> {
        match self {
            Sexp::List(l) => Some(l),
            Sexp::Atom(_) => None,
        }
    }

    /// The head atom of a list, lowercased (`(and …)` → `and`).
    pub fn head(&self) -> Option<String> {
        self.list()?.first()?.atom().map(str::to_ascii_lowercase)
    }
}

impl fmt::Display for Sexp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Sexp::Atom(a) => write!(f, "{a}"),
            Sexp::List(l) => {
                write!(f, "(")?;
                for (i, x) in l.iter().enumerate() {
                    if i > 0 {
                        write!(f, " ")?;
                    }
                    write!(f, "{x}")?;
                }
                write!(f, ")")
            }
        }
    }
}

/// How deep lists may nest. Every reader of an expression (goals, printing, dropping) recurses
/// over it, so a deeper file is refused here rather than overflowing the stack there; ALFWorld's
/// own files nest fewer than ten levels.
pub const MAX_DEPTH: usize = 256;

/// Parses one or more s-expressions; `;` starts a comment to the end of the line. Lists may nest
/// at most [`MAX_DEPTH`] levels.
pub fn parse_sexps(text: &str) -> Result<Vec<Sexp>, String> {
    let mut stack: Vec<Vec<Sexp>> = vec![Vec::new()];
    let mut atom = String::new();
    let mut line = 1usize;
    let mut chars = text.chars().peekable();
    let flush = |atom: &mut String, stack: &mut Vec<Vec<Sexp>>| {
        if !atom.is_empty() {
            stack
                .last_mut()
                .expect("stack never empty")
                .push(Sexp::Atom(std::mem::take(atom)));
        }
    };
    while let Some(c) = chars.next() {
        match c {
            ';' => {
                flush(&mut atom, &mut stack);
                for d in chars.by_ref() {
                    if d == '\n' {
                        line += 1;
                        break;
                    }
                }
            }
            '(' => {
                flush(&mut atom, &mut stack);
                if stack.len() > MAX_DEPTH {
                    return Err(format!(
                        "lists nested more than {MAX_DEPTH} levels deep on line {line}"
                    ));
                }
                stack.push(Vec::new());
            }
            ')' => {
                flush(&mut atom, &mut stack);
                if stack.len() == 1 {
                    return Err(format!("unbalanced ')' on line {line}"));
                }
                let done = stack.pop().expect("checked");
                stack.last_mut().expect("checked").push(Sexp::List(done));
            }
            c if c.is_whitespace() => {
                if c == '\n' {
                    line += 1;
                }
                flush(&mut atom, &mut stack);
            }
            c => atom.push(c),
        }
    }
    flush(&mut atom, &mut stack);
    if stack.len() != 1 {
        return Err(format!("{} unclosed '(' at end of text", stack.len() - 1));
    }
    Ok(stack.pop().expect("checked"))
}

/// A typed name list such as `a b - object c - location` → `[(a, object), (b, object), (c, location)]`.
pub fn typed_list(items: &[Sexp]) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let mut pending: Vec<String> = Vec::new();
    let mut i = 0;
    while i < items.len() {
        let a = items[i]
            .atom()
            .ok_or_else(|| format!("expected a name, found {}", items[i]))?;
        if a == "-" {
            let ty = items
                .get(i + 1)
                .and_then(Sexp::atom)
                .ok_or_else(|| "a '-' must be followed by a type name".to_string())?;
            for n in pending.drain(..) {
                out.push((n, ty.to_string()));
            }
            i += 2;
        } else {
            pending.push(a.to_string());
            i += 1;
        }
    }
    for n in pending {
        out.push((n, "object".to_string()));
    }
    Ok(out)
}

/// A first-order formula over the problem's facts.
#[derive(Debug, Clone, PartialEq)]
pub enum Formula {
    /// `(pred arg …)`; arguments are `?variables` or constants.
    Atom(String, Vec<String>),
    /// `(= a b)`.
    Eq(String, String),
    /// `(not f)`.
    Not(Box<Formula>),
    /// `(and f …)`.
    And(Vec<Formula>),
    /// `(or f …)`.
    Or(Vec<Formula>),
    /// `(exists (?v - type …) f)`.
    Exists(Vec<(String, String)>, Box<Formula>),
    /// `(forall (?v - type …) f)`.
    Forall(Vec<(String, String)>, Box<Formula>),
}

/// Reads a formula from an s-expression.
pub fn formula(s: &Sexp) -> Result<Formula, String> {
    let items = s
        .list()
        .ok_or_else(|| format!("expected a formula, found the atom {s}"))?;
    let Some(head) = s.head() else {
        // `()` is the empty conjunction (always true)
        if items.is_empty() {
            return Ok(Formula::And(vec![]));
        }
        return Err(format!("a formula must start with a name: {s}"));
    };
    let args = &items[1..];
    let sub = |xs: &[Sexp]| xs.iter().map(formula).collect::<Result<Vec<_>, _>>();
    Ok(match head.as_str() {
        "and" => Formula::And(sub(args)?),
        "or" => Formula::Or(sub(args)?),
        "not" => {
            if args.len() != 1 {
                return Err(format!("'not' takes one formula: {s}"));
            }
            Formula::Not(Box::new(formula(&args[0])?))
        }
        "exists" | "forall" => {
            if args.len() != 2 {
                return Err(format!("'{head}' takes a variable list and a formula: {s}"));
            }
            let vars_items = args[0]
                .list()
                .ok_or_else(|| format!("'{head}' needs a variable list: {s}"))?;
            // tolerate commas in variable lists (`?l - location, ?r - receptacle`)
            let cleaned: Vec<Sexp> = vars_items
                .iter()
                .filter_map(|x| match x {
                    Sexp::Atom(a) => {
                        let t = a.trim_end_matches(',');
                        (!t.is_empty()).then(|| Sexp::Atom(t.to_string()))
                    }
                    other => Some(other.clone()),
                })
                .collect();
            let vars = typed_list(&cleaned)?;
            let body = Box::new(formula(&args[1])?);
            if head == "exists" {
                Formula::Exists(vars, body)
            } else {
                Formula::Forall(vars, body)
            }
        }
        "=" => {
            if args.len() != 2 {
                return Err(format!("'=' takes two terms: {s}"));
            }
            let a = args[0].atom().ok_or_else(|| format!("bad term in {s}"))?;
            let b = args[1].atom().ok_or_else(|| format!("bad term in {s}"))?;
            Formula::Eq(a.to_string(), b.to_string())
        }
        _ => {
            let pred = items[0].atom().expect("head is an atom").to_string();
            let terms = args
                .iter()
                .map(|a| {
                    a.atom()
                        .map(str::to_string)
                        .ok_or_else(|| format!("bad term in {s}"))
                })
                .collect::<Result<Vec<_>, _>>()?;
            Formula::Atom(pred, terms)
        }
    })
}

/// The parts of a PDDL problem the household needs.
#[derive(Debug, Clone)]
pub struct Problem {
    /// The problem's name.
    pub name: String,
    /// `(name, type)` of every declared object.
    pub objects: Vec<(String, String)>,
    /// The `:init` facts as `(predicate, arguments)`.
    pub init: Vec<(String, Vec<String>)>,
    /// The goal formula.
    pub goal: Formula,
}

/// Parses a `(define (problem …) …)` text.
pub fn parse_problem(text: &str) -> Result<Problem, String> {
    let top = parse_sexps(text)?;
    let define = top
        .iter()
        .find(|s| s.head().as_deref() == Some("define"))
        .ok_or("no (define …) form")?;
    let items = define.list().expect("has a head");
    let mut name = String::new();
    let mut objects = None;
    let mut init = None;
    let mut goal = None;
    for it in &items[1..] {
        match it.head().as_deref() {
            Some("problem") => {
                name = it.list().expect("list")[1..]
                    .first()
                    .and_then(Sexp::atom)
                    .unwrap_or("")
                    .to_string()
            }
            Some(":objects") => objects = Some(typed_list(&it.list().expect("list")[1..])?),
            Some(":init") => {
                let mut facts = Vec::new();
                for f in &it.list().expect("list")[1..] {
                    let l = f
                        .list()
                        .ok_or_else(|| format!(":init: expected a fact, found {f}"))?;
                    let mut atoms = l.iter().map(|x| {
                        x.atom()
                            .map(str::to_string)
                            .ok_or_else(|| format!(":init: nested list in fact {f}"))
                    });
                    let pred = atoms
                        .next()
                        .ok_or_else(|| ":init: empty fact ()".to_string())??;
                    let args = atoms.collect::<Result<Vec<_>, _>>()?;
                    facts.push((pred, args));
                }
                init = Some(facts);
            }
            Some(":goal") => {
                let g = it.list().expect("list");
                if g.len() != 2 {
                    return Err(":goal must hold exactly one formula".into());
                }
                goal = Some(formula(&g[1]).map_err(|e| format!(":goal: {e}"))?);
            }
            _ => {}
        }
    }
    Ok(Problem {
        name,
        objects: objects.ok_or("missing :objects")?,
        init: init.ok_or("missing :init")?,
        goal: goal.ok_or("missing :goal")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_is_bounded() {
        let deep = "(".repeat(50_000) + &")".repeat(50_000);
        let e = parse_sexps(&deep).unwrap_err();
        assert!(e.contains("nested more than 256"), "{e}");
        let ok = "(".repeat(MAX_DEPTH) + &")".repeat(MAX_DEPTH);
        assert!(parse_sexps(&ok).is_ok());
    }

    #[test]
    fn sexps_and_comments() {
        let s = parse_sexps("(a (b c) ; comment (\n d)").unwrap();
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].to_string(), "(a (b c) d)");
        assert!(parse_sexps("(a").is_err());
        assert!(parse_sexps("a)").is_err());
    }

    #[test]
    fn problem() {
        let p = parse_problem(
            "(define (problem p) (:domain alfred) (:objects a1 - agent x y - object l - location)
             (:init (atLocation a1 l)) (:goal (exists (?o - object) (and (isClean ?o) (not (= ?o x))))))",
        )
        .unwrap();
        assert_eq!(p.name, "p");
        assert_eq!(p.objects.len(), 4);
        assert_eq!(p.objects[2], ("y".to_string(), "object".to_string()));
        assert_eq!(p.init[0].0, "atLocation");
        match p.goal {
            Formula::Exists(v, _) => assert_eq!(v, vec![("?o".into(), "object".into())]),
            g => panic!("{g:?}"),
        }
        assert!(parse_problem("(define (problem p) (:objects) (:init))")
            .unwrap_err()
            .contains(":goal"));
    }
}
