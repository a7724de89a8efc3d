//! Distribution and resuming: two processes (FSDP2 over gloo) and two "nodes" on this machine
//! give the weights one process gives; a learner saved, stopped and started again from its
//! checkpoint takes the next step exactly as the one that never stopped.

mod common;
use common::*;
use rla_lm::{Learner, OpenOptions};
use rla_model::config::Arch;
use rla_torch::{LearnerSpec, TorchLearner};
use std::path::Path;

/// Three PPO steps and one SFT step, the weights exported to `out/weights`; returns each step's
/// loss and gradient norm.
fn train(spec: &LearnerSpec, base: &Path, out: &Path, mb: usize) -> Vec<f64> {
    let m = rla_model::Lm::load(base, candle_core::DType::F32, &candle_core::Device::Cpu).unwrap();
    let mut t =
        TorchLearner::start(base, &options(1e-3, mb, None), spec, &out.join("scratch")).unwrap();
    assert_eq!(
        t.worker().hello["world"].as_u64(),
        Some((spec.nproc * spec.nnodes) as u64)
    );
    let s = ppo_samples(&m);
    let mut steps: Vec<_> = (0..3).map(|_| t.ppo_update(&s).unwrap()).collect();
    steps.push(t.sft_update(&pairs(&m)).unwrap());
    t.export(&out.join("weights"), None).unwrap();
    steps.iter().flat_map(|s| [s.loss, s.grad_norm]).collect()
}

fn same(a: &[f64], b: &[f64], what: &str) {
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let name = ["loss", "gradient norm"][i % 2];
        close(*x, *y, 1e-5, &format!("{what}: {name} of step {}", i / 2));
    }
}

