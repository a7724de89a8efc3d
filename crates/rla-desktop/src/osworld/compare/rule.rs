//! `_match_value_to_rule`, as `check_cell`, `zoom` and `data_validation` apply it: a Python
//! value compared with a rule's reference by `eq`, `ne`, `lt`, `le`, `gt`, `ge`, `approx:T`,
//! `range.xy`, `str_list_eq`, `str_set_eq` or `re[.FLAG…]`; and rapidfuzz's ratio.

use super::*;

/// A Python value for the rule methods.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum PyV {
    None,
    Num(f64),
    Str(String),
    Other,
}

pub(super) fn py_of_json(j: &Json) -> PyV {
    match j {
        Json::Null => PyV::None,
        Json::Bool(b) => PyV::Num(*b as u8 as f64),
        Json::Number(n) => PyV::Num(n.as_f64().unwrap_or(f64::NAN)),
        Json::String(s) => PyV::Str(s.clone()),
        _ => PyV::Other,
    }
}

/// `_match_value_to_rule`: `Ok(None)` where Python raises a TypeError (which `check_cell`
/// turns into a score of 0).
pub(super) fn match_rule(v: PyV, rule: &Json) -> Result<Option<bool>, String> {
    let method = rule
        .get("method")
        .and_then(Json::as_str)
        .ok_or("a check_cell prop needs a string `method`")?;
    let reference = rule.get("ref").unwrap_or(&Json::Null);
    let r = py_of_json(reference);
    let cmp = |op: &str| -> Option<bool> {
        use std::cmp::Ordering;
        let ord: Option<Ordering> = match (&v, &r) {
            (PyV::Num(a), PyV::Num(b)) => a.partial_cmp(b),
            (PyV::Str(a), PyV::Str(b)) => Some(a.chars().cmp(b.chars())),
            _ => None,
        };
        match op {
            "eq" => Some(match (&v, &r) {
                (PyV::None, PyV::None) => true,
                _ => ord == Some(Ordering::Equal),
            }),
            "ne" => Some(match (&v, &r) {
                (PyV::None, PyV::None) => false,
                _ => ord != Some(Ordering::Equal),
            }),
            _ => {
                let o = ord?;
                Some(match op {
                    "lt" => o == Ordering::Less,
                    "le" => o != Ordering::Greater,
                    "gt" => o == Ordering::Greater,
                    _ => o != Ordering::Less,
                })
            }
        }
    };
    if method.starts_with("re") {
        return regex_rule(method, &v, reference);
    }
    if matches!(method, "eq" | "ne" | "lt" | "le" | "gt" | "ge") {
        return Ok(cmp(method));
    }
    if let Some(t) = method.strip_prefix("approx:") {
        let th: f64 = t
            .parse()
            .map_err(|_| format!("approx threshold {t:?} is not a number"))?;
        let x = match &v {
            PyV::Num(x) => *x,
            PyV::Str(s) => match s.trim().parse::<f64>() {
                Ok(x) => x,
                Err(_) => return Ok(Some(false)),
            },
            _ => return Ok(Some(false)),
        };
        let PyV::Num(rf) = r else {
            return Ok(None);
        };
        return Ok(Some((x - rf).abs() <= th));
    }
    if method == "str_list_eq" || method == "str_set_eq" {
        let PyV::Str(s) = &v else {
            return Ok(None);
        };
        let parts: Vec<String> = s
            .trim_matches(|c| c == '"' || c == '\'')
            .split(',')
            .map(str::to_string)
            .collect();
        let refs: Vec<String> = match reference {
            Json::Array(a) => a
                .iter()
                .map(|x| {
                    x.as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| x.to_string())
                })
                .collect(),
            Json::String(s) => s.chars().map(String::from).collect(),
            _ => return Ok(None),
        };
        return Ok(Some(if method == "str_list_eq" {
            parts == refs
        } else {
            let a: std::collections::BTreeSet<_> = parts.into_iter().collect();
            let b: std::collections::BTreeSet<_> = refs.into_iter().collect();
            a == b
        }));
    }
    if let Some(ends) = method.strip_prefix("range.") {
        let e: Vec<char> = ends.chars().collect();
        if e.len() != 2 || !e.iter().all(|c| matches!(c, 't' | 'e')) {
            return Err(format!(
                "unknown range method {method:?} (range.tt, range.te, range.et or range.ee)"
            ));
        }
        let (Some(lo), Some(hi)) = (reference.get(0), reference.get(1)) else {
            return Err(format!("{method} needs a ref of two numbers"));
        };
        let (PyV::Num(lo), PyV::Num(hi), PyV::Num(x)) = (py_of_json(lo), py_of_json(hi), v) else {
            return Ok(None);
        };
        let left = if e[0] == 't' { lo < x } else { lo <= x };
        let right = if e[1] == 't' { x < hi } else { x <= hi };
        return Ok(Some(left && right));
    }
    Err(format!("check_cell method {method:?} is not implemented (re[.FLAG…], eq, ne, lt, le, gt, ge, approx:T, range.xy, str_list_eq, str_set_eq are)"))
}

