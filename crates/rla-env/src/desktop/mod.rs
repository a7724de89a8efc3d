//! The GUI setting's formats: OSWorld task files (the `libreoffice_calc` domain) with the fields
//! RLAnything adds to adapt them.

pub mod task;

pub use task::DesktopTask;
