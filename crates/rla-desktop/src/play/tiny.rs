//! A compact action vocabulary for tiny text-only policies: each action names an element of
//! the accessibility tree (`click Units 3`, `click column Revenue`, `double-click tab Sheet2`,
//! `click item Sort Ascending`), a key (`press enter`, `copy`, `paste`, `undo`), text to type
//! (`type Profit`, words of the instruction, a quoted name whole), a run of row formulas (`fill
//! =Revenue-Cost`: from the cursor down to the last data row), an aggregate of the column above
//! (`fill =SUM(Units)`, `fill =COUNTIF(Units,>50)` with a threshold of the instruction's), a
//! column's block dragged over (`select Units 4 to Units 12`), or `done`.
//!
//! Columns go by their header, as a person reads a sheet: the header row is found wherever the
//! table lies ([`header_row`]); a column whose header is a name (one word or several, unique in
//! that row) is called by it, any other by its letters (`column E`, `E 1`), so an action repeats
//! the instruction's words instead of looking letters up. Cells are a column's name and a row
//! number.
//!
//! Every action turns into OSWorld pyautogui code ([`to_code`]), and code the expert writes
//! turns back into one ([`from_code`]), so demonstrations and the policy's choices are the same
//! kind of thing. [`candidates`] lists the actions of a state, as the household lists its
//! admissible commands.

use crate::sheet::addr::{col_index, col_name, Addr};
use crate::sheet::formula::Value;
use crate::sheet::workbook::Content;
use crate::tasks::rows::{plain_run, row_pattern, thresholds};
use crate::ui::a11y::{self, Node, TreeOptions};
use crate::ui::action::{parse_code, Action, Button, Point};
use crate::ui::app::Desktop;

/// Words that label kinds of element, never a column.
const RESERVED: [&str; 9] = [
    "column", "row", "tab", "menu", "item", "button", "option", "sheet", "cursor",
];

/// What the columns of the current sheet are called.
#[derive(Debug, Clone)]
pub struct Names {
    headers: Vec<(u32, String)>,
    /// The sheet's header row ([`header_row`]).
    top: u32,
}

/// The header row of the desktop's current sheet: the topmost row with a text cell that has a
/// number right under it and another text cell beside it (a table's header, wherever the table
/// lies); the first row when none has.
pub fn header_row(d: &Desktop) -> u32 {
    header_row_of(&d.book.sheets[d.sheet].cells)
}

/// [`header_row`] of a sheet's cells.
fn header_row_of(cells: &std::collections::BTreeMap<Addr, Content>) -> u32 {
    let text = |a: &Addr| matches!(cells.get(a), Some(Content::Text(_)));
    cells
        .iter()
        .filter(|(a, c)| {
            matches!(c, Content::Text(_))
                && matches!(
                    cells.get(&Addr::new(a.row + 1, a.col)),
                    Some(Content::Number(_))
                )
                && (text(&Addr::new(a.row, a.col + 1))
                    || (a.col > 0 && text(&Addr::new(a.row, a.col - 1))))
        })
        .map(|(a, _)| a.row)
        .next()
        .unwrap_or(0)
}

impl Names {
    /// The names of the desktop's current sheet: the headers of its header row.
    pub fn of(d: &Desktop) -> Names {
        Names::of_cells(&d.book.sheets[d.sheet].cells)
    }