/// The `re[.FLAG…]` method: `re.search(ref, value, flags)`. What Python raises (a flag `re`
/// lacks, a pattern or value that is not a string, a pattern it rejects) makes `check_cell`
/// score 0; a pattern Python accepts that this engine cannot run is an error naming it.
pub(super) fn regex_rule(method: &str, v: &PyV, reference: &Json) -> Result<Option<bool>, String> {
    let mut inline = String::new();
    for flag in method.split('.').skip(1) {
        match flag {
            "I" | "IGNORECASE" => inline.push('i'),
            "M" | "MULTILINE" => inline.push('m'),
            "S" | "DOTALL" => inline.push('s'),
            "X" | "VERBOSE" => inline.push('x'),
            "U" | "UNICODE" | "NOFLAG" => {}
            "A" | "ASCII" | "L" | "LOCALE" | "DEBUG" | "T" | "TEMPLATE" => {
                return Err(format!(
                    "check_cell method {method:?}: the flag re.{flag} is not supported here"
                ))
            }
            // getattr(re, flag) raises, or the reduction over a non-flag does
            _ => return Ok(None),
        }
    }
    let (Some(pattern), PyV::Str(text)) = (reference.as_str(), v) else {
        return Ok(None); // re.search of a non-string raises TypeError
    };
    if python_rejects(pattern) {
        return Ok(None);
    }
    // Python's end of string `\Z` is `\z` here
    let translated = pattern.replace("\\Z", "\\z");
    let full = if inline.is_empty() {
        translated
    } else {
        format!("(?{inline}){translated}")
    };
    let re = fancy_regex::Regex::new(&full).map_err(|e| {
        format!("check_cell method {method:?}: the pattern {pattern:?} cannot run here: {e}")
    })?;
    re.is_match(text)
        .map(Some)
        .map_err(|e| format!("check_cell method {method:?}: matching {pattern:?} failed: {e}"))
}

/// Patterns Python's `re` refuses to compile (`re.error`), which score 0 there: unbalanced
/// parentheses or brackets, a dangling escape, a quantifier with nothing to repeat.
pub(super) fn python_rejects(p: &str) -> bool {
    let cs: Vec<char> = p.chars().collect();
    let (mut depth, mut i, mut in_class) = (0i32, 0, false);
    let mut prev_atom = false;
    while i < cs.len() {
        let c = cs[i];
        if c == '\\' {
            if i + 1 == cs.len() {
                return true;
            }
            i += 2;
            prev_atom = true;
            continue;
        }
        if in_class {
            if c == ']' {
                in_class = false;
                prev_atom = true;
            }
            i += 1;
            continue;
        }
        match c {
            '[' => {
                in_class = true;
                // a leading ] or ^] is literal
                if cs.get(i + 1) == Some(&'^') {
                    i += 1;
                }
                if cs.get(i + 1) == Some(&']') {
                    i += 1;
                }
            }
            '(' => {
                depth += 1;
                prev_atom = false;
                i += 1;
                // (?…) group heads are not atoms to repeat
                if cs.get(i) == Some(&'?') {
                    i += 1;
                }
                continue;
            }
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return true;
                }
            }
            '*' | '+' | '?' => {
                if !prev_atom {
                    return true;
                }
                // a lazy or possessive suffix
                if matches!(cs.get(i + 1), Some('?') | Some('+')) {
                    i += 1;
                }
                prev_atom = false;
                i += 1;
                continue;
            }
            '|' => {
                prev_atom = false;
                i += 1;
                continue;
            }
            _ => {}
        }
        prev_atom = true;
        i += 1;
    }
    depth != 0 || in_class
}

/// rapidfuzz's `fuzz.ratio`: 100 · (1 − Indel distance / total length).
pub fn fuzz_ratio(a: &str, b: &str) -> f64 {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if a.is_empty() && b.is_empty() {
        return 100.0;
    }
    let mut prev = vec![0usize; b.len() + 1];
    for x in &a {
        let mut cur = vec![0usize; b.len() + 1];
        for (j, y) in b.iter().enumerate() {
            cur[j + 1] = if x == y {
                prev[j] + 1
            } else {
                prev[j + 1].max(cur[j])
            };
        }
        prev = cur;
    }
    let lcs = prev[b.len()];
    200.0 * lcs as f64 / (a.len() + b.len()) as f64
}
