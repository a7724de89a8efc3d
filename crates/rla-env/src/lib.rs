//! # rla-env — environments for RLAnything
//!
//! The settings' worlds: the household ([`household`]), a native, ALFWorld-compatible text
//! world that reads ALFWorld's game files, prints ALFWorld's text, and steps far faster than
//! TextWorld's engine; and the coding setting's problems and sandbox ([`code`]).

pub mod code;
pub mod error;
pub mod household;

pub use error::EnvError;
