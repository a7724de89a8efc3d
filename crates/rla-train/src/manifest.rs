//! A pretrained base's `MANIFEST.md`: how it was made (command, seed, data, model shape, time,
//! CPU), its training curve as a table and a plot, and a check figure that a test plays again:
//! the policy's greedy success on the first validation tasks.

use crate::config::RunConfig;
use crate::pretrain::CurvePoint;
use crate::setting::{Ctx, Split};
use anyhow::Result;
use std::path::Path;

/// Validation tasks the manifest's check figure plays.
pub const CHECK_TASKS: usize = 20;

/// The line of the manifest holding its check figure, with `{won}` and `{n}` to fill.
pub fn check_line(won: usize, n: usize) -> String {
    format!("Greedy success of the policy on the first {n} validation tasks: {won} of {n}.")
}

/// Reads the check figure (won, n) back from a manifest's text.
pub fn read_check(manifest: &str) -> Option<(usize, usize)> {
    let line = manifest
        .lines()
        .find(|l| l.starts_with("Greedy success of the policy on the first "))?;
    let rest = line.strip_prefix("Greedy success of the policy on the first ")?;
    let (n, rest) = rest.split_once(" validation tasks: ")?;
    let (won, _) = rest.split_once(" of ")?;
    Some((won.parse().ok()?, n.parse().ok()?))
}

/// Greedy successes of the policy in `dir` on the first `n` validation tasks, played as the
/// config plays them.
pub fn validation_wins(
    backend: &dyn rla_lm::Backend,
    cfg: &RunConfig,
    policy: &Path,
    n: usize,
) -> Result<usize> {
    let mut s = crate::registry::setting(cfg)?;
    let lm = backend.open(policy, &Default::default())?;
    let ctx = Ctx {
        cfg,
        k: 0,
        progress: false,
        run: None,
    };
    let rate = s.evaluate(ctx, &*lm, Split::Validation, n)?;
    Ok((rate * n as f64).round() as usize)
}

/// The processor's model name from `/proc/cpuinfo`, where there is one.
pub fn cpu_model() -> Option<String> {
    std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|t| {
        t.lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    })
}

/// The processor's name (its model, else the architecture) and how many cores this process sees.
pub fn cpu_name() -> String {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let name = cpu_model().unwrap_or_else(|| std::env::consts::ARCH.to_string());
    format!("{name}, {cores} cores")
}

/// What the manifest is told of the pretraining run.
pub struct Made<'a> {
    /// The command that made the base.
    pub command: &'a str,
    /// Its config file's text.
    pub config_text: &'a str,
    /// A line per model from the warm start.
    pub lines: &'a [String],
    /// Wall seconds of the whole command.
    pub seconds: f64,
}

/// Writes `out/MANIFEST.md` (and `out/curve-policy.png` when the policy's curve was measured).
pub fn write_manifest(
    backend: &dyn rla_lm::Backend,
    cfg: &RunConfig,
    out: &Path,
    made: &Made,
) -> Result<()> {
    let curve = crate::pretrain::read_curve(&out.join("curve-policy.jsonl"))?;
    let won = validation_wins(backend, cfg, &out.join("policy"), CHECK_TASKS)?;
    let mut md = String::from("# Pretrained base\n\n");
    md.push_str(&format!(
        "Made by `{}` (seed {}) in {:.0} minutes on {}.\n\n",
        made.command,
        cfg.seed,
        made.seconds / 60.0,
        cpu_name()
    ));
    // a base continued from another: the steps that made that one, then this
    let parent = cfg
        .policy
        .path
        .as_deref()
        .and_then(Path::parent)
        .map(|p| p.join("MANIFEST.md"))
        .filter(|p| p.is_file());
    if let Some(p) = parent {
        let mut steps = made_steps(&rla_core::file::read_to_string(&p)?);
        steps.push(format!("`{}` (seed {})", made.command, cfg.seed));
        md.push_str("## How it was made\n\n");
        for (i, step) in steps.iter().enumerate() {
            md.push_str(&format!("{}. {step}\n", i + 1));
        }
        md.push('\n');
    }
    md.push_str("## Models\n\n");
    for l in made.lines {
        md.push_str(&format!("- {l}\n"));
    }
    md.push_str(&format!(
        "\n## Check\n\n{}\n\n",
        check_line(won, CHECK_TASKS)
    ));
    md.push_str(&format!(
        "The test `models_{}` (crates/rlanything/tests/models.rs) plays them again.\n\n",
        cfg.setting
    ));
    if !curve.is_empty() {
        md.push_str("## The policy's training curve\n\n");
        md.push_str(&curve_table(&curve));
        md.push_str("\n![the policy's training curve](curve-policy.png)\n\n");
        curve_plot(&curve, &out.join("curve-policy.png"))?;
    }
    md.push_str("## Config\n\n```toml\n");
    md.push_str(made.config_text.trim_end());
    md.push_str("\n```\n");
    crate::run::write_atomic(&out.join("MANIFEST.md"), &md)
}

