//! The worker protocol's framing: `b"RLAW"`, the header's length (u32, little-endian), the
//! payload's length (u64), a JSON header and a binary payload holding the header's `arrays`
//! packed in order. Token ids and log-probabilities travel as raw little-endian arrays, never as
//! JSON lists.

use serde_json::{json, Value};
use std::io::{Read, Write};

/// The protocol version this side speaks.
pub const PROTOCOL: u64 = 1;
const MAGIC: &[u8; 4] = b"RLAW";
/// The largest header accepted (a header is a few hundred bytes).
const MAX_HEADER: u32 = 1 << 24;
/// The largest payload accepted.
const MAX_PAYLOAD: u64 = 1 << 34;

/// One named array of a message.
#[derive(Debug, Clone, PartialEq)]
pub enum Array {
    /// 32-bit integers (token ids, lengths).
    I32(Vec<i32>),
    /// 32-bit floats (log-probabilities, advantages, masks).
    F32(Vec<f32>),
}

impl Array {
    fn kind(&self) -> &'static str {
        match self {
            Array::I32(_) => "i32",
            Array::F32(_) => "f32",
        }
    }

    fn len(&self) -> usize {
        match self {
            Array::I32(v) => v.len(),
            Array::F32(v) => v.len(),
        }
    }

    /// The floats, or an error naming the array.
    pub fn into_f32(self, name: &str) -> Result<Vec<f32>, String> {
        match self {
            Array::F32(v) => Ok(v),
            Array::I32(_) => Err(format!("the reply's `{name}` holds integers, not floats")),
        }
    }
}

/// A message: its header and its arrays, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// The JSON header (without `arrays`, which the framing fills in).
    pub header: Value,
    /// Named arrays.
    pub arrays: Vec<(String, Array)>,
}

impl Message {
    /// The array called `name`, taken out of the message.
    pub fn take(&mut self, name: &str) -> Option<Array> {
        let i = self.arrays.iter().position(|(n, _)| n == name)?;
        Some(self.arrays.remove(i).1)
    }
}

/// Writes a message.
pub fn write(w: &mut impl Write, m: &Message) -> std::io::Result<()> {
    let mut header = m.header.clone();
    let desc: Vec<Value> = m
        .arrays
        .iter()
        .map(|(n, a)| json!({"name": n, "dtype": a.kind(), "shape": [a.len()]}))
        .collect();
    header["arrays"] = Value::Array(desc);
    let h = serde_json::to_vec(&header).map_err(std::io::Error::other)?;
    let mut payload = Vec::new();
    for (_, a) in &m.arrays {
        match a {
            Array::I32(v) => v.iter().for_each(|x| payload.extend(x.to_le_bytes())),
            Array::F32(v) => v.iter().for_each(|x| payload.extend(x.to_le_bytes())),
        }
    }
    let mut buf = Vec::with_capacity(16 + h.len() + payload.len());
    buf.extend(MAGIC);
    buf.extend((h.len() as u32).to_le_bytes());
    buf.extend((payload.len() as u64).to_le_bytes());
    buf.extend(h);
    buf.extend(payload);
    w.write_all(&buf)?;
    w.flush()
}

fn bad(msg: impl Into<String>) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, msg.into())
}

/// Exactly `n` bytes, the buffer growing with what arrives (a peer that announces 16 GiB and
/// sends nothing costs nothing).
fn read_counted(r: &mut impl Read, n: u64) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    r.take(n).read_to_end(&mut out)?;
    if (out.len() as u64) < n {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("the message ended after {} of {n} bytes", out.len()),
        ));
    }
    Ok(out)
}

