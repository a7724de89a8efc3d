//! Reading an .xlsx package's parts: an entry of the zip (bounded in size), an element's
//! attribute, the text of a text event or entity reference, and a part's relationships.

use quick_xml::events::Event;
use quick_xml::Reader;
use std::io::Read;

/// Most bytes one part of the zip (a sheet's XML, the shared strings) may unpack to.
pub const MAX_PART_BYTES: u64 = 64 << 20;

/// An entry of the package, read up to [`MAX_PART_BYTES`]; `None` when it is missing.
pub(crate) fn entry(z: &mut zip::ZipArchive<std::fs::File>, name: &str) -> Option<Vec<u8>> {
    let f = z.by_name(name).ok()?;
    let mut out = Vec::new();
    f.take(MAX_PART_BYTES).read_to_end(&mut out).ok()?;
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

/// The text of a text event or an entity reference (`&amp;`, `&#10;`, …).
pub(crate) fn text_of(e: &Event) -> String {
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

/// A part's relationships in document order: (id, type, the target part resolved against the
/// part's folder).
pub(crate) fn rels(
    z: &mut zip::ZipArchive<std::fs::File>,
    part: &str,
) -> Vec<(String, String, String)> {
    let (dir, file) = part.rsplit_once('/').unwrap_or(("", part));
    let Some(xml) = entry(z, &format!("{dir}/_rels/{file}.rels")) else {
        return vec![];
    };
    let mut out = vec![];
    let mut r = Reader::from_reader(xml.as_slice());
    let mut buf = Vec::new();
    loop {
        match r.read_event_into(&mut buf) {
            Ok(Event::Start(e)) | Ok(Event::Empty(e))
                if e.local_name().as_ref() == "Relationship" =>
            {
                if let (Some(id), Some(t)) = (attr(&e, "Id"), attr(&e, "Target")) {
                    let kind = attr(&e, "Type").unwrap_or_default();
                    out.push((id, kind, resolve(dir, &t)));
                }
            }
            Ok(Event::Eof) | Err(_) => break,
            _ => {}
        }
        buf.clear();
    }
    out
}

/// A relationship target resolved against its source's folder.
fn resolve(dir: &str, target: &str) -> String {
    if let Some(abs) = target.strip_prefix('/') {
        return abs.to_string();
    }
    let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    for seg in target.split('/') {
        match seg {
            ".." => {
                parts.pop();
            }
            "." | "" => {}
            s => parts.push(s),
        }
    }
    parts.join("/")
}
