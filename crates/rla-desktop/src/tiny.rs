//! A compact action vocabulary for tiny text-only policies: each action names an element of
//! the accessibility tree (`click B3`, `click column B`, `double-click tab Sheet2`, `click item
//! Sort Ascending`), a key (`press enter`, `copy`, `paste`, `undo`), text to type (`type
//! Profit`, words of the instruction), a run of row formulas (`fill =B-C`: from the cursor down
//! to the last data row) or an aggregate of the column above (`fill =SUM(B)`), or `done`.
//!
//! Every action turns into OSWorld pyautogui code ([`to_code`]), and code the expert writes
//! turns back into one ([`from_code`]), so demonstrations and the policy's choices are the same
//! kind of thing. [`candidates`] lists the actions of a state, as the household lists its
//! admissible commands.

use crate::a11y::{self, Node, TreeOptions};
use crate::action::{parse_code, Action, Button, Point};
use crate::addr::{col_index, col_name, Addr};
use crate::app::Desktop;
use crate::formula::Value;

/// The label of a node an action can name (`B3`, `column B`, `tab Sheet2`, …).
pub fn label(n: &Node) -> String {
    match n.tag {
        "table-cell" => n.name.clone(),
        "column-header" => format!("column {}", n.name),
        "row-header" => format!("row {}", n.name),
        "page-tab" => format!("tab {}", n.name),
        "menu" => format!("menu {}", n.name),
        "menu-item" => format!("item {}", n.name),
        "push-button" => format!("button {}", n.name),
        "radio-button" => format!("option {}", n.name),
        "combo-box" | "text" => n.name.clone(),
        _ => n.name.clone(),
    }
}

/// Words of an instruction that can be typed: capitalised words and numbers-free names, in
/// order of first appearance (`Profit`, `Total`, `Sheet2`, …).
pub fn words(instruction: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in instruction.split(|c: char| !c.is_alphanumeric()) {
        let ok = w.len() >= 2
            && w.chars().next().is_some_and(|c| c.is_ascii_uppercase())
            && !matches!(
                w,
                "Copy"
                    | "Add"
                    | "In"
                    | "Then"
                    | "Sort"
                    | "Hint"
                    | "Ctrl"
                    | "Enter"
                    | "Data"
                    | "Descending"
                    | "Ascending"
                    | "A"
            );
        if ok && !out.iter().any(|x| x == w) {
            out.push(w.to_string());
        }
    }
    out
}

/// The data rows of a column: the run from row 2 down of numbers and row formulas (`=B2-C2`,
/// not aggregates).
pub fn plain_run(book: &crate::workbook::Workbook, sheet: usize, col: u32) -> Option<(u32, u32)> {
    use crate::workbook::Content;
    let cells = &book.sheets[sheet].cells;
    let plain = |r: u32| match cells.get(&Addr::new(r, col)) {
        Some(Content::Number(_)) => true,
        Some(Content::Formula(f)) => crate::expert::row_pattern(&format!("={f}"), r).is_some(),
        _ => false,
    };
    if !plain(1) {
        return None;
    }
    let mut last = 1;
    while plain(last + 1) {
        last += 1;
    }
    Some((1, last))
}

fn data_rows(d: &Desktop, col: u32) -> Option<(u32, u32)> {
    plain_run(&d.book, d.sheet, col)
}

/// The actions of a state: those that name something there ([`to_code`] gives code).
pub fn candidates(d: &Desktop, nodes: &[Node], instruction: &str) -> Vec<String> {
    let mut all = all_candidates(d, nodes, instruction);
    all.retain(|a| to_code(a, d, nodes).is_some());
    all
}

fn all_candidates(d: &Desktop, nodes: &[Node], instruction: &str) -> Vec<String> {
    let mut out = Vec::new();
    for n in a11y::marks(nodes) {
        let l = label(n);
        out.push(format!("click {l}"));
        match n.tag {
            "table-cell" | "page-tab" => {
                out.push(format!("double-click {l}"));
                out.push(format!("right-click {l}"));
            }
            "column-header" | "row-header" => out.push(format!("right-click {l}")),
            _ => {}
        }
    }
    for k in [
        "press enter",
        "press esc",
        "press delete",
        "press tab",
        "copy",
        "paste",
        "cut",
        "undo",
        "save",
    ] {
        out.push(k.into());
    }
    for w in words(instruction) {
        out.push(format!("type {w}"));
    }
    let sheet = &d.book.sheets[d.sheet];
    let numeric: Vec<u32> = {
        let mut v: Vec<u32> = sheet
            .cells
            .iter()
            .filter(|(a, c)| a.row == 1 && matches!(c, crate::workbook::Content::Number(_)))
            .map(|(a, _)| a.col)
            .collect();
        v.sort();
        v.dedup();
        v
    };
    if d.dialog.is_none() && d.cursor.row >= 1 {
        for &x in &numeric {
            for &y in &numeric {
                if x == y {
                    continue;
                }
                for op in ['-', '+', '*'] {
                    if op != '-' && x > y {
                        continue;
                    }
                    out.push(format!("fill ={}{op}{}", col_name(x), col_name(y)));
                }
            }
        }
        for f in ["SUM", "AVERAGE", "MAX"] {
            out.push(format!("fill ={f}({})", col_name(d.cursor.col)));
        }
    }
    out.push("done".into());
    out
}

