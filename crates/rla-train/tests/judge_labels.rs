//! A household run's metrics carry the judge's process accuracy against both step labels — the
//! one an agent could know (the searching expert's) and the fully informed planner's — and μ as
//! the paper defines it (by the outcome) with its p₊ and p₋, beside μ by the label; the report's
//! table shows them all. The shipped tiny household models play and judge: a fresh model never
//! wins an episode, and μ by the outcome needs won and lost ones.

use std::path::Path;

#[test]
fn a_household_runs_metrics_carry_both_process_accuracies_and_the_outcome_mu() {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models/household");
    let dir = tempfile::tempdir().unwrap();
    // eight steps win some tasks and lose others: the searching expert needs 10 on average
    let text = format!(
        "setting = \"household\"\niterations = 1\npool_size = 4\ntasks_per_iteration = 4\n\
         rollouts_per_task = 4\njudge_samples = 2\nupdate_epochs = 1\n\
         [eval]\nin_domain = 1\nood = 1\nvalidation = 0\n\
         [household]\ntrain_step_limit = 8\neval_step_limit = 8\nhistory_window = 1\n\
         notes = true\nnotes_style = \"compact\"\nprompt_style = \"unlisted\"\n\
         constrain_actions = true\njudge_notes = true\n\
         [policy]\npath = {:?}\nmax_new_tokens = 12\nmicro_batch = 32\n\
         [reward]\npath = {:?}\nmax_new_tokens = 16\nmicro_batch = 32\n",
        base.join("policy"),
        base.join("reward"),
    );
    let cfg = rla_train::RunConfig::parse_in(&text, dir.path()).unwrap();
    static CANDLE: rla_model::Candle = rla_model::Candle;
    let run = dir.path().join("run");
    rla_train::registry::setting(&cfg)
        .unwrap()
        .train(&CANDLE, cfg, &run, false, false)
        .unwrap();
    let text = std::fs::read_to_string(run.join("metrics.jsonl")).unwrap();
    let ms: Vec<rla_train::run::IterMetrics> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let m = &ms[1];
    for (name, x) in [
        ("process_acc", m.process_acc),
        ("process_acc_planner", m.process_acc_planner),
        ("p_plus_outcome", m.p_plus_outcome),
        ("p_minus_outcome", m.p_minus_outcome),
    ] {
        assert!(x.is_some_and(|x| (0.0..=1.0).contains(&x)), "{name}: {x:?}");
    }
    let (p, q) = (m.p_plus_outcome.unwrap(), m.p_minus_outcome.unwrap());
    assert!((m.mu_outcome.unwrap() - (p + q)).abs() < 1e-12);
    assert!(m.mu.is_some(), "μ by the label");
    // the episodes' steps carry both labels, and they differ where a step searched a place the
    // planner knew to be empty (or walked where the searcher had no reason to)
    let samples: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("samples/iter-0001.json")).unwrap())
            .unwrap();
    let steps: Vec<&serde_json::Value> = samples
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|e| e["steps"].as_array().unwrap())
        .collect();
    assert!(!steps.is_empty());
    let labels: Vec<(bool, bool)> = steps
        .iter()
        .map(|s| {
            (
                s["progress"].as_bool().unwrap(),
                s["planner_progress"].as_bool().unwrap(),
            )
        })
        .collect();
    assert!(labels.iter().any(|(k, p)| k != p), "{labels:?}");
    // the report's table names them and shows their values
    let table = rla_train::report::table(&ms);
    for col in [
        "μ (paper: outcome) | p₊ | p₋ | μ (label)",
        "process acc (knowable) | process acc (planner)",
    ] {
        assert!(table.contains(col), "{table}");
    }
    let row = table.lines().find(|l| l.starts_with("| 1 |")).unwrap();
    for x in [m.mu_outcome, Some(p), Some(q), m.process_acc_planner] {
        assert!(row.contains(&format!("| {:.3} |", x.unwrap())), "{row}");
    }
}
