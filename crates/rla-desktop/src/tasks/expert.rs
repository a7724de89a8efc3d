//! An expert that solves any generated task through the GUI from any state: each step it looks
//! at the desktop and the task's expected workbook and emits one action as pyautogui code —
//! close what is open, fix the sheets (delete extra ones, add missing ones, rename), sort when
//! sorting gives the expected table, otherwise type each differing run of a column with one
//! `write` (entries separated by Enter) or clear it — and `DONE` once the task's evaluator
//! passes. [`distance`] counts its steps to the goal: the oracle's progress label of a step is
//! whether that distance fell.

use crate::sheet::addr::{Addr, Range};
use crate::sheet::formula::Value;
use crate::sheet::workbook::Workbook;
use crate::tasks::episode::DesktopEpisode;
use crate::tasks::rows::{plain_run, row_pattern, thresholds};
use crate::ui::app::{Desktop, DialogKind, Popup, MENUS, TAB_MENU};

/// The most steps [`distance`] simulates.
pub const MAX_PLAN: usize = 60;

fn click(x: i32, y: i32) -> String {
    format!("pyautogui.click({x}, {y})")
}

use crate::ui::keys::py_str;

fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => (x - y).abs() <= 1e-9 * x.abs().max(1.0),
        _ => a == b,
    }
}

/// What the sheets must become, in order.
fn sheet_fix(d: &Desktop, target: &Workbook) -> Option<SheetFix> {
    let cur = d.book.names();
    let want = target.names();
    if cur == want {
        return None;
    }
    if cur.len() > want.len() {
        let i = cur
            .iter()
            .enumerate()
            .rev()
            .find(|(i, n)| !want.contains(n) || want.get(*i) != Some(n))
            .map(|(i, _)| i)
            .unwrap_or(cur.len() - 1);
        return Some(SheetFix::Delete(i));
    }
    if cur.len() < want.len() {
        return Some(SheetFix::Add);
    }
    let j = cur
        .iter()
        .zip(&want)
        .position(|(a, b)| a != b)
        .expect("names differ");
    if cur.iter().any(|n| n.eq_ignore_ascii_case(&want[j])) {
        // the name is taken by another sheet, which goes first
        let k = cur
            .iter()
            .position(|n| n.eq_ignore_ascii_case(&want[j]))
            .expect("found");
        return Some(SheetFix::Delete(k));
    }
    Some(SheetFix::Rename(j, want[j].clone()))
}

enum SheetFix {
    Delete(usize),
    Add,
    Rename(usize, String),
}

/// The first differing run of a column of sheet `s`: its column, rows, and whether it must be
/// cleared (else typed).
fn cell_fix(d: &Desktop, target: &Workbook, s: usize) -> Option<(u32, u32, u32, bool)> {
    let cur = &d.book.sheets[s];
    let tgt = &target.sheets[s];
    let mut addrs: Vec<Addr> = cur.cells.keys().chain(tgt.cells.keys()).copied().collect();
    addrs.sort_by_key(|a| (a.col, a.row));
    addrs.dedup();
    let differs = |a: Addr| !same(&d.book.value(s, a), &target.value(s, a));
    let first = addrs.iter().copied().find(|a| differs(*a))?;
    let clear = !tgt.cells.contains_key(&first);
    let mut last = first.row;
    loop {
        let next = Addr::new(last + 1, first.col);
        let next_clear = !tgt.cells.contains_key(&next);
        if !differs(next) || next_clear != clear {
            break;
        }
        last += 1;
    }
    Some((first.col, first.row, last, clear))
}

/// The topmost number of column `c` of sheet `s`.
fn first_number(book: &Workbook, s: usize, c: u32) -> Option<Addr> {
    book.sheets[s]
        .cells
        .iter()
        .filter(|(a, v)| a.col == c && matches!(v, crate::sheet::workbook::Content::Number(_)))
        .map(|(a, _)| *a)
        .min_by_key(|a| a.row)
}

