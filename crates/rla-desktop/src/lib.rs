//! The GUI setting's desktop: a Calc-like spreadsheet application driven by OSWorld's actions,
//! OSWorld's task files and evaluators, generated task families with an expert that solves them,
//! and a controller for real desktops behind OSWorld's protocol. No tensor library: the models
//! that play it live in `rla-train`.
//!
//! Six rooms, from the ground up:
//!
//! - [`sheet`] — the spreadsheet itself: A1 addresses, the formula language, the workbook, .xlsx
//!   and .csv files, and the bounds a file is checked against before any reader opens it.
//! - [`osworld`] — OSWorld's formats: task files and the evaluators
//!   (`compare_table`'s rules; cells, styles, charts and pivot tables read as `desktop-env` reads
//!   them; a sheet as pandas reads it).
//! - [`ui`] — the desktop a policy sees and drives: the application (menus, Name Box, grid,
//!   dialogs), where everything lies on the screen, the accessibility tree, screenshots, and
//!   OSWorld's action space parsed (never executed).
//! - [`tasks`] — the tasks: the task families and the worlds they are drawn in, the sheets
//!   world's draws, a task's episode on the native desktop, the expert that solves any generated
//!   task from any state, and tasks as OSWorld task folders.
//! - [`remote`] — a real desktop over OSWorld's protocol.
//! - [`play`] — a task played by an agent: the one runner for native and real desktops, and the
//!   compact action vocabulary of tiny text-only policies.
//!
//! Each room uses only those listed above it.

pub mod osworld;
pub mod play;
pub mod remote;
pub mod sheet;
pub mod tasks;
pub mod ui;

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
