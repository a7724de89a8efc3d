//! TensorBoard's event files, written directly: a file is a sequence of TFRecords (length, masked
//! CRC-32C of the length, the bytes, masked CRC-32C of the bytes), each an `Event` protocol
//! buffer. The first event names the file version; then one event a step carries the step's
//! scalars (`Summary.Value.simple_value`), and text goes as a string tensor under the `text`
//! plugin, as TensorBoard's own writers lay them out.
//!
//! A run's folder holds one file. [`EventWriter::rebuild`] writes it anew from the records a run
//! has kept (after a resume: the points of iterations redone after a kill are not written twice)
//! and [`EventWriter::append`] adds a step.

use crate::{scalars, TrackError};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The event file's name in a folder: one a run, so a rebuild replaces it.
pub const FILE_NAME: &str = "events.out.tfevents.0.rlanything";

/// A kept step: its number, its metrics record and its texts (tag, Markdown).
pub type KeptStep = (i64, serde_json::Value, Vec<(String, String)>);

/// Writes a run's event file.
pub struct EventWriter {
    path: PathBuf,
}

impl EventWriter {
    /// Writes the folder's event file anew (through a temporary name) with `steps` — each a step
    /// number, its metrics record and any text (tag, Markdown) — and returns a writer that appends.
    pub fn rebuild(dir: &Path, steps: &[KeptStep]) -> Result<EventWriter, TrackError> {
        std::fs::create_dir_all(dir)
            .map_err(TrackError::io(format!("creating {}", dir.display())))?;
        let path = dir.join(FILE_NAME);
        let mut bytes = Vec::new();
        record(
            &mut bytes,
            &event(wall_time(), 0, Some("brain.Event:2"), &[]),
        );
        for (step, metrics, texts) in steps {
            bytes.extend(step_records(*step, metrics, texts));
        }
        let tmp = dir.join(format!(".{FILE_NAME}.tmp"));
        std::fs::write(&tmp, &bytes).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            TrackError::Io {
                what: format!("writing {}", tmp.display()),
                source: e,
            }
        })?;
        std::fs::rename(&tmp, &path)
            .map_err(TrackError::io(format!("writing {}", path.display())))?;
        Ok(EventWriter { path })
    }

    /// Appends a step: its record's scalars and its texts. A write that fails (a full disk)
    /// leaves the file as it was — the part of the step written is cut off again — so the steps
    /// appended after it still read.
    pub fn append(
        &mut self,
        step: i64,
        metrics: &serde_json::Value,
        texts: &[(String, String)],
    ) -> Result<(), TrackError> {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.path)
            .map_err(TrackError::io(format!("opening {}", self.path.display())))?;
        let before = f.metadata().map(|m| m.len());
        f.write_all(&step_records(step, metrics, texts))
            .and_then(|_| f.flush())
            .map_err(|e| {
                if let Ok(len) = before {
                    let _ = f.set_len(len);
                }
                TrackError::Io {
                    what: format!("writing {}", self.path.display()),
                    source: e,
                }
            })
    }

    /// The event file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn wall_time() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

fn step_records(step: i64, metrics: &serde_json::Value, texts: &[(String, String)]) -> Vec<u8> {
    let t = wall_time();
    let mut values: Vec<Vec<u8>> = scalars(metrics)
        .into_iter()
        .map(|(tag, x)| scalar_value(&tag, x as f32))
        .collect();
    values.extend(texts.iter().map(|(tag, text)| text_value(tag, text)));
    let mut out = Vec::new();
    if !values.is_empty() {
        record(&mut out, &event(t, step, None, &values));
    }
    out
}

// ---- protocol buffers, by hand: only what an event needs ----

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn key(out: &mut Vec<u8>, field: u32, wire: u8) {
    varint(out, (u64::from(field) << 3) | u64::from(wire));
}

