//! Screenshots: the desktop drawn from its accessibility tree into an RGB image (8×8 bitmap
//! font), optionally with set-of-marks boxes and numbers over the interactive elements,
//! scaled to the configured resolution and encoded as PNG.

use crate::ui::a11y::Node;
use crate::ui::app::Desktop;
use crate::ui::layout::Rect;
use font8x8::UnicodeFonts;

/// An RGB image.
pub struct Image {
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
    /// Pixels, row by row, 3 bytes each.
    pub rgb: Vec<u8>,
}

type Rgb = [u8; 3];
const WHITE: Rgb = [255, 255, 255];
const BAR: Rgb = [239, 239, 239];
const TITLE: Rgb = [48, 48, 48];
const LINE: Rgb = [208, 208, 208];
const HEAD: Rgb = [226, 226, 226];
const TEXT: Rgb = [20, 20, 20];
const SELECTED: Rgb = [198, 219, 245];
const FOCUS: Rgb = [30, 90, 200];
const MARK: Rgb = [220, 30, 30];

impl Image {
    fn new(width: u32, height: u32) -> Image {
        Image {
            width,
            height,
            rgb: vec![255; width as usize * height as usize * 3],
        }
    }

    fn fill(&mut self, r: Rect, c: Rgb) {
        let (x0, y0) = (r.x.max(0) as u32, r.y.max(0) as u32);
        let x1 = ((r.x + r.w).max(0) as u32).min(self.width);
        let y1 = ((r.y + r.h).max(0) as u32).min(self.height);
        for y in y0..y1 {
            let row = (y * self.width) as usize * 3;
            for x in x0..x1 {
                let i = row + x as usize * 3;
                self.rgb[i..i + 3].copy_from_slice(&c);
            }
        }
    }

    fn outline(&mut self, r: Rect, c: Rgb, t: i32) {
        self.fill(Rect::new(r.x, r.y, r.w, t), c);
        self.fill(Rect::new(r.x, r.y + r.h - t, r.w, t), c);
        self.fill(Rect::new(r.x, r.y, t, r.h), c);
        self.fill(Rect::new(r.x + r.w - t, r.y, t, r.h), c);
    }

    fn text(&mut self, x: i32, y: i32, s: &str, c: Rgb, max_w: i32) {
        let mut cx = x;
        for ch in s.chars() {
            if cx + 8 > x + max_w {
                break;
            }
            let glyph = font8x8::BASIC_FONTS
                .get(ch)
                .or_else(|| font8x8::BASIC_FONTS.get('?'));
            if let Some(g) = glyph {
                for (gy, bits) in g.iter().enumerate() {
                    for gx in 0..8 {
                        if bits & (1 << gx) != 0 {
                            let (px, py) = (cx + gx, y + gy as i32);
                            if px >= 0
                                && py >= 0
                                && (px as u32) < self.width
                                && (py as u32) < self.height
                            {
                                let i = (py as u32 * self.width + px as u32) as usize * 3;
                                self.rgb[i..i + 3].copy_from_slice(&c);
                            }
                        }
                    }
                }
            }
            cx += 8;
        }
    }

    /// Most pixels a side of a scaled image may have.
    pub const MAX_SIDE: u32 = 8192;

    /// The image scaled to `width × height` (nearest neighbour); each side from 1 to
    /// [`Image::MAX_SIDE`].
    pub fn scaled(&self, width: u32, height: u32) -> Result<Image, String> {
        if !(1..=Self::MAX_SIDE).contains(&width) || !(1..=Self::MAX_SIDE).contains(&height) {
            return Err(format!(
                "an image of {width}×{height}: each side must be from 1 to {}",
                Self::MAX_SIDE
            ));
        }
        if width == self.width && height == self.height {
            return Ok(Image {
                width,
                height,
                rgb: self.rgb.clone(),
            });
        }
        let mut out = Image::new(width, height);
        for y in 0..height {
            let sy = (y as u64 * self.height as u64 / height as u64) as u32;
            for x in 0..width {
                let sx = (x as u64 * self.width as u64 / width as u64) as u32;
                let (i, j) = (
                    ((y * width + x) * 3) as usize,
                    ((sy * self.width + sx) * 3) as usize,
                );
                out.rgb[i..i + 3].copy_from_slice(&self.rgb[j..j + 3]);
            }
        }
        Ok(out)
    }

