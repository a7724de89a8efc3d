//! The native spreadsheet desktop: one Calc-like window over a [`Workbook`], driven by
//! OSWorld's actions. It has a menu bar (File, Edit, Sheet, Data), the Name Box and the input
//! line, the grid with column and row headers, sheet tabs with an add button, context menus on
//! cells and tabs, and dialogs to insert, rename and delete sheets.
//!
//! What it does, as the real application does: click selects a cell, a header selects a
//! column or row, the corner selects everything, a drag selects a range; typing edits the
//! selected cell (Enter commits and moves down — back to the column where a run of Tabs began —,
//! Tab right, Escape cancels, arrows commit and move); F2, a double click or a click on the
//! input line edit the cell's content; Delete clears the selection; Ctrl+C / X / V copy, cut and
//! paste (formulas' relative references move with the paste); Ctrl+A, Ctrl+Home, Ctrl+End,
//! Ctrl+arrows, Shift+arrows, Ctrl+Space and Shift+Space select; Ctrl+Z undoes; Ctrl+S saves the
//! file it opened (.xlsx or .csv). Data ▸ Sort sorts the data region around the cursor by its
//! column, keeping a header row of text in place.
//!
//! Simplifications, stated: no cell styles, no charts, no Keep-Format question on saving, no
//! confirmation before a paste overwrites cells, the caret of an edit is always at its end.

use crate::sheet::addr::{Addr, Range, MAX_COL, MAX_ROW};
use crate::sheet::formula::{self, Value};
use crate::sheet::workbook::{Content, Workbook};
use crate::ui::action::{Action, Button, Point};
use crate::ui::keys::Key;
use crate::ui::layout::{Layout, Rect};
use crate::DesktopError;
use std::path::{Path, PathBuf};

mod commands;
mod keys;
mod mouse;

/// A command of a menu, a context menu or a shortcut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmd {
    /// File ▸ Save.
    Save,
    /// Edit ▸ Undo.
    Undo,
    /// Edit ▸ Cut.
    Cut,
    /// Edit ▸ Copy.
    Copy,
    /// Edit ▸ Paste.
    Paste,
    /// Edit ▸ Select All.
    SelectAll,
    /// Edit ▸ Delete Contents.
    DeleteContents,
    /// Sheet ▸ Insert Sheet… (a dialog).
    InsertSheet,
    /// Sheet ▸ Insert Sheet at End… (a dialog).
    InsertSheetAtEnd,
    /// Sheet ▸ Delete Sheet… (a confirmation).
    DeleteSheet,
    /// Sheet ▸ Rename Sheet… (a dialog).
    RenameSheet,
    /// Data ▸ Sort Ascending.
    SortAscending,
    /// Data ▸ Sort Descending.
    SortDescending,
}

/// The menu bar: titles and their items.
pub const MENUS: [(&str, &[(&str, Cmd)]); 4] = [
    ("File", &[("Save", Cmd::Save)]),
    (
        "Edit",
        &[
            ("Undo", Cmd::Undo),
            ("Cut", Cmd::Cut),
            ("Copy", Cmd::Copy),
            ("Paste", Cmd::Paste),
            ("Select All", Cmd::SelectAll),
            ("Delete Contents", Cmd::DeleteContents),
        ],
    ),
    (
        "Sheet",
        &[
            ("Insert Sheet...", Cmd::InsertSheet),
            ("Insert Sheet at End...", Cmd::InsertSheetAtEnd),
            ("Delete Sheet...", Cmd::DeleteSheet),
            ("Rename Sheet...", Cmd::RenameSheet),
        ],
    ),
    (
        "Data",
        &[
            ("Sort Ascending", Cmd::SortAscending),
            ("Sort Descending", Cmd::SortDescending),
        ],
    ),
];

/// The context menu of cells and headers.
pub const CELL_MENU: [(&str, Cmd); 4] = [
    ("Cut", Cmd::Cut),
    ("Copy", Cmd::Copy),
    ("Paste", Cmd::Paste),
    ("Delete Contents", Cmd::DeleteContents),
];

