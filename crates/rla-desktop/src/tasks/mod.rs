//! Tasks: generated task families in the plain sheet or the sheets world, the sheets world's
//! draws, a sheet's data rows, a task's episode on the native desktop, the expert that solves any
//! generated task from any state, and tasks as files (OSWorld task folders exported and opened).

pub mod episode;
pub mod expert;
pub mod family;
pub mod local;
pub mod rows;
pub mod sheets;
