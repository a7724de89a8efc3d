//! OSWorld's formats: task files with RLAnything's fields, and the Calc
//! evaluators of `desktop-env` 1.0.2 on saved files — cells, styles, charts and pivot tables read
//! as openpyxl reads them, a sheet as pandas reads it, and `compare_table`'s rules.

pub mod chart;
pub mod compare;
pub mod frame;
pub mod pivot;
pub mod rawcell;
pub mod style;
pub mod task;