/// The context menu of sheet tabs.
pub const TAB_MENU: [(&str, Cmd); 3] = [
    ("Insert Sheet...", Cmd::InsertSheet),
    ("Delete Sheet...", Cmd::DeleteSheet),
    ("Rename Sheet...", Cmd::RenameSheet),
];

/// An open menu.
#[derive(Debug, Clone, PartialEq)]
pub enum Popup {
    /// A drop-down of the menu bar, with its highlighted item.
    Menu(usize, Option<usize>),
    /// A context menu at a point with its items and highlighted item.
    Context(i32, i32, Vec<(&'static str, Cmd)>, Option<usize>),
}

/// What a dialog asks.
#[derive(Debug, Clone, PartialEq)]
pub enum DialogKind {
    /// Rename sheet `i`.
    Rename(usize),
    /// Insert a sheet there.
    Insert(Place),
    /// Delete sheet `i`?
    ConfirmDelete(usize),
}

/// Where a new sheet goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Before the current sheet.
    Before,
    /// After the current sheet.
    After,
    /// After the last sheet.
    End,
}

/// An open dialog.
#[derive(Debug, Clone, PartialEq)]
pub struct Dialog {
    /// What it asks.
    pub kind: DialogKind,
    /// Its text field.
    pub field: String,
    /// Whether the field's text is selected (typing replaces it).
    pub selected: bool,
    /// The error line of a refused entry.
    pub error: Option<String>,
}

impl Dialog {
    /// The dialog's title.
    pub fn title(&self) -> &'static str {
        match self.kind {
            DialogKind::Rename(_) => "Rename Sheet",
            DialogKind::Insert(_) => "Insert Sheet",
            DialogKind::ConfirmDelete(_) => "Delete Sheet",
        }
    }
}

/// A cell being edited.
#[derive(Debug, Clone, PartialEq)]
pub struct Edit {
    /// The cell.
    pub at: Addr,
    /// The text so far.
    pub text: String,
}

/// What was copied or cut.
#[derive(Debug, Clone, PartialEq)]
pub struct Clip {
    /// The source sheet.
    pub sheet: usize,
    /// The source range (whole columns or rows kept as such).
    pub range: Range,
    /// The cells relative to the range's top-left.
    pub cells: Vec<(u32, u32, Content)>,
    /// Cut (the source is cleared on paste) rather than copied.
    pub cut: bool,
}

/// What one step did.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Outcome {
    /// Why an action failed (the step's later actions were not run).
    pub error: Option<String>,
    /// The agent said DONE (`Some(true)`) or FAIL (`Some(false)`).
    pub finished: Option<bool>,
    /// Actions run.
    pub actions: usize,
}

/// The desktop.
#[derive(Debug, Clone)]
pub struct Desktop {
    /// The open workbook.
    pub book: Workbook,
    /// The file it was opened from and saves to (`None`: the document lives in memory).
    pub path: Option<PathBuf>,
    /// The document's name, shown in the title.
    pub name: String,
    /// The screen's geometry.
    pub layout: Layout,
    /// The active sheet.
    pub sheet: usize,
    /// The cursor cell.
    pub cursor: Addr,
    /// The selection (contains the cursor).
    pub selection: Range,
    /// The first visible row and column.
    pub top: u32,
    /// The first visible column.
    pub left: u32,
    /// The cell being edited.
    pub edit: Option<Edit>,
    /// The Name Box's text while it has the focus.
    pub namebox: Option<String>,
    /// An open menu.
    pub popup: Option<Popup>,
    /// An open dialog.
    pub dialog: Option<Dialog>,
    /// The clipboard.
    pub clipboard: Option<Clip>,
    /// The status line (the last refusal, such as an invalid reference).
    pub status: Option<String>,
    /// Saves since opening.
    pub saves: usize,
    /// The workbook as last saved (what an evaluator reads; `None` before the first save).
    pub saved: Option<Workbook>,
    /// Changes since the last save.
    pub dirty: bool,
    undo: Vec<(Workbook, usize)>,
    mouse: (f64, f64),
    held: Vec<Key>,
    down: Option<(f64, f64, Button)>,
    tab_start: Option<u32>,
}

