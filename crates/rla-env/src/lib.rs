//! # rla-env — environments for RLAnything
//!
//! The [`Environment`] trait the trainer steps, and the settings behind it. The household setting
//! ([`household`]) is a native, ALFWorld-compatible text world: it reads ALFWorld's game files,
//! prints ALFWorld's text, and steps far faster than TextWorld's engine.

pub mod code;
pub mod error;
pub mod household;

pub use error::EnvError;

/// What a step returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The environment's feedback text.
    pub feedback: String,
    /// Whether the goal holds now.
    pub won: bool,
    /// Whether the episode is over (won, or the step limit was reached).
    pub done: bool,
}

/// A text environment the policy interacts with.
pub trait Environment {
    /// Starts an episode and returns the first observation.
    fn reset(&mut self) -> String;
    /// Sends one command.
    fn step(&mut self, command: &str) -> Step;
    /// The commands admissible now, sorted.
    fn admissible(&mut self) -> &[String];
    /// The task sentence.
    fn task(&self) -> &str;
}