    /// The names of a sheet whose cells are `cells`.
    pub fn of_cells(cells: &std::collections::BTreeMap<Addr, Content>) -> Names {
        let top = header_row_of(cells);
        let mut row1: Vec<(u32, String)> = cells
            .iter()
            .filter(|(a, _)| a.row == top)
            .filter_map(|(a, c)| match c {
                Content::Text(t) => Some((a.col, t.clone())),
                _ => None,
            })
            .collect();
        row1.sort();
        // a word, or words of letters and digits (`Gross profit`, `Invoice No.`): what an
        // action can name without mistaking it for a row number
        let ok = |t: &str| {
            t.len() >= 2
                && t.starts_with(|c: char| c.is_ascii_alphabetic())
                && t.split(' ').all(|w| {
                    !w.is_empty()
                        && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '.')
                        && !w.chars().all(|c| c.is_ascii_digit())
                })
                && t.chars().any(|c| c.is_ascii_lowercase())
                && !t
                    .split(' ')
                    .any(|w| RESERVED.contains(&w.to_ascii_lowercase().as_str()))
        };
        let headers = row1
            .iter()
            .filter(|(_, t)| ok(t) && row1.iter().filter(|(_, u)| u == t).count() == 1)
            .cloned()
            .collect();
        Names { headers, top }
    }

    /// The name of column `c`: its header, or its letters.
    pub fn column(&self, c: u32) -> String {
        self.headers
            .iter()
            .find(|(x, _)| *x == c)
            .map(|(_, t)| t.clone())
            .unwrap_or_else(|| col_name(c))
    }

    /// The column a name calls: a header, or letters no header takes.
    pub fn column_of(&self, name: &str) -> Option<u32> {
        if let Some((c, _)) = self.headers.iter().find(|(_, t)| t == name) {
            return Some(*c);
        }
        if !name.chars().all(|c| c.is_ascii_uppercase()) {
            return None;
        }
        let c = col_index(name)?;
        // a column with a header goes by it
        (!self.headers.iter().any(|(x, _)| *x == c)).then_some(c)
    }

    /// The name of a cell: its column's name and its row (`Units 3`, `E 1`).
    pub fn cell(&self, a: Addr) -> String {
        format!("{} {}", self.column(a.col), a.row + 1)
    }
}

/// The label of a node an action can name (`Units 3`, `column Revenue`, `tab Sheet2`, …).
pub fn label(names: &Names, n: &Node) -> String {
    match &*n.tag {
        "table-cell" => Addr::parse(&n.name)
            .map(|a| names.cell(a))
            .unwrap_or_else(|| n.name.clone()),
        "column-header" => match col_index(&n.name) {
            Some(c) => format!("column {}", names.column(c)),
            None => format!("column {}", n.name),
        },
        "row-header" => format!("row {}", n.name),
        "page-tab" => format!("tab {}", n.name),
        "menu" => format!("menu {}", n.name),
        "menu-item" => format!("item {}", n.name),
        "push-button" => format!("button {}", n.name),
        "radio-button" => format!("option {}", n.name),
        _ => n.name.clone(),
    }
}

