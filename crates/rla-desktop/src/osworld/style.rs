//! A cell's style read from a saved .xlsx file as OSWorld's `check_cell` reads it: the
//! workbook loaded by openpyxl 3.1 and the property taken by `utils._read_cell_style` —
//! `number_format`, `font_name`, `font_family`, `font_color`, `font_bold`, `font_italic`,
//! `font_underline`, `font_size`, `fill_type`, `bgcolor`/`fgcolor`, `hyperlink` and `merge`.
//!
//! openpyxl's readings are kept as they are, quirks included: a font property of a cell without
//! a value is `None`; `number_format` is `None` unless the cell holds a plain number (a number
//! under a date format is a date, a formula is a formula); a theme or indexed colour's `rgb` is
//! not a string (openpyxl returns its descriptor), and neither is a hyperlink (an object), so
//! neither equals any text; a gradient fill has no foreground colour (`None`).

use crate::sheet::xmlpart::{attr, entry, text_of};
use quick_xml::events::Event;
use quick_xml::Reader;
use std::collections::HashMap;
use std::path::Path;

/// A value as Python sees it, for the rules that compare it.
#[derive(Debug, Clone, PartialEq)]
pub enum PyValue {
    /// `None`.
    None,
    /// `True` or `False`.
    Bool(bool),
    /// A float.
    Num(f64),
    /// A string.
    Str(String),
    /// An object that is neither (equal to no number or string; not a string for `re`).
    Object,
}

/// The properties `_read_cell_style` reads.
pub const PROPERTIES: [&str; 13] = [
    "number_format",
    "font_name",
    "font_family",
    "font_color",
    "font_bold",
    "font_italic",
    "font_underline",
    "font_size",
    "fill_type",
    "bgcolor",
    "fgcolor",
    "hyperlink",
    "merge",
];

/// openpyxl's `BUILTIN_FORMATS`: the number formats with ids below 164 that a file need not
/// define.
fn builtin_format(id: u32) -> Option<&'static str> {
    Some(match id {
        0 => "General",
        1 => "0",
        2 => "0.00",
        3 => "#,##0",
        4 => "#,##0.00",
        5 => "\"$\"#,##0_);(\"$\"#,##0)",
        6 => "\"$\"#,##0_);[Red](\"$\"#,##0)",
        7 => "\"$\"#,##0.00_);(\"$\"#,##0.00)",
        8 => "\"$\"#,##0.00_);[Red](\"$\"#,##0.00)",
        9 => "0%",
        10 => "0.00%",
        11 => "0.00E+00",
        12 => "# ?/?",
        13 => "# ??/??",
        14 => "mm-dd-yy",
        15 => "d-mmm-yy",
        16 => "d-mmm",
        17 => "mmm-yy",
        18 => "h:mm AM/PM",
        19 => "h:mm:ss AM/PM",
        20 => "h:mm",
        21 => "h:mm:ss",
        22 => "m/d/yy h:mm",
        37 => "#,##0_);(#,##0)",
        38 => "#,##0_);[Red](#,##0)",
        39 => "#,##0.00_);(#,##0.00)",
        40 => "#,##0.00_);[Red](#,##0.00)",
        41 => r#"_(* #,##0_);_(* \(#,##0\);_(* "-"_);_(@_)"#,
        42 => r#"_("$"* #,##0_);_("$"* \(#,##0\);_("$"* "-"_);_(@_)"#,
        43 => r#"_(* #,##0.00_);_(* \(#,##0.00\);_(* "-"??_);_(@_)"#,
        44 => r#"_("$"* #,##0.00_)_("$"* \(#,##0.00\)_("$"* "-"??_)_(@_)"#,
        45 => "mm:ss",
        46 => "[h]:mm:ss",
        47 => "mmss.0",
        48 => "##0.0E+0",
        49 => "@",
        _ => return None,
    })
}