type R<T = ()> = Result<T, String>;

impl Desktop {
    /// A desktop showing `book` on a `width × height` screen.
    pub fn new(
        book: Workbook,
        path: Option<PathBuf>,
        width: u32,
        height: u32,
    ) -> Result<Desktop, String> {
        if width < Layout::MIN.0 || height < Layout::MIN.1 || width > 8192 || height > 8192 {
            return Err(format!(
                "a screen of {width}×{height}: it must be from {}×{} to 8192×8192",
                Layout::MIN.0,
                Layout::MIN.1
            ));
        }
        let name = path
            .as_ref()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "Untitled 1".into());
        Ok(Desktop {
            book,
            path,
            name,
            layout: Layout {
                width: width as i32,
                height: height as i32,
            },
            sheet: 0,
            cursor: Addr::new(0, 0),
            selection: Range::cell(Addr::new(0, 0)),
            top: 0,
            left: 0,
            edit: None,
            namebox: None,
            popup: None,
            dialog: None,
            clipboard: None,
            status: None,
            saves: 0,
            saved: None,
            dirty: false,
            undo: Vec::new(),
            mouse: (width as f64 / 2.0, height as f64 / 2.0),
            held: Vec::new(),
            down: None,
            tab_start: None,
        })
    }

    /// Opens a file (.xlsx or .csv) on a `width × height` screen.
    pub fn open(path: &Path, width: u32, height: u32) -> Result<Desktop, DesktopError> {
        let csv = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
        let book = if csv {
            crate::sheet::xlsx::open_csv(path)?
        } else {
            crate::sheet::xlsx::open(path)?
        };
        Desktop::new(book, Some(path.to_path_buf()), width, height)
            .map_err(|m| DesktopError::invalid(path, "screen", m))
    }

    /// The window title.
    pub fn title(&self) -> String {
        format!("{} - LibreOffice Calc", self.name)
    }

    /// Where the mouse is.
    pub fn mouse(&self) -> (f64, f64) {
        self.mouse
    }

    /// Runs one step's actions in order; the first that fails ends the step with its reason.
    /// `marks` are the set-of-marks element centres `tag_N` refers to (N from 1).
    pub fn step(&mut self, actions: &[Action], marks: &[(i32, i32)]) -> Outcome {
        let mut out = Outcome::default();
        for a in actions {
            out.actions += 1;
            match a {
                Action::Done => {
                    out.finished = Some(true);
                    return out;
                }
                Action::Fail => {
                    out.finished = Some(false);
                    return out;
                }
                _ => {}
            }
            if let Err(e) = self.act(a, marks) {
                out.error = Some(e);
                return out;
            }
        }
        out
    }

    fn point(&self, p: Point, marks: &[(i32, i32)]) -> R<(f64, f64)> {
        let (x, y) = match p {
            Point::Current => self.mouse,
            Point::At(x, y) => (x, y),
            Point::Mark(n) => match n.checked_sub(1).and_then(|i| marks.get(i)) {
                Some(&(x, y)) => (x as f64, y as f64),
                None => {
                    return Err(format!(
                        "tag_{n} is not a mark on the screen (there are {})",
                        marks.len()
                    ))
                }
            },
        };
        if !(x >= 0.0 && y >= 0.0 && x < self.layout.width as f64 && y < self.layout.height as f64)
        {
            return Err(format!(
                "({x}, {y}) is off the {}×{} screen",
                self.layout.width, self.layout.height
            ));
        }
        Ok((x, y))
    }

    /// Runs one action.
    pub fn act(&mut self, a: &Action, marks: &[(i32, i32)]) -> R {
        match a {
            Action::Click { at, button, clicks } => {
                let (x, y) = self.point(*at, marks)?;
                self.mouse = (x, y);
                self.click(x, y, *button, *clicks)
            }
            Action::MoveTo(p) => {
                self.mouse = self.point(*p, marks)?;
                Ok(())
            }
            Action::DragTo(p, b) => {
                let (x0, y0) = self.mouse;
                let (x1, y1) = self.point(*p, marks)?;
                self.mouse = (x1, y1);
                self.drag(x0, y0, x1, y1, *b)
            }
            Action::MouseDown(p, b) => {
                let (x, y) = self.point(*p, marks)?;
                self.mouse = (x, y);
                self.down = Some((x, y, *b));
                Ok(())
            }
            Action::MouseUp(p, b) => {
                let (x, y) = self.point(*p, marks)?;
                self.mouse = (x, y);
                match self.down.take() {
                    Some((x0, y0, b0)) if b0 == *b => {
                        if (x0 - x).abs() < 3.0 && (y0 - y).abs() < 3.0 {
                            self.click(x, y, *b, 1)
                        } else {
                            self.drag(x0, y0, x, y, *b)
                        }
                    }
                    _ => Ok(()),
                }
            }
            Action::Write(text) => {
                for ch in text.chars() {
                    let k = match ch {
                        '\n' => Key::Enter,
                        '\t' => Key::Tab,
                        '\r' => continue,
                        c if c.is_control() => {
                            return Err(format!("cannot type the control character {c:?}"))
                        }
                        c => Key::Char(c),
                    };
                    self.key(k)?;
                }
                Ok(())
            }
            Action::Press(keys) => {
                for k in keys {
                    let key = Key::parse(k).ok_or_else(|| format!("{k:?} is not a key"))?;
                    if key.is_modifier() {
                        continue; // pressing a modifier alone does nothing
                    }
                    self.key(key)?;
                }
                Ok(())
            }
            Action::Hotkey(keys) => {
                let parsed: Vec<Key> = keys
                    .iter()
                    .map(|k| Key::parse(k).ok_or_else(|| format!("{k:?} is not a key")))
                    .collect::<R<_>>()?;
                let (mods, rest): (Vec<Key>, Vec<Key>) =
                    parsed.into_iter().partition(|k| k.is_modifier());
                let saved = self.held.clone();
                self.held.extend(mods);
                let r = rest.into_iter().try_for_each(|k| self.key(k));
                self.held = saved;
                r
            }
            Action::KeyDown(k) => {
                let key = Key::parse(k).ok_or_else(|| format!("{k:?} is not a key"))?;
                if key.is_modifier() {
                    if !self.held.contains(&key) {
                        self.held.push(key);
                    }
                    Ok(())
                } else {
                    self.key(key)
                }
            }
            Action::KeyUp(k) => {
                let key = Key::parse(k).ok_or_else(|| format!("{k:?} is not a key"))?;
                self.held.retain(|h| *h != key);
                Ok(())
            }
            Action::Scroll(n, p) => {
                let (x, y) = self.point(*p, marks)?;
                self.mouse = (x, y);
                if self.popup.is_none() && self.dialog.is_none() {
                    let rows = (-(*n as i64)) * 3;
                    self.top = (self.top as i64 + rows)
                        .clamp(0, (MAX_ROW - self.layout.rows()) as i64)
                        as u32;
                }
                Ok(())
            }
            Action::Wait | Action::Done | Action::Fail => Ok(()),
        }
    }

    fn held(&self, k: Key) -> bool {
        self.held.contains(&k)
    }

    // ----- mouse -----

    /// What is under a point.
    pub fn hit(&self, x: f64, y: f64) -> Target {
        let l = &self.layout;
        if let Some(d) = &self.dialog {
            if l.dialog_ok().contains(x, y) {
                return Target::DialogOk;
            }
            if l.dialog_cancel().contains(x, y) {
                return Target::DialogCancel;
            }
            if !matches!(d.kind, DialogKind::ConfirmDelete(_)) && l.dialog_field().contains(x, y) {
                return Target::DialogField;
            }
            if matches!(d.kind, DialogKind::Insert(Place::Before | Place::After)) {
                for (i, place) in [Place::Before, Place::After].into_iter().enumerate() {
                    if l.dialog_option(i).contains(x, y) {
                        return Target::DialogOption(place);
                    }
                }
            }
            return if l.dialog().contains(x, y) {
                Target::Dialog
            } else {
                Target::Blocked
            };
        }
        match &self.popup {
            Some(Popup::Menu(i, _)) => {
                for (j, (_, cmd)) in MENUS[*i].1.iter().enumerate() {
                    if l.menu_item(*i, j).contains(x, y) {
                        return Target::Item(*cmd);
                    }
                }
            }
            Some(Popup::Context(px, py, items, _)) => {
                for (j, (_, cmd)) in items.iter().enumerate() {
                    if l.context_item(*px, *py, items.len(), j).contains(x, y) {
                        return Target::Item(*cmd);
                    }
                }
            }
            None => {}
        }
        for i in 0..MENUS.len() {
            if l.menu_title(i).contains(x, y) {
                return Target::Menu(i);
            }
        }
        if l.namebox().contains(x, y) {
            return Target::NameBox;
        }
        if l.input().contains(x, y) {
            return Target::Input;
        }
        if l.corner().contains(x, y) {
            return Target::Corner;
        }
        let (xi, yi) = (x as i32, y as i32);
        let grid_w = l.cols() as i32 * crate::ui::layout::CELL_W;
        let grid_h = l.rows() as i32 * crate::ui::layout::CELL_H;
        let in_cols =
            xi >= crate::ui::layout::ROW_HEAD_W && xi < crate::ui::layout::ROW_HEAD_W + grid_w;
        let in_rows = yi >= crate::ui::layout::GRID_Y && yi < crate::ui::layout::GRID_Y + grid_h;
        let col = |xi: i32| {
            self.left + ((xi - crate::ui::layout::ROW_HEAD_W) / crate::ui::layout::CELL_W) as u32
        };
        let row = |yi: i32| {
            self.top + ((yi - crate::ui::layout::GRID_Y) / crate::ui::layout::CELL_H) as u32
        };
        if in_cols && (crate::ui::layout::HEAD_Y..crate::ui::layout::GRID_Y).contains(&yi) {
            return Target::ColHeader(col(xi).min(MAX_COL - 1));
        }
        if in_rows && (0..crate::ui::layout::ROW_HEAD_W).contains(&xi) {
            return Target::RowHeader(row(yi).min(MAX_ROW - 1));
        }
        if in_cols && in_rows {
            return Target::Cell(Addr::new(
                row(yi).min(MAX_ROW - 1),
                col(xi).min(MAX_COL - 1),
            ));
        }
        if l.add_sheet().contains(x, y) {
            return Target::AddSheet;
        }
        for i in 0..self.book.sheets.len() {
            if l.tab(i).contains(x, y) {
                return Target::Tab(i);
            }
        }
        Target::Nothing
    }

    // ----- keyboard -----

    // ----- edits and movement -----

    // ----- commands -----
}