/// The pyautogui code of an action in a state; `None` for an action that names nothing there.
pub fn to_code(act: &str, d: &Desktop, nodes: &[Node]) -> Option<String> {
    if act == "done" {
        return Some("DONE".into());
    }
    let key = |k: &str| Some(format!("pyautogui.press('{k}')"));
    let hot = |k: &str| Some(format!("pyautogui.hotkey('ctrl', '{k}')"));
    match act {
        "press enter" => return key("enter"),
        "press esc" => return key("esc"),
        "press delete" => return key("delete"),
        "press tab" => return key("tab"),
        "copy" => return hot("c"),
        "paste" => return hot("v"),
        "cut" => return hot("x"),
        "undo" => return hot("z"),
        "save" => return hot("s"),
        _ => {}
    }
    let quote = |s: &str| s.replace('\\', "\\\\").replace('\'', "\\'");
    if let Some(w) = act.strip_prefix("type ") {
        return Some(if d.dialog.is_some() {
            format!(
                "pyautogui.hotkey('ctrl', 'a'); pyautogui.write('{}\\n')",
                quote(w)
            )
        } else {
            format!("pyautogui.write('{}\\n')", quote(w))
        });
    }
    if let Some(f) = act.strip_prefix("fill =") {
        if let Some(inner) = f.strip_suffix(')') {
            let (fname, c) = inner.split_once('(')?;
            let col = col_index(c)?;
            let (r0, r1) = data_rows(d, col)?;
            if d.cursor.row <= r1 {
                return None;
            }
            return Some(format!(
                "pyautogui.write('={fname}({c}{}:{c}{})\\n')",
                r0 + 1,
                r1 + 1
            ));
        }
        let op = f.find(['-', '+', '*'])?;
        let (x, y) = (&f[..op], &f[op + 1..]);
        let (_, last) = data_rows(d, col_index(x)?)?;
        if d.cursor.row < 1 || d.cursor.row > last {
            return None;
        }
        let mut text = String::new();
        for r in d.cursor.row..=last {
            text.push_str(&format!("={x}{}{}{y}{}\\n", r + 1, &f[op..op + 1], r + 1));
        }
        return Some(format!("pyautogui.write('{text}')"));
    }
    let (verb, rest) = if let Some(r) = act.strip_prefix("double-click ") {
        ("doubleClick", r)
    } else if let Some(r) = act.strip_prefix("right-click ") {
        ("rightClick", r)
    } else if let Some(r) = act.strip_prefix("click ") {
        ("click", r)
    } else {
        return None;
    };
    let n = a11y::marks(nodes).into_iter().find(|n| label(n) == rest)?;
    let (x, y) = n.rect.center();
    let _ = d;
    Some(format!("pyautogui.{verb}({x}, {y})"))
}