/// The column whose sort (ascending or not) turns sheet `s` into the target's, if any.
fn sort_fix(d: &Desktop, target: &Workbook, s: usize) -> Option<(u32, bool)> {
    let ext = d.book.sheets[s].extent()?;
    if d.book.sheets[s].cells.len() != target.sheets[s].cells.len() {
        return None;
    }
    for c in 0..=ext.col {
        // a cell of the column's data, wherever the table lies
        let Some(at) = first_number(&d.book, s, c) else {
            continue;
        };
        for asc in [true, false] {
            // a bare desktop over the workbook (no undo history or clipboard to copy)
            let Ok(mut probe) = Desktop::new(
                d.book.clone(),
                None,
                d.layout.width as u32,
                d.layout.height as u32,
            ) else {
                return None;
            };
            probe.sheet = s;
            probe.cursor = at;
            probe.selection = Range::cell(probe.cursor);
            probe.edit = None;
            let cmd = if asc {
                crate::ui::app::Cmd::SortAscending
            } else {
                crate::ui::app::Cmd::SortDescending
            };
            if probe.run(cmd).is_err() {
                continue;
            }
            let equal = probe.book.sheets[s]
                .cells
                .keys()
                .chain(target.sheets[s].cells.keys())
                .all(|a| same(&probe.book.value(s, *a), &target.value(s, *a)));
            if equal && probe.book.sheets[s] != d.book.sheets[s] {
                return Some((c, asc));
            }
        }
    }
    None
}

/// A formula of the cell's row or column giving `v`: `=Xr op Yr` over two other cells of its
/// row, or `=SUM/AVERAGE/MAX(Xa:Xb)` or `=COUNTIF(Xa:Xb,">k")` (a threshold `k` of the
/// instruction's) over the numbers above it in its column — the column's aggregate first when
/// the cell lies under the column's data.
fn formula_for(
    d: &Desktop,
    target: &Workbook,
    (s, at, v): (usize, Addr, f64),
    instruction: &str,
) -> Option<String> {
    let under_data = plain_run(&d.book, s, at.col).is_some_and(|(_, last)| last < at.row);
    if under_data {
        if let Some(f) = aggregate_for(d, (s, at, v), instruction) {
            return Some(f);
        }
    }
    let book = &d.book;
    let num = |a: Addr| match book.value(s, a) {
        Value::Number(x) => Some(x),
        _ => None,
    };
    let ext = book.sheets[s].extent()?;
    let name = |c: u32| crate::sheet::addr::col_name(c);
    // among the row patterns that give this cell's value, the one that gives the most of the
    // column's expected values below it (rows whose values agree by chance do not decide)
    let mut best: Option<(usize, String)> = None;
    for x in 0..=ext.col.min(at.col + 8) {
        for y in 0..=ext.col.min(at.col + 8) {
            if x == y || x == at.col || y == at.col {
                continue;
            }
            let (Some(p), Some(q)) = (num(Addr::new(at.row, x)), num(Addr::new(at.row, y))) else {
                continue;
            };
            for (op, r) in [("-", p - q), ("+", p + q), ("*", p * q)] {
                if (r - v).abs() < 1e-9 && (op != "+" || x < y) && (op != "*" || x < y) {
                    let mut agree = 0;
                    for row in at.row + 1.. {
                        let (Some(p), Some(q), Value::Number(want)) = (
                            num(Addr::new(row, x)),
                            num(Addr::new(row, y)),
                            target.value(s, Addr::new(row, at.col)),
                        ) else {
                            break;
                        };
                        let got = match op {
                            "-" => p - q,
                            "+" => p + q,
                            _ => p * q,
                        };
                        if (got - want).abs() > 1e-9 {
                            break;
                        }
                        agree += 1;
                    }
                    if best.as_ref().is_none_or(|(b, _)| agree > *b) {
                        best = Some((
                            agree,
                            format!("={}{}{op}{}{}", name(x), at.row + 1, name(y), at.row + 1),
                        ));
                    }
                }
            }
        }
    }
    if let Some((_, f)) = best {
        return Some(f);
    }
    aggregate_for(d, (s, at, v), instruction)
}

