//! `rlanything theory`: Theorem 1 made visible.

use anyhow::{bail, Result};
use rla_core::theory::{ideal_judge_precision, theorem1_lower_bound};

#[derive(clap::Args)]
pub struct Args {
    /// Values of μ = p₊ + p₋ (the judge is taken symmetric: p₊ = p₋ = μ/2).
    #[arg(long, value_delimiter = ',', default_values_t = vec![0.8, 1.0, 1.2, 1.4, 1.6, 1.8])]
    pub mu: Vec<f64>,
    /// Numbers of judge samples m.
    #[arg(long, value_delimiter = ',', default_values_t = vec![1, 3, 5, 9, 17, 33])]
    pub m: Vec<usize>,
}

/// The most judge samples a cell is computed for (about a second each).
const MAX_M: usize = 100_000_000;

/// The table as text: one row per μ, one column per m, each cell `A_ideal / bound`.
pub fn table(mus: &[f64], ms: &[usize]) -> String {
    let mut s = String::from("Theorem 1: precision A of an ideal judge with p₊ = p₋ = μ/2 (bound 1 − exp(−m(μ−1)²/4) in brackets)\n");
    s.push_str(&format!("{:>6}", "μ \\ m"));
    for m in ms {
        s.push_str(&format!("{:>16}", m));
    }
    s.push('\n');
    for &mu in mus {
        s.push_str(&format!("{mu:>6.2}"));
        for &m in ms {
            let a = ideal_judge_precision(mu / 2.0, mu / 2.0, m);
            let b = theorem1_lower_bound(mu, m)
                .map(|b| format!("{b:.3}"))
                .unwrap_or_else(|| "—".into());
            s.push_str(&format!("{:>16}", format!("{a:.3} [{b}]")));
        }
        s.push('\n');
    }
    s
}

pub fn run(a: Args) -> Result<()> {
    for &mu in &a.mu {
        if !(0.0..=2.0).contains(&mu) {
            bail!("--mu {mu}: μ = p₊ + p₋ must lie in [0, 2]");
        }
    }
    if a.m.contains(&0) {
        bail!("--m: the number of judge samples must be at least 1");
    }
    if let Some(m) = a.m.iter().find(|&&m| m > MAX_M) {
        bail!("--m {m}: at most {MAX_M} judge samples (each cell takes O(m) time)");
    }
    print!("{}", table(&a.mu, &a.m));
    Ok(())
}
