//! The torch learner equals the candle learner: the same tiny Qwen2, Qwen3 and Llama
//! checkpoints and the same PPO and SFT batches give the same loss, gradient norm and updated
//! weights, after one step and after several, with full fine-tuning and with LoRA; and two
//! processes (FSDP2 over gloo) give the weights of one.

mod common;
use common::*;
use rla_lm::{Learner, LoraConfig, Sampler};
use rla_model::config::Arch;

/// Runs `steps` PPO steps then two SFT steps on both learners, comparing every step's loss and
/// gradient norm; then the exported weights (and adapters).
fn compare(arch: Arch, lora: Option<LoraConfig>, micro_batch: usize) {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base");
    let mut candle = checkpoint(arch, &base, lora.as_ref());
    let lr = 1e-3;
    candle
        .enable_training(train_config(lr, micro_batch), lora.clone(), 0, None)
        .unwrap();
    let mut torch = rla_torch::TorchLearner::start(
        &base,
        &options(lr, micro_batch, lora.clone()),
        &spec(1),
        &dir.path().join("scratch"),
    )
    .unwrap();
    let what = format!("{arch:?}, lora {}", lora.is_some());
    // the frozen reference scores as the model did before any step
    let p = pairs(&candle);
    let (rc, rt) = (
        candle.reference_logprobs(&p).unwrap(),
        torch.reference_logprobs(&p).unwrap(),
    );
    for (a, b) in rc.iter().flatten().zip(rt.iter().flatten()) {
        close(
            *a as f64,
            *b as f64,
            1e-4,
            &format!("{what}: reference log-prob"),
        );
    }
    let samples = ppo_samples(&candle);
    // and within choices, as constrained answers are scored
    let within: Vec<Option<&[Vec<u32>]>> = samples.iter().map(|s| s.choices.as_deref()).collect();
    let (rc, rt) = (
        candle.reference_logprobs_within(&p, &within).unwrap(),
        torch.reference_logprobs_within(&p, &within).unwrap(),
    );
    for (a, b) in rc.iter().flatten().zip(rt.iter().flatten()) {
        close(
            *a as f64,
            *b as f64,
            1e-4,
            &format!("{what}: reference log-prob within choices"),
        );
    }
    assert!(
        rc.iter().flatten().any(|&x| x == 0.0),
        "forced tokens score 0"
    );
    for step in 0..3 {
        let (a, b) = (
            candle.ppo_update(&samples).unwrap(),
            torch.ppo_update(&samples).unwrap(),
        );
        close(
            a.loss,
            b.loss,
            1e-4,
            &format!("{what}: PPO loss of step {step}"),
        );
        close(
            a.grad_norm,
            b.grad_norm,
            1e-3,
            &format!("{what}: gradient norm of step {step}"),
        );
        assert_eq!((a.sequences, a.tokens), (b.sequences, b.tokens));
        // the share of tokens the clip bounds: the same tokens on both sides
        let (ca, cb) = (a.clip_fraction.unwrap(), b.clip_fraction.unwrap());
        close(
            ca,
            cb,
            1e-9,
            &format!("{what}: clip fraction of step {step}"),
        );
    }
    // and both score the moved policy alike (the update's KL is read from these)
    let (nc, nt) = (
        candle.logprobs_within(&p, &within).unwrap(),
        torch.logprobs_within(&p, &within).unwrap(),
    );
    for (a, b) in nc.iter().flatten().zip(nt.iter().flatten()) {
        close(
            *a as f64,
            *b as f64,
            1e-4,
            &format!("{what}: log-prob after the update"),
        );
    }
    for step in 0..2 {
        let (a, b) = (
            candle.sft_update(&p).unwrap(),
            torch.sft_update(&p).unwrap(),
        );
        close(
            a.loss,
            b.loss,
            1e-4,
            &format!("{what}: SFT loss of step {step}"),
        );
        close(
            a.grad_norm,
            b.grad_norm,
            1e-3,
            &format!("{what}: SFT gradient norm of step {step}"),
        );
    }
    close(
        candle.sft_loss(&p).unwrap(),
        torch.sft_loss(&p).unwrap(),
        1e-4,
        &format!("{what}: held-out loss"),
    );
    let (wc, wt) = (dir.path().join("candle"), dir.path().join("torch"));
    candle.export(&wc, None).unwrap();
    torch.export(&wt, None).unwrap();
    let d = max_weight_diff(&wc.join("model.safetensors"), &wt.join("model.safetensors"));
    assert!(d < 2e-5, "{what}: the base weights differ by {d}");
    if lora.is_some() {
        let d = max_weight_diff(
            &wc.join("adapter_model.safetensors"),
            &wt.join("adapter_model.safetensors"),
        );
        assert!(d < 2e-5, "{what}: the adapters differ by {d}");
        // and the adapter really moved: it differs from the one trained from
        let d0 = max_weight_diff(
            &base.join("adapter_model.safetensors"),
            &wt.join("adapter_model.safetensors"),
        );
        assert!(d0 > 1e-4, "{what}: the adapter did not train ({d0})");
        // the adapter alone, for a server that has the base
        let only = dir.path().join("adapter");
        torch.export(&only, Some("org/base-model")).unwrap();
        assert!(!only.join("model.safetensors").exists());
        let c: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(only.join("adapter_config.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(c["base_model_name_or_path"], "org/base-model");
        assert_eq!(c["r"].as_u64(), lora.as_ref().map(|l| l.r as u64));
        let d = max_weight_diff(
            &wt.join("adapter_model.safetensors"),
            &only.join("adapter_model.safetensors"),
        );
        assert_eq!(d, 0.0);
    } else {
        let d0 = max_weight_diff(
            &base.join("model.safetensors"),
            &wt.join("model.safetensors"),
        );
        assert!(d0 > 1e-4, "{what}: the weights did not train ({d0})");
        let e = torch
            .export(&dir.path().join("none"), Some("org/base-model"))
            .unwrap_err();
        assert!(e.to_string().contains("no LoRA adapter"), "{e}");
    }
    let h = torch.health().unwrap();
    assert_eq!(
        (h["world"].as_u64(), h["ready"].as_bool()),
        (Some(1), Some(true))
    );
    assert_eq!(h["visible_devices"], serde_json::Value::Null);
    // the exported folder is a checkpoint candle opens and samples from
    let back =
        rla_model::Lm::load(&wt, candle_core::DType::F32, &candle_core::Device::Cpu).unwrap();
    let (x, y) = (back.score(&p).unwrap(), candle.score(&p).unwrap());
    for (a, b) in x.iter().flatten().zip(y.iter().flatten()) {
        close(
            *a as f64,
            *b as f64,
            1e-3,
            &format!("{what}: log-prob after export"),
        );
    }
}

#[test]
fn full_fine_tuning_matches_the_candle_learner_on_every_architecture() {
    for arch in [Arch::Qwen2, Arch::Qwen3, Arch::Llama] {
        compare(arch, None, 2);
    }
}

#[test]
fn lora_matches_the_candle_learner() {
    let lc = LoraConfig {
        r: 4,
        alpha: 8.0,
        targets: vec!["q_proj".into(), "v_proj".into(), "down_proj".into()],
    };
    compare(Arch::Qwen2, Some(lc), 3);
    compare(Arch::Qwen3, Some(LoraConfig::default()), 16);
}

/// Samples drawn at a temperature other than 1: both learners score and train the tempered policy
/// `softmax(logits / T)` alike.
#[test]
fn tempered_policies_match_the_candle_learner() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base");
    let mut candle = checkpoint(Arch::Qwen3, &base, None);
    let t = 0.7;
    candle
        .enable_training(
            rla_model::train::TrainConfig {
                temperature: t,
                ..train_config(1e-3, 2)
            },
            None,
            0,
            None,
        )
        .unwrap();
    let mut opts = options(1e-3, 2, None);
    if let Some(tr) = opts.train.as_mut() {
        tr.temperature = t;
    }
    let mut torch =
        rla_torch::TorchLearner::start(&base, &opts, &spec(1), &dir.path().join("scratch"))
            .unwrap();
    let p = pairs(&candle);
    let samples = ppo_samples(&candle);
    let within: Vec<Option<&[Vec<u32>]>> = samples.iter().map(|s| s.choices.as_deref()).collect();
    let (a, b) = (
        candle.logprobs_within(&p, &within).unwrap(),
        torch.logprobs_within(&p, &within).unwrap(),
    );
    let plain = rla_model::sample::score_within(&candle.model, &p, &within).unwrap();
    let mut differs = false;
    for ((x, y), z) in a
        .iter()
        .flatten()
        .zip(b.iter().flatten())
        .zip(plain.iter().flatten())
    {
        close(*x as f64, *y as f64, 1e-4, "tempered log-prob");
        differs |= (x - z).abs() > 1e-3;
    }
    assert!(differs, "the temperature changes the scores");
    let (sa, sb) = (
        candle.ppo_update(&samples).unwrap(),
        torch.ppo_update(&samples).unwrap(),
    );
    close(sa.loss, sb.loss, 1e-4, "tempered PPO loss");
    close(
        sa.grad_norm,
        sb.grad_norm,
        1e-3,
        "tempered PPO gradient norm",
    );
}