/// An aggregate of the data above the cell in its column giving `v`.
fn aggregate_for(d: &Desktop, (s, at, v): (usize, Addr, f64), instruction: &str) -> Option<String> {
    let book = &d.book;
    let num = |a: Addr| match book.value(s, a) {
        Value::Number(x) => Some(x),
        _ => None,
    };
    let name = |c: u32| crate::sheet::addr::col_name(c);
    // the column's data: its plain numbers under its header
    let (first, last) = plain_run(book, s, at.col)?;
    if last >= at.row {
        return None;
    }
    let rows: Vec<u32> = (first..=last).collect();
    let xs: Vec<f64> = rows
        .iter()
        .filter_map(|&r| num(Addr::new(r, at.col)))
        .collect();
    let sum: f64 = xs.iter().sum();
    let range = format!("{c}{}:{c}{}", first + 1, last + 1, c = name(at.col));
    for (f, r) in [
        ("SUM", sum),
        ("AVERAGE", sum / xs.len() as f64),
        ("MAX", xs.iter().copied().fold(f64::MIN, f64::max)),
    ] {
        if (r - v).abs() <= 1e-9 * v.abs().max(1.0) {
            return Some(format!("={f}({range})"));
        }
    }
    for k in thresholds(instruction) {
        if xs.iter().filter(|&&x| x > k as f64).count() as f64 == v {
            return Some(format!("=COUNTIF({range},\">{k}\")"));
        }
    }
    None
}

/// Copying a column when the target's column `col` of sheet `s` is (header aside) a column
/// the workbook already has elsewhere: select the source column, copy, select the destination
/// column, paste. `None` when no such column exists.
fn copy_column(d: &Desktop, target: &Workbook, s: usize, col: u32) -> Option<String> {
    let want: Vec<(u32, Value)> = target.sheets[s]
        .cells
        .keys()
        .filter(|a| a.col == col && a.row > 0)
        .map(|a| (a.row, target.value(s, *a)))
        .collect();
    if want.len() < 2 {
        return None;
    }
    let have = |si: usize, c: u32| -> Vec<(u32, Value)> {
        d.book.sheets[si]
            .cells
            .keys()
            .filter(|a| a.col == c && a.row > 0)
            .map(|a| (a.row, d.book.value(si, *a)))
            .collect()
    };
    let equal = |x: &[(u32, Value)], y: &[(u32, Value)]| {
        x.len() == y.len() && x.iter().zip(y).all(|(a, b)| a.0 == b.0 && same(&a.1, &b.1))
    };
    if equal(&have(s, col), &want) {
        return None; // only the header differs
    }
    let (src_sheet, src_col) = (0..d.book.sheets.len())
        .flat_map(|si| (0..=d.book.sheets[si].extent().map_or(0, |e| e.col)).map(move |c| (si, c)))
        .find(|&(si, c)| (si, c) != (s, col) && equal(&have(si, c), &want))?;
    // formulas would move with the paste: only columns of plain values are copied
    let plain = d.book.sheets[src_sheet].cells.iter().all(|(a, c)| {
        a.col != src_col || !matches!(c, crate::sheet::workbook::Content::Formula(_))
    });
    if !plain {
        return None;
    }
    let l = d.layout;
    let copied = d.clipboard.as_ref().is_some_and(|c| {
        !c.cut && c.sheet == src_sheet && c.range == Range::columns(src_col, src_col)
    });
    let header = |c: u32| l.col_header(c - d.left).center();
    if !copied {
        if d.sheet != src_sheet {
            let (x, y) = l.tab(src_sheet).center();
            return Some(click(x, y));
        }
        if d.selection != Range::columns(src_col, src_col) {
            let (x, y) = header(src_col);
            return Some(click(x, y));
        }
        return Some("pyautogui.hotkey('ctrl', 'c')".into());
    }
    if d.sheet != s {
        let (x, y) = l.tab(s).center();
        return Some(click(x, y));
    }
    if d.selection != Range::columns(col, col) {
        let (x, y) = header(col);
        return Some(click(x, y));
    }
    Some("pyautogui.hotkey('ctrl', 'v')".into())
}

