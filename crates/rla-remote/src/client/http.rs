//! One HTTP/1.1 request on a connection of its own, under two deadlines that hold whatever the
//! server does: the reply's head (connecting, sending the request, the status line and headers)
//! within `head`, and the whole exchange, the body's last byte included, within `total`. Every
//! read and write waits at most until the deadline of its phase, so a server that takes the
//! connection and never answers fails at `head`, and one that sends its head and then trickles
//! the body a byte at a time fails at `total` — not at each read's time-out, again and again.
//!
//! Replies may give their length, come chunked, or end with the connection (requests say
//! `Connection: close`). Plain `http://` only, as the servers a run talks to are reached.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// How a refused connection's message begins (nothing listens there: trying the same server
/// again at once does not help).
pub(crate) const REFUSED: &str = "connection refused";

/// The largest reply head read.
const MAX_HEAD: usize = 64 << 10;
/// The largest reply body read.
const MAX_BODY: usize = 256 << 20;

/// How long one request may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// From the start to the reply's head: connecting, sending the request, the status line
    /// and the headers.
    pub head: Duration,
    /// From the start to the body's last byte.
    pub total: Duration,
}

/// A reply: its status and its body as text.
#[derive(Debug)]
pub(crate) struct Reply {
    pub status: u16,
    pub body: String,
}

/// A duration as the messages say it: `30 s`, `0.2 s`.
pub(crate) fn secs(d: Duration) -> String {
    format!("{} s", (d.as_secs_f64() * 1000.0).round() / 1000.0)
}

/// What a read or a write ran into.
enum Fault {
    /// The phase's deadline passed.
    Late,
    /// The connection ended.
    Closed,
    Io(std::io::Error),
}

fn remaining(deadline: Instant) -> Result<Duration, Fault> {
    match deadline.checked_duration_since(Instant::now()) {
        Some(d) if !d.is_zero() => Ok(d),
        _ => Err(Fault::Late),
    }
}

fn io_fault(e: std::io::Error) -> Fault {
    match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => Fault::Late,
        _ => Fault::Io(e),
    }
}

/// Reads what comes before `deadline` onto `buf`; `Closed` at the end of the stream.
fn read_some(s: &mut TcpStream, buf: &mut Vec<u8>, deadline: Instant) -> Result<(), Fault> {
    let mut chunk = [0u8; 16 << 10];
    loop {
        s.set_read_timeout(Some(remaining(deadline)?))
            .map_err(Fault::Io)?;
        match s.read(&mut chunk) {
            Ok(0) => return Err(Fault::Closed),
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                return Ok(());
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_fault(e)),
        }
    }
}

fn write_all(s: &mut TcpStream, mut bytes: &[u8], deadline: Instant) -> Result<(), Fault> {
    while !bytes.is_empty() {
        s.set_write_timeout(Some(remaining(deadline)?))
            .map_err(Fault::Io)?;
        match s.write(bytes) {
            Ok(0) => return Err(Fault::Closed),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_fault(e)),
        }
    }
    Ok(())
}

/// A URL's host, port, `Host` header and path.
struct Target {
    host: String,
    port: u16,
    authority: String,
    path: String,
}

fn target(url: &str) -> Result<Target, String> {
    let rest = match url.split_once("://") {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => rest,
        Some((scheme, _)) if scheme.eq_ignore_ascii_case("https") => {
            return Err("https:// is not spoken here: reach the server over http://".into())
        }
        _ => return Err("not an http:// URL".into()),
    };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) if rest[i..].starts_with('/') => (&rest[..i], rest[i..].to_string()),
        Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
        None => (rest, "/".to_string()),
    };
    let bad = || format!("`{authority}` is not a host and port");
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, after) = v6.split_once(']').ok_or_else(bad)?;
        match after.strip_prefix(':') {
            Some(p) => (h, p.parse().map_err(|_| bad())?),
            None if after.is_empty() => (h, 80),
            None => return Err(bad()),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, p.parse().map_err(|_| bad())?),
            None => (authority, 80),
        }
    };
    if host.is_empty() || authority.contains('@') {
        return Err(bad());
    }
    Ok(Target {
        host: host.to_string(),
        port,
        authority: authority.to_string(),
        path,
    })
}

