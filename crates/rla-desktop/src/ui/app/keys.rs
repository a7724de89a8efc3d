//! The desktop's keyboard: typing and editing, shortcuts, keys in dialogs, menus and the Name Box,
//! and moving the cursor.

use super::*;

impl Desktop {
    pub(super) fn key(&mut self, k: Key) -> R {
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

    pub(super) fn shortcut(&mut self, k: Key, shift: bool) -> R {
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

    pub(super) fn key_dialog(&mut self, k: Key, ctrl: bool) -> R {
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

    pub(super) fn key_popup(&mut self, p: Popup, k: Key) -> R {
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

    pub(super) fn key_namebox(&mut self, mut text: String, k: Key) -> R {
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

    pub(super) fn begin_edit(&mut self, keep: bool) {
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

    pub(super) fn commit_edit(&mut self) -> R {
        let Some(e) = self.edit.take() else {
            return Ok(());
        };
        let old = self.book.sheets[self.sheet].cells.get(&e.at).cloned();
        let new = Content::typed(&e.text);
        if new.is_some() && !self.book.sheets[self.sheet].has_room_for(e.at) {
            self.status = Some(format!(
                "{} lies too far out: a sheet holds at most {} cells from A1 to its last used cell",
                e.at,
                crate::sheet::workbook::MAX_SHEET_CELLS
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

    pub(super) fn enter(&mut self, up: bool) {
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

    pub(super) fn tab(&mut self, back: bool) {
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

    pub(super) fn arrow(&mut self, k: Key, jump: bool, extend: bool) {
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
    pub(super) fn far_corner(&self) -> Addr {
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
    pub(super) fn jump(&self, from: Addr, dr: i64, dc: i64) -> Addr {
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

    pub(super) fn move_to(&mut self, a: Addr, extend: bool) {
        if extend {
            self.selection = Range::new(self.cursor, a);
        } else {
            self.cursor = a;
            self.selection = Range::cell(a);
            self.tab_start = None;
        }
        self.scroll_to(a);
    }

    pub(super) fn scroll_to(&mut self, a: Addr) {
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

    pub(super) fn select_all(&mut self) {
        self.selection = Range::new(Addr::new(0, 0), Addr::new(MAX_ROW - 1, MAX_COL - 1));
    }
}