#[test]
fn two_processes_and_two_nodes_give_the_weights_of_one_process() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base");
    checkpoint(Arch::Qwen3, &base, None);
    let one = dir.path().join("one");
    // five sequences over two ranks: one rank has a micro-batch fewer than the other
    let l1 = train(&spec(1), &base, &one, 2);
    let two = dir.path().join("two");
    let mut s2 = spec(2);
    // the GPUs a worker may use reach its ranks (this machine has none: they stay on the CPU)
    s2.devices = Some("3, 5".into());
    s2.validate("policy.learner").unwrap();
    let l2 = train(&s2, &base, &two, 2);
    let log = std::fs::read_to_string(two.join("scratch/worker.log")).unwrap();
    assert!(log.contains("CUDA_VISIBLE_DEVICES 3,5"), "{log}");
    same(&l1, &l2, "nproc 2");
    let w = |d: &Path| d.join("weights").join("model.safetensors");
    let d = max_weight_diff(&w(&one), &w(&two));
    assert!(
        d < 1e-6,
        "two processes moved the weights {d} away from one"
    );

    // two nodes of one process each, the second started by hand as on another machine
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut nodes = spec(1);
    nodes.nnodes = 2;
    nodes.rdzv_endpoint = Some(format!("127.0.0.1:{port}"));
    nodes.validate("policy.learner").unwrap();
    let script = dir.path().join("rla_torch_worker.py");
    std::fs::write(&script, rla_torch::WORKER_SOURCE).unwrap();
    let mut other = std::process::Command::new(python())
        .args([
            "-m",
            "torch.distributed.run",
            "--nproc-per-node=1",
            "--nnodes=2",
            "--node-rank=1",
        ])
        .arg("--master-addr=127.0.0.1")
        .arg(format!("--master-port={port}"))
        .arg(&script)
        .args(["--connect=127.0.0.1:1", "--cpu"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let two_nodes = dir.path().join("nodes");
    let l3 = train(&nodes, &base, &two_nodes, 2);
    same(&l1, &l3, "nnodes 2");
    let d = max_weight_diff(&w(&one), &w(&two_nodes));
    assert!(
        d < 1e-6,
        "two nodes moved the weights {d} away from one process"
    );
    // the learner's shutdown stops the other node's rank too
    let t0 = std::time::Instant::now();
    while other.try_wait().unwrap().is_none() {
        assert!(t0.elapsed().as_secs() < 60, "the second node did not stop");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[test]
fn a_saved_learner_resumes_the_next_step_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base");
    let m = checkpoint(Arch::Qwen2, &base, None);
    let s = ppo_samples(&m);
    for nproc in [1, 2] {
        let ck = dir.path().join(format!("ck{nproc}"));
        let (next, after) = {
            let mut t = TorchLearner::start(
                &base,
                &options(1e-3, 2, None),
                &spec(nproc),
                &dir.path().join("a"),
            )
            .unwrap();
            t.ppo_update(&s).unwrap();
            t.sft_update(&pairs(&m)).unwrap();
            t.save(&ck).unwrap();
            let next = t.ppo_update(&s).unwrap();
            let after = dir.path().join(format!("after{nproc}"));
            t.export(&after, None).unwrap();
            (next, after)
        }; // the worker stops here
        assert!(ck.join(rla_torch::STATE_DIR).join(".metadata").is_file());
        let opts = OpenOptions {
            resume: Some(ck.clone()),
            reference: Some(base.clone()),
            ..options(1e-3, 2, None)
        };
        let mut t = TorchLearner::start(&ck, &opts, &spec(nproc), &dir.path().join("b")).unwrap();
        let again = t.ppo_update(&s).unwrap();
        assert_eq!(
            next.loss, again.loss,
            "nproc {nproc}: the loss after resuming"
        );
        assert_eq!(
            next.grad_norm, again.grad_norm,
            "nproc {nproc}: the gradient norm after resuming"
        );
        let resumed = dir.path().join(format!("resumed{nproc}"));
        t.export(&resumed, None).unwrap();
        let d = max_weight_diff(
            &after.join("model.safetensors"),
            &resumed.join("model.safetensors"),
        );
        assert_eq!(
            d, 0.0,
            "nproc {nproc}: the weights after resuming differ by {d}"
        );
        // the KL reference is the warm start, not the checkpoint
        let p = pairs(&m);
        let (r, w) = (
            t.reference_logprobs(&p).unwrap(),
            rla_lm::Sampler::score(&m, &p).unwrap(),
        );
        for (a, b) in r.iter().flatten().zip(w.iter().flatten()) {
            close(*a as f64, *b as f64, 1e-4, "the reference after resuming");
        }
    }
}

#[test]
fn activation_checkpointing_and_a_token_budget_change_memory_not_results() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base");
    checkpoint(Arch::Llama, &base, None);
    let plain = train(&spec(1), &base, &dir.path().join("plain"), 16);
    let mut s = spec(1);
    s.activation_checkpointing = true;
    // at most 12 tokens a micro-batch (longest row × rows): three micro-batches, not one
    s.token_budget = 12;
    let other = train(&s, &base, &dir.path().join("other"), 16);
    same(&plain, &other, "checkpointing and a token budget");
    let w = |d: &str| dir.path().join(d).join("weights").join("model.safetensors");
    let d = max_weight_diff(&w("plain"), &w("other"));
    assert!(d < 1e-6, "the weights moved {d} apart");
    let log = std::fs::read_to_string(dir.path().join("other/scratch/worker.log")).unwrap();
    assert!(
        log.contains("activation checkpointing True")
            && log.contains("5 sequences in 3 micro-batches"),
        "{log}"
    );
    // CPU offload is for GPUs: on the CPU it is refused, saying why
    s.offload = true;
    let e = match TorchLearner::start(&base, &options(1e-3, 16, None), &s, &dir.path().join("x")) {
        Ok(_) => panic!("offload on the CPU was accepted"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("offload") && e.contains("CPU"), "{e}");
}

#[test]
fn bf16_compute_stays_near_f32_and_exports_bf16() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base");
    checkpoint(Arch::Qwen3, &base, None);
    let m = rla_model::Lm::load(&base, candle_core::DType::F32, &candle_core::Device::Cpu).unwrap();
    let s = ppo_samples(&m);
    let mut losses = vec![];
    for dtype in ["f32", "bf16"] {
        let opts = OpenOptions {
            dtype: dtype.into(),
            ..options(1e-3, 2, None)
        };
        let mut t = TorchLearner::start(&base, &opts, &spec(1), &dir.path().join(dtype)).unwrap();
        let l: Vec<f64> = (0..3)
            .map(|_| t.sft_update(&pairs(&m)).unwrap().loss)
            .collect();
        t.ppo_update(&s).unwrap();
        let out = dir.path().join(format!("w-{dtype}"));
        t.export(&out, None).unwrap();
        losses.push(l);
        let w = tensors(&out.join("model.safetensors"));
        let want = if dtype == "f32" {
            candle_core::DType::F32
        } else {
            candle_core::DType::BF16
        };
        assert!(
            w.values().all(|x| x.dtype() == want),
            "{dtype}: exported in the compute dtype"
        );
    }
    for (a, b) in losses[0].iter().zip(&losses[1]) {
        // bf16 keeps 8 bits of mantissa: the losses agree to about 1%, not to float precision
        assert!((a - b).abs() < 0.03 * a.abs(), "f32 {a} against bf16 {b}");
        assert!(
            a != b,
            "bf16 computed exactly as f32: the dtype did nothing"
        );
    }
}