/// The parts of a reply head that matter here.
struct Head {
    status: u16,
    length: Option<usize>,
    chunked: bool,
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn parse_head(bytes: &[u8]) -> Result<Head, String> {
    let text = String::from_utf8_lossy(bytes);
    let mut lines = text.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or_default();
    let status = parts
        .next()
        .and_then(|c| c.parse::<u16>().ok())
        .filter(|c| (100..600).contains(c) && version.starts_with("HTTP/1."))
        .ok_or_else(|| {
            let shown: String = status_line.chars().take(80).collect();
            format!("not an HTTP reply: `{shown}`")
        })?;
    let mut head = Head {
        status,
        length: None,
        chunked: false,
    };
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.trim().eq_ignore_ascii_case("content-length") {
            let n: usize = value
                .parse()
                .map_err(|_| format!("a Content-Length of `{value}`"))?;
            if head.length.is_some_and(|m| m != n) {
                return Err("two different Content-Lengths".into());
            }
            head.length = Some(n);
        } else if name.trim().eq_ignore_ascii_case("transfer-encoding") {
            head.chunked = value
                .rsplit(',')
                .next()
                .is_some_and(|c| c.trim().eq_ignore_ascii_case("chunked"));
        }
    }
    Ok(head)
}

/// A reply's body being read, from what came with its head on, before `deadline`.
struct Body<'a> {
    stream: &'a mut TcpStream,
    buf: Vec<u8>,
    deadline: Instant,
}

impl Body<'_> {
    fn more(&mut self) -> Result<(), Fault> {
        read_some(self.stream, &mut self.buf, self.deadline)
    }

    /// `n` bytes onto `out`.
    fn take(&mut self, n: usize, out: &mut Vec<u8>) -> Result<(), Fault> {
        while self.buf.len() < n {
            self.more()?;
        }
        out.extend(self.buf.drain(..n));
        Ok(())
    }

    /// A line, its CRLF taken off (chunk sizes and trailers are short).
    fn line(&mut self) -> Result<String, Fault> {
        loop {
            if let Some(i) = find(&self.buf, b"\r\n") {
                let line = String::from_utf8_lossy(&self.buf[..i]).into_owned();
                self.buf.drain(..i + 2);
                return Ok(line);
            }
            if self.buf.len() > MAX_HEAD {
                return Err(Fault::Io(std::io::Error::other("a chunk line over 64 KiB")));
            }
            self.more()?;
        }
    }
}

fn too_big() -> Fault {
    Fault::Io(std::io::Error::other(format!(
        "a reply body over {} MiB",
        MAX_BODY >> 20
    )))
}

fn read_body(b: &mut Body, head: &Head) -> Result<Vec<u8>, Fault> {
    let mut out = Vec::new();
    if head.chunked {
        loop {
            let line = b.line()?;
            let size = line.split(';').next().unwrap_or_default().trim();
            let n = usize::from_str_radix(size, 16).map_err(|_| {
                Fault::Io(std::io::Error::other(format!("a chunk size of `{size}`")))
            })?;
            if n == 0 {
                // trailers, then the empty line
                while !b.line()?.is_empty() {}
                return Ok(out);
            }
            if n > MAX_BODY - out.len() {
                return Err(too_big());
            }
            b.take(n, &mut out)?;
            if !b.line()?.is_empty() {
                return Err(Fault::Io(std::io::Error::other(
                    "a chunk longer than its size",
                )));
            }
        }
    }
    match head.length {
        Some(n) if n > MAX_BODY => Err(too_big()),
        Some(n) => b.take(n, &mut out).map(|_| out),
        None => loop {
            if b.buf.len() > MAX_BODY {
                return Err(too_big());
            }
            match b.more() {
                Err(Fault::Closed) => return Ok(std::mem::take(&mut b.buf)),
                Err(e) => return Err(e),
                Ok(()) => {}
            }
        },
    }
}

