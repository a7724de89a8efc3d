//! One cell read from an .xlsx file's XML as OSWorld's `read_cell_value` reads it: the sheet
//! found through `xl/workbook.xml`'s `sheetId` as `xl/worksheets/sheet{sheetId}.xml`, the cell
//! by its `r` attribute, its value by its `t` attribute and `<v>` element, shared strings from
//! `xl/sharedStrings.xml`. `sheet_fuzzy` and `check_cell`'s `value` read cells this way.

use crate::frame::py_float_repr;
use quick_xml::events::Event;
use quick_xml::Reader;
use std::io::Read;
use std::path::Path;

/// What `read_cell_value` returns.
#[derive(Debug, Clone, PartialEq)]
pub enum CellValue {
    /// `None`: no file, sheet or cell, no `<v>`, a number that does not parse, or a boolean
    /// (which it does not read).
    None,
    /// A number (`float(v)`).
    Float(f64),
    /// Text: a shared or inline string, a formula's string result, an error's text.
    Str(String),
}

impl CellValue {
    /// Python's `str()` of it.
    pub fn py_str(&self) -> String {
        match self {
            CellValue::None => "None".into(),
            CellValue::Float(x) => py_float_repr(*x),
            CellValue::Str(s) => s.clone(),
        }
    }
}

/// A cell's XML: its `t`, its `<v>` (absent, empty, or text) and its inline string.
#[derive(Debug, Default)]
struct Xml {
    t: Option<String>,
    v: Option<Option<String>>,
    inline: Option<String>,
}

fn entry(z: &mut zip::ZipArchive<std::fs::File>, name: &str) -> Option<Vec<u8>> {
    let f = z.by_name(name).ok()?;
    let mut out = Vec::new();
    f.take(crate::bounds::MAX_PART_BYTES)
        .read_to_end(&mut out)
        .ok()?;
    Some(out)
}

/// An element's attribute by local name, its value normalised as XML reads it.
pub(crate) fn attr(e: &quick_xml::events::BytesStart, key: &str) -> Option<String> {
    e.attributes()
        .flatten()
        .find(|a| a.key.local_name().as_ref() == key)
        .and_then(|a| {
            a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                .ok()
                .map(|v| v.into_owned())
        })
}

fn shared_strings(xml: &[u8]) -> Vec<String> {
    let mut r = Reader::from_reader(xml);
    let (mut out, mut cur, mut in_si, mut in_t) = (Vec::new(), String::new(), false, false);
    let mut buf = Vec::new();
    loop {
        match r.read_event_into(&mut buf) {
            Ok(Event::Start(e)) => match e.local_name().as_ref() {
                "si" => {
                    in_si = true;
                    cur.clear();
                }
                "t" if in_si => in_t = true,
                _ => {}
            },
            Ok(Event::End(e)) => match e.local_name().as_ref() {
                "si" => {
                    in_si = false;
                    out.push(std::mem::take(&mut cur));
                }
                "t" => in_t = false,
                _ => {}
            },
            Ok(ref e @ (Event::Text(_) | Event::GeneralRef(_))) if in_t => {
                cur.push_str(&text_of(e))
            }
            Ok(Event::Eof) | Err(_) => break,
            _ => {}
        }
        buf.clear();
    }
    out
}

/// The text of a text event or an entity reference (`&amp;`, `&#10;`, …).
fn text_of(e: &Event) -> String {
    match e {
        Event::Text(t) => t.xml10_content().into_owned(),
        Event::GeneralRef(g) => {
            if let Ok(Some(c)) = g.resolve_char_ref() {
                return c.to_string();
            }
            match g.as_ref() {
                "amp" => "&",
                "lt" => "<",
                "gt" => ">",
                "quot" => "\"",
                "apos" => "'",
                _ => "",
            }
            .to_string()
        }
        _ => String::new(),
    }
}

fn sheet_id(workbook: &[u8], name: &str) -> Option<String> {
    let mut r = Reader::from_reader(workbook);
    let mut buf = Vec::new();
    loop {
        match r.read_event_into(&mut buf) {
            Ok(Event::Empty(e)) | Ok(Event::Start(e))
                if e.local_name().as_ref() == "sheet"
                    && attr(&e, "name").as_deref() == Some(name) =>
            {
                return attr(&e, "sheetId");
            }
            Ok(Event::Eof) | Err(_) => return None,
            _ => {}
        }
        buf.clear();
    }
}

