//! What the torch learner's tests share: tiny checkpoints written by the candle back end, the
//! interpreter with PyTorch, batches, and comparisons of weights.

#![allow(dead_code)] // not every test file uses everything

use candle_core::{DType, Device, Tensor};
use rla_lm::{Codec, LoraConfig, OpenOptions, PpoSample, Sampler, TrainOptions};
use rla_model::config::{Arch, ModelConfig};
use rla_model::tok::build_word_level;
use rla_model::train::TrainConfig;
use rla_model::Lm;
use rla_torch::{LearnerKind, LearnerSpec};
use std::collections::BTreeMap;
use std::path::Path;

/// The interpreter with torch, transformers and peft: `$RLA_PEFT_PYTHON`, else the one
/// `scripts/peft.sh` installs.
pub fn python() -> String {
    std::env::var("RLA_PEFT_PYTHON").unwrap_or_else(|_| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../target/peft-venv/bin/python"
        )
        .to_string()
    })
}

/// A torch learner on the CPU with `nproc` processes.
pub fn spec(nproc: usize) -> LearnerSpec {
    LearnerSpec {
        backend: LearnerKind::Torch,
        python: python(),
        nproc,
        cpu: true,
        timeout_s: 300.0,
        ..Default::default()
    }
}

pub const CORPUS: &str =
    "go to the fridge 1 open close take apple from in on put cabinet 2 3 look \
                          heat cool clean with sinkbasin microwave drawer desk lamp";

/// A tiny checkpoint of `arch` (untied head for Llama, so both kinds of head are covered),
/// written to `dir`; with `lora`, trained adapters beside it.
pub fn checkpoint(arch: Arch, dir: &Path, lora: Option<&LoraConfig>) -> Lm {
    let tok = build_word_level(CORPUS, 1).unwrap();
    let mut cfg = ModelConfig::tiny(arch, tok.vocab_size(), 32, 2, 4, 2);
    cfg.tie_word_embeddings = arch != Arch::Llama;
    if arch == Arch::Qwen3 {
        cfg.head_dim = Some(16);
    }
    let mut m = Lm::init(&cfg, tok, 7, DType::F32, &Device::Cpu).unwrap();
    if let Some(lc) = lora {
        // adapters that already change the model
        m.enable_training(train_config(5e-2, 4), Some(lc.clone()), 3, None)
            .unwrap();
        let p = pairs(&m);
        for _ in 0..3 {
            rla_lm::Learner::sft_update(&mut m, &p).unwrap();
        }
    }
    m.save_weights(dir).unwrap();
    Lm::load(dir, DType::F32, &Device::Cpu).unwrap()
}

pub fn train_config(lr: f64, micro_batch: usize) -> TrainConfig {
    TrainConfig {
        lr,
        micro_batch,
        ..Default::default()
    }
}

pub fn options(lr: f64, micro_batch: usize, lora: Option<LoraConfig>) -> OpenOptions {
    OpenOptions {
        train: Some(TrainOptions {
            lr,
            micro_batch,
            lora,
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Five (prompt, response) pairs of different lengths.
pub fn pairs(m: &Lm) -> Vec<(Vec<u32>, Vec<u32>)> {
    [
        ("go to the", "fridge 1"),
        ("take apple from cabinet 2", "put apple in fridge 1 look"),
        ("heat", "with microwave 1"),
        ("clean apple with", "sinkbasin 1 then go to desk 3 and look"),
        ("open drawer 2 close", "drawer"),
    ]
    .iter()
    .map(|(p, r)| (m.encode(p).unwrap(), m.encode(r).unwrap()))
    .collect()
}

/// PPO samples over `pairs`: old log-probabilities off the model's by varied amounts (so some
/// ratios are clipped), mixed advantages, and reference log-probabilities; two of them drawn
/// among choices (constrained decoding), some of their tokens forced.
pub fn ppo_samples(m: &Lm) -> Vec<PpoSample> {
    let p = pairs(m);
    let lp = m.score(&p).unwrap();
    let vocab = m.vocab_size().unwrap() as u32;
    p.into_iter()
        .zip(lp)
        .enumerate()
        .map(|(i, ((prompt, response), lp))| {
            let shift = [0.3f32, -0.25, 0.05, -0.1, 0.4][i];
            PpoSample {
                old_logprobs: lp.iter().map(|x| x + shift).collect(),
                ref_logprobs: Some(lp.iter().map(|x| x - 0.2 * shift).collect()),
                choices: (i % 2 == 1).then(|| choices(&response, vocab)),
                advantage: [1.0f32, -0.5, 2.0, -1.5, 0.7][i],
                prompt,
                response,
            }
        })
        .collect()
}

/// Choices for each token of a response: the token alone at even positions, the token and two
/// others at odd ones.
pub fn choices(response: &[u32], vocab: u32) -> Vec<Vec<u32>> {
    response
        .iter()
        .enumerate()
        .map(|(t, &x)| {
            let mut c = vec![x];
            if t % 2 == 1 {
                c.extend([(x + 1) % vocab, (x + 7) % vocab]);
                c.sort_unstable();
                c.dedup();
            }
            c
        })
        .collect()
}

/// The tensors of a saved folder's safetensors file.
pub fn tensors(path: &Path) -> BTreeMap<String, Tensor> {
    candle_core::safetensors::load(path, &Device::Cpu)
        .unwrap()
        .into_iter()
        .collect()
}

/// The largest difference between the tensors of two files (which must hold the same names).
pub fn max_weight_diff(a: &Path, b: &Path) -> f32 {
    let (ta, tb) = (tensors(a), tensors(b));
    assert_eq!(
        ta.keys().collect::<Vec<_>>(),
        tb.keys().collect::<Vec<_>>(),
        "{} and {} hold different tensors",
        a.display(),
        b.display()
    );
    ta.iter()
        .map(|(k, x)| {
            let y = &tb[k];
            assert_eq!(x.dims(), y.dims(), "{k}");
            (x.to_dtype(DType::F32).unwrap() - y.to_dtype(DType::F32).unwrap())
                .unwrap()
                .abs()
                .unwrap()
                .max_all()
                .unwrap()
                .to_scalar::<f32>()
                .unwrap()
        })
        .fold(0.0, f32::max)
}

pub fn close(a: f64, b: f64, rel: f64, what: &str) {
    assert!(
        (a - b).abs() <= rel * a.abs().max(b.abs()).max(1e-6),
        "{what}: {a} against {b}"
    );
}
