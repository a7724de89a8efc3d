//! The desktop's accessibility tree, as OSWorld linearises one: a header line, then one line
//! per visible node — `tag`, `name`, `text` (quoted when it holds a `"`, `""` when empty),
//! `class`, `description`, `position (top-left x&y)` and `size (w&h)` — cut to a token budget
//! (`[...]` marks the cut); and set-of-marks: the interactive nodes numbered from 1, which
//! actions name as `tag_N`.

use crate::sheet::addr::{col_name, Addr, Range};
use crate::ui::app::{Desktop, DialogKind, Place, Popup, CELL_MENU, MENUS, TAB_MENU};
use crate::ui::layout::Rect;
use std::borrow::Cow;

/// One node.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Its role, as AT-SPI names roles (`menu`, `table-cell`, `push-button`, …).
    pub tag: Cow<'static, str>,
    /// Its name.
    pub name: String,
    /// Its text.
    pub text: String,
    /// The application's class of the widget.
    pub class: Cow<'static, str>,
    /// Its description (states such as `selected`, `focused`).
    pub description: String,
    /// Where it is.
    pub rect: Rect,
    /// Whether an action can use it (it gets a mark).
    pub interactive: bool,
}

/// What the tree shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TreeOptions {
    /// Every visible cell and header, empty ones included (as the real application exposes
    /// them); else the cells of the data's rectangle and one row and two columns past it, filled
    /// cells, the cursor cell, and the headers up to two past them.
    pub empty_cells: bool,
}

fn node(
    tag: &'static str,
    name: impl Into<String>,
    text: impl Into<String>,
    class: &'static str,
    rect: Rect,
) -> Node {
    Node {
        tag: Cow::Borrowed(tag),
        name: name.into(),
        text: text.into(),
        class: Cow::Borrowed(class),
        description: String::new(),
        rect,
        interactive: true,
    }
}

