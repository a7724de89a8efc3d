//! A task played: an episode on the native desktop, the one runner for native and real
//! desktops, and the compact action vocabulary of tiny text-only policies.

pub mod episode;
pub mod runner;
pub mod tiny;
