//! The trackers read back by the trackers' own readers: TensorBoard's `EventAccumulator` and the
//! W&B client's record reader on an offline run (`scripts/track-env.sh` installs both into
//! target/track-venv; RLA_TRACK_PYTHON names another interpreter).

use rla_track::tensorboard::EventWriter;
use rla_track::wandb::{Wandb, WandbOptions};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

fn python() -> String {
    if let Ok(p) = std::env::var("RLA_TRACK_PYTHON") {
        return p;
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/track-venv/bin/python");
    assert!(
        venv.exists(),
        "{} is missing: run scripts/track-env.sh (or set RLA_TRACK_PYTHON)",
        venv.display()
    );
    venv.display().to_string()
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/py")
        .join(name)
}

fn read(name: &str, dir: &Path) -> Value {
    let out = Command::new(python())
        .arg(script(name))
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn record(k: i64) -> Value {
    json!({"iteration": k, "success": 0.25 * k as f64, "time": {"rollout": 1.5 + k as f64},
           "setting": {"judge": {"process_acc": 0.5, "note": "text is left out"}}, "done": k == 3,
           "nan": null})
}

fn points(v: &Value, tag: &str) -> Vec<(i64, f64)> {
    v["scalars"][tag]
        .as_array()
        .unwrap_or_else(|| panic!("no tag {tag} in {v}"))
        .iter()
        .map(|p| (p[0].as_i64().unwrap(), p[1].as_f64().unwrap()))
        .collect()
}

#[test]
fn tensorboard_reads_every_scalar_once_a_step_and_the_text() {
    let dir = tempfile::tempdir().unwrap();
    let tb = dir.path().join("tensorboard");
    let steps: Vec<rla_track::tensorboard::KeptStep> =
        (0..3).map(|k| (k, record(k), vec![])).collect();
    let mut w = EventWriter::rebuild(&tb, &steps).unwrap();
    w.append(
        3,
        &record(3),
        &[("report".into(), "| a | b |\n|---|---|\n| 1 | 2 |".into())],
    )
    .unwrap();
    let v = read("read_tensorboard.py", &tb);
    assert_eq!(
        points(&v, "success"),
        vec![(0, 0.0), (1, 0.25), (2, 0.5), (3, 0.75)]
    );
    assert_eq!(points(&v, "time/rollout")[3], (3, 4.5));
    assert_eq!(points(&v, "setting/judge/process_acc").len(), 4);
    assert_eq!(
        points(&v, "done"),
        vec![(0, 0.0), (1, 0.0), (2, 0.0), (3, 1.0)]
    );
    assert!(v["scalars"].get("setting/judge/note").is_none() && v["scalars"].get("nan").is_none());
    assert_eq!(v["texts"]["report"][0][0], 3);
    assert!(v["texts"]["report"][0][1][0]
        .as_str()
        .unwrap()
        .contains("| 1 | 2 |"));

    // a resumed run: iteration 3 was written, then the run was killed before it was kept, and it
    // is redone — the file is rebuilt from the kept records and the curves have one point a step
    let mut w = EventWriter::rebuild(&tb, &steps).unwrap();
    let mut redone = record(3);
    redone["success"] = json!(0.5);
    w.append(3, &redone, &[]).unwrap();
    w.append(4, &record(4), &[]).unwrap();
    let v = read("read_tensorboard.py", &tb);
    assert_eq!(
        points(&v, "success"),
        vec![(0, 0.0), (1, 0.25), (2, 0.5), (3, 0.5), (4, 1.0)]
    );
}

#[test]
fn an_offline_wandb_run_holds_the_same_scalars() {
    let dir = tempfile::tempdir().unwrap();
    let opts = WandbOptions {
        project: "rlanything-test".into(),
        mode: "offline".into(),
        id: "run0".into(),
        name: None,
    };
    let mut w = Wandb::start(&python(), dir.path(), &opts, &json!({"seed": 0})).unwrap();
    for k in 0..3 {
        assert!(w.log(k, &record(k)));
    }
    assert!(w.finish(), "the client finished");
    let v = read("read_wandb.py", dir.path());
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "{v}");
    for (k, row) in rows.iter().enumerate() {
        assert_eq!(row["_step"], json!(k));
        assert_eq!(row["success"].as_f64().unwrap(), 0.25 * k as f64);
        assert_eq!(row["time/rollout"].as_f64().unwrap(), 1.5 + k as f64);
    }
    let bad = WandbOptions {
        mode: "sideways".into(),
        ..opts
    };
    let e = Wandb::start(&python(), dir.path(), &bad, &json!({}))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("sideways"), "{e}");
}
