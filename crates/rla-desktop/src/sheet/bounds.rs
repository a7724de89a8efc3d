//! What a workbook file may make a reader allocate, checked before any reader opens it: an .xlsx
//! is a zip of XML parts, and a small file can unpack to gigabytes or name a cell whose sheet
//! rectangle no reader can hold (calamine, pandas' frame and CSV hold a sheet as a dense grid).
//! OSWorld's tasks use small sheets; these limits are far above them.

use crate::sheet::addr::{Addr, Range};
use crate::sheet::workbook::rectangle;
use crate::DesktopError;
use std::io::Read;
use std::path::Path;

pub use crate::sheet::xmlpart::MAX_PART_BYTES;
/// Most bytes all parts together may unpack to.
pub const MAX_TOTAL_BYTES: u64 = 256 << 20;
pub use crate::sheet::workbook::MAX_SHEET_CELLS;

/// Checks an .xlsx file against the limits above; a file that is not a zip is left to the reader
/// (which names it).
pub fn check_xlsx(path: &Path) -> Result<(), DesktopError> {
    let f = match rla_core::file::open(path) {
        Ok(f) => f,
        // a FIFO or a device would block or never end the reader
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
            return Err(DesktopError::Io {
                path: path.into(),
                source: e,
            })
        }
        Err(_) => return Ok(()),
    };
    let Ok(mut z) = zip::ZipArchive::new(f) else {
        return Ok(());
    };
    let mut total = 0u64;
    for i in 0..z.len() {
        let Ok(mut part) = z.by_index(i) else {
            continue;
        };
        let Ok(name) = part.name().map(|n| n.to_string()) else {
            continue;
        };
        let is_sheet = name.starts_with("xl/worksheets/") && name.ends_with(".xml");
        let is_strings = name == "xl/sharedStrings.xml";
        // the declared size may lie: what counts is what the part unpacks to
        let mut bytes = Vec::new();
        let limit = MAX_PART_BYTES.min(MAX_TOTAL_BYTES - total);
        let read = if is_sheet || is_strings {
            (&mut part)
                .take(limit + 1)
                .read_to_end(&mut bytes)
                .map(|n| n as u64)
        } else {
            std::io::copy(&mut (&mut part).take(limit + 1), &mut std::io::sink())
        };
        let Ok(n) = read else {
            continue; // a damaged part: the reader names it
        };
        if n > limit {
            return Err(DesktopError::invalid(
                path,
                &name,
                format!(
                    "unpacks to more than {} MiB (at most {} MiB a part, {} MiB in all)",
                    limit >> 20,
                    MAX_PART_BYTES >> 20,
                    MAX_TOTAL_BYTES >> 20
                ),
            ));
        }
        total += n;
        if is_sheet {
            check_sheet(path, &name, &bytes)?;
        }
        if is_strings {
            check_strings(path, &name, &bytes)?;
        }
    }
    Ok(())
}

/// The shared strings' `uniqueCount` (and `count`) may not claim more strings than the part can
/// hold (each takes at least `<si></si>`, 9 bytes): calamine reserves room for `uniqueCount`
/// strings before it reads one, and a claim of 2^64−1 panics inside it (a claim of 10^15 would
/// abort the process on the allocation). Checked here, before calamine opens the file.
fn check_strings(path: &Path, name: &str, xml: &[u8]) -> Result<(), DesktopError> {
    let mut reader = quick_xml::Reader::from_reader(xml);
    let mut buf = Vec::new();
    loop {
        match reader.read_event_into(&mut buf) {
            Ok(quick_xml::events::Event::Start(ref e) | quick_xml::events::Event::Empty(ref e))
                if e.local_name().as_ref() == "sst" =>
            {
                let most = xml.len() as u64 / 9;
                for key in ["uniqueCount", "count"] {
                    let Some(v) = crate::sheet::xmlpart::attr(e, key) else {
                        continue;
                    };
                    let t = v.trim();
                    let too_many = match t.parse::<u128>() {
                        Ok(n) => n > most as u128,
                        // digits past u128: more than any part holds
                        Err(_) => !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()),
                    };
                    if too_many {
                        return Err(DesktopError::invalid(
                            path,
                            name,
                            format!(
                                "{key}=\"{}\" claims more strings than the part's {} bytes hold (at most {most})",
                                v.chars().take(40).collect::<String>(),
                                xml.len()
                            ),
                        ));
                    }
                }
                return Ok(());
            }
            Ok(quick_xml::events::Event::Eof) | Err(_) => return Ok(()),
            _ => {}
        }
        buf.clear();
    }
}