/// The visible nodes, from the bottom of the window to its top (dialogs and menus last).
pub fn tree(d: &Desktop, opts: TreeOptions) -> Vec<Node> {
    let l = d.layout;
    let mut out = Vec::with_capacity(96);
    let mut title = node("frame", d.title(), "", "SfxFrame", l.title());
    title.interactive = false;
    out.push(title);
    for (i, (name, _)) in MENUS.iter().enumerate() {
        out.push(node("menu", *name, "", "MenuBar", l.menu_title(i)));
    }
    let mut nb = node(
        "combo-box",
        "Name Box",
        d.namebox_text(),
        "NameBox",
        l.namebox(),
    );
    if d.namebox.is_some() {
        nb.description = "focused".into();
    }
    out.push(nb);
    let mut input = node("text", "Input line", d.input_text(), "InputLine", l.input());
    if d.edit.is_some() {
        input.description = "editing".into();
    }
    out.push(input);
    out.push(node("push-button", "Select All", "", "Corner", l.corner()));
    let (rows, cols) = (l.rows(), l.cols());
    let sel = d.selection;
    let ext = d.book.sheets[d.sheet].extent();
    let next_row = ext.map_or(0, |e| e.row + 1);
    let next_col = ext.map_or(0, |e| e.col + 1);
    let col_limit = if opts.empty_cells {
        u32::MAX
    } else {
        next_col.max(d.cursor.col) + 2
    };
    let row_limit = if opts.empty_cells {
        u32::MAX
    } else {
        next_row.max(d.cursor.row) + 1
    };
    for c in 0..cols {
        let col = d.left + c;
        if col >= crate::sheet::addr::MAX_COL || col > col_limit {
            break;
        }
        let mut h = node(
            "column-header",
            col_name(col),
            "",
            "ColumnHeader",
            l.col_header(c),
        );
        if sel.is_columns() && (sel.start.col..=sel.end.col).contains(&col) {
            h.description = "selected".into();
        }
        out.push(h);
    }
    for r in 0..rows {
        let row = d.top + r;
        if row >= crate::sheet::addr::MAX_ROW || row > row_limit {
            break;
        }
        let mut h = node(
            "row-header",
            (row + 1).to_string(),
            "",
            "RowHeader",
            l.row_header(r),
        );
        if sel.is_rows() && (sel.start.row..=sel.end.row).contains(&row) {
            h.description = "selected".into();
        }
        out.push(h);
    }
    let cells = &d.book.sheets[d.sheet].cells;
    let whole = |r: &Range| r.is_columns() || r.is_rows();
    // the cells to show, in row order
    let visible = |a: &Addr| {
        a.row >= d.top && a.col >= d.left && a.row < d.top + rows && a.col < d.left + cols
    };
    let addrs: Vec<Addr> = if opts.empty_cells {
        (0..rows)
            .flat_map(|r| (0..cols).map(move |c| Addr::new(d.top + r, d.left + c)))
            .filter(|a| a.row < crate::sheet::addr::MAX_ROW && a.col < crate::sheet::addr::MAX_COL)
            .collect()
    } else {
        let mut v: Vec<Addr> = cells
            .range(Addr::new(d.top, 0)..Addr::new(d.top + rows, 0))
            .map(|(a, _)| *a)
            .filter(visible)
            .collect();
        v.push(d.cursor);
        if let Some(e) = &d.edit {
            v.push(e.at);
        }
        // the data's rectangle, one row and two columns past it (a new column may leave a
        // blank one after the table)
        let (r1, c1) = (
            next_row.min(d.top + rows),
            (next_col + 1).min(d.left + cols),
        );
        v.extend((d.top..=r1).flat_map(|r| (d.left..=c1).map(move |c| Addr::new(r, c))));
        v.retain(|a| {
            visible(a) && a.row < crate::sheet::addr::MAX_ROW && a.col < crate::sheet::addr::MAX_COL
        });
        v.sort();
        v.dedup();
        v
    };
    let values = d.book.values_at(d.sheet, &addrs);
    for (a, value) in addrs.into_iter().zip(values) {
        {
            let (r, c) = (a.row - d.top, a.col - d.left);
            let editing = d.edit.as_ref().is_some_and(|e| e.at == a);
            let shown = match &d.edit {
                Some(e) if e.at == a => e.text.clone(),
                _ => value.to_string(),
            };
            let mut n = node("table-cell", a.to_string(), shown, "ScCell", l.cell(r, c));
            let mut states = Vec::new();
            if a == d.cursor {
                states.push("focused");
            }
            if sel.contains(a) && (sel.start != sel.end || whole(&sel)) {
                states.push("selected");
            }
            if editing {
                states.push("editing");
            }
            n.description = states.join(" ");
            out.push(n);
        }
    }
    let mut add = node("push-button", "Insert Sheet", "+", "TabBar", l.add_sheet());
    add.description = "adds a sheet at the end".into();
    out.push(add);
    for (i, s) in d.book.sheets.iter().enumerate() {
        let r = l.tab(i);
        if r.x + r.w > l.width {
            break;
        }
        let mut t = node("page-tab", s.name.clone(), "", "TabBar", r);
        if i == d.sheet {
            t.description = "selected".into();
        }
        out.push(t);
    }
    if let Some(msg) = &d.status {
        let mut s = node(
            "label",
            "Status",
            msg.clone(),
            "StatusBar",
            Rect::new(l.width - 420, l.tab_y() + 6, 410, 20),
        );
        s.interactive = false;
        out.push(s);
    }
    match &d.popup {
        Some(Popup::Menu(i, hover)) => {
            for (j, (label, _)) in MENUS[*i].1.iter().enumerate() {
                let mut n = node("menu-item", *label, "", "PopupMenu", l.menu_item(*i, j));
                if *hover == Some(j) {
                    n.description = "focused".into();
                }
                out.push(n);
            }
        }
        Some(Popup::Context(x, y, items, hover)) => {
            let class = if items.as_slice() == TAB_MENU.as_slice() {
                "TabMenu"
            } else if items.as_slice() == CELL_MENU.as_slice() {
                "CellMenu"
            } else {
                "PopupMenu"
            };
            for (j, (label, _)) in items.iter().enumerate() {
                let mut n = node(
                    "menu-item",
                    *label,
                    "",
                    class,
                    l.context_item(*x, *y, items.len(), j),
                );
                if *hover == Some(j) {
                    n.description = "focused".into();
                }
                out.push(n);
            }
        }
        None => {}
    }
    if let Some(dl) = &d.dialog {
        let mut f = node("dialog", dl.title(), "", "Dialog", l.dialog());
        f.interactive = false;
        out.push(f);
        match &dl.kind {
            DialogKind::ConfirmDelete(i) => {
                let name = d.book.sheets.get(*i).map(|s| s.name.as_str()).unwrap_or("");
                let mut q = node(
                    "label",
                    "Question",
                    format!("Are you sure you want to delete the sheet {name}?"),
                    "Dialog",
                    l.dialog_field(),
                );
                q.interactive = false;
                out.push(q);
                out.push(node("push-button", "Yes", "", "Dialog", l.dialog_ok()));
                out.push(node("push-button", "No", "", "Dialog", l.dialog_cancel()));
            }
            kind => {
                let mut field = node("text", "Name", dl.field.clone(), "Dialog", l.dialog_field());
                field.description = if dl.selected {
                    "focused selected".into()
                } else {
                    "focused".into()
                };
                out.push(field);
                if let DialogKind::Insert(place @ (Place::Before | Place::After)) = kind {
                    for (i, (label, p)) in [
                        ("Before current sheet", Place::Before),
                        ("After current sheet", Place::After),
                    ]
                    .into_iter()
                    .enumerate()
                    {
                        let mut o = node("radio-button", label, "", "Dialog", l.dialog_option(i));
                        if *place == p {
                            o.description = "checked".into();
                        }
                        out.push(o);
                    }
                }
                out.push(node("push-button", "OK", "", "Dialog", l.dialog_ok()));
                out.push(node(
                    "push-button",
                    "Cancel",
                    "",
                    "Dialog",
                    l.dialog_cancel(),
                ));
            }
        }
        if let Some(e) = &dl.error {
            let d0 = l.dialog();
            let mut n = node(
                "label",
                "Error",
                e.clone(),
                "Dialog",
                Rect::new(d0.x + 20, d0.y + 124, crate::ui::layout::DIALOG_W - 40, 20),
            );
            n.interactive = false;
            out.push(n);
        }
    }
    out
}