/// Copying a block of a column when the target's column `col` of sheet `s` (its first cell, a
/// header, aside) is a run of plain values the workbook has elsewhere at other rows (a table
/// below row 1 copied to a new sheet's A1): drag over the source from its header down, copy,
/// click the target's first cell, paste. `None` when no such run exists.
fn copy_range(d: &Desktop, target: &Workbook, s: usize, col: u32) -> Option<String> {
    let want: Vec<(u32, Value)> = target.sheets[s]
        .cells
        .keys()
        .filter(|a| a.col == col)
        .map(|a| (a.row, target.value(s, *a)))
        .collect();
    let (r0, r1) = (want.first()?.0, want.last()?.0);
    // a contiguous run of a header and at least two values
    if want.len() < 3 || (r1 - r0) as usize + 1 != want.len() {
        return None;
    }
    let k = r1 - r0;
    let differs = (r0 + 1..=r1).any(|r| {
        !same(
            &d.book.value(s, Addr::new(r, col)),
            &want[(r - r0) as usize].1,
        )
    });
    if !differs || s >= d.book.sheets.len() {
        return None; // at most the header differs: typed
    }
    let plain = |si: usize, a: Addr| {
        matches!(
            d.book.sheets[si].cells.get(&a),
            Some(
                crate::sheet::workbook::Content::Number(_)
                    | crate::sheet::workbook::Content::Text(_)
            )
        )
    };
    let (src, c, q0) = (0..d.book.sheets.len()).find_map(|si| {
        d.book.sheets[si]
            .cells
            .keys()
            .filter(|a| (si, a.col) != (s, col) && plain(si, **a))
            .find(|a| {
                (1..=k).all(|i| {
                    let at = Addr::new(a.row + i, a.col);
                    plain(si, at) && same(&d.book.value(si, at), &want[i as usize].1)
                })
            })
            .map(|a| (si, a.col, a.row))
    })?;
    let range = Range::new(Addr::new(q0, c), Addr::new(q0 + k, c));
    let l = d.layout;
    let copied = d
        .clipboard
        .as_ref()
        .is_some_and(|cl| !cl.cut && cl.sheet == src && cl.range == range);
    if !copied {
        if d.sheet != src {
            let (x, y) = l.tab(src).center();
            return Some(click(x, y));
        }
        if d.selection != range {
            let (x0, y0) = cell_centre(d, range.start)?;
            let (x1, y1) = cell_centre(d, range.end)?;
            return Some(format!(
                "pyautogui.moveTo({x0}, {y0}); pyautogui.dragTo({x1}, {y1}, duration=0.2)"
            ));
        }
        return Some("pyautogui.hotkey('ctrl', 'c')".into());
    }
    if d.sheet != s {
        let (x, y) = l.tab(s).center();
        return Some(click(x, y));
    }
    let at = Addr::new(r0, col);
    if d.cursor != at || d.selection != Range::cell(at) {
        let (x, y) = cell_centre(d, at)?;
        return Some(click(x, y));
    }
    Some("pyautogui.hotkey('ctrl', 'v')".into())
}

fn cell_centre(d: &Desktop, a: Addr) -> Option<(i32, i32)> {
    let l = d.layout;
    if a.row < d.top || a.col < d.left || a.row >= d.top + l.rows() || a.col >= d.left + l.cols() {
        return None;
    }
    Some(l.cell(a.row - d.top, a.col - d.left).center())
}