/// Words of an instruction that can be typed: capitalised words and numbers-free names, in
/// order of first appearance (`Profit`, `Total`, `Sheet2`, …).
pub fn words(instruction: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    // a quoted name is typed whole (`"Gross profit"`)
    for (i, quoted) in instruction.split('"').enumerate() {
        if i % 2 == 1
            && !quoted.is_empty()
            && quoted.len() <= 40
            && !out.iter().any(|x| x == quoted)
        {
            out.push(quoted.to_string());
        }
    }
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

fn data_rows(d: &Desktop, col: u32) -> Option<(u32, u32)> {
    plain_run(&d.book, d.sheet, col)
}

/// The actions of a state: those that name something there ([`to_code`] gives code).
pub fn candidates(d: &Desktop, nodes: &[Node], instruction: &str) -> Vec<String> {
    let names = Names::of(d);
    let mut all = all_candidates(d, nodes, instruction, &names);
    all.retain(|a| code_of(a, d, nodes, &names).is_some());
    all
}

fn all_candidates(d: &Desktop, nodes: &[Node], instruction: &str, names: &Names) -> Vec<String> {
    let mut out = Vec::new();
    for n in a11y::marks(nodes) {
        let l = label(names, n);
        out.push(format!("click {l}"));
        match &*n.tag {
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
    let top = names.top;
    let numeric: Vec<u32> = {
        let mut v: Vec<u32> = sheet
            .cells
            .iter()
            .filter(|(a, c)| {
                a.row == top + 1 && matches!(c, crate::sheet::workbook::Content::Number(_))
            })
            .map(|(a, _)| a.col)
            .collect();
        v.sort();
        v.dedup();
        v
    };
    if d.dialog.is_none() && d.cursor.row > top {
        for &x in &numeric {
            for &y in &numeric {
                if x == y {
                    continue;
                }
                for op in ['-', '+', '*'] {
                    out.push(format!("fill ={}{op}{}", names.column(x), names.column(y)));
                }
            }
        }
        for f in ["SUM", "AVERAGE", "MAX"] {
            out.push(format!("fill ={f}({})", names.column(d.cursor.col)));
        }
        for k in thresholds(instruction) {
            out.push(format!(
                "fill =COUNTIF({},>{k})",
                names.column(d.cursor.col)
            ));
        }
    }
    // a column's block, from its header down its filled cells (what a copy takes)
    let header_cols: Vec<u32> = sheet
        .cells
        .range(Addr::new(top, 0)..Addr::new(top + 1, 0))
        .map(|(a, _)| a.col)
        .collect();
    for c in header_cols {
        let mut last = top;
        while sheet.cells.contains_key(&Addr::new(last + 1, c)) {
            last += 1;
        }
        if last > top + 1 {
            out.push(format!(
                "select {} to {}",
                names.cell(Addr::new(top, c)),
                names.cell(Addr::new(last, c))
            ));
        }
    }
    out.push("done".into());
    out
}

/// The pyautogui code of an action in a state; `None` for an action that names nothing there.
pub fn to_code(act: &str, d: &Desktop, nodes: &[Node]) -> Option<String> {
    code_of(act, d, nodes, &Names::of(d))
}

/// [`to_code`] with the state's column names already known.
fn code_of(act: &str, d: &Desktop, nodes: &[Node], names: &Names) -> Option<String> {
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
            let (fname, arg) = inner.split_once('(')?;
            // `COUNTIF(Units,>50)`: the column and a threshold
            let (c, criterion) = match arg.rsplit_once(",>") {
                Some((c, k)) if fname == "COUNTIF" => (c, Some(k.parse::<i64>().ok()?)),
                _ if fname == "COUNTIF" => return None,
                _ => (arg, None),
            };
            let col = names.column_of(c)?;
            let c = col_name(col);
            let (r0, r1) = data_rows(d, col)?;
            if d.cursor.row <= r1 {
                return None;
            }
            let extra = criterion.map_or(String::new(), |k| format!(",\">{k}\""));
            return Some(format!(
                "pyautogui.write('={fname}({c}{}:{c}{}{extra})\\n')",
                r0 + 1,
                r1 + 1
            ));
        }
        let op = f.find(['-', '+', '*'])?;
        let (cx, cy) = (names.column_of(&f[..op])?, names.column_of(&f[op + 1..])?);
        let (x, y) = (col_name(cx), col_name(cy));
        let (_, last) = data_rows(d, cx)?;
        if d.cursor.row <= names.top || d.cursor.row > last {
            return None;
        }
        let mut text = String::new();
        for r in d.cursor.row..=last {
            text.push_str(&format!("={x}{}{}{y}{}\\n", r + 1, &f[op..op + 1], r + 1));
        }
        return Some(format!("pyautogui.write('{text}')"));
    }
    if let Some(r) = act.strip_prefix("select ") {
        let (a, b) = r.split_once(" to ")?;
        let marks = a11y::marks(nodes);
        let at = |l: &str| {
            marks
                .iter()
                .find(|n| n.tag == "table-cell" && label(names, n) == l)
                .map(|n| n.rect.center())
        };
        let ((x0, y0), (x1, y1)) = (at(a)?, at(b)?);
        return Some(format!(
            "pyautogui.moveTo({x0}, {y0}); pyautogui.dragTo({x1}, {y1}, duration=0.2)"
        ));
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
    let n = a11y::marks(nodes)
        .into_iter()
        .find(|n| label(names, n) == rest)?;
    let (x, y) = n.rect.center();
    Some(format!("pyautogui.{verb}({x}, {y})"))
}

/// The action of a piece of code in a state (what the expert wrote), if the vocabulary has it.
/// A sum or product of two columns names them in the order the instruction does (`Price +
/// Units`), whichever order the code has.
pub fn from_code(code: &str, d: &Desktop, nodes: &[Node], instruction: &str) -> Option<String> {
    if code.trim() == "DONE" {
        return Some("done".into());
    }
    let actions = parse_code(code).ok()?;
    let names = Names::of(d);
    let node_at = |p: &Point| -> Option<String> {
        let Point::At(x, y) = p else {
            return None;
        };
        a11y::marks(nodes)
            .into_iter()
            .rev()
            .find(|n| n.rect.contains(*x, *y))
            .map(|n| label(&names, n))
    };
    match actions.as_slice() {
        [Action::MoveTo(a), Action::DragTo(b, Button::Left)] => {
            let act = format!("select {} to {}", node_at(a)?, node_at(b)?);
            (code_of(&act, d, nodes, &names).as_deref() == Some(code)).then_some(act)
        }
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
                    let (a, rest) = range.split_once(':')?;
                    let c: String = a.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
                    let c = names.column(col_index(&c)?);
                    // COUNTIF's criterion, `">50"`
                    let criterion = match rest.split_once(',') {
                        Some((_, k)) => format!(",>{}", k.strip_prefix("\">")?.strip_suffix('"')?),
                        None => String::new(),
                    };
                    let act = format!("fill ={fname}({c}{criterion})");
                    return (entries.len() == 1
                        && code_of(&act, d, nodes, &names).as_deref() == Some(code))
                    .then_some(act);
                }
                let p = row_pattern(first, d.cursor.row)?;
                let op = p.find(['-', '+', '*'])?;
                let (x, y) = (col_index(&p[1..op])?, col_index(&p[op + 1..])?);
                let (o, nx, ny) = (&p[op..op + 1], names.column(x), names.column(y));
                // the code must be exactly what `fill` writes from here
                let act = format!("fill ={nx}{o}{ny}");
                if code_of(&act, d, nodes, &names).as_deref() != Some(code) {
                    return None;
                }
                let plain = instruction.replace('"', "");
                let swapped = o != "-" && plain.contains(&format!("{ny} {o} {nx}"));
                return Some(if swapped {
                    format!("fill ={ny}{o}{nx}")
                } else {
                    act
                });
            }
            (entries.len() == 1).then(|| format!("type {first}"))
        }
        _ => None,
    }
}

