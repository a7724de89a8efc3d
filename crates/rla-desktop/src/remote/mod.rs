//! A controller for real desktops, speaking OSWorld's VM-side protocol (Flask on port 5000 in
//! OSWorld's VMs; `rlanything desktop serve-real` here): actions as `python -c` pyautogui code
//! (`POST /execute`), observations (`GET /screenshot`, `GET /accessibility`), the task's setup
//! (`/setup/upload`, `/setup/open_file`, `/setup/activate_window`, `/setup/execute`,
//! `/setup/launch`) and its result file (`POST /file`). Each call has a time-out; a call that
//! could not reach the server (refused, reset, timed out) is tried again, a few times, with a
//! growing pause; an answer the server gave is never sent twice.
//!
//! [`RemoteDesktop::reset`] is the one call OSWorld's server does not have (its VMs revert to a
//! snapshot instead): this project's server closes LibreOffice, restores its profile and removes
//! the uploaded files.

pub mod code;
pub mod expert;
pub mod tree;

use std::io::Read;
use std::time::Duration;

mod server_files;
pub use server_files::{write_server, SERVER_ENTRY, SERVER_FILES};

/// The most bytes read from one answer (a screenshot, a tree, a result file).
pub const MAX_REPLY: u64 = 256 << 20;

/// What OSWorld's controller puts before each action's code.
pub const PREFIX: &str = "import pyautogui; import time; pyautogui.FAILSAFE = False; ";

pub use rla_core::remote::RemoteError;

/// What `POST /execute` answered.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub struct Executed {
    /// `success` or `error`.
    pub status: String,
    /// Standard output.
    #[serde(default)]
    pub output: String,
    /// The error, if any.
    #[serde(default)]
    pub error: String,
    /// The exit code.
    #[serde(default)]
    pub returncode: i64,
}

/// A request's method and body.
enum Body {
    /// A GET.
    Get,
    /// A POST of this content type and body.
    Post(String, Vec<u8>),
}

/// A desktop reached over OSWorld's protocol.
pub struct RemoteDesktop {
    base: String,
    agent: ureq::Agent,
    api_key: Option<String>,
    /// Tries for a call that cannot reach the server.
    pub tries: u32,
}

