//! Where everything is on the screen: the window's bars, the grid's cells and headers, the sheet
//! tabs, menus and dialogs. The desktop hit-tests clicks with these rectangles, and the
//! accessibility tree and screenshots report and draw the same ones.

/// A rectangle in screen pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rect {
    /// Left.
    pub x: i32,
    /// Top.
    pub y: i32,
    /// Width.
    pub w: i32,
    /// Height.
    pub h: i32,
}

impl Rect {
    /// A rectangle.
    pub const fn new(x: i32, y: i32, w: i32, h: i32) -> Rect {
        Rect { x, y, w, h }
    }
    /// Whether the point lies inside.
    pub fn contains(&self, px: f64, py: f64) -> bool {
        px >= self.x as f64
            && py >= self.y as f64
            && px < (self.x + self.w) as f64
            && py < (self.y + self.h) as f64
    }
    /// Whether `r` lies wholly inside.
    pub fn contains_rect(&self, r: &Rect) -> bool {
        r.x >= self.x
            && r.y >= self.y
            && r.x + r.w <= self.x + self.w
            && r.y + r.h <= self.y + self.h
    }
    /// Its centre.
    pub fn center(&self) -> (i32, i32) {
        (self.x + self.w / 2, self.y + self.h / 2)
    }
}

/// The window's title bar height.
pub const TITLE_H: i32 = 28;
/// The menu bar's top and height.
pub const MENU_Y: i32 = TITLE_H;
/// The menu bar's height.
pub const MENU_H: i32 = 26;
/// One menu title's width.
pub const MENU_W: i32 = 64;
/// The formula bar's top.
pub const FBAR_Y: i32 = MENU_Y + MENU_H;
/// The formula bar's height.
pub const FBAR_H: i32 = 28;
/// The Name Box's width.
pub const NAMEBOX_W: i32 = 120;
/// Where the input line starts.
pub const INPUT_X: i32 = 170;
/// The column headers' top.
pub const HEAD_Y: i32 = FBAR_Y + FBAR_H;
/// The column headers' height.
pub const HEAD_H: i32 = 20;
/// The first row's top.
pub const GRID_Y: i32 = HEAD_Y + HEAD_H;
/// The row headers' width.
pub const ROW_HEAD_W: i32 = 50;
/// A cell's width.
pub const CELL_W: i32 = 100;
/// A cell's height.
pub const CELL_H: i32 = 22;
/// The sheet tab bar's height (at the bottom).
pub const TAB_H: i32 = 30;
/// The add-sheet button's width.
pub const ADD_W: i32 = 40;
/// A sheet tab's width.
pub const TAB_W: i32 = 110;
/// A menu item's height.
pub const ITEM_H: i32 = 24;
/// A drop-down or context menu's width.
pub const POPUP_W: i32 = 240;
/// A dialog's size.
pub const DIALOG_W: i32 = 440;
/// A dialog's height.
pub const DIALOG_H: i32 = 190;

/// The geometry of a screen of a given size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Screen width.
    pub width: i32,
    /// Screen height.
    pub height: i32,
}

impl Layout {
    /// The smallest screen the window fits.
    pub const MIN: (u32, u32) = (640, 400);