    /// An 8-bit RGB or RGBA PNG (a real desktop's screenshot) as an image.
    pub fn from_png(bytes: &[u8]) -> Result<Image, String> {
        let mut r = png::Decoder::new(std::io::Cursor::new(bytes))
            .read_info()
            .map_err(|e| format!("not a PNG: {e}"))?;
        let (w, h) = (r.info().width, r.info().height);
        if w > Self::MAX_SIDE || h > Self::MAX_SIDE {
            return Err(format!(
                "a PNG of {w}×{h} is over {} a side",
                Self::MAX_SIDE
            ));
        }
        let mut buf = vec![0; r.output_buffer_size()];
        let info = r
            .next_frame(&mut buf)
            .map_err(|e| format!("the PNG does not decode: {e}"))?;
        let ch = match (info.color_type, info.bit_depth) {
            (png::ColorType::Rgb, png::BitDepth::Eight) => 3,
            (png::ColorType::Rgba, png::BitDepth::Eight) => 4,
            (c, d) => {
                return Err(format!(
                    "a {c:?} PNG of depth {d:?} (8-bit RGB or RGBA are read)"
                ))
            }
        };
        let rgb = buf[..info.buffer_size()]
            .chunks(ch)
            .flat_map(|p| [p[0], p[1], p[2]])
            .collect();
        Ok(Image {
            width: info.width,
            height: info.height,
            rgb,
        })
    }

    /// PNG bytes.
    pub fn png(&self) -> Vec<u8> {
        let mut out = Vec::new();
        {
            let mut enc = png::Encoder::new(&mut out, self.width, self.height);
            enc.set_color(png::ColorType::Rgb);
            enc.set_depth(png::BitDepth::Eight);
            let mut w = enc.write_header().expect("a PNG header writes to memory");
            w.write_image_data(&self.rgb)
                .expect("PNG data writes to memory");
        }
        out
    }
}

