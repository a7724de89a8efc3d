//! Errors of the environment crate: each names the file and the field that was wrong.

use std::path::PathBuf;

/// An environment error.
#[derive(Debug, thiserror::Error)]
pub enum EnvError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A file was read but its content is wrong.
    #[error("{path}: {field}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The field (JSON key, PDDL section …) that was wrong.
        field: String,
        /// What was wrong.
        message: String,
    },
}

impl EnvError {
    /// An [`EnvError::Invalid`].
    pub fn invalid(
        path: impl Into<PathBuf>,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        EnvError::Invalid {
            path: path.into(),
            field: field.into(),
            message: message.into(),
        }
    }

    /// Reads a file to a string: a regular file of at most [`rla_core::file::MAX_BYTES`] (a
    /// game or task file that is a FIFO, a device or a symlink to one is an error).
    pub fn read(path: &std::path::Path) -> Result<String, EnvError> {
        rla_core::file::read_to_string(path).map_err(|source| EnvError::Io {
            path: path.to_path_buf(),
            source,
        })
    }
}
