//! The run report: a Markdown summary of `metrics.jsonl` and `tasks.jsonl`.

use crate::run::{IterMetrics, RunDir};
use anyhow::Result;

fn f(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.3}")).unwrap_or_else(|| "—".into())
}

/// Writes `report.md` into the run folder and returns its text.
pub fn write_report(dir: &RunDir) -> Result<String> {
    let ms: Vec<IterMetrics> = dir.metrics()?;
    if ms.is_empty() {
        anyhow::bail!(
            "{} holds no completed iteration (no checkpoint/state.json): start a run with \
             `rlanything train --config C --run {0}`",
            dir.path.display()
        );
    }
    let mut s = String::from("# RLAnything run report\n\n");
    if let Some((k, what)) = ms
        .iter()
        .find_map(|m| crate::trainer::diverged(m).map(|w| (m.iteration, w)))
    {
        s.push_str(&format!(
            "**The run diverged at iteration {k}: {what}.**\n\n"
        ));
    }
    s.push_str("| iter | train success | eval in-domain | eval OOD | μ | bound | precision A | process acc | outcome acc | accepted | pending | pool | rollout s | judge s | update s |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for m in &ms {
        s.push_str(&format!(
            "| {} | {:.3} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} | {:.1} | {:.1} |\n",
            m.iteration, m.train_success, f(m.eval_in_domain), f(m.eval_ood), f(m.mu), f(m.bound), f(m.precision), f(m.process_acc), f(m.outcome_acc), m.accepted, m.pending_next, m.pool_size, m.time_rollout, m.time_judge, m.time_update
        ));
    }
    match crate::plots::write_plots(&dir.path, &ms) {
        Ok(files) => {
            s.push('\n');
            for f in files {
                s.push_str(&format!("![{f}]({f})\n"));
            }
        }
        Err(e) => s.push_str(&format!("\n(plots not drawn: {e})\n")),
    }
    let accepted: usize = ms.iter().map(|m| m.accepted).sum();
    s.push_str(&format!("\nAccepted rewrites in all: {accepted}. Lineage in `tasks.jsonl`, sample trajectories in `samples/`.\n"));
    crate::run::write_atomic(&dir.path.join("report.md"), &s)?;
    Ok(s)
}
