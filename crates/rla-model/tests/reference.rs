//! The frozen KL reference is the model as training started: it scores like the model before the
//! first update and stays put after updates, with full fine-tuning and with LoRA (a warm start's
//! adapters included).

use rla_lm::Codec;
use rla_lm::{Learner, PpoSample, Sampler};
use rla_model::config::{Arch, ModelConfig};
use rla_model::lora::LoraConfig;
use rla_model::tok::build_word_level;
use rla_model::train::TrainConfig;
use rla_model::Lm;

fn lm() -> Lm {
    let tok = build_word_level("go to the fridge 1 open close take apple\n", 1).unwrap();
    let cfg = ModelConfig::tiny(Arch::Qwen3, tok.vocab_size(), 16, 1, 2, 1);
    Lm::init(
        &cfg,
        tok,
        3,
        candle_core::DType::F32,
        &candle_core::Device::Cpu,
    )
    .unwrap()
}

fn tc() -> TrainConfig {
    TrainConfig {
        lr: 5e-2,
        micro_batch: 4,
        ..Default::default()
    }
}

fn pairs(m: &Lm) -> Vec<(Vec<u32>, Vec<u32>)> {
    vec![(
        m.encode("go to the").unwrap(),
        m.encode("fridge 1 open").unwrap(),
    )]
}

fn train(m: &mut Lm, steps: usize) {
    let p = pairs(m);
    let old = m.score(&p).unwrap();
    let s = vec![PpoSample {
        prompt: p[0].0.clone(),
        response: p[0].1.clone(),
        advantage: 1.0,
        old_logprobs: old[0].clone(),
        ref_logprobs: None,
        choices: None,
    }];
    for _ in 0..steps {
        m.ppo_update(&s).unwrap();
    }
}

#[test]
fn the_reference_is_the_model_as_training_started() {
    for lora in [None, Some(LoraConfig::default())] {
        let mut m = lm();
        let before = m.score(&pairs(&m)).unwrap();
        m.enable_training(tc(), lora.clone(), 1, None).unwrap();
        assert_eq!(
            m.reference_logprobs(&pairs(&m)).unwrap(),
            before,
            "{lora:?}"
        );
        train(&mut m, 5);
        let after = m.score(&pairs(&m)).unwrap();
        assert_ne!(after, before, "the model moved ({lora:?})");
        assert_eq!(
            m.reference_logprobs(&pairs(&m)).unwrap(),
            before,
            "{lora:?}"
        );
    }
}

#[test]
fn a_lora_warm_start_keeps_its_adapters_in_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = lm();
    m.enable_training(tc(), Some(LoraConfig::default()), 1, None)
        .unwrap();
    train(&mut m, 5);
    m.save_checkpoint(dir.path()).unwrap();
    let warm = m.score(&pairs(&m)).unwrap();
    // a run starting from that warm start: its reference is the warm start, adapters included
    let mut r = Lm::load(
        dir.path(),
        candle_core::DType::F32,
        &candle_core::Device::Cpu,
    )
    .unwrap();
    r.enable_training(tc(), None, 2, None).unwrap();
    let got = r.reference_logprobs(&pairs(&r)).unwrap();
    for (a, b) in got[0].iter().zip(&warm[0]) {
        assert!((a - b).abs() < 1e-5, "{got:?} vs {warm:?}");
    }
    // and a resumed run reloads it from the warm-start folder
    let mut s = Lm::load(
        dir.path(),
        candle_core::DType::F32,
        &candle_core::Device::Cpu,
    )
    .unwrap();
    s.load_reference(dir.path()).unwrap();
    let got = s.reference_logprobs(&pairs(&s)).unwrap();
    for (a, b) in got[0].iter().zip(&warm[0]) {
        assert!((a - b).abs() < 1e-5, "{got:?} vs {warm:?}");
    }
    // no frozen reference without a KL term
    let mut n = lm();
    let mut c = tc();
    c.ppo.kl_beta = 0.0;
    n.enable_training(c, None, 1, None).unwrap();
    assert!(n.reference_logprobs(&pairs(&n)).is_err());
}
