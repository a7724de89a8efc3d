//! The expert on a real desktop. The expert ([`crate::tasks::expert`]) plans on the native desktop, so
//! it plays a native mirror of the task in lockstep: each of its steps is read for what it
//! touches there (a cell, a column header, a menu and its item, a sheet tab, the add-sheet
//! button; keys and text as they are) and placed on the real screen from the real window's
//! accessibility tree — the cell named `B7`, the menu item named `Sort Ascending`, the page tab
//! named `Profit` — one real step per element, each placed on a fresh tree.

use super::code;
use super::tree::Element;
use crate::sheet::addr::Addr;
use crate::tasks::episode::DesktopEpisode;
use crate::ui::action::{parse_code, Action, Button, Point};
use crate::ui::app::{Desktop, Popup, Target, MENUS};
use std::collections::VecDeque;

/// How an element is clicked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum How {
    /// One left click.
    Left,
    /// A left double-click.
    Double,
    /// One right click.
    Right,
}

/// One real step, still to be placed on the screen.
#[derive(Debug, Clone, PartialEq)]
pub enum Sub {
    /// Keys or text, as they are.
    Code(String),
    /// A click on a cell.
    Cell(Addr, How),
    /// A drag from one cell to another.
    Drag(Addr, Addr),
    /// A click on a column's header.
    ColHeader(u32),
    /// A click on an element by role and name.
    Node(&'static str, String, How),
    /// A click on a sheet's tab.
    Tab(String, How),
    /// Keys or text, once an element of this role and name is on the screen (a dialog that
    /// an earlier step opens).
    When(&'static str, String, String),
    /// No step: the next one waits until an element of this role and name is on the screen
    /// (what an earlier step makes, that the application shows a moment later: a new sheet's
    /// tab after its dialog closes).
    Await(&'static str, String),
}

fn how(button: Button, clicks: u32) -> Result<How, String> {
    match (button, clicks) {
        (Button::Left, 1) => Ok(How::Left),
        (Button::Left, 2) => Ok(How::Double),
        (Button::Right, 1) => Ok(How::Right),
        _ => Err(format!("{clicks} {button:?} clicks are not mapped")),
    }
}

/// What a native step does, as real steps; `d` is the native desktop before it.
pub fn map(d: &Desktop, step: &str) -> Result<Vec<Sub>, String> {
    let acts = parse_code(step).map_err(|e| format!("{step:?}: {e}"))?;
    let mut out: Vec<Sub> = Vec::new();
    let mut drag_from: Option<Addr> = None;
    for a in &acts {
        match a {
            Action::Click {
                at: Point::At(x, y),
                button,
                clicks,
            } => {
                let h = how(*button, *clicks)?;
                out.push(match d.hit(*x, *y) {
                    Target::Cell(a) => Sub::Cell(a, h),
                    Target::ColHeader(c) if h == How::Left => Sub::ColHeader(c),
                    Target::Menu(i) => Sub::Node("menu", MENUS[i].0.to_string(), h),
                    Target::Item(cmd) => {
                        let items: Vec<(&str, crate::ui::app::Cmd)> = match &d.popup {
                            Some(Popup::Menu(i, _)) => MENUS[*i].1.to_vec(),
                            Some(Popup::Context(_, _, items, _)) => items.clone(),
                            None => vec![],
                        };
                        let name = items
                            .iter()
                            .find(|(_, c)| *c == cmd)
                            .map(|(n, _)| n.to_string())
                            .ok_or_else(|| format!("{step:?}: no open menu has {cmd:?}"))?;
                        Sub::Node("menu-item", name, h)
                    }
                    Target::Tab(i) => Sub::Tab(d.book.names()[i].to_string(), h),
                    Target::AddSheet => {
                        // Calc's own add button loses a click now and then on a busy machine;
                        // its menu does not: Sheet ▸ Insert Sheet at End…, named as the native
                        // desktop names it
                        let name = d.book.fresh_name();
                        out.push(Sub::Node("menu", "Sheet".into(), How::Left));
                        out.push(Sub::Node(
                            "menu-item",
                            "Insert Sheet at End...".into(),
                            How::Left,
                        ));
                        out.push(Sub::When(
                            "dialog",
                            "Append Sheet".into(),
                            format!(
                                "pyautogui.hotkey('ctrl', 'a'); pyautogui.write({})",
                                crate::ui::keys::py_str(&format!("{name}\n"))
                            ),
                        ));
                        out.push(Sub::Await("page-tab", name));
                        continue;
                    }
                    t => {
                        return Err(format!(
                            "{step:?}: a click on {t:?} is not mapped to the real window"
                        ))
                    }
                });
            }
            Action::MoveTo(Point::At(x, y)) => match d.hit(*x, *y) {
                Target::Cell(a) => drag_from = Some(a),
                t => return Err(format!("{step:?}: a move to {t:?} is not mapped")),
            },
            Action::DragTo(Point::At(x, y), Button::Left) => {
                let (Some(from), Target::Cell(to)) = (drag_from.take(), d.hit(*x, *y)) else {
                    return Err(format!("{step:?}: only drags from cell to cell are mapped"));
                };
                out.push(Sub::Drag(from, to));
            }
            a => {
                let Some(c) = code::action(a, &[])? else {
                    continue;
                };
                match out.last_mut() {
                    Some(Sub::Code(prev)) => {
                        prev.push_str("; ");
                        prev.push_str(&c);
                    }
                    _ => out.push(Sub::Code(c)),
                }
            }
        }
    }
    Ok(out)
}

fn centre(e: &Element) -> (i32, i32) {
    e.node.rect.center()
}

fn click(how: How, (x, y): (i32, i32)) -> String {
    match how {
        How::Left => format!("pyautogui.click({x}, {y})"),
        How::Double => format!("pyautogui.doubleClick({x}, {y})"),
        How::Right => format!("pyautogui.rightClick({x}, {y})"),
    }
}

fn cell(els: &[Element], a: Addr) -> Result<&Element, String> {
    let name = a.to_string();
    els.iter()
        .find(|e| e.showing && e.node.tag == "table-cell" && e.node.name == name)
        .ok_or_else(|| format!("cell {name} is not on the real screen"))
}

fn shown(els: &[Element], tag: &str, name: &str) -> Result<(), String> {
    els.iter()
        .find(|e| e.showing && e.node.tag == tag && e.node.name == name)
        .map(|_| ())
        .ok_or_else(|| format!("no {tag} named {name:?} on the real screen"))
}

/// A real step's code, placed on the screen whose elements are `els` (empty for
/// [`Sub::Await`], which makes no step).
pub fn place(sub: &Sub, els: &[Element]) -> Result<String, String> {
    Ok(match sub {
        Sub::Code(c) => c.clone(),
        Sub::Cell(a, h) => click(*h, centre(cell(els, *a)?)),
        Sub::Drag(a, b) => {
            let ((x0, y0), (x1, y1)) = (centre(cell(els, *a)?), centre(cell(els, *b)?));
            format!("pyautogui.moveTo({x0}, {y0}); pyautogui.dragTo({x1}, {y1}, duration=0.2)")
        }
        Sub::ColHeader(c) => {
            // the header strip lies just above the column's topmost showing cell
            let col = crate::sheet::addr::col_name(*c);
            let top =
                els.iter()
                    .filter(|e| {
                        e.showing
                            && e.node.tag == "table-cell"
                            && e.node.name.strip_prefix(col.as_str()).is_some_and(|r| {
                                !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit())
                            })
                    })
                    .min_by_key(|e| e.node.rect.y)
                    .ok_or_else(|| format!("column {col} is not on the real screen"))?;
            let (x, _) = centre(top);
            format!("pyautogui.click({x}, {})", top.node.rect.y - 9)
        }
        Sub::Node(tag, name, h) => {
            let e = els
                .iter()
                .find(|e| e.showing && e.node.tag == *tag && e.node.name == *name)
                .ok_or_else(|| format!("no {tag} named {name:?} on the real screen"))?;
            click(*h, centre(e))
        }
        Sub::When(tag, name, c) => {
            shown(els, tag, name)?;
            c.clone()
        }
        Sub::Await(tag, name) => {
            shown(els, tag, name)?;
            String::new()
        }
        Sub::Tab(name, h) => {
            let e = els
                .iter()
                .find(|e| e.showing && e.node.tag == "page-tab" && e.node.name == *name)
                .ok_or_else(|| format!("no sheet tab named {name:?} on the real screen"))?;
            // Calc reports its tabs' row a little off at times; its navigation buttons sit on
            // the same row, reported right
            let y = els
                .iter()
                .find(|e| e.showing && e.node.tag == "push-button" && e.node.name == "Move To Home")
                .map(|b| centre(b).1)
                .unwrap_or(centre(e).1);
            click(*h, (centre(e).0, y))
        }
    })
}

/// The expert of a generated task, on a real desktop.
pub struct RealExpert {
    /// The native mirror.
    pub mirror: DesktopEpisode,
    queue: VecDeque<Sub>,
    waited: usize,
}

/// Steps the expert waits for an element that is not on the real screen yet (the application
/// shows it a moment after the action that opens it).
pub const PATIENCE: usize = 3;

impl RealExpert {
    /// The expert of `task`, its mirror on a `width × height` native screen.
    pub fn new(
        task: impl Into<crate::tasks::episode::Opened>,
        width: u32,
        height: u32,
    ) -> Result<RealExpert, String> {
        Ok(RealExpert {
            mirror: DesktopEpisode::new(task, width, height)?,
            queue: VecDeque::new(),
            waited: 0,
        })
    }

    /// Whether every real step of the mirror's steps so far has been given (the real desktop
    /// should show what the mirror shows).
    pub fn idle(&self) -> bool {
        self.queue.is_empty()
    }

    /// Whether the next real step is placed on the screen (keys and text are not).
    pub fn needs_screen(&mut self) -> bool {
        if self.queue.is_empty() {
            if let Err(e) = self.plan() {
                // the step that follows reports it
                tracing::debug!("{e}");
                return true;
            }
        }
        !matches!(self.queue.front(), Some(Sub::Code(_)) | None)
    }

    /// The mirror's next step, mapped into the queue; `Ok(false)` when the expert is done.
    fn plan(&mut self) -> Result<bool, String> {
        if self.mirror.steps >= crate::tasks::expert::MAX_PLAN {
            return Err(format!(
                "the expert did not finish {} in {} steps",
                self.mirror.task.task.id,
                crate::tasks::expert::MAX_PLAN
            ));
        }
        let step = crate::tasks::expert::next(&self.mirror);
        if step == "DONE" {
            return Ok(false);
        }
        if let Some(e) = self.give(&step)? {
            return Err(format!(
                "the expert's step {step:?} failed on its mirror: {e}"
            ));
        }
        Ok(true)
    }

    /// Runs a native step on the mirror (its `tag_N` marks those of the mirror's full tree)
    /// and queues the real steps it maps to; `Ok(Some(error))` when the step failed on the
    /// mirror (nothing is queued then), `Err` when it cannot be mapped.
    pub fn give(&mut self, step: &str) -> Result<Option<String>, String> {
        let subs = map(&self.mirror.desktop, step)?;
        let nodes = self.mirror.tree(crate::ui::a11y::TreeOptions::default());
        if let Some(e) = self.mirror.step_code(step, &nodes).error {
            return Ok(Some(e));
        }
        self.queue.extend(subs);
        Ok(None)
    }

    /// The next queued real step placed on the screen whose elements are `els`: pyautogui
    /// code, `WAIT` (for an element not shown yet), or `None` when the queue is empty.
    pub fn next_queued(&mut self, els: &[Element]) -> Result<Option<String>, String> {
        loop {
            let Some(sub) = self.queue.pop_front() else {
                return Ok(None);
            };
            return match place(&sub, els) {
                // awaited: on to the next step, on the same screen
                Ok(code) if code.is_empty() => {
                    self.waited = 0;
                    continue;
                }
                Ok(code) => {
                    self.waited = 0;
                    Ok(Some(code))
                }
                Err(_) if self.waited < PATIENCE => {
                    self.waited += 1;
                    self.queue.push_front(sub);
                    Ok(Some("WAIT".into()))
                }
                Err(e) => {
                    self.queue.clear();
                    self.waited = 0;
                    Err(format!("{e} (after {PATIENCE} waits)"))
                }
            };
        }
    }

    /// The next real step on the screen whose elements are `els`: pyautogui code, `WAIT` (for
    /// an element not shown yet), or `DONE`.
    pub fn next(&mut self, els: &[Element]) -> Result<String, String> {
        loop {
            if let Some(code) = self.next_queued(els)? {
                return Ok(code);
            }
            if !self.plan()? {
                return Ok("DONE".into());
            }
        }
    }
}
