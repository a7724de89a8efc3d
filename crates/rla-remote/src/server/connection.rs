//! The server's connections, each a task on the reactor: request heads and bodies read within
//! a time limit, connections that send nothing closed, and the model's calls run on a bounded
//! set of blocking threads, so that no client, however slow or silent, holds a thread.

use super::*;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::{Body, Incoming};
use std::future::Future;
use std::pin::Pin;

/// What a request's handling comes to.
pub(super) type Answer = hyper::Response<Full<Bytes>>;

/// Takes connections on `listener` without end, each served by a task of its own.
pub(super) async fn accept<S: Sampler + Send + Sync + 'static>(
    listener: tokio::net::TcpListener,
    state: Arc<State<S>>,
) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let _ = stream.set_nodelay(true);
                tokio::spawn(serve(stream, state.clone()));
            }
            Err(e) => {
                // out of descriptors, say: wait rather than spin
                tracing::warn!(error = %e, "a connection could not be taken");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
    }
}

/// Serves one connection's requests. Its next request's head must come whole within the body
/// time limit: a connection that sends nothing (at first, or between requests) is then closed.
async fn serve<S: Sampler + Send + Sync + 'static>(
    stream: tokio::net::TcpStream,
    state: Arc<State<S>>,
) {
    let limit = state.limits.body_timeout;
    // (boxed: hyper hands the connection back only for a service whose future is `Unpin`)
    type Handling = Pin<Box<dyn Future<Output = Result<Answer, std::convert::Infallible>> + Send>>;
    let service = hyper::service::service_fn(move |req| -> Handling {
        let state = state.clone();
        Box::pin(async move { Ok(handle(state, req).await) })
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(limit)
        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
        .without_shutdown();
    match conn.await {
        Ok(parts) => linger(parts.io.into_inner(), limit).await,
        // a head that did not come in time, a malformed one, a client gone: the socket closes
        Err(e) => tracing::debug!(error = %e, "a connection ended"),
    }
}

/// Closes a connection whose last reply is written: the writing side is shut, and what the
/// client still sends (the rest of a body refused unread) is read and dropped for a while, so
/// that closing with unread bytes does not reset the connection before the client has read its
/// reply.
async fn linger(mut stream: tokio::net::TcpStream, limit: std::time::Duration) {
    use tokio::io::AsyncWrite;
    let _ = std::future::poll_fn(|cx| Pin::new(&mut stream).poll_shutdown(cx)).await;
    let drain = async {
        let mut buf = vec![0u8; 16 << 10];
        loop {
            if stream.readable().await.is_err() {
                return;
            }
            match stream.try_read(&mut buf) {
                Ok(0) => return,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(_) => return,
            }
        }
    };
    let within = limit.min(std::time::Duration::from_secs(2));
    let _ = tokio::time::timeout(within, drain).await;
}

/// A request's body, read whole within `within` and at most `max` bytes long: past the time a
/// client that declared a body and never sent it, or trickles it, is answered 408; a body over
/// the limit is answered 413. Neither reads on: the connection is closed after the reply.
pub(super) async fn take_body(
    body: Incoming,
    max: usize,
    within: std::time::Duration,
) -> Result<Vec<u8>, Reply> {
    let over = || Reply {
        status: 413,
        kind: "invalid_request_error",
        message: format!("the request body is over {max} bytes"),
        param: None,
    };
    // a declared length over the limit is refused before any of it is read
    if body.size_hint().lower() > max as u64 {
        return Err(over());
    }
    match tokio::time::timeout(within, Limited::new(body, max).collect()).await {
        Ok(Ok(got)) => Ok(got.to_bytes().to_vec()),
        Ok(Err(e)) if e.is::<LengthLimitError>() => Err(over()),
        Ok(Err(e)) => Err(bad(
            format!("the request body could not be read: {e}"),
            None,
        )),
        Err(_) => {
            tracing::debug!("a request body did not come in time");
            Err(Reply {
                status: 408,
                kind: "invalid_request_error",
                message: format!(
                    "the request body did not come whole within {} s",
                    within.as_secs_f64()
                ),
                param: None,
            })
        }
    }
}

/// Runs `f` on a blocking thread once one of the server's `workers` is free (the reactor's
/// threads never wait on a model); a panic in it is a 500, never a lost thread.
pub(super) async fn blocking<S, F>(state: &Arc<State<S>>, f: F) -> Result<serde_json::Value, Reply>
where
    S: Sampler + Send + Sync + 'static,
    F: FnOnce(&State<S>) -> Result<serde_json::Value, Reply> + Send + 'static,
{
    let permit = match state.workers.clone().acquire_owned().await {
        Ok(p) => p,
        Err(_) => return Err(internal("the server is stopping")),
    };
    let st = state.clone();
    let run = tokio::task::spawn_blocking(move || {
        // held until the call returns, even when the client has gone meanwhile
        let _permit = permit;
        f(&st)
    });
    run.await.unwrap_or_else(|_| {
        Err(Reply {
            status: 500,
            kind: "server_error",
            message: "the model failed on this request".into(),
            param: None,
        })
    })
}