/// The expert's next step for the episode, as pyautogui code (or `DONE`).
pub fn next(ep: &DesktopEpisode) -> String {
    if ep.score() == Ok(1.0) {
        return "DONE".into();
    }
    let d = &ep.desktop;
    // a task file without a reference workbook: nothing to work towards
    let Some(target) = ep.task.target() else {
        return "FAIL".into();
    };
    let l = d.layout;
    let fix = sheet_fix(d, target);
    // what is open first
    if let Some(dl) = &d.dialog {
        return match (&dl.kind, &fix) {
            (DialogKind::Rename(i), Some(SheetFix::Rename(j, name))) if i == j => {
                format!(
                    "pyautogui.hotkey('ctrl', 'a'); pyautogui.write({})",
                    py_str(&format!("{name}\n"))
                )
            }
            (DialogKind::ConfirmDelete(i), Some(SheetFix::Delete(j))) if i == j => {
                "pyautogui.press('enter')".into()
            }
            _ => "pyautogui.press('esc')".into(),
        };
    }
    if let Some(p) = &d.popup {
        if let (Popup::Context(x, y, items, _), Some(SheetFix::Delete(j))) = (p, &fix) {
            if *j == d.sheet && items.as_slice() == TAB_MENU.as_slice() {
                let k = items
                    .iter()
                    .position(|(n, _)| *n == "Delete Sheet...")
                    .expect("on the tab menu");
                let (cx, cy) = l.context_item(*x, *y, items.len(), k).center();
                return click(cx, cy);
            }
        }
        if let (Popup::Menu(3, _), None) = (p, &fix) {
            if let Some((c, asc)) = sort_fix(d, target, d.sheet) {
                if d.cursor.col == c {
                    let name = if asc {
                        "Sort Ascending"
                    } else {
                        "Sort Descending"
                    };
                    let k = MENUS[3]
                        .1
                        .iter()
                        .position(|(n, _)| *n == name)
                        .expect("in the Data menu");
                    let (cx, cy) = l.menu_item(3, k).center();
                    return click(cx, cy);
                }
            }
        }
        return "pyautogui.press('esc')".into();
    }
    if d.namebox.is_some() || d.edit.is_some() {
        return "pyautogui.press('esc')".into();
    }
    match fix {
        Some(SheetFix::Delete(i)) => {
            let (x, y) = l.tab(i).center();
            return format!("pyautogui.rightClick({x}, {y})");
        }
        Some(SheetFix::Add) => {
            let (x, y) = l.add_sheet().center();
            return click(x, y);
        }
        Some(SheetFix::Rename(i, _)) => {
            let (x, y) = l.tab(i).center();
            return format!("pyautogui.doubleClick({x}, {y})");
        }
        None => {}
    }
    for s in 0..target.sheets.len() {
        let Some((col, r0, r1, clear)) = cell_fix(d, target, s) else {
            continue;
        };
        if d.top > 0 || d.left > 0 {
            return "pyautogui.hotkey('ctrl', 'home')".into();
        }
        if let Some(code) = copy_column(d, target, s, col).or_else(|| copy_range(d, target, s, col))
        {
            return code;
        }
        if d.sheet != s {
            let (x, y) = l.tab(s).center();
            return click(x, y);
        }
        if d.top > 0 || d.left > 0 {
            return "pyautogui.hotkey('ctrl', 'home')".into();
        }
        if let Some((c, _)) = sort_fix(d, target, s) {
            let at = first_number(&d.book, s, c).unwrap_or(Addr::new(1, c));
            if d.cursor.col != c || d.cursor.row < at.row {
                let (x, y) = cell_centre(d, at).unwrap_or((0, 0));
                return click(x, y);
            }
            let (x, y) = l.menu_title(3).center();
            return click(x, y);
        }
        let (a, b) = (Addr::new(r0, col), Addr::new(r1, col));
        let Some((x0, y0)) = cell_centre(d, a) else {
            return "pyautogui.hotkey('ctrl', 'home')".to_string();
        };
        if clear {
            if d.selection == Range::new(a, b) {
                return "pyautogui.press('delete')".into();
            }
            if r0 == r1 {
                return click(x0, y0);
            }
            let (x1, y1) = cell_centre(d, b).unwrap_or((x0, y0));
            return format!(
                "pyautogui.moveTo({x0}, {y0}); pyautogui.dragTo({x1}, {y1}, duration=0.2)"
            );
        }
        if d.cursor != a || d.selection != Range::cell(a) {
            return click(x0, y0);
        }
        // one entry of text, or a run of row formulas of one pattern, per step
        let entry = |r: u32| -> String {
            let c = target.sheets[s]
                .cells
                .get(&Addr::new(r, col))
                .expect("a typed run has content");
            match target.value(s, Addr::new(r, col)) {
                Value::Number(v) => formula_for(
                    d,
                    target,
                    (s, Addr::new(r, col), v),
                    &ep.task.task.instruction,
                )
                .unwrap_or_else(|| c.input_text()),
                _ => c.input_text(),
            }
        };
        let first = entry(r0);
        let mut text = format!("{first}\n");
        if let Some(pattern) = row_pattern(&first, r0) {
            // the same pattern down the run, as long as it gives the expected values
            let op = pattern[1..]
                .find(['-', '+', '*'])
                .expect("a row pattern has an operator")
                + 1;
            let (x, o, y) = (&pattern[1..op], &pattern[op..op + 1], &pattern[op + 1..]);
            let (cx, cy) = (
                crate::sheet::addr::col_index(x).expect("letters"),
                crate::sheet::addr::col_index(y).expect("letters"),
            );
            for r in r0 + 1..=r1 {
                let (Value::Number(p), Value::Number(q), Value::Number(v)) = (
                    d.book.value(s, Addr::new(r, cx)),
                    d.book.value(s, Addr::new(r, cy)),
                    target.value(s, Addr::new(r, col)),
                ) else {
                    break;
                };
                let got = match o {
                    "-" => p - q,
                    "+" => p + q,
                    _ => p * q,
                };
                if (got - v).abs() > 1e-9 {
                    break;
                }
                text.push_str(&format!("={x}{}{o}{y}{}\n", r + 1, r + 1));
            }
        }
        return format!("pyautogui.write({})", py_str(&text));
    }
    // everything matches but the evaluator still fails: save explicitly
    "pyautogui.hotkey('ctrl', 's')".into()
}

