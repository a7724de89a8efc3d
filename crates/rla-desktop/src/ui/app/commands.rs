//! The desktop's commands (of the menus, context menus and shortcuts), dialogs, the clipboard,
//! sorting, saving, and what the window shows.

use super::*;

impl Desktop {
    pub(super) fn activate(&mut self, i: usize) {
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

    pub(super) fn snapshot(&mut self) {
        self.undo.push((self.book.clone(), self.sheet));
        if self.undo.len() > 50 {
            self.undo.remove(0);
        }
    }

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

    pub(super) fn dialog_ok(&mut self) -> R {
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

    pub(super) fn activate_fresh(&mut self, i: usize) {
        self.sheet = i;
        self.cursor = Addr::new(0, 0);
        self.selection = Range::cell(self.cursor);
        self.top = 0;
        self.left = 0;
        self.tab_start = None;
        self.edit = None;
    }

    /// The selection clipped to the used cells (whole columns and rows kept whole).
    pub(super) fn copy(&self, cut: bool) -> Clip {
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

    pub(super) fn paste(&mut self) -> R {
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
                crate::sheet::workbook::MAX_SHEET_CELLS
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

    pub(super) fn sort(&mut self, ascending: bool) {
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
            crate::sheet::xlsx::write_atomic(
                &path,
                crate::sheet::xlsx::to_csv(&self.book, self.sheet).as_bytes(),
            )
        } else {
            crate::sheet::xlsx::save(&self.book, &path)
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
