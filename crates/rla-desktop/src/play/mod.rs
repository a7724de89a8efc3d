//! A task played by an agent: the one runner for native and real desktops, and the compact
//! action vocabulary of tiny text-only policies.

pub mod runner;
pub mod tiny;
