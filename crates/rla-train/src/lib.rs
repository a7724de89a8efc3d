//! # rla-train — the RLAnything loop
//!
//! [`trainer::Trainer::iteration`] is the paper's Algorithm 1: roll out the policy, judge every
//! step m times, compute integrated rewards and consistency rewards, update both models with
//! PPO-clip, summarise the judge's critiques, and rewrite tasks that left the difficulty band.

pub mod coding;
pub mod config;
pub mod control;
pub mod desktop;
pub mod household;
pub mod judge;
pub mod manifest;
pub mod open;
pub mod play;
pub mod plots;
pub mod pool;
pub mod pretrain;
pub mod report;
pub mod run;
pub mod served;
pub mod setting;
pub mod settings;
pub mod trainer;

pub use config::{Mode, RunConfig};
pub use setting::Setting;
pub use trainer::Trainer;

/// A progress bar on stderr.
pub fn bar(len: u64, msg: &str) -> indicatif::ProgressBar {
    let b = indicatif::ProgressBar::new(len);
    b.set_style(
        indicatif::ProgressStyle::with_template(
            "{prefix:>18} [{bar:30}] {pos}/{len} {elapsed} {msg}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    b.set_prefix(msg.to_string());
    b
}