fn offset(a: Addr, dr: i64, dc: i64) -> Addr {
    Addr::new(
        (a.row as i64 + dr).clamp(0, MAX_ROW as i64 - 1) as u32,
        (a.col as i64 + dc).clamp(0, MAX_COL as i64 - 1) as u32,
    )
}

/// What a point of the screen hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A menu title.
    Menu(usize),
    /// An item of the open menu.
    Item(Cmd),
    /// The Name Box.
    NameBox,
    /// The input line.
    Input,
    /// The select-all corner.
    Corner,
    /// A column header.
    ColHeader(u32),
    /// A row header.
    RowHeader(u32),
    /// A cell.
    Cell(Addr),
    /// A sheet tab.
    Tab(usize),
    /// The add-sheet button.
    AddSheet,
    /// The dialog's OK button.
    DialogOk,
    /// The dialog's Cancel button.
    DialogCancel,
    /// The dialog's text field.
    DialogField,
    /// The Insert dialog's position option.
    DialogOption(Place),
    /// The dialog's frame.
    Dialog,
    /// Outside an open dialog.
    Blocked,
    /// Nothing.
    Nothing,
}

/// A rectangle on the screen, for callers that place actions.
pub fn center(r: Rect) -> (f64, f64) {
    let (x, y) = r.center();
    (x as f64, y as f64)
}