/// The header line of a linearised tree.
pub const HEADER: &str = "tag\tname\ttext\tclass\tdescription\tposition (top-left x&y)\tsize (w&h)";

fn quote(s: &str) -> String {
    if s.is_empty() {
        "\"\"".into()
    } else if s.contains('"') {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn flat(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains(['\t', '\n']) {
        s.replace(['\t', '\n'], " ").into()
    } else {
        s.into()
    }
}

fn line(n: &Node, out: &mut String) {
    use std::fmt::Write;
    let _ = write!(
        out,
        "{}\t{}\t{}\t{}\t{}\t({}, {})\t({}, {})",
        n.tag,
        flat(&n.name),
        quote(&flat(&n.text)),
        n.class,
        n.description,
        n.rect.x,
        n.rect.y,
        n.rect.w,
        n.rect.h
    );
}

/// The tree as OSWorld's table, cut after `max_tokens` tokens as `count` counts them (whole
/// lines are kept; `[...]` marks the cut).
pub fn linearize(nodes: &[Node], max_tokens: usize, count: &dyn Fn(&str) -> usize) -> String {
    let mut out = String::from(HEADER);
    let mut used = count(HEADER);
    let mut l = String::with_capacity(96);
    for n in nodes {
        l.clear();
        line(n, &mut l);
        let c = count(&l) + 1;
        if used + c > max_tokens {
            out.push_str("\n[...]");
            return out;
        }
        used += c;
        out.push('\n');
        out.push_str(&l);
    }
    out
}

/// The interactive nodes, numbered from 1: what `tag_N` names.
pub fn marks(nodes: &[Node]) -> Vec<&Node> {
    nodes.iter().filter(|n| n.interactive).collect()
}

/// The centres of the marks, in order (for [`Desktop::step`]).
pub fn mark_centres(nodes: &[Node]) -> Vec<(i32, i32)> {
    marks(nodes).iter().map(|n| n.rect.center()).collect()
}

/// The set-of-marks list: `[N] tag name: text`, one line per mark.
pub fn marks_text(nodes: &[Node]) -> String {
    let mut out = String::new();
    for (i, n) in marks(nodes).iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!("[{}] {} {}", i + 1, n.tag, n.name));
        if !n.text.is_empty() {
            out.push_str(&format!(": {}", n.text.replace('\n', " ")));
        }
        if !n.description.is_empty() {
            out.push_str(&format!(" ({})", n.description));
        }
    }
    out
}
