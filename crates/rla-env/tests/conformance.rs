//! Every trace recorded from ALFWorld's engine replays exactly.

use rla_env::household::trace::{replay_dir, TraceReport};
use std::path::PathBuf;

fn fixtures(folder: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(folder)
}

fn assert_exact(reports: &[TraceReport]) {
    let mut failed = Vec::new();
    for r in reports {
        if let Some(e) = &r.error {
            failed.push(e.clone());
        }
        for m in r.mismatches.iter().take(3) {
            failed.push(m.to_string());
        }
    }
    assert!(
        failed.is_empty(),
        "{} mismatches:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

#[test]
fn every_shared_trace_replays_exactly() {
    let reports = replay_dir(&fixtures("alfworld-traces")).expect("fixtures load");
    assert_eq!(reports.len(), 80, "20 games × 4 traces");
    assert_exact(&reports);
}

/// Games where two or three receptacles stand at one spot, with objects moved between them
/// and `look` after the moves: ALFWorld lists "next to it" what was taken from one of the
/// spot's receptacles and not put back into that one.
#[test]
fn every_trace_at_shared_spots_replays_exactly() {
    let reports = replay_dir(&fixtures("alfworld-shared-spots")).expect("fixtures load");
    assert_eq!(
        reports.len(),
        8,
        "3 games: probe, random, and the expert on two"
    );
    assert!(reports.iter().all(|r| r.steps > 0), "{reports:?}");
    assert_exact(&reports);
}