/// Steps the expert needs from this state to the goal (its `DONE` included), or `None` when it
/// does not get there within [`MAX_PLAN`].
pub fn distance(ep: &DesktopEpisode) -> Option<usize> {
    let mut e = ep.clone();
    for k in 1..=MAX_PLAN {
        let code = next(&e);
        if code == "DONE" {
            return Some(k);
        }
        if code == "FAIL" {
            return None;
        }
        let nodes = e.tree(crate::ui::a11y::TreeOptions::default());
        e.step_code(&code, &nodes);
    }
    None
}

/// The expert's whole episode: its steps' code, until `DONE` (included).
pub fn solve(ep: &DesktopEpisode) -> Result<Vec<String>, String> {
    let mut e = ep.clone();
    let mut steps = Vec::new();
    for _ in 0..MAX_PLAN {
        let code = next(&e);
        steps.push(code.clone());
        if code == "DONE" {
            return Ok(steps);
        }
        if code == "FAIL" {
            return Err(format!(
                "task {}: the expert needs the workbook its evaluator expects",
                ep.task.task.id
            ));
        }
        let nodes = e.tree(crate::ui::a11y::TreeOptions::default());
        let out = e.step_code(&code, &nodes);
        if let Some(err) = out.error {
            return Err(format!("the expert's step {code:?} failed: {err}"));
        }
    }
    Err(format!(
        "the expert did not finish {} in {MAX_PLAN} steps",
        ep.task.task.id
    ))
}
