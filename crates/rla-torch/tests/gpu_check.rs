//! The GPU check (`scripts/gpu-check.sh`) runs at toy sizes on the CPU, so the prepared script
//! a GPU machine runs does not rot: the worker on two processes against plain PyTorch, then the
//! throughput runs of full fine-tuning and LoRA.

mod common;

#[test]
fn the_gpu_check_runs_at_toy_sizes_on_the_cpu() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let out = std::process::Command::new("bash")
        .arg(format!("{root}/scripts/gpu-check.sh"))
        .arg("--smoke")
        .env("PYTHON", common::python())
        .env("NPROC", "2")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("check: 2 PPO and 1 SFT steps on 2 process(es), cpu"),
        "{text}"
    );
    for run in ["toy full", "toy LoRA r=4"] {
        assert_eq!(
            text.lines()
                .filter(|l| l.starts_with(run) && l.contains("tokens/s/GPU"))
                .count(),
            2,
            "{run}: {text}"
        );
    }
}
