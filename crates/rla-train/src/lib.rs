//! # rla-train — the RLAnything loop
//!
//! [`trainer::Trainer::iteration`] is the paper's Algorithm 1: roll out the policy, judge every
//! step m times, compute integrated rewards and consistency rewards, update both models with
//! PPO-clip, summarise the judge's critiques, and rewrite tasks that left the difficulty band.

pub mod ablate;
pub mod coding;
pub mod config;
pub mod control;
pub mod dagger;
pub mod desktop;
pub mod eval;
pub mod evals;
pub mod household;
pub mod judge;
pub mod launch;
pub mod manifest;
pub mod open;
pub mod play;
pub mod plots;
pub mod pool;
pub mod pretrain;
pub mod pretrain_state;
pub mod progress;
pub mod recipe;
pub mod registry;
pub mod report;
pub mod resume;
pub mod run;
pub mod served;
pub mod setting;
pub mod sources;
pub mod track;
pub mod trainer;
pub mod trajectory;
pub mod vitals;

pub use config::{Mode, RunConfig};
pub use progress::bar;
pub use setting::Setting;
pub use trainer::Trainer;
