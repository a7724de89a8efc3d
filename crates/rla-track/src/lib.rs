//! Experiment trackers for a run's metrics: every scalar a metrics record holds (whatever it
//! serialises, nested objects joined with `/`, so new metrics follow without a list to keep), one
//! point an iteration.
//!
//! - [`tensorboard`]: TensorBoard's event files (TFRecord framing with masked CRC-32C, `Event`
//!   and `Summary` protocol buffers written by hand), scalars and text, readable by TensorBoard.
//! - [`wandb`]: Weights & Biases through its official Python client, run beside the program.

#![warn(missing_docs)]

pub mod tensorboard;
pub mod wandb;

/// A tracker's error.
#[derive(Debug, thiserror::Error)]
pub enum TrackError {
    /// A file or process could not be used.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        source: std::io::Error,
    },
    /// Anything else, said in words.
    #[error("{0}")]
    Other(String),
}

impl TrackError {
    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> TrackError {
        let what = what.into();
        move |source| TrackError::Io { what, source }
    }
}

/// Every finite number of a metrics record, by its path (`success`, `setting/judge/process_acc`,
/// `time/rollout`); arrays are indexed (`curve/0`). Booleans count as 0 or 1; strings and nulls
/// are left out.
pub fn scalars(record: &serde_json::Value) -> Vec<(String, f64)> {
    fn walk(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, f64)>) {
        let key = |k: &str| {
            if prefix.is_empty() {
                k.to_string()
            } else {
                format!("{prefix}/{k}")
            }
        };
        match v {
            serde_json::Value::Number(n) => {
                if let Some(x) = n.as_f64().filter(|x| x.is_finite()) {
                    out.push((prefix.to_string(), x));
                }
            }
            serde_json::Value::Bool(b) => out.push((prefix.to_string(), f64::from(u8::from(*b)))),
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    walk(&key(k), v, out);
                }
            }
            serde_json::Value::Array(a) => {
                for (i, v) in a.iter().enumerate() {
                    walk(&key(&i.to_string()), v, out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk("", record, &mut out);
    out.retain(|(k, _)| !k.is_empty());
    out
}
