//! The server's connections: request bodies read within a time limit, and connections that
//! have sent nothing for a while shut for reading, so that no client holds a worker.

use super::*;

/// Until `stop` is set, closes the reading side of every connection to local port `port` that
/// has received nothing for `idle` (its request, if any, is still answered).
pub(super) fn reap_silent(
    port: u16,
    idle: std::time::Duration,
    stop: &std::sync::atomic::AtomicBool,
) {
    let every = (idle / 4).clamp(
        std::time::Duration::from_millis(50),
        std::time::Duration::from_secs(1),
    );
    let idle_ms = idle.as_millis().min(u32::MAX as u128) as u32;
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(every);
        each_connection(port, |s| {
            if silent_ms(s).is_some_and(|ms| ms >= idle_ms) {
                let _ = s.shutdown(std::net::Shutdown::Read);
            }
            false
        });
    }
}

/// How long ago the connection last received data, in milliseconds (Linux's TCP_INFO).
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
pub(super) fn silent_ms(s: &std::net::TcpStream) -> Option<u32> {
    use std::os::fd::AsRawFd;
    // SAFETY: getsockopt(2) writes at most `len` bytes into `info`, a plain C struct
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    (r == 0).then_some(info.tcpi_last_data_recv)
}

/// Elsewhere the kernel does not say, and no connection is reaped for silence (the body timeout
/// still holds).
#[cfg(not(target_os = "linux"))]
pub(super) fn silent_ms(_s: &std::net::TcpStream) -> Option<u32> {
    None
}

/// Bodies tiny_http reads itself before a request reaches a worker (its limit).
pub(super) const READ_AHEAD: usize = 1024;

/// A request's body, read within `within`: past it, the connection's reading side is shut down
/// (tiny_http sets no time-out on its sockets), the read ends, the client is answered 408 and
/// the worker is free again. A client that declares a body and never sends it, or trickles it,
/// holds a worker no longer than `within`.
pub(super) fn take_body(
    mut req: tiny_http::Request,
    max: usize,
    within: std::time::Duration,
    port: u16,
) -> Option<(tiny_http::Request, Result<Vec<u8>, Reply>)> {
    if req.body_length().is_some_and(|n| n <= READ_AHEAD) {
        let body = read_body(&mut req, max);
        return Some((req, body));
    }
    let started = std::time::Instant::now();
    let (done, watch) = std::sync::mpsc::channel::<()>();
    let peer = req.remote_addr().copied();
    let watchdog = std::thread::spawn(move || {
        if let (Err(std::sync::mpsc::RecvTimeoutError::Timeout), Some(peer)) =
            (watch.recv_timeout(within), peer)
        {
            shut_reading(port, peer);
        }
    });
    let declared = req.body_length();
    let body = read_body(&mut req, max);
    drop(done);
    let _ = watchdog.join();
    // cut short: past the deadline, or its connection's reading side shut as silent
    let short = matches!((&body, declared), (Ok(b), Some(n)) if b.len() < n);
    if started.elapsed() >= within || short {
        tracing::debug!("a request body did not come in time");
        let secs = within.as_secs_f64();
        let body = ErrorBody {
            error: ErrorDetail {
                message: format!("the request body did not come whole within {secs} s"),
                kind: "invalid_request_error".into(),
                param: None,
                code: None,
            },
        };
        respond(req, 408, &body);
        return None;
    }
    Some((req, body))
}

/// Shuts down the reading side of this process's TCP connection from `peer` to local port
/// `port`, so a read blocked on it returns. The socket is found among the process's descriptors
/// by its two addresses.
pub(super) fn shut_reading(port: u16, peer: std::net::SocketAddr) {
    each_connection(port, |s| {
        let found = s.peer_addr().ok() == Some(peer);
        if found {
            let _ = s.shutdown(std::net::Shutdown::Read);
        }
        found
    });
}

/// Calls `f` on each of this process's TCP connections to local port `port` (the server's side
/// of each), found among its descriptors, until `f` says it is done.
#[allow(unsafe_code)]
pub(super) fn each_connection(port: u16, mut f: impl FnMut(&std::net::TcpStream) -> bool) {
    use std::os::fd::FromRawFd;
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return;
    };
    for e in dir.flatten() {
        let Some(fd) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let socket =
            std::fs::read_link(e.path()).is_ok_and(|l| l.to_string_lossy().starts_with("socket:"));
        if !socket {
            continue;
        }
        // SAFETY: the stream is never dropped, so the descriptor is never closed here; on a
        // descriptor that is no longer a socket (closed meanwhile) the calls below fail.
        let s = std::mem::ManuallyDrop::new(unsafe { std::net::TcpStream::from_raw_fd(fd) });
        // a connection (it has a peer; the listener has none) to the server's port
        if s.peer_addr().is_ok() && s.local_addr().is_ok_and(|a| a.port() == port) && f(&s) {
            return;
        }
    }
}

pub(super) fn read_body(req: &mut tiny_http::Request, max: usize) -> Result<Vec<u8>, Reply> {
    let mut body = Vec::new();
    req.as_reader()
        .take(max as u64 + 1)
        .read_to_end(&mut body)
        .map_err(|e| bad(format!("the request body could not be read: {e}"), None))?;
    if body.len() > max {
        return Err(Reply {
            status: 413,
            kind: "invalid_request_error",
            message: format!("the request body is over {max} bytes"),
            param: None,
        });
    }
    Ok(body)
}
