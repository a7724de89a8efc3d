//! LoRA adapters exported in PEFT's format load in the real `peft` Python package on the base
//! checkpoint, and transformers then gives the log-probabilities this project gives.

use candle_core::{DType, Device};
use rla_lm::{Learner, Sampler};
use rla_model::config::{Arch, ModelConfig};
use rla_model::lora::{self, LoraConfig};
use rla_model::tok::build_word_level;
use rla_model::train::TrainConfig;
use rla_model::Lm;

mod common;
use common::python;
use rla_lm::Codec;

#[test]
fn an_exported_adapter_gives_our_logits_in_peft_and_transformers() {
    let corpus = "go to the fridge 1 open close take apple from in on put cabinet 2 3 look";
    for (arch, targets) in [
        (Arch::Qwen2, vec!["q_proj", "v_proj", "down_proj"]),
        (Arch::Qwen3, lora::ALL_TARGETS.to_vec()),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let tok = build_word_level(corpus, 1).unwrap();
        let cfg = ModelConfig::tiny(arch, tok.vocab_size(), 32, 2, 4, 2);
        let mut m = Lm::init(&cfg, tok, 7, DType::F32, &Device::Cpu).unwrap();
        let base = dir.path().join("base");
        m.save_checkpoint(&base).unwrap();
        // train the adapter a little, so it changes the model
        let lc = LoraConfig {
            r: 4,
            alpha: 8.0,
            targets: targets.iter().map(|s| s.to_string()).collect(),
        };
        let tc = TrainConfig {
            lr: 5e-2,
            micro_batch: 4,
            ..Default::default()
        };
        m.enable_training(tc, Some(lc.clone()), 3, None).unwrap();
        let texts = [
            "go to the fridge 1",
            "take apple from cabinet 2",
            "look in 3",
        ];
        let ids: Vec<Vec<u32>> = texts.iter().map(|t| m.encode(t).unwrap()).collect();
        let pairs: Vec<_> = ids
            .iter()
            .map(|q| (q.clone(), m.encode("open cabinet 3").unwrap()))
            .collect();
        for _ in 0..3 {
            m.sft_update(&pairs).unwrap();
        }
        let adapter = dir.path().join("adapter");
        lora::save_peft(&m.model, &lc, &adapter, base.to_str().unwrap()).unwrap();
        // our log-probabilities of every token at every position but the last
        let vocab = cfg.vocab_size;
        let mut rows = Vec::new();
        for q in &ids {
            let top = m
                .top_logprobs(&[(q[..1].to_vec(), q[1..].to_vec())], vocab)
                .unwrap()
                .remove(0);
            let seq: Vec<Vec<f32>> = top
                .iter()
                .map(|alts| {
                    let mut row = vec![0f32; vocab];
                    for &(id, l) in alts {
                        row[id as usize] = l;
                    }
                    row
                })
                .collect();
            rows.push(seq);
        }
        let ours = dir.path().join("ours.json");
        std::fs::write(
            &ours,
            serde_json::json!({"ids": ids, "logprobs": rows}).to_string(),
        )
        .unwrap();
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/peft/check.py");
        let out = std::process::Command::new(python())
            .arg(script)
            .arg(&base)
            .arg(&adapter)
            .arg(&ours)
            .output()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start {} ({e}): run scripts/peft.sh or set RLA_PEFT_PYTHON",
                    python()
                )
            });
        assert!(
            out.status.success(),
            "{arch:?}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        println!("{arch:?}: {v}");
    }
}
