//! What a task asks: generated task families in the plain sheet or the sheets world, the
//! sheets world's draws, a sheet's data rows, and the expert that solves any generated task.

pub mod expert;
pub mod family;
pub mod rows;
pub mod sheets;