    /// The sheet tab bar's top.
    pub fn tab_y(&self) -> i32 {
        self.height - TAB_H
    }
    /// Visible rows.
    pub fn rows(&self) -> u32 {
        ((self.tab_y() - GRID_Y) / CELL_H).max(1) as u32
    }
    /// Visible columns.
    pub fn cols(&self) -> u32 {
        ((self.width - ROW_HEAD_W) / CELL_W).max(1) as u32
    }
    /// A visible cell's rectangle (`r`, `c` counted from the first visible row and column).
    pub fn cell(&self, r: u32, c: u32) -> Rect {
        Rect::new(
            ROW_HEAD_W + c as i32 * CELL_W,
            GRID_Y + r as i32 * CELL_H,
            CELL_W,
            CELL_H,
        )
    }
    /// A visible column's header.
    pub fn col_header(&self, c: u32) -> Rect {
        Rect::new(ROW_HEAD_W + c as i32 * CELL_W, HEAD_Y, CELL_W, HEAD_H)
    }
    /// A visible row's header.
    pub fn row_header(&self, r: u32) -> Rect {
        Rect::new(0, GRID_Y + r as i32 * CELL_H, ROW_HEAD_W, CELL_H)
    }
    /// The select-all corner.
    pub fn corner(&self) -> Rect {
        Rect::new(0, HEAD_Y, ROW_HEAD_W, HEAD_H)
    }
    /// The title bar.
    pub fn title(&self) -> Rect {
        Rect::new(0, 0, self.width, TITLE_H)
    }
    /// Menu title `i`.
    pub fn menu_title(&self, i: usize) -> Rect {
        Rect::new(8 + i as i32 * MENU_W, MENU_Y, MENU_W, MENU_H)
    }
    /// Item `j` of the drop-down of menu `i`.
    pub fn menu_item(&self, i: usize, j: usize) -> Rect {
        let t = self.menu_title(i);
        Rect::new(t.x, MENU_Y + MENU_H + j as i32 * ITEM_H, POPUP_W, ITEM_H)
    }
    /// The Name Box.
    pub fn namebox(&self) -> Rect {
        Rect::new(4, FBAR_Y + 2, NAMEBOX_W, FBAR_H - 4)
    }
    /// The input line (formula bar).
    pub fn input(&self) -> Rect {
        Rect::new(INPUT_X, FBAR_Y + 2, self.width - INPUT_X - 8, FBAR_H - 4)
    }
    /// The add-sheet button.
    pub fn add_sheet(&self) -> Rect {
        Rect::new(4, self.tab_y() + 3, ADD_W, TAB_H - 6)
    }
    /// Sheet tab `i` (it may lie past the screen's edge).
    pub fn tab(&self, i: usize) -> Rect {
        Rect::new(
            ADD_W + 12 + i as i32 * TAB_W,
            self.tab_y() + 3,
            TAB_W - 4,
            TAB_H - 6,
        )
    }
    /// A context menu's item `j`, the menu opened at (`x`, `y`) with `n` items (kept on screen).
    pub fn context_item(&self, x: i32, y: i32, n: usize, j: usize) -> Rect {
        let x = x.min(self.width - POPUP_W).max(0);
        let y = y.min(self.height - n as i32 * ITEM_H).max(0);
        Rect::new(x, y + j as i32 * ITEM_H, POPUP_W, ITEM_H)
    }
    /// The dialog's frame.
    pub fn dialog(&self) -> Rect {
        Rect::new(
            (self.width - DIALOG_W) / 2,
            (self.height - DIALOG_H) / 2,
            DIALOG_W,
            DIALOG_H,
        )
    }
    /// The dialog's text field.
    pub fn dialog_field(&self) -> Rect {
        let d = self.dialog();
        Rect::new(d.x + 100, d.y + 50, DIALOG_W - 120, 26)
    }
    /// The dialog's option `i` (radio buttons under the field).
    pub fn dialog_option(&self, i: usize) -> Rect {
        let d = self.dialog();
        Rect::new(d.x + 20 + i as i32 * 200, d.y + 92, 190, 24)
    }
    /// The dialog's OK (or Yes) button.
    pub fn dialog_ok(&self) -> Rect {
        let d = self.dialog();
        Rect::new(d.x + DIALOG_W - 220, d.y + DIALOG_H - 44, 96, 30)
    }
    /// The dialog's Cancel (or No) button.
    pub fn dialog_cancel(&self) -> Rect {
        let d = self.dialog();
        Rect::new(d.x + DIALOG_W - 112, d.y + DIALOG_H - 44, 96, 30)
    }
}
