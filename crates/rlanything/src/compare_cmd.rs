//! `rlanything compare A B`: two policies on the same tasks with the same draws, and their
//! paired difference task by task.

use anyhow::{bail, Result};
use rla_train::eval;
use rla_train::setting::Sampling;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// The first policy: a run folder (its last checkpoint) or a checkpoint folder.
    pub a: PathBuf,
    /// The second policy, the same way (the base, say).
    pub b: PathBuf,
    /// The run config or run folder whose setting and split are played (default: the first of
    /// A and B that is a run folder).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The split: in-domain, ood or validation.
    #[arg(long, default_value = "in-domain")]
    pub split: String,
    /// Only the first N tasks of the split (all of a finite split by default).
    #[arg(long)]
    pub n: Option<usize>,
    /// Episodes a task.
    #[arg(long, default_value_t = 3)]
    pub samples: usize,
    /// The policies' temperature (the reference evaluates at 0.8).
    #[arg(long, default_value_t = 0.8)]
    pub temperature: f64,
    /// The seed of the draws, the same for both policies.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

/// A policy's checkpoint: a run folder's last one, or the folder itself.
fn checkpoint(p: &Path) -> Result<PathBuf> {
    if p.join("config.toml").is_file() {
        return match eval::run_config(p)?.1 {
            Some(c) => Ok(c),
            None => bail!(
                "{}: a run folder with no checkpoint of its policy",
                p.display()
            ),
        };
    }
    crate::backend::model_dir(p)
}

pub fn run(a: Args) -> Result<()> {
    let split = crate::eval_cmd::parse_split(&a.split)?;
    let config = match (
        &a.config,
        [&a.a, &a.b]
            .iter()
            .find(|p| p.join("config.toml").is_file()),
    ) {
        (Some(c), _) => c.clone(),
        (None, Some(run)) => run.to_path_buf(),
        (None, None) => bail!(
            "neither {} nor {} is a run folder: name the setting's config with --config",
            a.a.display(),
            a.b.display()
        ),
    };
    let (cfg, _) = eval::run_config(&config)?;
    let (pa, pb) = (checkpoint(&a.a)?, checkpoint(&a.b)?);
    let (ma, mb) = (
        crate::backend::open_sampler(&pa)?,
        crate::backend::open_sampler(&pb)?,
    );
    let sampling = Sampling {
        temperature: a.temperature,
        samples: a.samples,
        seed: a.seed,
    };
    let started = std::time::Instant::now();
    let c = eval::compare(&cfg, (ma.as_ref(), mb.as_ref()), split, a.n, sampling, true)?;
    for (name, r) in [(&pa, &c.a), (&pb, &c.b)] {
        println!(
            "{}: {:.1}% ± {:.1} on {} {} tasks, {} episodes each at temperature {}",
            name.display(),
            100.0 * r.mean,
            100.0 * r.std_error,
            r.per_task.len(),
            a.split,
            a.samples,
            a.temperature
        );
    }
    println!(
        "paired difference (first − second): {:+.1} ± {:.1} points ({} setting, seed {}; {:.0} s)",
        100.0 * c.paired.mean,
        100.0 * c.paired.std_error,
        c.a.setting,
        a.seed,
        started.elapsed().as_secs_f64()
    );
    println!("verdict: {}", c.verdict());
    Ok(())
}
