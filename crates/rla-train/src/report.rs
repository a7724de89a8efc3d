//! The run report: a Markdown summary of `metrics.jsonl` and `tasks.jsonl`.

use crate::run::{IterMetrics, RunDir};
use anyhow::Result;

mod summary;
pub use summary::summary;

fn f(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.3}")).unwrap_or_else(|| "—".into())
}

/// An evaluation's success with its standard error where it was sampled.
fn fse(x: Option<f64>, se: Option<f64>) -> String {
    match (x, se) {
        (Some(v), Some(se)) => format!("{v:.3} ± {se:.3}"),
        _ => f(x),
    }
}

/// The report's table: a row an iteration. μ (paper) is conditioned on the outcome (p₊ the
/// judge's +1 on steps of won episodes, p₋ its −1 on steps of lost ones); μ (label) and process
/// acc (knowable) are against the steps' labels (the household's: the label an agent could know),
/// process acc (planner) against the fully informed planner's labels where the setting has them.
pub fn table(ms: &[IterMetrics]) -> String {
    let mut s = String::from("| iter | train success | eval in-domain | eval OOD | μ (paper: outcome) | p₊ | p₋ | μ (label) | bound | precision A | process acc (knowable) | process acc (planner) | outcome acc | accepted | pending | pool | rollout s | judge s | update s |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for m in ms {
        s.push_str(&format!(
            "| {} | {:.3} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} | {:.1} | {:.1} |\n",
            m.iteration, m.train_success, fse(m.eval_in_domain, m.eval_in_domain_se), fse(m.eval_ood, m.eval_ood_se), f(m.mu_outcome), f(m.p_plus_outcome), f(m.p_minus_outcome), f(m.mu), f(m.bound), f(m.precision), f(m.process_acc), f(m.process_acc_planner), f(m.outcome_acc), m.accepted, m.pending_next, m.pool_size, m.time_rollout, m.time_judge, m.time_update
        ));
    }
    s
}

/// The vital signs' table: a row an iteration (the policy's update, the judge's, and the tokens
/// a second of each phase).
pub fn vitals_table(ms: &[IterMetrics]) -> String {
    let mut s = String::from("| iter | policy clip frac | policy KL of the update (decision tokens) | policy grad norm | policy entropy (decisions) | policy steps / samples / σ=0 groups | judge clip frac | judge grad norm | judge steps / samples / σ=0 groups | rollout tok/s | judge tok/s | update tok/s |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    let rate = |t: usize, secs: f64| {
        if secs > 0.0 && t > 0 {
            format!("{:.0}", t as f64 / secs)
        } else {
            "—".into()
        }
    };
    for m in ms.iter().filter(|m| m.iteration > 0) {
        let (p, r) = (&m.vitals.policy, &m.vitals.reward);
        let kl = match (p.update_kl, p.update_kl_decision) {
            (Some(a), Some(d)) => format!("{a:.2e} ({d:.2e})"),
            _ => "—".into(),
        };
        s.push_str(&format!(
            "| {} | {} | {kl} | {} | {} | {} / {} / {} | {} | {} | {} / {} / {} | {} | {} | {} |\n",
            m.iteration,
            f(p.clip_fraction),
            f(p.grad_norm),
            f(p.entropy),
            p.steps,
            p.samples,
            p.groups_dropped,
            f(r.clip_fraction),
            f(r.grad_norm),
            r.steps,
            r.samples,
            r.groups_dropped,
            rate(m.vitals.tokens_rollout, m.time_rollout),
            rate(m.vitals.tokens_judge, m.time_judge),
            rate(m.vitals.tokens_update, m.time_update),
        ));
    }
    s
}

