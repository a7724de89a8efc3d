//! One cell read from an .xlsx file's XML as OSWorld's `read_cell_value` reads it: the sheet
//! found through `xl/workbook.xml`'s `sheetId` as `xl/worksheets/sheet{sheetId}.xml`, the cell
//! by its `r` attribute, its value by its `t` attribute and `<v>` element, shared strings from
//! `xl/sharedStrings.xml`. `sheet_fuzzy` and `check_cell`'s `value` read cells this way.

use crate::osworld::frame::py_float_repr;
use crate::sheet::xmlpart::{attr, entry, text_of};
use quick_xml::events::Event;
use quick_xml::Reader;
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
    /// An inline string whose `<t>` has attributes (openpyxl writes `xml:space="preserve"`
    /// around text with outer spaces): xmltodict reads it as a dict, equal to no text. Holds
    /// the dict's Python `str()`.
    Dict(String),
}

impl CellValue {
    /// Python's `str()` of it.
    pub fn py_str(&self) -> String {
        match self {
            CellValue::None => "None".into(),
            CellValue::Float(x) => py_float_repr(*x),
            CellValue::Str(s) | CellValue::Dict(s) => s.clone(),
        }
    }
}

/// A cell's XML: its `t`, its `<v>` (absent, empty, or text) and its inline string with the
/// attributes of its `<t>`.
#[derive(Debug, Default)]
struct Xml {
    t: Option<String>,
    v: Option<Option<String>>,
    inline: Option<String>,
    inline_attrs: Vec<(String, String)>,
}

/// The shared strings as `read_cell_value` reads them: each `<si>`'s `<t>` texts joined; when
/// one `<t>` has no text at all (`<t/>`), joining raises and the whole table reads as empty.
fn shared_strings(xml: &[u8]) -> Vec<String> {
    let mut r = Reader::from_reader(xml);
    let (mut out, mut cur, mut in_si, mut in_t) = (Vec::new(), String::new(), false, false);
    let mut t_has_text = false;
    let mut buf = Vec::new();
    loop {
        match r.read_event_into(&mut buf) {
            Ok(Event::Start(e)) => match e.local_name().as_ref() {
                "si" => {
                    in_si = true;
                    cur.clear();
                }
                "t" if in_si => {
                    in_t = true;
                    t_has_text = false;
                }
                _ => {}
            },
            Ok(Event::Empty(e)) if in_si && e.local_name().as_ref() == "t" => return Vec::new(),
            Ok(Event::End(e)) => match e.local_name().as_ref() {
                "si" => {
                    in_si = false;
                    out.push(std::mem::take(&mut cur));
                }
                "t" if in_t => {
                    in_t = false;
                    if !t_has_text {
                        return Vec::new();
                    }
                }
                _ => {}
            },
            Ok(ref e @ (Event::Text(_) | Event::GeneralRef(_))) if in_t => {
                let text = text_of(e);
                t_has_text |= !text.is_empty() || matches!(e, Event::GeneralRef(_));
                cur.push_str(&text)
            }
            Ok(Event::Eof) | Err(_) => break,
            _ => {}
        }
        buf.clear();
    }
    out
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
                        c.inline_attrs = e
                            .attributes()
                            .flatten()
                            .map(|a| {
                                let key = a.key.as_ref().to_string();
                                let key = match key.strip_prefix("xml:") {
                                    Some(k) => format!("http://www.w3.org/XML/1998/namespace:{k}"),
                                    None => key,
                                };
                                let v = a
                                    .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                                    .map(|v| v.into_owned())
                                    .unwrap_or_default();
                                (key, v)
                            })
                            .collect();
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

/// A text as xmltodict keeps it: stripped, and `None` when nothing is left.
fn stripped(t: Option<String>) -> Option<String> {
    t.map(|t| t.trim().to_string()).filter(|t| !t.is_empty())
}

/// Python's `repr()` of a string (single quotes unless it holds one and no double quote).
fn py_repr(s: &str) -> String {
    let q = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::from(q);
    for ch in s.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == q => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out.push(q);
    out
}

/// `read_cell_value(file, sheet, coordinate)`; `Err` where OSWorld's raises (a number cell
/// whose `<v>` is empty, as openpyxl writes a formula it did not compute; a shared-string index
/// out of range).
pub fn read_cell_value(path: &Path, sheet: &str, coordinate: &str) -> Result<CellValue, String> {
    let Ok(f) = rla_core::file::open(path) else {
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
        // xmltodict strips the text of elements; an element left empty is None
        Some("str") | Some("e") => Ok(stripped(c.v.flatten())
            .map(CellValue::Str)
            .unwrap_or(CellValue::None)),
        Some("inlineStr") => {
            let text = stripped(c.inline);
            if c.inline_attrs.is_empty() {
                return Ok(text.map(CellValue::Str).unwrap_or(CellValue::None));
            }
            // attributes make the element a dict: {'@key': 'value', ..., '#text': 'text'}
            let mut items: Vec<String> = c
                .inline_attrs
                .iter()
                .map(|(k, v)| format!("{}: {}", py_repr(&format!("@{k}")), py_repr(v)))
                .collect();
            if let Some(t) = text {
                items.push(format!("'#text': {}", py_repr(&t)));
            }
            Ok(CellValue::Dict(format!("{{{}}}", items.join(", "))))
        }
        _ => Ok(CellValue::None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_textless_t_empties_the_shared_strings_as_osworld_reads_them() {
        let ok = b"<sst><si><t>a</t></si><si><r><t>b</t></r><r><t> c</t></r></si></sst>";
        assert_eq!(shared_strings(ok), vec!["a".to_string(), "b c".into()]);
        for bad in [
            &b"<sst><si><t>a</t></si><si><t/></si></sst>"[..],
            b"<sst><si><t></t></si><si><t>a</t></si></sst>",
        ] {
            assert!(shared_strings(bad).is_empty());
        }
    }

    #[test]
    fn inline_text_is_stripped_and_attributes_make_a_dict() {
        let sheet = br#"<worksheet><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t xml:space="preserve"> Bob </t></is></c><c r="B1" t="inlineStr"><is><t> x </t></is></c></row></sheetData></worksheet>"#;
        let a = find_cell(sheet, "A1").unwrap();
        assert_eq!(a.inline_attrs.len(), 1);
        let b = find_cell(sheet, "B1").unwrap();
        assert_eq!(stripped(b.inline), Some("x".into()));
        assert_eq!(stripped(Some("   ".into())), None);
        assert_eq!(py_repr("it's"), "\"it's\"");
        assert_eq!(py_repr("a\nb"), "'a\\nb'");
    }
}