impl RemoteDesktop {
    /// A desktop at `url` (`http://HOST:PORT`); each call may take `timeout`.
    pub fn new(url: &str, timeout: Duration) -> Result<RemoteDesktop, RemoteError> {
        let base = url.trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(RemoteError::Reply {
                url: base,
                message: "a desktop's address starts with http:// or https://".into(),
            });
        }
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(Duration::from_secs(10).min(timeout))
            .timeout(timeout)
            .build();
        Ok(RemoteDesktop {
            base,
            agent,
            api_key: None,
            tries: 4,
        })
    }

    /// Sends `Authorization: Bearer <key>` with every call (a server bound beyond loopback
    /// takes only such calls).
    pub fn with_api_key(mut self, key: Option<String>) -> RemoteDesktop {
        self.api_key = key;
        self
    }

    /// Its address.
    pub fn url(&self) -> &str {
        &self.base
    }

    fn call(&self, path: &str, body: &Body) -> Result<Vec<u8>, RemoteError> {
        let url = format!("{}{path}", self.base);
        let mut pause = Duration::from_millis(200);
        for attempt in 1..=self.tries.max(1) {
            let request = match body {
                Body::Get => self.agent.get(&url),
                Body::Post(ctype, _) => self.agent.post(&url).set("Content-Type", ctype),
            };
            let request = match &self.api_key {
                Some(k) => request.set("Authorization", &format!("Bearer {k}")),
                None => request,
            };
            let sent = match body {
                Body::Get => request.call(),
                Body::Post(_, bytes) => request.send_bytes(bytes),
            };
            match sent {
                Ok(resp) => {
                    let mut out = Vec::new();
                    resp.into_reader()
                        .take(MAX_REPLY + 1)
                        .read_to_end(&mut out)
                        .map_err(|e| RemoteError::Transport {
                            url: url.clone(),
                            message: format!("the answer broke off: {e}"),
                        })?;
                    if out.len() as u64 > MAX_REPLY {
                        return Err(RemoteError::Reply {
                            url,
                            message: format!("the answer is over {MAX_REPLY} bytes"),
                        });
                    }
                    return Ok(out);
                }
                Err(ureq::Error::Status(status, resp)) => {
                    let text = resp.into_string().unwrap_or_default();
                    let message = serde_json::from_str::<serde_json::Value>(&text)
                        .ok()
                        .and_then(|v| v.get("message").and_then(|m| m.as_str()).map(String::from))
                        .unwrap_or_else(|| text.chars().take(300).collect());
                    return Err(RemoteError::Status {
                        url,
                        status,
                        message,
                    });
                }
                Err(ureq::Error::Transport(t)) => {
                    if attempt == self.tries.max(1) {
                        return Err(RemoteError::Transport {
                            url,
                            message: format!("{t} (tried {attempt} times)"),
                        });
                    }
                    tracing::debug!("{url}: {t}; trying again in {pause:?}");
                    std::thread::sleep(pause);
                    pause *= 2;
                }
            }
        }
        unreachable!("the loop returns")
    }

    fn post_json(&self, path: &str, body: &serde_json::Value) -> Result<Vec<u8>, RemoteError> {
        self.call(
            path,
            &Body::Post("application/json".into(), body.to_string().into_bytes()),
        )
    }

    fn json<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        raw: Vec<u8>,
    ) -> Result<T, RemoteError> {
        serde_json::from_slice(&raw).map_err(|e| RemoteError::Reply {
            url: format!("{}{path}", self.base),
            message: format!(
                "the answer is not the JSON the protocol gives: {e}: {}",
                String::from_utf8_lossy(&raw[..raw.len().min(200)])
            ),
        })
    }

    /// Runs one action: pyautogui code, sent as OSWorld's controller sends it.
    pub fn execute(&self, code: &str) -> Result<Executed, RemoteError> {
        let body = serde_json::json!({
            "command": ["python", "-c", format!("{PREFIX}{code}")],
            "shell": false,
        });
        let raw = self.post_json("/execute", &body)?;
        self.json("/execute", raw)
    }

    /// Runs a setup command (`/setup/execute`): a list of arguments or a shell string.
    pub fn setup_execute(
        &self,
        command: &serde_json::Value,
        shell: bool,
    ) -> Result<Executed, RemoteError> {
        let raw = self.post_json(
            "/setup/execute",
            &serde_json::json!({"command": command, "shell": shell}),
        )?;
        self.json("/setup/execute", raw)
    }

    /// The screen as PNG.
    pub fn screenshot(&self) -> Result<Vec<u8>, RemoteError> {
        let png = self.call("/screenshot", &Body::Get)?;
        if !png.starts_with(b"\x89PNG\r\n\x1a\n") {
            return Err(RemoteError::Reply {
                url: format!("{}/screenshot", self.base),
                message: "the screenshot is not a PNG".into(),
            });
        }
        Ok(png)
    }

    /// The accessibility tree, as OSWorld's XML.
    pub fn accessibility(&self) -> Result<String, RemoteError> {
        #[derive(serde::Deserialize)]
        struct At {
            #[serde(rename = "AT")]
            at: Option<String>,
        }
        let raw = self.call("/accessibility", &Body::Get)?;
        let at: At = self.json("/accessibility", raw)?;
        at.at.ok_or_else(|| RemoteError::Reply {
            url: format!("{}/accessibility", self.base),
            message: "the server has no accessibility tree (`AT` is null)".into(),
        })
    }

    /// The screen's size.
    pub fn screen_size(&self) -> Result<(u32, u32), RemoteError> {
        #[derive(serde::Deserialize)]
        struct Size {
            width: u32,
            height: u32,
        }
        let raw = self.post_json("/screen_size", &serde_json::json!({}))?;
        let s: Size = self.json("/screen_size", raw)?;
        Ok((s.width, s.height))
    }

    /// Uploads a file to `path` on the desktop (multipart, as OSWorld's setup controller does).
    pub fn upload(&self, path: &str, data: &[u8]) -> Result<(), RemoteError> {
        let boundary = format!("rla{:016x}", rand::random::<u64>());
        let mut body = Vec::with_capacity(data.len() + 512);
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"file_path\"\r\n\r\n{path}\r\n")
                .as_bytes(),
        );
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"file_data\"; filename=\"file\"\r\nContent-Type: application/octet-stream\r\n\r\n")
                .as_bytes(),
        );
        body.extend_from_slice(data);
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        let ctype = format!("multipart/form-data; boundary={boundary}");
        self.call("/setup/upload", &Body::Post(ctype, body))?;
        Ok(())
    }

    /// Opens a file of the desktop in its application; returns once its window is there.
    pub fn open_file(&self, path: &str) -> Result<(), RemoteError> {
        self.post_json("/setup/open_file", &serde_json::json!({"path": path}))?;
        Ok(())
    }

    /// Brings a window to the front (by title, or by class).
    pub fn activate_window(
        &self,
        name: &str,
        strict: bool,
        by_class: bool,
    ) -> Result<(), RemoteError> {
        self.post_json(
            "/setup/activate_window",
            &serde_json::json!({"window_name": name, "strict": strict, "by_class": by_class}),
        )?;
        Ok(())
    }

    /// Starts a program.
    pub fn launch(&self, command: &serde_json::Value, shell: bool) -> Result<(), RemoteError> {
        self.post_json(
            "/setup/launch",
            &serde_json::json!({"command": command, "shell": shell}),
        )?;
        Ok(())
    }

    /// A file of the desktop (`POST /file`, form field `file_path`); `None` when it is not there.
    pub fn file(&self, path: &str) -> Result<Option<Vec<u8>>, RemoteError> {
        let form = format!("file_path={}", form_escape(path));
        let body = Body::Post(
            "application/x-www-form-urlencoded".into(),
            form.into_bytes(),
        );
        match self.call("/file", &body) {
            Ok(b) => Ok(Some(b)),
            Err(RemoteError::Status { status: 404, .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// This project's extension: LibreOffice closed, its profile restored, uploads removed.
    pub fn reset(&self) -> Result<(), RemoteError> {
        self.post_json("/setup/reset", &serde_json::json!({}))?;
        Ok(())
    }
}

fn form_escape(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_fields_are_escaped() {
        assert_eq!(
            form_escape("/home/user/a b&c=d.xlsx"),
            "/home/user/a+b%26c%3Dd.xlsx"
        );
    }

    #[test]
    fn an_address_needs_a_scheme() {
        let e = RemoteDesktop::new("localhost:5000", Duration::from_secs(1))
            .err()
            .unwrap();
        assert!(e.to_string().contains("http://"), "{e}");
    }

    #[test]
    fn an_unreachable_desktop_is_a_transport_error_after_the_tries() {
        // a port nothing listens on
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        let mut d = RemoteDesktop::new(&format!("http://127.0.0.1:{port}"), Duration::from_secs(2))
            .unwrap();
        d.tries = 2;
        let e = d.screenshot().unwrap_err();
        assert!(matches!(e, RemoteError::Transport { .. }), "{e}");
        assert!(e.to_string().contains("tried 2 times"), "{e}");
    }
}