/// Draws the desktop (its nodes, as [`crate::ui::a11y::tree`] gives them), with numbered boxes
/// around the interactive nodes when `marks` is set.
pub fn draw(d: &Desktop, nodes: &[Node], marks: bool) -> Image {
    let l = d.layout;
    let mut img = Image::new(l.width as u32, l.height as u32);
    img.fill(Rect::new(0, 0, l.width, crate::ui::layout::GRID_Y), BAR);
    img.fill(l.title(), TITLE);
    img.fill(
        Rect::new(0, l.tab_y(), l.width, crate::ui::layout::TAB_H),
        BAR,
    );
    // grid lines for every visible cell
    for r in 0..l.rows() {
        for c in 0..l.cols() {
            img.outline(l.cell(r, c), LINE, 1);
        }
    }
    for n in nodes {
        let r = n.rect;
        let selected = n.description.contains("selected");
        let focused = n.description.contains("focused");
        match &*n.tag {
            "frame" => img.text(r.x + 8, r.y + 10, &n.name, WHITE, r.w - 16),
            "menu" | "menu-item" => {
                if n.tag == "menu-item" {
                    img.fill(Rect::new(r.x + 3, r.y + 3, r.w, r.h), [160, 160, 160]);
                    img.fill(r, if focused { SELECTED } else { WHITE });
                    img.outline(r, LINE, 1);
                }
                img.text(r.x + 8, r.y + (r.h - 8) / 2, &n.name, TEXT, r.w - 12);
            }
            "combo-box" | "text" => {
                img.fill(r, WHITE);
                img.outline(
                    r,
                    if focused || n.description.contains("editing") {
                        FOCUS
                    } else {
                        LINE
                    },
                    1,
                );
                img.text(r.x + 6, r.y + (r.h - 8) / 2, &n.text, TEXT, r.w - 10);
            }
            "column-header" | "row-header" => {
                img.fill(r, if selected { SELECTED } else { HEAD });
                img.outline(r, LINE, 1);
                let tw = n.name.chars().count() as i32 * 8;
                img.text(
                    r.x + (r.w - tw) / 2,
                    r.y + (r.h - 8) / 2,
                    &n.name,
                    TEXT,
                    r.w,
                );
            }
            "table-cell" => {
                if selected {
                    img.fill(r, SELECTED);
                    img.outline(r, LINE, 1);
                }
                let numeric = n.text.parse::<f64>().is_ok();
                let tw = (n.text.chars().count() as i32 * 8).min(r.w - 6);
                let x = if numeric { r.x + r.w - 4 - tw } else { r.x + 4 };
                img.text(x, r.y + (r.h - 8) / 2, &n.text, TEXT, r.w - 6);
                if focused {
                    img.outline(r, FOCUS, 2);
                }
            }
            "push-button" | "page-tab" | "radio-button" => {
                img.fill(r, if selected || focused { WHITE } else { HEAD });
                img.outline(
                    r,
                    if n.description.contains("checked") {
                        FOCUS
                    } else {
                        LINE
                    },
                    1,
                );
                let label = if n.text.is_empty() { &n.name } else { &n.text };
                let prefix = if n.tag == "radio-button" {
                    if n.description.contains("checked") {
                        "(*) "
                    } else {
                        "( ) "
                    }
                } else {
                    ""
                };
                img.text(
                    r.x + 6,
                    r.y + (r.h - 8) / 2,
                    &format!("{prefix}{label}"),
                    TEXT,
                    r.w - 8,
                );
            }
            "dialog" => {
                img.fill(Rect::new(r.x + 5, r.y + 5, r.w, r.h), [120, 120, 120]);
                img.fill(r, BAR);
                img.outline(r, TITLE, 1);
                img.fill(Rect::new(r.x, r.y, r.w, 24), TITLE);
                img.text(r.x + 8, r.y + 8, &n.name, WHITE, r.w - 16);
            }
            "label" => img.text(r.x + 4, r.y + (r.h - 8) / 2, &n.text, TEXT, r.w - 4),
            _ => {}
        }
    }
    if marks {
        for (i, n) in crate::ui::a11y::marks(nodes).iter().enumerate() {
            img.outline(n.rect, MARK, 1);
            let label = (i + 1).to_string();
            let w = label.len() as i32 * 8 + 2;
            img.fill(Rect::new(n.rect.x, n.rect.y, w, 10), MARK);
            img.text(n.rect.x + 1, n.rect.y + 1, &label, WHITE, w);
        }
    }
    img
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sheet::workbook::Workbook;
    use crate::ui::a11y::{tree, TreeOptions};

    #[test]
    fn a_screenshot_is_a_png_of_the_configured_size_and_shows_the_selection() {
        let d = Desktop::new(Workbook::default(), None, 1280, 720).unwrap();
        let nodes = tree(&d, TreeOptions::default());
        let img = draw(&d, &nodes, false);
        assert_eq!((img.width, img.height), (1280, 720));
        // the cursor cell A1 has the focus outline
        let r = d.layout.cell(0, 0);
        let i = ((r.y as u32 * img.width + r.x as u32) * 3) as usize;
        assert_eq!(&img.rgb[i..i + 3], &FOCUS);
        let small = img.scaled(640, 360).unwrap();
        assert!(img.scaled(0, 0).is_err() && img.scaled(100_000, 100_000).is_err());
        let png = small.png();
        assert_eq!(&png[1..4], b"PNG");
        let marked = draw(&d, &nodes, true);
        assert_ne!(marked.rgb, img.rgb, "marks are drawn");
    }
}