/// Writes `report.md` into the run folder and returns its text; `rewrite_check` is how the run's
/// setting checks a rewrite before proposing it ([`crate::setting::Setting::rewrite_check`]).
pub fn write_report(dir: &RunDir, rewrite_check: Option<&str>) -> Result<String> {
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
        .find_map(|m| crate::run::diverged(m).map(|w| (m.iteration, w)))
    {
        s.push_str(&format!(
            "**The run diverged at iteration {k}: {what}.**\n\n"
        ));
    }
    s.push_str(&table(&ms));
    match crate::plots::write_plots(&dir.path, &ms) {
        Ok(files) => {
            s.push('\n');
            for f in files {
                s.push_str(&format!("![{f}]({f})\n"));
            }
        }
        Err(e) => s.push_str(&format!("\n(plots not drawn: {e})\n")),
    }
    s.push_str("\n## The update's vital signs\n\nHow far each update moved the policy (k3 KL between the policy before and after it, over all response tokens and, in brackets, over the decision tokens: those drawn among more than one allowed token), the share of tokens the clip bounded, the gradient norm before clipping, the policy's entropy where it had a choice, the optimiser steps, the samples trained and the groups whose rewards were all equal (σ = 0), and the tokens a second of each phase.\n\n");
    s.push_str(&vitals_table(&ms));
    let accepted: usize = ms.iter().map(|m| m.accepted).sum();
    // how the setting checks its rewrites (the paper measures the share of accepted tasks a
    // stronger model solves at least once)
    if let Some(check) = rewrite_check {
        s.push_str(&format!("\nAccepted tasks checked: a rewrite is proposed only if {check}, so every accepted task is solvable (the paper's pass@≥1 of accepted tasks is 1 by construction).\n"));
    }
    s.push_str(&format!("\nAccepted rewrites in all: {accepted}. Lineage in `tasks.jsonl`, sample trajectories in `samples/`.\n"));
    let lineage = dir.path.join("tasks.jsonl");
    if lineage.exists() {
        use anyhow::Context;
        let text = rla_core::file::read_to_string_limited(&lineage, MAX_LINEAGE)
            .with_context(|| format!("cannot read {}", lineage.display()))?;
        let rows = accepted_by_iteration(&text)
            .with_context(|| format!("{} is not a run's lineage", lineage.display()))?;
        if let Some(rows) = rows {
            s.push_str("\n## Accepted rewrites by iteration\n\nThe rewrites decided in each iteration, those accepted by direction, the policy's success on the accepted ones (their parents' when proposed → theirs when decided, means) and what they changed.\n\n");
            s.push_str(&rows);
        }
    }
    crate::run::write_atomic(&dir.path.join("report.md"), &s)?;
    Ok(s)
}

/// The largest lineage file the report reads.
const MAX_LINEAGE: u64 = 1 << 30;

/// What the report reads of one decided rewrite (a line of `tasks.jsonl`).
#[derive(serde::Deserialize)]
struct Decided {
    iteration: usize,
    accepted: bool,
    direction: rla_core::adapt::Direction,
    perturbation: String,
    acc_before: f64,
    acc_after: f64,
}

/// The accepted rewrites by iteration from a run's lineage (`tasks.jsonl`, one decided rewrite a
/// line): a row an iteration that decided any, with how many it decided, how many it accepted
/// (harder / easier), the policy's mean success on the accepted ones — their parents' when they
/// were proposed → theirs when they were decided — and what they changed, by the name before a
/// perturbation's colon (`hide targets: drawer 7` counts as `hide targets`). `None` when nothing
/// was decided; a line that is not a decided rewrite is an error naming it.
pub fn accepted_by_iteration(lineage: &str) -> Result<Option<String>> {
    use std::collections::BTreeMap;
    let mut by_iter: BTreeMap<usize, Vec<Decided>> = BTreeMap::new();
    for (n, line) in lineage.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let d: Decided = serde_json::from_str(line)
            .map_err(|e| anyhow::anyhow!("line {}: not a decided rewrite: {e}", n + 1))?;
        by_iter.entry(d.iteration).or_default().push(d);
    }
    if by_iter.is_empty() {
        return Ok(None);
    }
    let mut s = String::from("| iter | decided | accepted (harder / easier) | policy success on the accepted | accepted rewrites |\n|---|---|---|---|---|\n");
    for (k, ds) in &by_iter {
        let acc: Vec<&Decided> = ds.iter().filter(|d| d.accepted).collect();
        let harder = acc
            .iter()
            .filter(|d| d.direction == rla_core::adapt::Direction::Harder)
            .count();
        let success = if acc.is_empty() {
            "—".to_string()
        } else {
            let mean =
                |f: fn(&Decided) -> f64| acc.iter().copied().map(f).sum::<f64>() / acc.len() as f64;
            format!(
                "{:.3} → {:.3}",
                mean(|d| d.acc_before),
                mean(|d| d.acc_after)
            )
        };
        let mut names: BTreeMap<&str, usize> = BTreeMap::new();
        for d in &acc {
            let name = d.perturbation.split(':').next().unwrap_or_default().trim();
            *names.entry(name).or_default() += 1;
        }
        let names: Vec<String> = names
            .into_iter()
            .map(|(name, c)| format!("{} ×{c}", name.replace('|', "\\|")))
            .collect();
        s.push_str(&format!(
            "| {k} | {} | {} ({harder} / {}) | {success} | {} |\n",
            ds.len(),
            acc.len(),
            acc.len() - harder,
            if names.is_empty() {
                "—".to_string()
            } else {
                names.join(", ")
            }
        ));
    }
    Ok(Some(s))
}

/// A run's first and last evaluation success, each (in-domain, OOD).
pub fn before_after(ms: &[IterMetrics]) -> Result<((f64, f64), (f64, f64))> {
    use anyhow::Context;
    let first = ms.first().context("no metrics")?;
    let last = ms
        .iter()
        .rev()
        .find(|m| m.eval_in_domain.is_some())
        .context("no evaluation")?;
    Ok((
        (
            first.eval_in_domain.unwrap_or(0.0),
            first.eval_ood.unwrap_or(0.0),
        ),
        (
            last.eval_in_domain.unwrap_or(0.0),
            last.eval_ood.unwrap_or(0.0),
        ),
    ))
}