fn bytes_field(out: &mut Vec<u8>, field: u32, b: &[u8]) {
    key(out, field, 2);
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// `Event { wall_time = 1; step = 2; file_version = 3; summary = 5 }`.
fn event(wall_time: f64, step: i64, file_version: Option<&str>, values: &[Vec<u8>]) -> Vec<u8> {
    let mut e = Vec::new();
    key(&mut e, 1, 1);
    e.extend_from_slice(&wall_time.to_le_bytes());
    if step != 0 {
        key(&mut e, 2, 0);
        varint(&mut e, step as u64);
    }
    if let Some(v) = file_version {
        bytes_field(&mut e, 3, v.as_bytes());
    }
    if !values.is_empty() {
        // Summary { repeated Value value = 1 }
        let mut s = Vec::new();
        for v in values {
            bytes_field(&mut s, 1, v);
        }
        bytes_field(&mut e, 5, &s);
    }
    e
}

/// `Summary.Value { tag = 1; simple_value = 2 }`.
fn scalar_value(tag: &str, x: f32) -> Vec<u8> {
    let mut v = Vec::new();
    bytes_field(&mut v, 1, tag.as_bytes());
    key(&mut v, 2, 5);
    v.extend_from_slice(&x.to_le_bytes());
    v
}

/// `Summary.Value { tag = 1; metadata = 9 { plugin_data = 1 { plugin_name = 1: "text" } };
/// tensor = 8 { dtype = 1: DT_STRING (7); tensor_shape = 2 {}; string_val = 8 } }`.
fn text_value(tag: &str, text: &str) -> Vec<u8> {
    let mut plugin = Vec::new();
    bytes_field(&mut plugin, 1, b"text");
    let mut meta = Vec::new();
    bytes_field(&mut meta, 1, &plugin);
    let mut tensor = Vec::new();
    key(&mut tensor, 1, 0);
    varint(&mut tensor, 7);
    bytes_field(&mut tensor, 2, &[]);
    bytes_field(&mut tensor, 8, text.as_bytes());
    let mut v = Vec::new();
    bytes_field(&mut v, 1, tag.as_bytes());
    bytes_field(&mut v, 8, &tensor);
    bytes_field(&mut v, 9, &meta);
    v
}

// ---- TFRecord framing ----

fn crc32c(data: &[u8]) -> u32 {
    static TABLE: std::sync::OnceLock<[u32; 256]> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut t = [0u32; 256];
        for (i, e) in t.iter_mut().enumerate() {
            let mut c = i as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    (c >> 1) ^ 0x82F6_3B78
                } else {
                    c >> 1
                };
            }
            *e = c;
        }
        t
    });
    let mut crc = !0u32;
    for &b in data {
        crc = table[((crc ^ u32::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    !crc
}

fn masked_crc(data: &[u8]) -> u32 {
    let c = crc32c(data);
    (c.rotate_right(15)).wrapping_add(0xa282_ead8)
}

fn record(out: &mut Vec<u8>, data: &[u8]) {
    let len = (data.len() as u64).to_le_bytes();
    out.extend_from_slice(&len);
    out.extend_from_slice(&masked_crc(&len).to_le_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(&masked_crc(data).to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_matches_the_standard_check_value() {
        // the CRC-32C (Castagnoli) check value of "123456789"
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(b""), 0);
    }

    #[test]
    fn a_full_disk_is_an_error_and_later_steps_append() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = EventWriter::rebuild(dir.path(), &[]).unwrap();
        let kept = std::fs::read(w.path()).unwrap();
        // the event file on a full disk
        std::fs::remove_file(w.path()).unwrap();
        std::os::unix::fs::symlink("/dev/full", w.path()).unwrap();
        let e = w
            .append(1, &serde_json::json!({"x": 1.0}), &[])
            .unwrap_err();
        assert!(e.to_string().contains("writing"), "{e}");
        // room again: the next step is appended after what was there
        std::fs::remove_file(w.path()).unwrap();
        std::fs::write(w.path(), &kept).unwrap();
        w.append(2, &serde_json::json!({"x": 2.0}), &[]).unwrap();
        let mut want = kept.clone();
        want.extend(step_records(2, &serde_json::json!({"x": 2.0}), &[]));
        let got = std::fs::read(w.path()).unwrap();
        assert_eq!(got.len(), want.len());
        assert_eq!(got[..kept.len()], kept[..]);
    }

    #[test]
    fn records_frame_their_length_and_bytes() {
        let mut out = Vec::new();
        record(&mut out, b"abc");
        assert_eq!(out.len(), 8 + 4 + 3 + 4);
        assert_eq!(&out[..8], &3u64.to_le_bytes());
        assert_eq!(&out[12..15], b"abc");
        assert_eq!(
            u32::from_le_bytes(out[15..19].try_into().unwrap()),
            masked_crc(b"abc")
        );
    }
}