/// What the compact summary says beyond the columns, the cursor and what is open.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// Name the two empty columns right of the rightmost filled one by their letters (`| empty
    /// I J`): the cell a new column's header goes in is then read off the screen, as a person
    /// reads the column headers, instead of counted from the table's first column.
    pub empty_columns: bool,
}

/// The compact observation of a tiny policy: the sheet and selected cell, what is open, the
/// visible columns with the rows they fill below their header (`Units 2-5 7`), the sheet tabs
/// and any menu's items (and what `summary` adds).
pub fn observation(d: &Desktop, nodes: &[Node], summary: Summary) -> String {
    let seen = Seen {
        sheet: d.book.sheets[d.sheet].name.clone(),
        cursor: d.cursor,
        dialog: d.dialog.as_ref().map(|dl| {
            let mut f = format!("{}: {}", dl.title(), dl.field);
            if let Some(e) = &dl.error {
                f.push_str(&format!(" ({e})"));
            }
            f
        }),
        menu_open: d.popup.is_some(),
        editing: d.edit.as_ref().map(|e| e.text.clone()),
        cells: nodes
            .iter()
            .filter(|n| n.tag == "table-cell" && !n.text.is_empty())
            .filter_map(|n| Some((Addr::parse(&n.name)?, n.text.as_str())))
            .collect(),
        listed: listed(nodes.iter()),
    };
    seen.render(&Names::of(d), summary)
}