/// The action of a piece of code in a state (what the expert wrote), if the vocabulary has it.
pub fn from_code(code: &str, d: &Desktop, nodes: &[Node]) -> Option<String> {
    if code.trim() == "DONE" {
        return Some("done".into());
    }
    let actions = parse_code(code).ok()?;
    let node_at = |p: &Point| -> Option<String> {
        let Point::At(x, y) = p else {
            return None;
        };
        a11y::marks(nodes)
            .into_iter()
            .rev()
            .find(|n| n.rect.contains(*x, *y))
            .map(label)
    };
    match actions.as_slice() {
        [Action::Click { at, button, clicks }] => {
            let l = node_at(at)?;
            Some(match (button, clicks) {
                (Button::Left, 1) => format!("click {l}"),
                (Button::Left, 2) => format!("double-click {l}"),
                (Button::Right, 1) => format!("right-click {l}"),
                _ => return None,
            })
        }
        [Action::Press(k)] if k.len() == 1 => Some(match k[0].as_str() {
            "enter" | "esc" | "delete" | "tab" => format!("press {}", k[0]),
            _ => return None,
        }),
        [Action::Hotkey(k)] if k.len() == 2 && k[0] == "ctrl" => Some(
            match k[1].as_str() {
                "c" => "copy",
                "v" => "paste",
                "x" => "cut",
                "z" => "undo",
                "s" => "save",
                _ => return None,
            }
            .into(),
        ),
        [Action::Hotkey(k), Action::Write(w)] if k == &["ctrl", "a"] && d.dialog.is_some() => {
            Some(format!("type {}", w.strip_suffix('\n')?))
        }
        [Action::Write(w)] => {
            let entries: Vec<&str> = w.strip_suffix('\n')?.split('\n').collect();
            let first = entries[0];
            if let Some(f) = first.strip_prefix('=') {
                if let Some((fname, range)) = f.strip_suffix(')').and_then(|x| x.split_once('(')) {
                    let (a, _) = range.split_once(':')?;
                    let c: String = a.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
                    return (entries.len() == 1).then(|| format!("fill ={fname}({c})"));
                }
                let p = crate::expert::row_pattern(first, d.cursor.row)?;
                // the code must be exactly what `fill` writes from here
                let act = format!("fill {p}");
                return (to_code(&act, d, nodes).as_deref() == Some(code)).then_some(act);
            }
            (entries.len() == 1).then(|| format!("type {first}"))
        }
        _ => None,
    }
}

/// The compact observation of a tiny policy: the selected cell, what is open, and the visible
/// elements with their text.
pub fn observation(d: &Desktop, nodes: &[Node]) -> String {
    let mut s = format!("sheet {} cursor {}", d.book.sheets[d.sheet].name, d.cursor);
    if let Some(dl) = &d.dialog {
        s.push_str(&format!(" | dialog {}: {}", dl.title(), dl.field));
        if let Some(e) = &dl.error {
            s.push_str(&format!(" ({e})"));
        }
    }
    if d.popup.is_some() {
        s.push_str(" | a menu is open");
    }
    if let Some(e) = &d.edit {
        s.push_str(&format!(" | editing {}", e.text));
    }
    for n in nodes {
        match n.tag {
            "table-cell" if !n.text.is_empty() => s.push_str(&format!(" | {} {}", n.name, n.text)),
            "page-tab" => s.push_str(&format!(" | tab {}", n.name)),
            "menu-item" => s.push_str(&format!(" | item {}", n.name)),
            _ => {}
        }
    }
    s
}

/// The value of a cell for prompts.
pub fn cell_text(d: &Desktop, a: Addr) -> String {
    match d.book.value(d.sheet, a) {
        Value::Empty => String::new(),
        v => v.to_string(),
    }
}

/// The tree options a tiny policy sees.
pub const TREE: TreeOptions = TreeOptions { empty_cells: false };

#[cfg(test)]
mod tests {
    use super::*;
    use crate::episode::Episode;
    use crate::family::{generate, split, Split};

    #[test]
    fn expert_steps_are_candidates_and_round_trip() {
        let (mut mapped, mut total) = (0, 0);
        for spec in split(Split::InDomain, 40)
            .iter()
            .chain(split(Split::Ood, 20).iter())
        {
            let mut ep = Episode::new(generate(spec), 1920, 1080).unwrap();
            for code in crate::expert::solve(&ep).unwrap() {
                let nodes = ep.tree(TREE);
                total += 1;
                let act = from_code(&code, &ep.desktop, &nodes).unwrap_or_else(|| {
                    panic!(
                        "{code} maps to no action in {}: cursor {} {:?}",
                        ep.task.task.id,
                        ep.desktop.cursor,
                        ep.desktop.book.sheets[ep.desktop.sheet]
                            .cells
                            .keys()
                            .map(|a| a.to_string())
                            .collect::<Vec<_>>()
                    )
                });
                let cands = candidates(&ep.desktop, &nodes, &ep.task.task.instruction);
                assert!(cands.contains(&act), "{act} not among the candidates");
                let back = to_code(&act, &ep.desktop, &nodes).unwrap();
                let a = parse_code(&back).unwrap();
                assert_eq!(a, parse_code(&code).unwrap(), "{act}");
                mapped += 1;
                if act == "done" {
                    break;
                }
                ep.step_code(&back, &nodes);
            }
            assert_eq!(ep.score(), Ok(1.0));
        }
        assert_eq!(mapped, total);
    }

    #[test]
    fn words_come_from_the_instruction() {
        assert_eq!(
            words("Copy the Revenue column to a new sheet named Sheet2, then rename it to Profit."),
            ["Revenue", "Sheet2", "Profit"]
        );
    }
}
