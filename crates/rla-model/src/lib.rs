//! # rla-model — language models for RLAnything
//!
//! One transformer serves the policy and the reward model: the Qwen2 and Qwen3 architectures,
//! written with differentiable candle ops so every weight trains, loadable from and savable to
//! Hugging Face's layout.

pub mod batch;
pub mod config;
pub mod fused;
pub mod lm;
pub mod lora;
pub mod loss;
pub mod model;
pub mod sample;
pub mod tok;
pub mod train;
pub mod weights;

use std::path::{Path, PathBuf};

pub use config::{Arch, ModelConfig};
pub use lm::{LanguageModel, Lm};
pub use model::Transformer;

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