/// The steps that made a base, read off its manifest: its list of steps, or its one command.
pub fn made_steps(manifest: &str) -> Vec<String> {
    let mut lines = manifest.lines();
    if lines.any(|l| l.trim() == "## How it was made") {
        return manifest
            .lines()
            .skip_while(|l| l.trim() != "## How it was made")
            .skip(1)
            .skip_while(|l| l.trim().is_empty())
            .take_while(|l| !l.trim().is_empty())
            .filter_map(|l| l.split_once(". ").map(|(_, step)| step.to_string()))
            .collect();
    }
    manifest
        .lines()
        .find_map(|l| l.strip_prefix("Made by "))
        .map(|rest| {
            // "`command` (seed S) in M minutes on CPU."
            let end = rest.find(") in ").map_or(rest.len(), |i| i + 1);
            rest[..end].to_string()
        })
        .into_iter()
        .collect()
}

const COLUMNS: [(&str, &str, bool); 6] = [
    ("train_loss", "train loss", false),
    ("held_out_loss", "held-out loss", false),
    ("held_out_action_acc", "greedy action = expert's", true),
    ("held_out_name_acc", "naming tokens ranked first", true),
    ("validation_success", "validation success", true),
    ("lr", "learning rate", false),
];

fn curve_table(curve: &[CurvePoint]) -> String {
    let mut t = String::from("| SFT step |");
    let cols: Vec<_> = COLUMNS
        .iter()
        .filter(|c| curve.iter().any(|p| p.contains_key(c.0)))
        .collect();
    for c in &cols {
        t.push_str(&format!(" {} |", c.1));
    }
    t.push_str("\n|---|");
    t.push_str(&"---|".repeat(cols.len()));
    t.push('\n');
    for p in curve {
        t.push_str(&format!(
            "| {} |",
            p.get("step").and_then(|v| v.as_u64()).unwrap_or(0)
        ));
        for c in &cols {
            let v = p.get(c.0).and_then(|v| v.as_f64());
            t.push_str(&match v {
                Some(v) if c.2 => format!(" {:.1}% |", 100.0 * v),
                Some(v) if c.0 == "lr" => format!(" {v:.2e} |"),
                Some(v) => format!(" {v:.3} |"),
                None => " — |".to_string(),
            });
        }
        t.push('\n');
    }
    t
}

fn curve_plot(curve: &[CurvePoint], path: &Path) -> Result<()> {
    let series: Vec<crate::plots::Series> = COLUMNS
        .iter()
        .filter(|c| c.2)
        .map(|c| {
            let pts = curve
                .iter()
                .filter_map(|p| Some((p.get("step")?.as_f64()?, 100.0 * p.get(c.0)?.as_f64()?)))
                .collect::<Vec<_>>();
            (c.1.to_string(), pts)
        })
        .filter(|s| !s.1.is_empty())
        .collect();
    crate::plots::line_chart(
        path,
        "the policy as it learns (by SFT step)",
        "%",
        &series,
        (0.0, 100.0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_check_line_reads_back() {
        let md = format!("# x\n\n{}\n", check_line(7, 20));
        assert_eq!(read_check(&md), Some((7, 20)));
        assert_eq!(
            read_check("Greedy success of the policy on the first x"),
            None
        );
    }

    #[test]
    fn a_continued_base_lists_the_steps_that_made_it() {
        let first = "# Pretrained base\n\nMade by `rlanything pretrain --config a.toml --out x` (seed 0) in 144 minutes on Some CPU.\n\n## Models\n";
        assert_eq!(
            made_steps(first),
            vec!["`rlanything pretrain --config a.toml --out x` (seed 0)".to_string()]
        );
        let second = "# Pretrained base\n\nMade by `b` (seed 1) in 3 minutes on C.\n\n## How it was made\n\n1. `a` (seed 0)\n2. `b` (seed 1)\n\n## Models\n";
        assert_eq!(made_steps(second), vec!["`a` (seed 0)", "`b` (seed 1)"]);
        assert!(made_steps("# nothing here\n").is_empty());
    }
}
