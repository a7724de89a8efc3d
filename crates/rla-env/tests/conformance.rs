//! Every trace recorded from ALFWorld's engine replays exactly.

use rla_env::household::trace::replay_dir;
use std::path::PathBuf;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/alfworld-traces")
}

#[test]
fn every_shared_trace_replays_exactly() {
    let reports = replay_dir(&fixtures()).expect("fixtures load");
    assert_eq!(reports.len(), 80, "20 games × 4 traces");
    let mut failed = Vec::new();
    for r in &reports {
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
