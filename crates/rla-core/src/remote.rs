//! What went wrong talking to a server: the one error of every remote call the project makes —
//! to inference servers (`rla-remote`) and to real desktops (`rla-desktop`'s controller).

/// What went wrong talking to a server.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// The server could not be reached or did not answer in time (after any retries).
    #[error("{url}: {message}")]
    Transport {
        /// The request's URL.
        url: String,
        /// What happened.
        message: String,
    },
    /// The server answered with an error status.
    #[error("{url}: HTTP {status}: {message}")]
    Status {
        /// The request's URL.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The error's message, from the server's JSON error body when it sent one.
        message: String,
    },
    /// The server's reply is not what the protocol says.
    #[error("{url}: a malformed reply: {message}")]
    Reply {
        /// The request's URL.
        url: String,
        /// What is wrong with it.
        message: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_names_the_url() {
        let e = RemoteError::Reply {
            url: "http://127.0.0.1:5000/screenshot".into(),
            message: "not a PNG".into(),
        };
        assert_eq!(
            e.to_string(),
            "http://127.0.0.1:5000/screenshot: a malformed reply: not a PNG"
        );
        let e = RemoteError::Status {
            url: "u".into(),
            status: 503,
            message: "busy".into(),
        };
        assert_eq!(e.to_string(), "u: HTTP 503: busy");
    }
}