/// openpyxl's `is_date_format`: the first section of the format, without quoted text and
/// bracketed locale or colour codes, holds a date or time letter not escaped by `_` or `\`.
pub fn is_date_format(fmt: &str) -> bool {
    let first = fmt.split(';').next().unwrap_or("");
    // ".*?" and \[(?!hh?\]|mm?\]|ss?\])[^\]]*\] removed, left to right
    let mut kept = String::new();
    let cs: Vec<char> = first.chars().collect();
    let mut i = 0;
    while i < cs.len() {
        if cs[i] == '"' {
            if let Some(j) = cs[i + 1..].iter().position(|&c| c == '"') {
                i += j + 2;
                continue;
            }
        }
        if cs[i] == '[' {
            if let Some(j) = cs[i + 1..].iter().position(|&c| c == ']') {
                let inner: String = cs[i + 1..i + 1 + j].iter().collect();
                let elapsed = matches!(inner.as_str(), "h" | "hh" | "m" | "mm" | "s" | "ss");
                if !elapsed {
                    i += j + 2;
                    continue;
                }
            }
        }
        kept.push(cs[i]);
        i += 1;
    }
    let k: Vec<char> = kept.chars().collect();
    k.iter()
        .enumerate()
        .any(|(i, c)| "dmhysDMHYS".contains(*c) && (i == 0 || !matches!(k[i - 1], '_' | '\\')))
}

/// A colour as openpyxl reads it: `rgb` is a string only for an rgb colour.
#[derive(Debug, Clone, Default)]
struct Color {
    rgb: Option<String>,
}

impl Color {
    fn of(e: &quick_xml::events::BytesStart) -> Color {
        // openpyxl: indexed, then theme, then auto win over rgb
        let other = ["indexed", "theme", "auto"]
            .iter()
            .any(|k| attr(e, k).is_some());
        Color {
            rgb: if other {
                None
            } else {
                Some(attr(e, "rgb").unwrap_or_else(|| "00000000".into()))
            },
        }
    }

    fn value(c: &Option<Color>) -> Result<PyValue, ()> {
        match c {
            None => Err(()), // None.rgb raises
            Some(Color { rgb: Some(s) }) => Ok(PyValue::Str(s.clone())),
            Some(Color { rgb: None }) => Ok(PyValue::Object),
        }
    }
}

#[derive(Debug, Clone, Default)]
struct Font {
    name: Option<String>,
    family: Option<f64>,
    color: Option<Color>,
    bold: bool,
    italic: bool,
    underline: Option<String>,
    size: Option<f64>,
}

#[derive(Debug, Clone)]
struct Fill {
    gradient: bool,
    fg: Color,
}

