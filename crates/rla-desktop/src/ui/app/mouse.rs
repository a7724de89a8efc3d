//! The desktop's mouse: clicks on cells, headers, menus, tabs and dialogs, and drags.

use super::*;

impl Desktop {
    pub(super) fn click(&mut self, x: f64, y: f64, button: Button, clicks: u32) -> R {
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

    pub(super) fn click_dialog(&mut self, t: Target) -> R {
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

    pub(super) fn left_click(&mut self, t: Target, clicks: u32) -> R {
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

    pub(super) fn right_click(&mut self, t: Target, x: i32, y: i32) -> R {
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

    pub(super) fn drag(&mut self, x0: f64, y0: f64, x1: f64, y1: f64, b: Button) -> R {
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
}