/// The rectangle of a sheet's cells (and of its `<dimension>`) must stay within
/// [`MAX_SHEET_CELLS`], and every cell reference must be a cell of a spreadsheet.
fn check_sheet(path: &Path, name: &str, xml: &[u8]) -> Result<(), DesktopError> {
    let mut reader = quick_xml::Reader::from_reader(xml);
    let mut buf = Vec::new();
    let mut last: Option<Addr> = None;
    let mut dimension: Option<String> = None;
    loop {
        let ev = match reader.read_event_into(&mut buf) {
            Ok(ev) => ev,
            Err(_) => return Ok(()), // malformed XML: the reader names it
        };
        match ev {
            quick_xml::events::Event::Start(ref e) | quick_xml::events::Event::Empty(ref e) => {
                let tag = e.local_name();
                let key = match tag.as_ref() {
                    "c" => "r",
                    "dimension" => "ref",
                    _ => {
                        buf.clear();
                        continue;
                    }
                };
                let Some(v) = crate::sheet::xmlpart::attr(e, key) else {
                    buf.clear();
                    continue;
                };
                if key == "ref" {
                    dimension = Some(v);
                } else {
                    let Some(a) = Addr::parse(&v) else {
                        return Err(DesktopError::invalid(
                            path,
                            name,
                            format!(
                                "cell reference {:?} is not a cell (columns A to XFD, rows 1 to 1048576)",
                                v.chars().take(40).collect::<String>()
                            ),
                        ));
                    };
                    last = Some(last.map_or(a, |l| Addr::new(l.row.max(a.row), l.col.max(a.col))));
                }
            }
            quick_xml::events::Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    if let Some(last) = last {
        let n = rectangle(last);
        if n > MAX_SHEET_CELLS {
            return Err(DesktopError::invalid(
                path,
                name,
                format!("its cells span A1:{last}, {n} cells; at most {MAX_SHEET_CELLS} are read"),
            ));
        }
    }
    if let Some(d) = dimension {
        match Range::parse(&d) {
            None => {
                return Err(DesktopError::invalid(
                    path,
                    name,
                    format!(
                        "dimension {:?} is not a range of cells",
                        d.chars().take(40).collect::<String>()
                    ),
                ))
            }
            Some(r) => {
                let n = rectangle(r.end);
                if n > MAX_SHEET_CELLS {
                    return Err(DesktopError::invalid(
                        path,
                        name,
                        format!(
                            "dimension {d} spans {n} cells; at most {MAX_SHEET_CELLS} are read"
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sheet::workbook::{Content, Sheet, Workbook};
    use std::io::Write;

    /// A saved one-cell workbook whose parts pass through `edit` (name, bytes) → bytes.
    fn workbook_with(dir: &Path, name: &str, edit: impl Fn(&str, Vec<u8>) -> Vec<u8>) -> PathBuf {
        let mut s = Sheet::new("Sheet1");
        s.cells.insert(Addr::new(0, 0), Content::Number(1.0));
        let book = Workbook { sheets: vec![s] };
        let src = dir.join("src.xlsx");
        crate::sheet::xlsx::save(&book, &src).unwrap();
        let mut z = zip::ZipArchive::new(std::fs::File::open(&src).unwrap()).unwrap();
        let out = dir.join(name);
        let mut w = zip::ZipWriter::new(std::fs::File::create(&out).unwrap());
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        for i in 0..z.len() {
            let mut f = z.by_index(i).unwrap();
            let n = f.name().unwrap().to_string();
            let mut b = Vec::new();
            f.read_to_end(&mut b).unwrap();
            w.start_file(n.as_str(), opts).unwrap();
            w.write_all(&edit(&n, b)).unwrap();
        }
        w.finish().unwrap();
        out
    }

    use std::path::PathBuf;

    fn sheet_edit(from: &'static str, to: String) -> impl Fn(&str, Vec<u8>) -> Vec<u8> {
        move |n, b| {
            if n == "xl/worksheets/sheet1.xml" {
                let s = String::from_utf8(b).unwrap();
                assert!(s.contains(from), "{s}");
                s.replacen(from, &to, 1).into_bytes()
            } else {
                b
            }
        }
    }

    #[test]
    fn shared_strings_claiming_more_than_they_hold_are_refused_before_calamine() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Sheet::new("Sheet1");
        s.cells
            .insert(Addr::new(0, 0), Content::Text("apple".into()));
        let book = Workbook { sheets: vec![s] };
        let src = dir.path().join("text.xlsx");
        crate::sheet::xlsx::save(&book, &src).unwrap();
        let claim = |name: &str, n: &'static str| {
            let mut z = zip::ZipArchive::new(std::fs::File::open(&src).unwrap()).unwrap();
            let out = dir.path().join(name);
            let mut w = zip::ZipWriter::new(std::fs::File::create(&out).unwrap());
            for i in 0..z.len() {
                let mut f = z.by_index(i).unwrap();
                let part = f.name().unwrap().to_string();
                let mut b = Vec::new();
                f.read_to_end(&mut b).unwrap();
                if part == "xl/sharedStrings.xml" {
                    let t = String::from_utf8(b).unwrap();
                    let i = t.find("uniqueCount=\"").unwrap() + 13;
                    let j = i + t[i..].find('"').unwrap();
                    b = format!("{}{n}{}", &t[..i], &t[j..]).into_bytes();
                }
                w.start_file(part.as_str(), zip::write::SimpleFileOptions::default())
                    .unwrap();
                w.write_all(&b).unwrap();
            }
            w.finish().unwrap();
            out
        };
        assert!(crate::sheet::xlsx::open(&claim("one.xlsx", "1")).is_ok());
        // 2^64 − 1: a capacity overflow inside calamine; 10^15: an allocation that aborts
        for n in [
            "18446744073709551615",
            "1000000000000000",
            "99999999999999999999999999999999999999999",
        ] {
            let f = claim("lie.xlsx", n);
            let e = crate::sheet::xlsx::open(&f).unwrap_err().to_string();
            assert!(
                e.contains("uniqueCount") && e.contains("claims more strings"),
                "{e}"
            );
        }
    }

    #[test]
    fn a_fifo_or_a_device_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("result.xlsx");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let e = crate::sheet::xlsx::open(&fifo).unwrap_err().to_string();
        assert!(e.contains("a FIFO"), "{e}");
        let zero = dir.path().join("zero.xlsx");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let e = crate::sheet::xlsx::open(&zero).unwrap_err().to_string();
        assert!(e.contains("a device"), "{e}");
    }

    #[test]
    fn far_cells_bad_references_and_unpacking_bombs_are_refused_before_reading() {
        let dir = tempfile::tempdir().unwrap();
        let ok = workbook_with(dir.path(), "ok.xlsx", |_, b| b);
        check_xlsx(&ok).unwrap();
        assert!(crate::sheet::xlsx::open(&ok).is_ok());
        // one value at the last cell of a spreadsheet: a 17-billion-cell grid to a dense reader
        let far = workbook_with(
            dir.path(),
            "far.xlsx",
            sheet_edit(
                "</sheetData>",
                r#"<row r="1048576"><c r="XFD1048576"><v>2</v></c></row></sheetData>"#.into(),
            ),
        );
        let e = crate::sheet::xlsx::open(&far).unwrap_err().to_string();
        assert!(e.contains("A1:XFD1048576") && e.contains("far.xlsx"), "{e}");
        // a reference that is no cell
        let bad = workbook_with(
            dir.path(),
            "bad.xlsx",
            sheet_edit(
                "</sheetData>",
                format!(
                    r#"<row r="2"><c r="ZZZZZZZZZZZZ{}"><v>2</v></c></row></sheetData>"#,
                    "9".repeat(30)
                ),
            ),
        );
        let e = crate::sheet::xlsx::cached(&bad).unwrap_err().to_string();
        assert!(e.contains("is not a cell"), "{e}");
        // a dimension no reader can hold
        let dim = workbook_with(dir.path(), "dim.xlsx", |n, b| {
            if n == "xl/worksheets/sheet1.xml" {
                let s = String::from_utf8(b).unwrap();
                let i = s.find("<dimension ref=\"").unwrap() + 16;
                let j = i + s[i..].find('"').unwrap();
                format!("{}A1:XFD1048576{}", &s[..i], &s[j..]).into_bytes()
            } else {
                b
            }
        });
        let e = crate::sheet::xlsx::open(&dim).unwrap_err().to_string();
        assert!(e.contains("dimension"), "{e}");
        // a sheet that unpacks past the part limit (a small file: spaces compress well)
        let bomb = workbook_with(
            dir.path(),
            "bomb.xlsx",
            sheet_edit(
                "</sheetData>",
                " ".repeat(MAX_PART_BYTES as usize + 10) + "</sheetData>",
            ),
        );
        assert!(std::fs::metadata(&bomb).unwrap().len() < 1 << 20);
        let e = crate::sheet::xlsx::open(&bomb).unwrap_err().to_string();
        assert!(e.contains("unpacks to more than"), "{e}");
    }
}