/// [`observation`] read off a real desktop's accessibility tree ([`crate::remote::tree::all`]):
/// the selected sheet tab, the cursor from the Name Box, an open dialog with the text typed
/// in it, an open menu, the text of the cell being typed into, the cells shown with their
/// text (a number where it reads as one), whose header row names the columns as on the native
/// desktop. The same sheet in the same state reads the same on both.
pub fn observation_of_tree(
    els: &[crate::remote::tree::Element],
    summary: Summary,
) -> Result<String, String> {
    let shown: Vec<&crate::remote::tree::Element> = els.iter().filter(|e| e.showing).collect();
    let sheet = shown
        .iter()
        .find(|e| e.node.tag == "page-tab" && e.selected)
        .map(|e| e.node.name.clone())
        .ok_or("no sheet tab is selected on the screen")?;
    // the Name Box: the first text of the formula bar, a cell (or a range, its first cell)
    let bar = shown
        .iter()
        .find(|e| e.node.tag == "tool-bar" && e.node.name == "Formula Tool Bar")
        .map(|e| e.node.rect)
        .ok_or("no formula bar on the screen")?;
    let cursor = shown
        .iter()
        .filter(|e| e.node.tag == "text" && bar.contains_rect(&e.node.rect))
        .find_map(|e| Addr::parse(e.node.text.trim().split(':').next().unwrap_or("")))
        .ok_or("the Name Box names no cell")?;
    let dialog = shown.iter().find(|e| e.node.tag == "dialog").map(|dl| {
        let field = shown
            .iter()
            .find(|e| e.node.tag == "text" && e.focused && dl.node.rect.contains_rect(&e.node.rect))
            .map(|e| e.node.text.clone())
            .unwrap_or_default();
        format!("{}: {field}", dl.node.name)
    });
    let editing = shown
        .iter()
        .find(|e| e.node.tag == "paragraph" && e.focused)
        .map(|e| e.node.text.clone());
    let cells: Vec<(Addr, &str)> = shown
        .iter()
        .filter(|e| e.node.tag == "table-cell" && !e.node.text.is_empty())
        .filter_map(|e| Some((Addr::parse(&e.node.name)?, e.node.text.as_str())))
        .collect();
    let book: std::collections::BTreeMap<Addr, Content> = cells
        .iter()
        .filter_map(|(a, t)| Some((*a, Content::typed(t)?)))
        .collect();
    let seen = Seen {
        sheet,
        cursor,
        dialog,
        menu_open: shown.iter().any(|e| e.node.tag == "menu-item"),
        editing,
        cells,
        listed: listed(shown.iter().map(|e| &e.node)),
    };
    Ok(seen.render(&Names::of_cells(&book), summary))
}

/// The sheet tabs and menu items shown, in screen order (`tab Sheet2`, `item Sort Ascending`).
fn listed<'a>(nodes: impl Iterator<Item = &'a Node>) -> Vec<String> {
    nodes
        .filter_map(|n| match &*n.tag {
            "page-tab" => Some(format!("tab {}", n.name)),
            "menu-item" => Some(format!("item {}", n.name)),
            _ => None,
        })
        .collect()
}

/// What the summary says of a screen, read off either desktop.
struct Seen<'a> {
    sheet: String,
    cursor: Addr,
    /// `Title: field` (and the dialog's error).
    dialog: Option<String>,
    menu_open: bool,
    editing: Option<String>,
    /// The cells shown with text.
    cells: Vec<(Addr, &'a str)>,
    listed: Vec<String>,
}

impl Seen<'_> {
    fn render(&self, names: &Names, summary: Summary) -> String {
        let mut s = format!("sheet {} cursor {}", self.sheet, names.cell(self.cursor));
        if let Some(dl) = &self.dialog {
            s.push_str(&format!(" | dialog {dl}"));
        }
        if self.menu_open {
            s.push_str(" | a menu is open");
        }
        if let Some(e) = &self.editing {
            s.push_str(&format!(" | editing {e}"));
        }
        // the visible cells with content, by column; the header row's text names a column
        let top = names.top;
        let mut cols: std::collections::BTreeMap<u32, (Option<&str>, Vec<u32>)> =
            Default::default();
        for (a, text) in &self.cells {
            let e = cols.entry(a.col).or_default();
            if a.row == top {
                e.0 = Some(text);
            } else {
                e.1.push(a.row + 1);
            }
        }
        let right = cols.keys().next_back().map_or(0, |c| c + 1);
        for (c, (header, mut rows)) in cols {
            let name = names.column(c);
            s.push_str(&format!(" | {name}"));
            if let Some(h) = header.filter(|h| *h != name) {
                s.push_str(&format!(" header {h}"));
            }
            rows.sort();
            let mut i = 0;
            while i < rows.len() {
                let mut j = i;
                while j + 1 < rows.len() && rows[j + 1] == rows[j] + 1 {
                    j += 1;
                }
                if j > i {
                    s.push_str(&format!(" {}-{}", rows[i], rows[j]));
                } else {
                    s.push_str(&format!(" {}", rows[i]));
                }
                i = j + 1;
            }
        }
        if summary.empty_columns {
            s.push_str(&format!(
                " | empty {} {}",
                col_name(right),
                col_name(right + 1)
            ));
        }
        for l in &self.listed {
            s.push_str(&format!(" | {l}"));
        }
        s
    }
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
mod tests;