/// Sends `method url` with `headers` and a JSON `body`, and reads the reply within `limits`.
/// The error says what the server did (`timed out: no response head within 30 s`).
pub(crate) fn request(
    method: &str,
    url: &str,
    headers: &[(&str, String)],
    body: Option<&[u8]>,
    limits: Limits,
) -> Result<Reply, String> {
    let start = Instant::now();
    let head_limit = limits.head.min(limits.total);
    let head_by = start + head_limit;
    let total_by = start + limits.total;
    let t = target(url)?;
    let addrs: Vec<_> = (t.host.as_str(), t.port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {}: {e}", t.host))?
        .collect();
    let mut stream = None;
    let mut why = format!("{} resolves to no address", t.host);
    for a in &addrs {
        let Ok(left) = remaining(head_by) else {
            why = format!("timed out: no connection within {}", secs(head_limit));
            break;
        };
        match TcpStream::connect_timeout(a, left) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                why = REFUSED.to_string()
            }
            Err(e) => {
                why = match io_fault(e) {
                    Fault::Late => {
                        format!("timed out: no connection within {}", secs(head_limit))
                    }
                    Fault::Io(e) => format!("cannot connect: {e}"),
                    Fault::Closed => "cannot connect".into(),
                }
            }
        }
    }
    let mut s = stream.ok_or(why)?;
    let _ = s.set_nodelay(true);

    let mut req = format!(
        "{method} {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: rlanything\r\nAccept: application/json\r\nConnection: close\r\n",
        t.path, t.authority
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(b) = body {
        req.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            b.len()
        ));
    }
    req.push_str("\r\n");
    let mut bytes = req.into_bytes();
    bytes.extend_from_slice(body.unwrap_or_default());
    // a server may answer (413, 401) and close before it has read the whole request: its reply
    // is read even when the write failed, and the write's error said only when there is none
    let wrote = write_all(&mut s, &bytes, head_by).err().map(|e| match e {
        Fault::Late => format!(
            "timed out: the request was not taken within {}",
            secs(head_limit)
        ),
        Fault::Closed => "the server closed the connection while the request was sent".into(),
        Fault::Io(e) => format!("sending the request: {e}"),
    });
    if let Some(w) = &wrote {
        if w.starts_with("timed out") {
            return Err(w.clone());
        }
    }

    let mut buf = Vec::new();
    let head = loop {
        if let Some(end) = find(&buf, b"\r\n\r\n") {
            let head = parse_head(&buf[..end])?;
            buf.drain(..end + 4);
            if (100..200).contains(&head.status) {
                continue; // an interim reply (100 Continue): the real one follows
            }
            break head;
        }
        if buf.len() > MAX_HEAD {
            return Err("a reply head over 64 KiB".into());
        }
        match read_some(&mut s, &mut buf, head_by) {
            Ok(()) => {}
            Err(f) => {
                return Err(wrote.unwrap_or_else(|| match f {
                    Fault::Late => {
                        format!("timed out: no response head within {}", secs(head_limit))
                    }
                    Fault::Closed if buf.is_empty() => {
                        "the server closed the connection without a reply".into()
                    }
                    Fault::Closed => "the reply's head was cut off".into(),
                    Fault::Io(e) => format!("reading the reply: {e}"),
                }))
            }
        }
    };
    let no_body = method.eq_ignore_ascii_case("HEAD") || matches!(head.status, 204 | 304);
    let bytes = if no_body {
        Vec::new()
    } else {
        let mut b = Body {
            stream: &mut s,
            buf,
            deadline: total_by,
        };
        read_body(&mut b, &head).map_err(|f| match f {
            Fault::Late => format!(
                "timed out: the body did not finish within {}",
                secs(limits.total)
            ),
            Fault::Closed => match head.length {
                Some(n) => format!("the reply's body was cut off before its {n} bytes"),
                None => "the reply's body was cut off".into(),
            },
            Fault::Io(e) => format!("reading the reply's body: {e}"),
        })?
    };
    Ok(Reply {
        status: head.status,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_give_their_host_port_and_path() {
        let t = target("http://127.0.0.1:8000/v1/completions").unwrap();
        assert_eq!(
            (
                t.host.as_str(),
                t.port,
                t.authority.as_str(),
                t.path.as_str()
            ),
            ("127.0.0.1", 8000, "127.0.0.1:8000", "/v1/completions")
        );
        let t = target("http://example.org").unwrap();
        assert_eq!((t.port, t.path.as_str()), (80, "/"));
        let t = target("http://[::1]:9/x?y=1").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.path.as_str()),
            ("::1", 9, "/x?y=1")
        );
        for bad in [
            "https://h/x",
            "ftp://h",
            "h:80/x",
            "http://:80/",
            "http://h:x/",
            "http://u@h/",
        ] {
            assert!(target(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn heads_give_their_status_and_how_the_body_ends() {
        let h = parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nX: y").unwrap();
        assert_eq!((h.status, h.length, h.chunked), (200, Some(12), false));
        let h = parse_head(b"HTTP/1.1 503 Busy\r\ntransfer-encoding: gzip, chunked").unwrap();
        assert_eq!((h.status, h.length, h.chunked), (503, None, true));
        assert!(parse_head(b"SSH-2.0-OpenSSH").is_err());
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2").is_err());
    }

    #[test]
    fn durations_read_as_seconds() {
        assert_eq!(secs(Duration::from_secs(30)), "30 s");
        assert_eq!(secs(Duration::from_secs_f64(0.2)), "0.2 s");
        assert_eq!(secs(Duration::from_millis(1500)), "1.5 s");
    }
}
