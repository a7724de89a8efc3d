//! `rlanything compare A B`: two policies on the same tasks with the same draws, and their
//! paired difference task by task — played here, or with `--recorded` read from the evaluations
//! two runs kept (`RUN/evals/`).

use anyhow::{bail, Result};
use rla_train::eval;
use rla_train::evals::SplitEval;
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
    /// Episodes a task (default 3).
    #[arg(long)]
    pub samples: Option<usize>,
    /// The policies' temperature (default 0.8, as the reference evaluates).
    #[arg(long)]
    pub temperature: Option<f64>,
    /// The seed of the draws, the same for both policies (default 0).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Pair the evaluations two runs kept instead of playing again: A and B are run folders,
    /// each read at its last evaluation of the split, or `RUN@K` at iteration K (`RUN@0`: its
    /// warm start). Both must have played the same tasks with the same draws.
    #[arg(long)]
    pub recorded: bool,
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

/// A run folder's kept evaluation of `split`: `RUN@K` at iteration K, else its last.
fn kept(p: &Path, split: rla_train::setting::Split) -> Result<SplitEval> {
    let text = p.to_string_lossy();
    let (dir, k) = match text.rsplit_once('@') {
        Some((d, k)) if !p.exists() && k.parse::<usize>().is_ok() => {
            (PathBuf::from(d), Some(k.parse::<usize>()?))
        }
        _ => (p.to_path_buf(), None),
    };
    if !dir.join("config.toml").is_file() {
        bail!(
            "{}: not a run folder (with config.toml); --recorded pairs the evaluations runs kept",
            dir.display()
        );
    }
    let e = match k {
        Some(k) => SplitEval::read(&dir, split, k)?,
        None => SplitEval::last(&dir, split)?,
    };
    e.ok_or_else(|| {
        anyhow::anyhow!(
            "{}: keeps no evaluation of the {} split{} (RUN/evals/)",
            dir.display(),
            split.name(),
            k.map(|k| format!(" at iteration {k}")).unwrap_or_default()
        )
    })
}

/// `--recorded`: the kept evaluations of A and B paired.
fn recorded(a: &Args, split: rla_train::setting::Split) -> Result<()> {
    for (flag, given) in [
        ("--config", a.config.is_some()),
        ("--n", a.n.is_some()),
        ("--samples", a.samples.is_some()),
        ("--temperature", a.temperature.is_some()),
        ("--seed", a.seed.is_some()),
    ] {
        if given {
            bail!("{flag}: --recorded reads the evaluations as the runs played them; drop {flag}");
        }
    }
    let (ea, eb) = (kept(&a.a, split)?, kept(&a.b, split)?);
    let paired = ea.paired(&eb)?;
    for (name, e) in [(&a.a, &ea), (&a.b, &eb)] {
        println!(
            "{} (iteration {}): {:.1}% ± {:.1} on {} {} tasks, {} episodes each at temperature {}",
            name.display(),
            e.iteration,
            100.0 * e.mean,
            100.0 * e.std_error,
            e.scores.len(),
            a.split,
            e.sampling.samples,
            e.sampling.temperature
        );
    }
    println!(
        "paired difference (first − second): {:+.1} ± {:.1} points (recorded; seed {})",
        100.0 * paired.mean,
        100.0 * paired.std_error,
        ea.sampling.seed
    );
    println!("verdict: {}", eval::verdict(&paired));
    Ok(())
}

pub fn run(a: Args) -> Result<()> {
    let split = crate::eval_cmd::parse_split(&a.split)?;
    if a.recorded {
        return recorded(&a, split);
    }
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
        temperature: a.temperature.unwrap_or(0.8),
        samples: a.samples.unwrap_or(3),
        seed: a.seed.unwrap_or(0),
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
            sampling.samples,
            sampling.temperature
        );
    }
    println!(
        "paired difference (first − second): {:+.1} ± {:.1} points ({} setting, seed {}; {:.0} s)",
        100.0 * c.paired.mean,
        100.0 * c.paired.std_error,
        c.a.setting,
        sampling.seed,
        started.elapsed().as_secs_f64()
    );
    println!("verdict: {}", c.verdict());
    Ok(())
}
