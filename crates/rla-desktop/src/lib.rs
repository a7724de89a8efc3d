pub mod a11y;
pub mod action;
pub mod addr;
pub mod app;
pub mod bounds;
pub mod chart;
pub mod compare;
pub mod episode;
pub mod expert;
pub mod family;
pub mod formula;
pub mod frame;
pub mod keys;
pub mod layout;
pub mod local;
pub mod pivot;
pub mod rawcell;
pub mod remote;
pub mod render;
pub mod rows;
pub mod runner;
pub mod sheets;
pub mod style;
pub mod task;
pub mod tiny;
pub mod workbook;
pub mod xlsx;
mod xmlpart;

/// An error of the desktop setting's files.
#[derive(Debug, thiserror::Error)]
pub enum DesktopError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A file's content is wrong.
    #[error("{path}: {field}: {message}")]
    Invalid {
        /// The file.
        path: std::path::PathBuf,
        /// What part of it.
        field: String,
        /// What is wrong.
        message: String,
    },
}

impl DesktopError {
    /// A [`DesktopError::Invalid`].
    pub fn invalid(
        path: impl Into<std::path::PathBuf>,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        DesktopError::Invalid {
            path: path.into(),
            field: field.into(),
            message: message.into(),
        }
    }
}