impl Default for Fill {
    /// openpyxl's `PatternFill()`: its foreground colour is black, `00000000`.
    fn default() -> Fill {
        Fill {
            gradient: false,
            fg: Color {
                rgb: Some("00000000".into()),
            },
        }
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Xf {
    num_fmt: u32,
    font: usize,
    fill: usize,
}

/// The parts of `xl/styles.xml` the properties read.
#[derive(Debug, Default)]
struct Styles {
    formats: HashMap<u32, String>,
    fonts: Vec<Font>,
    fills: Vec<Fill>,
    xfs: Vec<Xf>,
}

/// `<b/>`, `<b val="1"/>`, `<b val="true"/>` are true; `val="0"` or `"false"` false.
fn nested_bool(e: &quick_xml::events::BytesStart) -> bool {
    !matches!(attr(e, "val").as_deref(), Some("0") | Some("false"))
}

fn parse_styles(xml: &[u8]) -> Styles {
    let mut st = Styles::default();
    let mut r = Reader::from_reader(xml);
    let mut buf = Vec::new();
    #[derive(PartialEq)]
    enum In {
        None,
        Fonts,
        Fills,
        CellXfs,
    }
    let mut section = In::None;
    let mut font: Option<Font> = None;
    let mut fill: Option<Fill> = None;
    let mut in_fg = false;
    loop {
        let ev = r.read_event_into(&mut buf);
        let (e, empty) = match &ev {
            Ok(Event::Start(e)) => (Some(e.clone()), false),
            Ok(Event::Empty(e)) => (Some(e.clone()), true),
            Ok(Event::End(e)) => {
                match e.local_name().as_ref() {
                    "fonts" | "fills" | "cellXfs" => section = In::None,
                    "font" if section == In::Fonts => {
                        st.fonts.extend(font.take());
                    }
                    "fill" if section == In::Fills => {
                        st.fills.extend(fill.take());
                    }
                    "patternFill" => in_fg = false,
                    _ => {}
                }
                buf.clear();
                continue;
            }
            Ok(Event::Eof) | Err(_) => break,
            _ => (None, false),
        };
        if let Some(e) = e {
            match (e.local_name().as_ref(), &section) {
                ("numFmt", _) => {
                    if let (Some(id), Some(code)) = (
                        attr(&e, "numFmtId").and_then(|x| x.parse().ok()),
                        attr(&e, "formatCode"),
                    ) {
                        st.formats.insert(id, code);
                    }
                }
                ("fonts", _) => section = In::Fonts,
                ("fills", _) => section = In::Fills,
                ("cellXfs", _) => section = In::CellXfs,
                ("font", In::Fonts) => {
                    if empty {
                        st.fonts.push(Font::default());
                    } else {
                        font = Some(Font::default());
                    }
                }
                ("fill", In::Fills) => {
                    if empty {
                        st.fills.push(Fill::default());
                    } else {
                        fill = Some(Fill::default());
                    }
                }
                ("xf", In::CellXfs) => {
                    let n = |k: &str| attr(&e, k).and_then(|x| x.parse::<usize>().ok());
                    st.xfs.push(Xf {
                        num_fmt: n("numFmtId").unwrap_or(0) as u32,
                        font: n("fontId").unwrap_or(0),
                        fill: n("fillId").unwrap_or(0),
                    });
                }
                (tag, In::Fonts) => {
                    if let Some(f) = font.as_mut() {
                        let val = attr(&e, "val");
                        match tag {
                            "name" => f.name = val,
                            "family" => f.family = val.and_then(|v| v.parse().ok()),
                            "sz" => f.size = val.and_then(|v| v.parse().ok()),
                            "b" => f.bold = nested_bool(&e),
                            "i" => f.italic = nested_bool(&e),
                            "u" => {
                                f.underline = match val.as_deref() {
                                    None => Some("single".into()),
                                    Some("none") => None,
                                    Some(v) => Some(v.to_string()),
                                }
                            }
                            "color" => f.color = Some(Color::of(&e)),
                            _ => {}
                        }
                    }
                }
                (tag, In::Fills) => {
                    if let Some(f) = fill.as_mut() {
                        match tag {
                            "gradientFill" => f.gradient = true,
                            "patternFill" => in_fg = !empty,
                            "fgColor" if in_fg => f.fg = Color::of(&e),
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        buf.clear();
    }
    st
}

/// The cell's XML: its style index, type, and whether it holds a value (openpyxl's `value is
/// not None`).
#[derive(Debug, Clone, Default)]
struct CellXml {
    style: usize,
    t: String,
    has_value: bool,
    formula: bool,
}

/// A data validation as openpyxl reads it (`DataValidation`'s attributes).
#[derive(Debug, Clone, Default)]
pub struct Validation {
    /// `sqref` (openpyxl's `ranges`, a `MultiCellRange`): its ranges.
    pub ranges: Vec<String>,
    /// The other attributes by name (`type`, `operator`, `allowBlank`, …) and the texts of
    /// `formula1` and `formula2`, as Python values.
    pub attrs: HashMap<String, PyValue>,
}

/// A sheet as openpyxl reads what the rules look at: its cells' styles and values, merged
/// ranges, hyperlinks, its first view (zoom, pane), its rows' dimensions, its data validations
/// and whether it has conditional formatting.
#[derive(Debug, Default)]
pub struct StyledSheet {
    styles: Styles,
    cells: HashMap<crate::sheet::addr::Addr, CellXml>,
    merged: Vec<String>,
    links: Vec<String>,
    /// `sheet_view.zoomScale`.
    pub zoom: Option<f64>,
    /// `freeze_panes`: the pane's `topLeftCell` (`Some(None)`: a pane without one).
    pub pane: Option<Option<String>>,
    /// The rows openpyxl keeps dimensions for (a `<row>` with an attribute besides `r` and
    /// `spans`): their numbers and `hidden`.
    pub rows: Vec<(u32, bool)>,
    /// The data validations, in order.
    pub validations: Vec<Validation>,
    /// The sheet has conditional formatting.
    pub conditional: bool,
}

/// openpyxl's boolean attributes: `1` or `true`.
fn xml_bool(v: Option<String>) -> bool {
    matches!(v.as_deref(), Some("1") | Some("true"))
}

fn parse_sheet(xml: &[u8], styles: Styles) -> StyledSheet {
    let mut sh = StyledSheet {
        styles,
        ..Default::default()
    };
    let mut r = Reader::from_reader(xml);
    let mut buf = Vec::new();
    let mut cell: Option<(crate::sheet::addr::Addr, CellXml)> = None;
    let (mut in_v, mut in_is, mut in_view) = (false, false, 0usize);
    let mut views = 0usize;
    let mut formula: Option<(String, String)> = None; // (which, text so far)
    loop {
        let ev = r.read_event_into(&mut buf);
        match &ev {
            Ok(Event::Start(e)) | Ok(Event::Empty(e)) => {
                let empty = matches!(ev, Ok(Event::Empty(_)));
                match e.local_name().as_ref() {
                    "c" => {
                        let at = attr(e, "r").and_then(|a| crate::sheet::addr::Addr::parse(&a));
                        let c = CellXml {
                            style: attr(e, "s").and_then(|s| s.parse().ok()).unwrap_or(0),
                            t: attr(e, "t").unwrap_or_else(|| "n".into()),
                            ..Default::default()
                        };
                        if let Some(at) = at {
                            if empty {
                                sh.cells.insert(at, c);
                            } else {
                                cell = Some((at, c));
                            }
                        }
                    }
                    "v" if cell.is_some() => in_v = !empty,
                    "f" => {
                        if let Some((_, c)) = cell.as_mut() {
                            c.formula = true;
                        }
                    }
                    "is" => {
                        if let Some((_, c)) = cell.as_mut() {
                            // openpyxl reads an inline string's text, empty or not
                            if c.t == "inlineStr" {
                                c.has_value = true;
                            }
                        }
                        in_is = !empty;
                    }
                    "row" => {
                        // openpyxl drops namespaced attributes ({uri}name) and keeps a row
                        // with anything besides r and spans
                        let relevant = e.attributes().flatten().any(|a| {
                            let k = a.key.as_ref();
                            !k.contains(':') && k != "r" && k != "spans"
                        });
                        if let (true, Some(n)) =
                            (relevant, attr(e, "r").and_then(|x| x.parse().ok()))
                        {
                            sh.rows.push((n, xml_bool(attr(e, "hidden"))));
                        }
                    }
                    "sheetView" => {
                        views += 1;
                        if views == 1 {
                            sh.zoom = attr(e, "zoomScale").and_then(|z| z.parse().ok());
                            in_view = if empty { 0 } else { 1 };
                        }
                    }
                    "pane" if in_view == 1 => sh.pane = Some(attr(e, "topLeftCell")),
                    "mergeCell" => sh.merged.extend(attr(e, "ref")),
                    "hyperlink" => sh.links.extend(attr(e, "ref")),
                    "conditionalFormatting" => sh.conditional = true,
                    "dataValidation" => {
                        let mut v = Validation::default();
                        for a in e.attributes().flatten() {
                            let k = a.key.local_name().as_ref().to_string();
                            let val = a
                                .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                                .map(|x| x.into_owned())
                                .unwrap_or_default();
                            if k == "sqref" {
                                v.ranges = val.split_whitespace().map(str::to_string).collect();
                                continue;
                            }
                            let py = match k.as_str() {
                                "allowBlank" | "showDropDown" | "showInputMessage"
                                | "showErrorMessage" => PyValue::Bool(xml_bool(Some(val))),
                                _ => PyValue::Str(val),
                            };
                            v.attrs.insert(k, py);
                        }
                        sh.validations.push(v);
                    }
                    "formula1" | "formula2" if !sh.validations.is_empty() && !empty => {
                        formula = Some((e.local_name().as_ref().to_string(), String::new()));
                    }
                    _ => {}
                }
            }
            Ok(Event::End(e)) => match e.local_name().as_ref() {
                "c" => {
                    if let Some((at, c)) = cell.take() {
                        sh.cells.insert(at, c);
                    }
                }
                "v" => in_v = false,
                "is" => in_is = false,
                "sheetView" => in_view = 0,
                "formula1" | "formula2" => {
                    if let (Some((k, text)), Some(v)) = (formula.take(), sh.validations.last_mut())
                    {
                        v.attrs.insert(k, PyValue::Str(text));
                    }
                }
                _ => {}
            },
            Ok(ref e @ (Event::Text(_) | Event::GeneralRef(_))) => {
                let text = text_of(e);
                if let Some((_, f)) = formula.as_mut() {
                    f.push_str(&text);
                } else if in_v && !in_is && !text.is_empty() {
                    if let Some((_, c)) = cell.as_mut() {
                        c.has_value = true;
                    }
                }
            }
            Ok(Event::Eof) | Err(_) => break,
            _ => {}
        }
        buf.clear();
    }
    sh
}

fn covers(range: &str, at: crate::sheet::addr::Addr) -> Option<bool> {
    let (a, b) = match range.split_once(':') {
        Some((a, b)) => (
            crate::sheet::addr::Addr::parse(a)?,
            crate::sheet::addr::Addr::parse(b)?,
        ),
        None => {
            let a = crate::sheet::addr::Addr::parse(range)?;
            (a, a)
        }
    };
    Some(a.row <= at.row && at.row <= b.row && a.col <= at.col && at.col <= b.col)
}

/// A workbook's package and the part of its sheet `sheet`; `None` when the file, the package or
/// the sheet is missing.
pub(crate) fn open_sheet(
    path: &Path,
    sheet: &str,
) -> Option<(zip::ZipArchive<std::fs::File>, String)> {
    let mut z = zip::ZipArchive::new(rla_core::file::open(path).ok()?).ok()?;
    let part = sheet_part(&mut z, sheet)?;
    Some((z, part))
}

/// The part of a sheet by its name, as openpyxl finds it: `xl/workbook.xml`'s `<sheet>` and its
/// relationship's target.
pub(crate) fn sheet_part(z: &mut zip::ZipArchive<std::fs::File>, sheet: &str) -> Option<String> {
    let wb = entry(z, "xl/workbook.xml")?;
    let mut rid = None;
    let mut r = Reader::from_reader(wb.as_slice());
    let mut buf = Vec::new();
    loop {
        match r.read_event_into(&mut buf) {
            Ok(Event::Start(e)) | Ok(Event::Empty(e))
                if e.local_name().as_ref() == "sheet"
                    && attr(&e, "name").as_deref() == Some(sheet) =>
            {
                rid = attr(&e, "id");
                break;
            }
            Ok(Event::Eof) | Err(_) => break,
            _ => {}
        }
        buf.clear();
    }
    let rid = rid?;
    let rels = entry(z, "xl/_rels/workbook.xml.rels")?;
    let mut r = Reader::from_reader(rels.as_slice());
    let mut buf = Vec::new();
    loop {
        match r.read_event_into(&mut buf) {
            Ok(Event::Start(e)) | Ok(Event::Empty(e))
                if e.local_name().as_ref() == "Relationship"
                    && attr(&e, "Id").as_deref() == Some(rid.as_str()) =>
            {
                let t = attr(&e, "Target")?;
                return Some(match t.strip_prefix('/') {
                    Some(abs) => abs.to_string(),
                    None => format!("xl/{t}"),
                });
            }
            Ok(Event::Eof) | Err(_) => return None,
            _ => {}
        }
        buf.clear();
    }
}

impl StyledSheet {
    /// Loads a sheet of the workbook at `path` by its name; `Err` says why openpyxl would not
    /// (no file, not a workbook, no such sheet).
    pub fn open(path: &Path, sheet: &str) -> Result<StyledSheet, String> {
        let f = rla_core::file::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut z = zip::ZipArchive::new(f)
            .map_err(|e| format!("{}: not a workbook: {e}", path.display()))?;
        let styles = entry(&mut z, "xl/styles.xml")
            .map(|x| parse_styles(&x))
            .unwrap_or_default();
        let part = sheet_part(&mut z, sheet)
            .ok_or_else(|| format!("{}: no sheet {sheet:?}", path.display()))?;
        let xml =
            entry(&mut z, &part).ok_or_else(|| format!("{}: no part {part}", path.display()))?;
        Ok(parse_sheet(&xml, styles))
    }

    /// `(max_row, max_column)` as openpyxl counts them from the cells it read (1-based;
    /// `None` for a sheet without cells).
    pub fn extent(&self) -> Option<(u32, u32)> {
        let r = self.cells.keys().map(|a| a.row).max()?;
        let c = self.cells.keys().map(|a| a.col).max()?;
        Some((r + 1, c + 1))
    }

    /// `_read_cell_style(prop, sheet[at])`: `Ok(value)`, or `Err` with what Python raises
    /// (which `check_cell` turns into `None`). `prop` must be one of [`PROPERTIES`].
    pub fn prop(&self, at: crate::sheet::addr::Addr, prop: &str) -> Result<PyValue, String> {
        let raise = |m: &str| Err(format!("openpyxl raises reading {prop} of {at}: {m}"));
        let cell = self.cells.get(&at).cloned().unwrap_or(CellXml {
            t: "n".into(),
            ..Default::default()
        });
        let has_value = cell.has_value || cell.formula;
        let styles = &self.styles;
        let xf = styles.xfs.get(cell.style).copied().unwrap_or_default();
        let format = styles
            .formats
            .get(&xf.num_fmt)
            .cloned()
            .or_else(|| builtin_format(xf.num_fmt).map(str::to_string))
            .unwrap_or_else(|| "General".into());
        let default_font = Font::default();
        let font = styles.fonts.get(xf.font).unwrap_or(&default_font);
        let default_fill = Fill::default();
        let fill = styles.fills.get(xf.fill).unwrap_or(&default_fill);
        let when_value = |v: PyValue| if has_value { v } else { PyValue::None };
        let opt_str = |s: &Option<String>| s.clone().map(PyValue::Str).unwrap_or(PyValue::None);
        let opt_num = |x: Option<f64>| x.map(PyValue::Num).unwrap_or(PyValue::None);
        let in_any = |ranges: &[String]| ranges.iter().any(|r| covers(r, at) == Some(true));
        Ok(match prop {
            "number_format" => {
                // a plain number: not a formula, not under a date format, not text or a boolean
                let numeric = !cell.formula && cell.t == "n" && !is_date_format(&format);
                if has_value && numeric {
                    PyValue::Str(format)
                } else {
                    PyValue::None
                }
            }
            "font_name" => when_value(opt_str(&font.name)),
            "font_family" => when_value(opt_num(font.family)),
            "font_color" => {
                if !has_value {
                    PyValue::None
                } else {
                    match Color::value(&font.color) {
                        Ok(v) => v,
                        Err(()) => return raise("the font has no colour"),
                    }
                }
            }
            "font_bold" => when_value(PyValue::Bool(font.bold)),
            "font_italic" => when_value(PyValue::Bool(font.italic)),
            "font_underline" => when_value(opt_str(&font.underline)),
            "font_size" => when_value(opt_num(font.size)),
            "fill_type" => PyValue::Str(
                if fill.gradient {
                    "gradientFill"
                } else {
                    "patternFill"
                }
                .into(),
            ),
            "bgcolor" | "fgcolor" => {
                if fill.gradient {
                    PyValue::None
                } else {
                    Color::value(&Some(fill.fg.clone())).unwrap_or(PyValue::None)
                }
            }
            "hyperlink" => {
                if !has_value {
                    PyValue::None
                } else if in_any(&self.links) {
                    PyValue::Object
                } else {
                    PyValue::Str(String::new())
                }
            }
            "merge" => PyValue::Bool(self.merged.iter().any(|r| {
                let top_left = r
                    .split(':')
                    .next()
                    .and_then(crate::sheet::addr::Addr::parse);
                covers(r, at) == Some(true) && top_left != Some(at)
            })),
            _ => return raise("NotImplementedError: Unsupported Style"),
        })
    }
}

/// The error for a property `_read_cell_style` does not know (`NotImplementedError` in OSWorld,
/// which `check_cell` turns into `None`; named here, as a rule that cannot pass).
pub fn check_property(prop: &str) -> Result<(), String> {
    if PROPERTIES.contains(&prop) {
        Ok(())
    } else {
        Err(format!(
            "check_cell property {prop:?} is not one OSWorld reads ({}, and value)",
            PROPERTIES.join(", ")
        ))
    }
}

/// `_read_cell_style(prop, sheet[coordinate])` on the workbook at `path`: `Ok(value)`, or
/// `Err` with what Python raises (which `check_cell` turns into `None`). A property openpyxl's
/// reader does not know is a clear error.
pub fn read_cell_style(
    path: &Path,
    sheet: &str,
    coordinate: &str,
    prop: &str,
) -> Result<Result<PyValue, String>, String> {
    check_property(prop)?;
    let Some(at) = crate::sheet::addr::Addr::parse(coordinate) else {
        return Ok(Err(format!("{coordinate:?} is not a cell")));
    };
    Ok(StyledSheet::open(path, sheet).and_then(|s| s.prop(at, prop)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_formats_are_told_as_openpyxl_tells_them() {
        for f in [
            "yyyy-mm-dd",
            "mm-dd-yy",
            "h:mm",
            "[h]:mm:ss",
            "d-mmm",
            "[$-409]mmmm d, yyyy",
        ] {
            assert!(is_date_format(f), "{f}");
        }
        for f in [
            "General",
            "0.00%",
            "#,##0",
            "\"days\" 0",
            "[Red]0.00",
            "0_)",
            "@",
            "\\d0",
        ] {
            assert!(!is_date_format(f), "{f}");
        }
    }
}
