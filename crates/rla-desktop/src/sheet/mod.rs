//! The spreadsheet: A1 addresses and ranges, the formula language, workbooks of sheets and
//! cells, real .xlsx and .csv files, and what a file may make a reader allocate.

pub mod addr;
pub mod bounds;
pub mod formula;
pub mod workbook;
pub mod xlsx;
pub(crate) mod xmlpart;