/// Reads a message; what is not one of the protocol's is an `InvalidData` error saying what
/// was wrong.
pub fn read(r: &mut impl Read) -> std::io::Result<Message> {
    let mut head = [0u8; 16];
    r.read_exact(&mut head)?;
    if &head[..4] != MAGIC {
        return Err(bad(
            "the worker sent something that is not a protocol message",
        ));
    }
    let hlen = u32::from_le_bytes(head[4..8].try_into().expect("4 bytes"));
    let plen = u64::from_le_bytes(head[8..16].try_into().expect("8 bytes"));
    if hlen > MAX_HEADER || plen > MAX_PAYLOAD {
        return Err(bad(format!(
            "a message of {hlen} header and {plen} payload bytes is past the protocol's limits"
        )));
    }
    // read as the bytes come, never allocated ahead from what the peer announced
    let h = read_counted(r, hlen as u64)?;
    let mut header: Value =
        serde_json::from_slice(&h).map_err(|e| bad(format!("the header is not JSON: {e}")))?;
    let payload = read_counted(r, plen)?;
    let desc = header
        .as_object_mut()
        .ok_or_else(|| bad("the header is not a JSON object"))?
        .remove("arrays")
        .unwrap_or(Value::Array(vec![]));
    let desc = desc
        .as_array()
        .ok_or_else(|| bad("the header's `arrays` is not a list"))?;
    let mut arrays = Vec::new();
    let mut off = 0usize;
    for d in desc {
        let name = d["name"]
            .as_str()
            .ok_or_else(|| bad("an array without a name"))?;
        let shape = d["shape"]
            .as_array()
            .ok_or_else(|| bad(format!("array `{name}` has no shape")))?;
        let mut count = 1usize;
        for s in shape {
            let s = s
                .as_u64()
                .ok_or_else(|| bad(format!("array `{name}` has a bad shape")))?;
            count = count
                .checked_mul(s as usize)
                .ok_or_else(|| bad(format!("array `{name}` is too large")))?;
        }
        let bytes = count
            .checked_mul(4)
            .filter(|b| off + b <= payload.len())
            .ok_or_else(|| bad(format!("array `{name}` runs past the payload")))?;
        let chunk = &payload[off..off + bytes];
        off += bytes;
        let words = chunk
            .chunks_exact(4)
            .map(|c| c.try_into().expect("4 bytes"));
        let a = match d["dtype"].as_str() {
            Some("i32") => Array::I32(words.map(i32::from_le_bytes).collect()),
            Some("f32") => Array::F32(words.map(f32::from_le_bytes).collect()),
            other => return Err(bad(format!("array `{name}` has dtype {other:?}"))),
        };
        arrays.push((name.to_string(), a));
    }
    if off != payload.len() {
        return Err(bad("the payload is longer than its arrays"));
    }
    Ok(Message { header, arrays })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_reads_back_as_written() {
        let m = Message {
            header: json!({"v": 1, "op": "logprobs", "id": 3}),
            arrays: vec![
                ("tokens".into(), Array::I32(vec![1, -2, 70000])),
                ("mask".into(), Array::F32(vec![0.5, f32::MIN_POSITIVE])),
            ],
        };
        let mut buf = Vec::new();
        write(&mut buf, &m).unwrap();
        let back = read(&mut buf.as_slice()).unwrap();
        assert_eq!(back.arrays, m.arrays);
        assert_eq!(back.header["op"], "logprobs");
        assert!(back.header.get("arrays").is_none());
    }

    #[test]
    fn garbage_is_an_error_that_says_so() {
        let e = read(&mut &b"HTTP/1.1 200 OK\r\n\r\n"[..]).unwrap_err();
        assert!(e.to_string().contains("not a protocol message"), "{e}");
        // a header that promises more than the payload holds
        let h = br#"{"arrays":[{"name":"x","dtype":"f32","shape":[9]}]}"#;
        let mut forged = b"RLAW".to_vec();
        forged.extend((h.len() as u32).to_le_bytes());
        forged.extend(16u64.to_le_bytes());
        forged.extend(h);
        forged.extend([0u8; 16]);
        let e = read(&mut forged.as_slice()).unwrap_err();
        assert!(e.to_string().contains("runs past the payload"), "{e}");
        let mut buf = Vec::new();
        write(
            &mut buf,
            &Message {
                header: json!({}),
                arrays: vec![("x".into(), Array::F32(vec![1.0; 4]))],
            },
        )
        .unwrap();
        let e = read(&mut &buf[..20]).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof);
    }
}
