//! # rla-model — language models for RLAnything
//!
//! One transformer serves the policy and the reward model: the Qwen2 and Qwen3 architectures,
//! written with differentiable candle ops so every weight trains, loadable from and savable to
//! Hugging Face's layout.

pub mod backend;
pub mod batch;
pub mod config;
pub mod fused;
pub mod gguf;
pub mod lm;
pub mod lora;
pub mod loss;
pub mod model;
pub mod ops;
pub mod optim;
pub mod sample;
pub mod tok;
pub mod train;
pub mod weights;

use std::path::{Path, PathBuf};

pub use backend::Candle;
pub use config::{Arch, ModelConfig};
pub use lm::Lm;
pub use model::Transformer;
pub use rla_lm::{Learner, LmError, Model, Sampler};

/// Fixes the number of CPU threads the tensor kernels use: `threads`, else `RAYON_NUM_THREADS`
/// if set, else candle's choice (the physical cores). Returns the number.
///
/// Call it at the start of a program, before any other thread starts (it sets environment
/// variables). It matters for speed twice over:
/// - without `RAYON_NUM_THREADS`, candle counts the cores again on every matrix product, reading
///   `/proc/cpuinfo` (tens of microseconds each time, which more than doubles the cost of a
///   decoding step);
/// - candle's pool for element-wise ops spins for a while after each op, holding a core that the
///   next matrix product needs; unless `CANDLE_BARRIER_POOL_SPIN_LIMIT` says otherwise, its
///   threads park at once (training runs ~30% faster on two cores).
pub fn set_thread_count(threads: Option<usize>) -> usize {
    let n = threads
        .filter(|&n| n > 0)
        .unwrap_or_else(candle_core::utils::get_num_threads)
        .max(1);
    std::env::set_var("RAYON_NUM_THREADS", n.to_string());
    if std::env::var_os("CANDLE_BARRIER_POOL_SPIN_LIMIT").is_none() {
        std::env::set_var("CANDLE_BARRIER_POOL_SPIN_LIMIT", "0");
    }
    n
}

/// Errors of the model crate.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A file's content is wrong.
    #[error("{path}: {field}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What part of it.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// The configuration is not supported.
    #[error("config: {0}")]
    Config(String),
    /// A tensor the architecture needs is absent.
    #[error("checkpoint lacks tensor {0}")]
    MissingTensor(String),
    /// A tensor has the wrong shape.
    #[error("tensor {name} has shape {found:?}, expected {expected:?}")]
    Shape {
        /// Its name.
        name: String,
        /// The architecture's shape.
        expected: Vec<usize>,
        /// The checkpoint's shape.
        found: Vec<usize>,
    },
    /// A tensor operation failed.
    #[error("tensor: {0}")]
    Candle(#[from] candle_core::Error),
    /// Anything else.
    #[error("{0}")]
    Other(String),
}

impl From<std::io::Error> for ModelError {
    /// An I/O error whose message already names its path (see [`rla_lm::write_atomic`]).
    fn from(e: std::io::Error) -> Self {
        ModelError::Other(e.to_string())
    }
}

impl ModelError {
    /// An I/O error on a path.
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        ModelError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    /// An invalid-content error.
    pub fn invalid(path: &Path, field: impl Into<String>, message: impl Into<String>) -> Self {
        ModelError::Invalid {
            path: path.to_path_buf(),
            field: field.into(),
            message: message.into(),
        }
    }
}
