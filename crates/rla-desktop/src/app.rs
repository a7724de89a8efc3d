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

use crate::action::{Action, Button, Point};
use crate::addr::{Addr, Range, MAX_COL, MAX_ROW};
use crate::formula::{self, Value};
use crate::keys::Key;
use crate::layout::{Layout, Rect};
use crate::workbook::{Content, Workbook};
use crate::DesktopError;
use std::path::{Path, PathBuf};

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
            crate::xlsx::open_csv(path)?
        } else {
            crate::xlsx::open(path)?
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
        let grid_w = l.cols() as i32 * crate::layout::CELL_W;
        let grid_h = l.rows() as i32 * crate::layout::CELL_H;
        let in_cols = xi >= crate::layout::ROW_HEAD_W && xi < crate::layout::ROW_HEAD_W + grid_w;
        let in_rows = yi >= crate::layout::GRID_Y && yi < crate::layout::GRID_Y + grid_h;
        let col =
            |xi: i32| self.left + ((xi - crate::layout::ROW_HEAD_W) / crate::layout::CELL_W) as u32;
        let row =
            |yi: i32| self.top + ((yi - crate::layout::GRID_Y) / crate::layout::CELL_H) as u32;
        if in_cols && (crate::layout::HEAD_Y..crate::layout::GRID_Y).contains(&yi) {
            return Target::ColHeader(col(xi).min(MAX_COL - 1));
        }
        if in_rows && (0..crate::layout::ROW_HEAD_W).contains(&xi) {
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

    fn click(&mut self, x: f64, y: f64, button: Button, clicks: u32) -> R {
        let target = self.hit(x, y);
        // an open menu takes the click: an item runs, anything else closes it
        if self.popup.is_some() {
            self.popup = None;
            if let Target::Item(cmd) = target {
                return self.run(cmd);
            }
            if matches!(target, Target::Menu(_)) && button == Button::Left {
                // clicking another title opens it
            } else {
                return Ok(());
            }
        }
        if self.dialog.is_some() {
            return self.click_dialog(target);
        }
        match button {
            Button::Middle => Ok(()),
            Button::Right => self.right_click(target, x as i32, y as i32),
            Button::Left => self.left_click(target, clicks),
        }
    }

    fn click_dialog(&mut self, t: Target) -> R {
        match t {
            Target::DialogOk => self.dialog_ok(),
            Target::DialogCancel => {
                self.dialog = None;
                Ok(())
            }
            Target::DialogField => {
                if let Some(d) = self.dialog.as_mut() {
                    d.selected = false;
                }
                Ok(())
            }
            Target::DialogOption(place) => {
                if let Some(d) = self.dialog.as_mut() {
                    d.kind = DialogKind::Insert(place);
                }
                Ok(())
            }
            _ => Ok(()), // a modal dialog ignores clicks elsewhere
        }
    }

    fn left_click(&mut self, t: Target, clicks: u32) -> R {
        if !matches!(t, Target::Input | Target::Cell(_)) || clicks > 1 {
            self.commit_edit()?;
        }
        self.namebox = None;
        match t {
            Target::Menu(i) => {
                self.commit_edit()?;
                self.popup = Some(Popup::Menu(i, None));
            }
            Target::NameBox => {
                self.commit_edit()?;
                self.namebox = Some(String::new()); // its text selected: typing replaces it
            }
            Target::Input => {
                if self.edit.is_none() {
                    self.begin_edit(true);
                }
            }
            Target::Corner => self.select_all(),
            Target::ColHeader(c) => {
                if self.held(Key::Shift) {
                    let c0 = self.selection.start.col.min(c);
                    let c1 = self.selection.end.col.max(c);
                    self.selection = Range::columns(c0, c1);
                } else {
                    self.cursor = Addr::new(self.top, c);
                    self.selection = Range::columns(c, c);
                }
            }
            Target::RowHeader(r) => {
                if self.held(Key::Shift) {
                    let r0 = self.selection.start.row.min(r);
                    let r1 = self.selection.end.row.max(r);
                    self.selection = Range::rows(r0, r1);
                } else {
                    self.cursor = Addr::new(r, self.left);
                    self.selection = Range::rows(r, r);
                }
            }
            Target::Cell(a) => {
                if self.edit.as_ref().is_some_and(|e| e.at != a) {
                    self.commit_edit()?;
                }
                if self.held(Key::Shift) {
                    self.selection = Range::new(self.cursor, a);
                } else {
                    self.cursor = a;
                    self.selection = Range::cell(a);
                    self.tab_start = None;
                }
                if clicks >= 2 && self.edit.is_none() {
                    self.begin_edit(true);
                }
            }
            Target::Tab(i) => {
                self.activate(i);
                if clicks >= 2 {
                    self.run(Cmd::RenameSheet)?;
                }
            }
            Target::AddSheet => {
                self.snapshot();
                let name = self.book.fresh_name();
                let at = self.book.sheets.len();
                self.book
                    .insert_sheet(at, &name)
                    .map_err(|e| e.to_string())?;
                self.dirty = true;
                self.activate(at);
            }
            Target::Item(_)
            | Target::Dialog
            | Target::DialogOk
            | Target::DialogCancel
            | Target::DialogField
            | Target::DialogOption(_)
            | Target::Blocked
            | Target::Nothing => {}
        }
        Ok(())
    }

    fn right_click(&mut self, t: Target, x: i32, y: i32) -> R {
        self.commit_edit()?;
        self.namebox = None;
        match t {
            Target::Cell(a) => {
                if !self.selection.contains(a) {
                    self.cursor = a;
                    self.selection = Range::cell(a);
                }
                self.popup = Some(Popup::Context(x, y, CELL_MENU.to_vec(), None));
            }
            Target::ColHeader(c) => {
                if !(self.selection.is_columns()
                    && (self.selection.start.col..=self.selection.end.col).contains(&c))
                {
                    self.cursor = Addr::new(self.top, c);
                    self.selection = Range::columns(c, c);
                }
                self.popup = Some(Popup::Context(x, y, CELL_MENU.to_vec(), None));
            }
            Target::RowHeader(r) => {
                if !(self.selection.is_rows()
                    && (self.selection.start.row..=self.selection.end.row).contains(&r))
                {
                    self.cursor = Addr::new(r, self.left);
                    self.selection = Range::rows(r, r);
                }
                self.popup = Some(Popup::Context(x, y, CELL_MENU.to_vec(), None));
            }
            Target::Tab(i) => {
                self.activate(i);
                self.popup = Some(Popup::Context(x, y, TAB_MENU.to_vec(), None));
            }
            _ => {}
        }
        Ok(())
    }

    fn drag(&mut self, x0: f64, y0: f64, x1: f64, y1: f64, b: Button) -> R {
        if b != Button::Left || self.dialog.is_some() || self.popup.is_some() {
            return self.click(x1, y1, b, 1);
        }
        match (self.hit(x0, y0), self.hit(x1, y1)) {
            (Target::Cell(a), Target::Cell(c)) => {
                self.commit_edit()?;
                self.namebox = None;
                self.cursor = a;
                self.selection = Range::new(a, c);
                Ok(())
            }
            (Target::ColHeader(a), Target::ColHeader(c)) => {
                self.commit_edit()?;
                self.cursor = Addr::new(self.top, a);
                self.selection = Range::columns(a.min(c), a.max(c));
                Ok(())
            }
            (Target::RowHeader(a), Target::RowHeader(c)) => {
                self.commit_edit()?;
                self.cursor = Addr::new(a, self.left);
                self.selection = Range::rows(a.min(c), a.max(c));
                Ok(())
            }
            _ => self.click(x1, y1, b, 1),
        }
    }

    // ----- keyboard -----

    fn key(&mut self, k: Key) -> R {
        let ctrl = self.held(Key::Ctrl) || self.held(Key::Meta);
        let shift = self.held(Key::Shift);
        if self.dialog.is_some() {
            return self.key_dialog(k, ctrl);
        }
        if let Some(p) = self.popup.clone() {
            return self.key_popup(p, k);
        }
        if let Some(text) = self.namebox.clone() {
            return self.key_namebox(text, k);
        }
        if ctrl {
            return self.shortcut(k, shift);
        }
        if self.held(Key::Alt) {
            return Ok(()); // Alt+key opens nothing here
        }
        if let Some(mut e) = self.edit.clone() {
            match k {
                Key::Char(c) => {
                    e.text.push(c);
                    self.edit = Some(e);
                }
                Key::Backspace => {
                    e.text.pop();
                    self.edit = Some(e);
                }
                Key::Esc => self.edit = None,
                Key::Enter => {
                    self.commit_edit()?;
                    self.enter(shift);
                }
                Key::Tab => {
                    self.commit_edit()?;
                    self.tab(shift);
                }
                Key::Up | Key::Down | Key::Left | Key::Right => {
                    self.commit_edit()?;
                    self.arrow(k, false, false);
                }
                _ => {}
            }
            return Ok(());
        }
        match k {
            Key::Char(c) => {
                self.edit = Some(Edit {
                    at: self.cursor,
                    text: c.to_string(),
                });
            }
            Key::F(2) => self.begin_edit(true),
            Key::Enter => self.enter(shift),
            Key::Tab => self.tab(shift),
            Key::Up | Key::Down | Key::Left | Key::Right => self.arrow(k, false, shift),
            Key::Home => self.move_to(Addr::new(self.cursor.row, 0), shift),
            Key::End => {
                let last = self.last_used();
                self.move_to(Addr::new(self.cursor.row, last.col), shift)
            }
            Key::PageDown | Key::PageUp => {
                let n = self.layout.rows();
                let r = if k == Key::PageDown {
                    (self.cursor.row + n).min(MAX_ROW - 1)
                } else {
                    self.cursor.row.saturating_sub(n)
                };
                self.move_to(Addr::new(r, self.cursor.col), shift);
            }
            Key::Delete | Key::Backspace => self.run(Cmd::DeleteContents)?,
            Key::Esc => {
                self.selection = Range::cell(self.cursor);
            }
            _ => {}
        }
        Ok(())
    }

    fn shortcut(&mut self, k: Key, shift: bool) -> R {
        let lower = |c: char| c.to_ascii_lowercase();
        match k {
            Key::Char(c) if lower(c) == 'c' => self.run(Cmd::Copy),
            Key::Char(c) if lower(c) == 'x' => self.run(Cmd::Cut),
            Key::Char(c) if lower(c) == 'v' => self.run(Cmd::Paste),
            Key::Char(c) if lower(c) == 'a' => self.run(Cmd::SelectAll),
            Key::Char(c) if lower(c) == 's' => self.run(Cmd::Save),
            Key::Char(c) if lower(c) == 'z' => self.run(Cmd::Undo),
            Key::Char(' ') => {
                self.commit_edit()?;
                let c = self.cursor.col;
                self.selection = Range::columns(c, c);
                Ok(())
            }
            Key::Home => {
                self.commit_edit()?;
                self.move_to(Addr::new(0, 0), shift);
                Ok(())
            }
            Key::End => {
                self.commit_edit()?;
                let last = self.last_used();
                self.move_to(last, shift);
                Ok(())
            }
            Key::Up | Key::Down | Key::Left | Key::Right => {
                self.commit_edit()?;
                self.arrow(k, true, shift);
                Ok(())
            }
            Key::Enter | Key::Tab | Key::Esc => Ok(()),
            _ => Ok(()),
        }
    }

    fn key_dialog(&mut self, k: Key, ctrl: bool) -> R {
        let Some(d) = self.dialog.as_mut() else {
            return Ok(());
        };
        let editable = !matches!(d.kind, DialogKind::ConfirmDelete(_));
        match k {
            Key::Enter => return self.dialog_ok(),
            Key::Esc => self.dialog = None,
            Key::Char(c) if editable && !ctrl => {
                if d.selected {
                    d.field.clear();
                    d.selected = false;
                }
                if d.field.chars().count() < 64 {
                    d.field.push(c);
                }
            }
            Key::Char(c) if editable && ctrl && c.eq_ignore_ascii_case(&'a') => d.selected = true,
            Key::Backspace | Key::Delete if editable => {
                if d.selected {
                    d.field.clear();
                    d.selected = false;
                } else if k == Key::Backspace {
                    d.field.pop();
                }
            }
            Key::Left | Key::Right | Key::Home | Key::End => d.selected = false,
            _ => {}
        }
        Ok(())
    }

    fn key_popup(&mut self, p: Popup, k: Key) -> R {
        let n = match &p {
            Popup::Menu(i, _) => MENUS[*i].1.len(),
            Popup::Context(_, _, items, _) => items.len(),
        };
        let hover = match &p {
            Popup::Menu(_, h) | Popup::Context(_, _, _, h) => *h,
        };
        let set = |p: &Popup, h: Option<usize>| match p {
            Popup::Menu(i, _) => Popup::Menu(*i, h),
            Popup::Context(x, y, items, _) => Popup::Context(*x, *y, items.clone(), h),
        };
        match k {
            Key::Esc => self.popup = None,
            Key::Down => self.popup = Some(set(&p, Some(hover.map_or(0, |h| (h + 1) % n)))),
            Key::Up => self.popup = Some(set(&p, Some(hover.map_or(n - 1, |h| (h + n - 1) % n)))),
            Key::Left | Key::Right => {
                if let Popup::Menu(i, _) = p {
                    let m = MENUS.len();
                    let j = if k == Key::Right {
                        (i + 1) % m
                    } else {
                        (i + m - 1) % m
                    };
                    self.popup = Some(Popup::Menu(j, None));
                }
            }
            Key::Enter => {
                self.popup = None;
                if let Some(h) = hover {
                    let cmd = match &p {
                        Popup::Menu(i, _) => MENUS[*i].1[h].1,
                        Popup::Context(_, _, items, _) => items[h].1,
                    };
                    return self.run(cmd);
                }
            }
            _ => self.popup = None,
        }
        Ok(())
    }

    fn key_namebox(&mut self, mut text: String, k: Key) -> R {
        match k {
            Key::Char(c) => {
                if text.chars().count() < 64 {
                    text.push(c);
                }
                self.namebox = Some(text);
            }
            Key::Backspace => {
                text.pop();
                self.namebox = Some(text);
            }
            Key::Esc => self.namebox = None,
            Key::Enter | Key::Tab => {
                self.namebox = None;
                match Range::parse(&text) {
                    Some(r) => {
                        self.status = None;
                        self.cursor = r.start;
                        self.selection = r;
                        self.scroll_to(r.start);
                    }
                    None => self.status = Some(format!("Invalid reference: {text:?}")),
                }
            }
            _ => {}
        }
        Ok(())
    }

    // ----- edits and movement -----

    fn begin_edit(&mut self, keep: bool) {
        let text = if keep {
            self.book.sheets[self.sheet]
                .cells
                .get(&self.cursor)
                .map(Content::input_text)
                .unwrap_or_default()
        } else {
            String::new()
        };
        self.edit = Some(Edit {
            at: self.cursor,
            text,
        });
    }

    fn commit_edit(&mut self) -> R {
        let Some(e) = self.edit.take() else {
            return Ok(());
        };
        let old = self.book.sheets[self.sheet].cells.get(&e.at).cloned();
        let new = Content::typed(&e.text);
        if new.is_some() && !self.book.sheets[self.sheet].has_room_for(e.at) {
            self.status = Some(format!(
                "{} lies too far out: a sheet holds at most {} cells from A1 to its last used cell",
                e.at,
                crate::workbook::MAX_SHEET_CELLS
            ));
            return Ok(());
        }
        if old != new {
            self.snapshot();
            let cells = &mut self.book.sheets[self.sheet].cells;
            match new {
                Some(c) => cells.insert(e.at, c),
                None => cells.remove(&e.at),
            };
            self.dirty = true;
        }
        Ok(())
    }

    fn enter(&mut self, up: bool) {
        let col = self.tab_start.take().unwrap_or(self.cursor.col);
        let row = if up {
            self.cursor.row.saturating_sub(1)
        } else {
            (self.cursor.row + 1).min(MAX_ROW - 1)
        };
        self.move_to(
            Addr::new(row, if up { self.cursor.col } else { col }),
            false,
        );
    }

    fn tab(&mut self, back: bool) {
        if self.tab_start.is_none() {
            self.tab_start = Some(self.cursor.col);
        }
        let col = if back {
            self.cursor.col.saturating_sub(1)
        } else {
            (self.cursor.col + 1).min(MAX_COL - 1)
        };
        let keep = self.tab_start;
        self.move_to(Addr::new(self.cursor.row, col), false);
        self.tab_start = keep;
    }

    fn arrow(&mut self, k: Key, jump: bool, extend: bool) {
        let (dr, dc): (i64, i64) = match k {
            Key::Up => (-1, 0),
            Key::Down => (1, 0),
            Key::Left => (0, -1),
            _ => (0, 1),
        };
        let from = if extend {
            self.far_corner()
        } else {
            self.cursor
        };
        let to = if jump {
            self.jump(from, dr, dc)
        } else {
            offset(from, dr, dc)
        };
        if extend {
            self.selection = Range::new(self.cursor, to);
            self.scroll_to(to);
        } else {
            self.move_to(to, false);
        }
    }

    /// The selection's corner away from the cursor (what Shift+arrows move).
    fn far_corner(&self) -> Addr {
        let s = self.selection;
        Addr::new(
            if s.start.row == self.cursor.row {
                s.end.row
            } else {
                s.start.row
            },
            if s.start.col == self.cursor.col {
                s.end.col
            } else {
                s.start.col
            },
        )
    }

    /// Ctrl+arrow: to the edge of the data block, or the next filled cell, or the sheet's edge.
    fn jump(&self, from: Addr, dr: i64, dc: i64) -> Addr {
        let cells = &self.book.sheets[self.sheet].cells;
        let filled = |a: Addr| cells.contains_key(&a);
        let mut a = from;
        let next = offset(a, dr, dc);
        if next == a {
            return a;
        }
        if filled(a) && filled(next) {
            while filled(offset(a, dr, dc)) && offset(a, dr, dc) != a {
                a = offset(a, dr, dc);
            }
            return a;
        }
        // to the next filled cell in that direction, or the sheet's edge
        let candidates = cells.keys().filter(|k| {
            if dr != 0 {
                k.col == from.col && (k.row as i64 - from.row as i64).signum() == dr
            } else {
                k.row == from.row && (k.col as i64 - from.col as i64).signum() == dc
            }
        });
        let best = if dr > 0 || dc > 0 {
            candidates.min()
        } else {
            candidates.max()
        };
        match best {
            Some(b) => *b,
            None => match (dr, dc) {
                (1, _) => Addr::new(MAX_ROW - 1, from.col),
                (-1, _) => Addr::new(0, from.col),
                (_, 1) => Addr::new(from.row, MAX_COL - 1),
                _ => Addr::new(from.row, 0),
            },
        }
    }

    fn move_to(&mut self, a: Addr, extend: bool) {
        if extend {
            self.selection = Range::new(self.cursor, a);
        } else {
            self.cursor = a;
            self.selection = Range::cell(a);
            self.tab_start = None;
        }
        self.scroll_to(a);
    }

    fn scroll_to(&mut self, a: Addr) {
        let (rows, cols) = (self.layout.rows(), self.layout.cols());
        if a.row < self.top {
            self.top = a.row;
        } else if a.row >= self.top + rows {
            self.top = a.row + 1 - rows;
        }
        if a.col < self.left {
            self.left = a.col;
        } else if a.col >= self.left + cols {
            self.left = a.col + 1 - cols;
        }
    }

    fn select_all(&mut self) {
        self.selection = Range::new(Addr::new(0, 0), Addr::new(MAX_ROW - 1, MAX_COL - 1));
    }

    fn activate(&mut self, i: usize) {
        if i < self.book.sheets.len() && i != self.sheet {
            self.edit = None;
            self.sheet = i;
            self.cursor = Addr::new(0, 0);
            self.selection = Range::cell(self.cursor);
            self.top = 0;
            self.left = 0;
            self.tab_start = None;
        }
    }

    /// The last used cell of the active sheet (A1 when it is empty).
    pub fn last_used(&self) -> Addr {
        self.book.sheets[self.sheet]
            .extent()
            .unwrap_or(Addr::new(0, 0))
    }

    fn snapshot(&mut self) {
        self.undo.push((self.book.clone(), self.sheet));
        if self.undo.len() > 50 {
            self.undo.remove(0);
        }
    }

    // ----- commands -----

    /// Runs a command.
    pub fn run(&mut self, cmd: Cmd) -> R {
        self.popup = None;
        if !matches!(cmd, Cmd::Undo) {
            self.commit_edit()?;
        } else {
            self.edit = None;
        }
        match cmd {
            Cmd::Save => self.save(),
            Cmd::Undo => {
                if let Some((b, s)) = self.undo.pop() {
                    self.book = b;
                    self.sheet = s.min(self.book.sheets.len() - 1);
                    self.dirty = true;
                }
                Ok(())
            }
            Cmd::Copy | Cmd::Cut => {
                self.clipboard = Some(self.copy(cmd == Cmd::Cut));
                Ok(())
            }
            Cmd::Paste => self.paste(),
            Cmd::SelectAll => {
                self.select_all();
                Ok(())
            }
            Cmd::DeleteContents => {
                let sel = self.selection;
                let cells = &self.book.sheets[self.sheet].cells;
                let doomed: Vec<Addr> =
                    cells.keys().copied().filter(|a| sel.contains(*a)).collect();
                if !doomed.is_empty() {
                    self.snapshot();
                    for a in doomed {
                        self.book.sheets[self.sheet].cells.remove(&a);
                    }
                    self.dirty = true;
                }
                Ok(())
            }
            Cmd::InsertSheet | Cmd::InsertSheetAtEnd => {
                let field = self.book.fresh_name();
                let place = if cmd == Cmd::InsertSheet {
                    Place::Before
                } else {
                    Place::End
                };
                self.dialog = Some(Dialog {
                    kind: DialogKind::Insert(place),
                    field,
                    selected: true,
                    error: None,
                });
                Ok(())
            }
            Cmd::RenameSheet => {
                self.dialog = Some(Dialog {
                    kind: DialogKind::Rename(self.sheet),
                    field: self.book.sheets[self.sheet].name.clone(),
                    selected: true,
                    error: None,
                });
                Ok(())
            }
            Cmd::DeleteSheet => {
                self.dialog = Some(Dialog {
                    kind: DialogKind::ConfirmDelete(self.sheet),
                    field: String::new(),
                    selected: false,
                    error: None,
                });
                Ok(())
            }
            Cmd::SortAscending | Cmd::SortDescending => {
                self.sort(cmd == Cmd::SortAscending);
                Ok(())
            }
        }
    }

    fn dialog_ok(&mut self) -> R {
        let Some(d) = self.dialog.clone() else {
            return Ok(());
        };
        let res = match d.kind {
            DialogKind::Rename(i) => {
                let before = self.book.clone();
                match self.book.rename_sheet(i, d.field.trim()) {
                    Ok(()) => {
                        if before != self.book {
                            self.undo.push((before, self.sheet));
                            self.dirty = true;
                        }
                        Ok(())
                    }
                    Err(e) => Err(e.to_string()),
                }
            }
            DialogKind::Insert(place) => {
                let at = match place {
                    Place::End => self.book.sheets.len(),
                    Place::Before => self.sheet,
                    Place::After => self.sheet + 1,
                };
                let before = self.book.clone();
                match self.book.insert_sheet(at, d.field.trim()) {
                    Ok(()) => {
                        self.undo.push((before, self.sheet));
                        self.dirty = true;
                        self.activate_fresh(at);
                        Ok(())
                    }
                    Err(e) => Err(e.to_string()),
                }
            }
            DialogKind::ConfirmDelete(i) => {
                let before = self.book.clone();
                match self.book.delete_sheet(i) {
                    Ok(()) => {
                        self.undo.push((before, self.sheet));
                        self.dirty = true;
                        let s = i.min(self.book.sheets.len() - 1);
                        self.activate_fresh(s);
                        Ok(())
                    }
                    Err(e) => Err(e.to_string()),
                }
            }
        };
        match res {
            Ok(()) => {
                self.dialog = None;
                Ok(())
            }
            Err(m) => {
                // the application keeps the dialog open and says why
                if let Some(dd) = self.dialog.as_mut() {
                    dd.error = Some(m);
                }
                Ok(())
            }
        }
    }

    fn activate_fresh(&mut self, i: usize) {
        self.sheet = i;
        self.cursor = Addr::new(0, 0);
        self.selection = Range::cell(self.cursor);
        self.top = 0;
        self.left = 0;
        self.tab_start = None;
        self.edit = None;
    }

    /// The selection clipped to the used cells (whole columns and rows kept whole).
    fn copy(&self, cut: bool) -> Clip {
        let sel = self.selection;
        let cells: Vec<(u32, u32, Content)> = self.book.sheets[self.sheet]
            .cells
            .iter()
            .filter(|(a, _)| sel.contains(**a))
            .map(|(a, c)| (a.row - sel.start.row, a.col - sel.start.col, c.clone()))
            .collect();
        Clip {
            sheet: self.sheet,
            range: sel,
            cells,
            cut,
        }
    }

    fn paste(&mut self) -> R {
        let Some(clip) = self.clipboard.clone() else {
            return Ok(());
        };
        let src = clip.range;
        let dest_start = if src.is_columns() && !src.is_rows() {
            Addr::new(0, self.cursor.col)
        } else if src.is_rows() && !src.is_columns() {
            Addr::new(self.cursor.row, 0)
        } else if src.is_rows() && src.is_columns() {
            Addr::new(0, 0)
        } else {
            self.selection.start
        };
        let (h, w) = (src.height(), src.width());
        if dest_start.row as u64 + h as u64 > MAX_ROW as u64
            || dest_start.col as u64 + w as u64 > MAX_COL as u64
        {
            self.status = Some("There is not enough room to paste here".into());
            return Ok(());
        }
        let dest = Range::new(
            dest_start,
            Addr::new(dest_start.row + h - 1, dest_start.col + w - 1),
        );
        if !clip.cells.is_empty() && !self.book.sheets[self.sheet].has_room_for(dest.end) {
            self.status = Some(format!(
                "There is not enough room to paste here: a sheet holds at most {} cells from A1 \
                 to its last used cell",
                crate::workbook::MAX_SHEET_CELLS
            ));
            return Ok(());
        }
        self.snapshot();
        if clip.cut {
            if let Some(s) = self.book.sheets.get_mut(clip.sheet) {
                s.cells.retain(|a, _| !src.contains(*a));
            }
        }
        let (dr, dc) = (
            dest.start.row as i64 - src.start.row as i64,
            dest.start.col as i64 - src.start.col as i64,
        );
        let cells = &mut self.book.sheets[self.sheet].cells;
        cells.retain(|a, _| !dest.contains(*a));
        for (r, c, content) in clip.cells {
            let content = match content {
                Content::Formula(f) => Content::Formula(formula::shift(&f, dr, dc)),
                x => x,
            };
            cells.insert(Addr::new(dest.start.row + r, dest.start.col + c), content);
        }
        self.dirty = true;
        self.selection = dest;
        self.cursor = dest.start;
        if clip.cut {
            self.clipboard = None; // a cut pastes once
        }
        Ok(())
    }

    /// The data region around the cursor: the selection if it spans several cells, else the
    /// block of filled cells that touches the cursor.
    pub fn data_region(&self) -> Option<Range> {
        let cells = &self.book.sheets[self.sheet].cells;
        let ext = self.last_used();
        if self.selection.height() > 1 || self.selection.width() > 1 {
            let s = self.selection;
            let end = Addr::new(s.end.row.min(ext.row), s.end.col.min(ext.col));
            return (end.row >= s.start.row && end.col >= s.start.col)
                .then(|| Range::new(s.start, end));
        }
        let mut r = Range::cell(self.cursor);
        let filled_row =
            |row: u32, c0: u32, c1: u32| (c0..=c1).any(|c| cells.contains_key(&Addr::new(row, c)));
        let filled_col = |col: u32, r0: u32, r1: u32| {
            (r0..=r1).any(|rr| cells.contains_key(&Addr::new(rr, col)))
        };
        loop {
            let mut grew = false;
            let (c0, c1) = (r.start.col.saturating_sub(1), (r.end.col + 1).min(ext.col));
            if r.start.row > 0 && filled_row(r.start.row - 1, c0, c1) {
                r.start.row -= 1;
                grew = true;
            }
            if r.end.row < ext.row && filled_row(r.end.row + 1, c0, c1) {
                r.end.row += 1;
                grew = true;
            }
            let (r0, r1) = (r.start.row.saturating_sub(1), (r.end.row + 1).min(ext.row));
            if r.start.col > 0 && filled_col(r.start.col - 1, r0, r1) {
                r.start.col -= 1;
                grew = true;
            }
            if r.end.col < ext.col && filled_col(r.end.col + 1, r0, r1) {
                r.end.col += 1;
                grew = true;
            }
            if !grew {
                break;
            }
        }
        let any = cells.keys().any(|a| r.contains(*a));
        any.then_some(r)
    }

    fn sort(&mut self, ascending: bool) {
        let Some(region) = self.data_region() else {
            return;
        };
        let key_col = self.cursor.col.clamp(region.start.col, region.end.col);
        let sheet = self.sheet;
        let cells = &self.book.sheets[sheet].cells;
        let header = (region.start.col..=region.end.col).all(|c| {
            matches!(
                cells.get(&Addr::new(region.start.row, c)),
                Some(Content::Text(_))
            )
        }) && region.height() > 1;
        let first = region.start.row + header as u32;
        if first > region.end.row {
            return;
        }
        let rows: Vec<u32> = (first..=region.end.row).collect();
        let values: Vec<Value> = rows
            .iter()
            .map(|&r| self.book.value(sheet, Addr::new(r, key_col)))
            .collect();
        let mut order: Vec<usize> = (0..rows.len()).collect();
        let rank = |v: &Value| match v {
            Value::Number(_) => 0,
            Value::Bool(_) => 0,
            Value::Text(_) => 1,
            Value::Error(_) => 2,
            Value::Empty => 3,
        };
        order.sort_by(|&a, &b| {
            let (va, vb) = (&values[a], &values[b]);
            let (ra, rb) = (rank(va), rank(vb));
            if ra == 3 || rb == 3 || ra != rb {
                // empty cells stay last either way; numbers come before text when ascending
                return if ascending || ra == 3 || rb == 3 {
                    ra.cmp(&rb)
                } else {
                    rb.cmp(&ra)
                };
            }
            let o = match (va, vb) {
                (Value::Number(x), Value::Number(y)) => x.total_cmp(y),
                _ => va
                    .to_string()
                    .to_lowercase()
                    .cmp(&vb.to_string().to_lowercase()),
            };
            if ascending {
                o
            } else {
                o.reverse()
            }
        });
        if order.iter().enumerate().all(|(i, &o)| i == o) {
            return;
        }
        self.snapshot();
        let cells = &mut self.book.sheets[sheet].cells;
        let mut moved: Vec<(Addr, Content)> = Vec::new();
        for (new_i, &old_i) in order.iter().enumerate() {
            let (from, to) = (rows[old_i], rows[new_i]);
            for c in region.start.col..=region.end.col {
                if let Some(content) = cells.get(&Addr::new(from, c)) {
                    let content = match content {
                        Content::Formula(f) => {
                            Content::Formula(formula::shift(f, to as i64 - from as i64, 0))
                        }
                        x => x.clone(),
                    };
                    moved.push((Addr::new(to, c), content));
                }
            }
        }
        cells.retain(|a, _| !(a.row >= first && region.contains(*a)));
        for (a, c) in moved {
            cells.insert(a, c);
        }
        self.dirty = true;
    }

    /// Saves to the file it opened (.xlsx, or .csv: the active sheet), atomically; without a
    /// file, in memory only ([`Desktop::saved`]).
    pub fn save(&mut self) -> R {
        let Some(path) = self.path.clone() else {
            self.saves += 1;
            self.dirty = false;
            self.saved = Some(self.book.clone());
            return Ok(());
        };
        let csv = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
        let res = if csv {
            crate::xlsx::write_atomic(
                &path,
                crate::xlsx::to_csv(&self.book, self.sheet).as_bytes(),
            )
        } else {
            crate::xlsx::save(&self.book, &path)
        };
        match res {
            Ok(()) => {
                self.saves += 1;
                self.dirty = false;
                self.status = None;
                self.saved = Some(self.book.clone());
                Ok(())
            }
            Err(e) => Err(format!("saving failed: {e}")),
        }
    }

    /// The text the input line shows: the edit, or the cursor cell's content.
    pub fn input_text(&self) -> String {
        match &self.edit {
            Some(e) => e.text.clone(),
            None => self.book.sheets[self.sheet]
                .cells
                .get(&self.cursor)
                .map(Content::input_text)
                .unwrap_or_default(),
        }
    }

    /// The text the Name Box shows.
    pub fn namebox_text(&self) -> String {
        match &self.namebox {
            Some(t) => t.clone(),
            None => {
                let s = self.selection;
                if s.start == s.end {
                    s.start.to_string()
                } else {
                    s.to_string()
                }
            }
        }
    }

    /// A cell's shown text (an edit in progress shows its text).
    pub fn shown(&self, a: Addr) -> String {
        if let Some(e) = &self.edit {
            if e.at == a {
                return e.text.clone();
            }
        }
        self.book.value(self.sheet, a).to_string()
    }
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