fn find_cell(sheet: &[u8], coordinate: &str) -> Option<Xml> {
    let mut r = Reader::from_reader(sheet);
    let mut buf = Vec::new();
    let mut cell: Option<Xml> = None;
    let (mut in_v, mut in_is_t) = (false, false);
    loop {
        let ev = r.read_event_into(&mut buf);
        match ev {
            Ok(Event::Start(e)) | Ok(Event::Empty(e)) => match e.local_name().as_ref() {
                "c" if cell.is_none() && attr(&e, "r").as_deref() == Some(coordinate) => {
                    cell = Some(Xml {
                        t: attr(&e, "t"),
                        ..Default::default()
                    });
                }
                "v" if cell.is_some() => {
                    if let Some(c) = cell.as_mut() {
                        c.v = Some(None);
                    }
                    in_v = true;
                }
                "t" if cell.is_some() => {
                    if let Some(c) = cell.as_mut() {
                        c.inline.get_or_insert_with(String::new);
                    }
                    in_is_t = true;
                }
                _ => {}
            },
            Ok(Event::End(e)) => match e.local_name().as_ref() {
                "c" if cell.is_some() => return cell,
                "v" => in_v = false,
                "t" => in_is_t = false,
                _ => {}
            },
            Ok(Event::Text(_)) | Ok(Event::GeneralRef(_)) => {
                let text = text_of(ev.as_ref().expect("matched Ok"));
                if let Some(c) = cell.as_mut() {
                    if in_v {
                        let v = c.v.get_or_insert(None).get_or_insert_with(String::new);
                        v.push_str(&text);
                    } else if in_is_t {
                        c.inline.get_or_insert_with(String::new).push_str(&text);
                    }
                }
            }
            Ok(Event::Eof) | Err(_) => return cell,
            _ => {}
        }
        buf.clear();
    }
}

/// `read_cell_value(file, sheet, coordinate)`; `Err` where OSWorld's raises (a number cell
/// whose `<v>` is empty, as openpyxl writes a formula it did not compute; a shared-string index
/// out of range).
pub fn read_cell_value(path: &Path, sheet: &str, coordinate: &str) -> Result<CellValue, String> {
    let Ok(f) = std::fs::File::open(path) else {
        return Ok(CellValue::None);
    };
    let Ok(mut z) = zip::ZipArchive::new(f) else {
        return Ok(CellValue::None);
    };
    let shared = entry(&mut z, "xl/sharedStrings.xml")
        .map(|x| shared_strings(&x))
        .unwrap_or_default();
    let Some(wb) = entry(&mut z, "xl/workbook.xml") else {
        return Ok(CellValue::None);
    };
    let Some(id) = sheet_id(&wb, sheet) else {
        return Ok(CellValue::None);
    };
    let Some(xml) = entry(&mut z, &format!("xl/worksheets/sheet{id}.xml")) else {
        return Ok(CellValue::None);
    };
    let Some(c) = find_cell(&xml, coordinate) else {
        return Ok(CellValue::None);
    };
    let raise = |m: &str| {
        Err(format!(
            "OSWorld's read_cell_value raises on {coordinate} of {sheet:?}: {m}"
        ))
    };
    match c.t.as_deref() {
        None | Some("n") => match c.v {
            None => Ok(CellValue::None),
            Some(None) => raise("float() of an empty <v>"),
            Some(Some(v)) => Ok(v
                .trim()
                .parse::<f64>()
                .map(CellValue::Float)
                .unwrap_or(CellValue::None)),
        },
        Some("s") => match c.v {
            None => Ok(CellValue::None),
            Some(None) => raise("int() of an empty <v>"),
            Some(Some(v)) => match v.trim().parse::<usize>() {
                Err(_) => Ok(CellValue::None),
                Ok(i) => match shared.get(i) {
                    Some(s) => Ok(CellValue::Str(s.clone())),
                    None => raise("a shared-string index out of range"),
                },
            },
        },
        Some("str") | Some("e") => Ok(c.v.flatten().map(CellValue::Str).unwrap_or(CellValue::None)),
        Some("inlineStr") => Ok(c.inline.map(CellValue::Str).unwrap_or(CellValue::None)),
        _ => Ok(CellValue::None),
    }
}
