//! Using the model: sampling, scoring, SFT and PPO updates, checkpoints, LoRA.

use candle_core::{DType, Device, Tensor};
use rla_model::config::{Arch, ModelConfig};
use rla_model::lora::{self, LoraConfig};
use rla_model::model::Transformer;
use rla_model::sample::{
    allowed_next, generate, generate_within, score, score_within, Finish, SampleParams,
};
use rla_model::tok::{build_word_level, Tok};
use rla_model::train::{ppo_step, sft_eval, sft_step, AdamW, PpoSample, TrainConfig};
use rla_model::weights::{init_tensors, load_model, save_model, save_tensors};

const CORPUS: &str = "you arrive at fridge 1 . the fridge 1 is closed .\nyou open the fridge 1 . in it you see a egg 1 .\nyes no maybe \\boxed{1} \\boxed{-1}\ngo to cabinet 2 take egg 1 from fridge 1\n";

fn setup(arch: Arch, seed: u64) -> (Transformer, Tok) {
    let tok = build_word_level(CORPUS, 1).unwrap();
    let cfg = ModelConfig::tiny(arch, tok.vocab_size(), 32, 2, 4, 2);
    let t = init_tensors(&cfg, seed, DType::F32, &Device::Cpu).unwrap();
    (
        Transformer::from_tensors(&cfg, &t, &Device::Cpu, DType::F32).unwrap(),
        tok,
    )
}

fn logits(m: &Transformer, ids: &[u32]) -> Vec<f32> {
    let x = Tensor::new(ids, &Device::Cpu)
        .unwrap()
        .unsqueeze(0)
        .unwrap();
    let p = Tensor::arange(0u32, ids.len() as u32, &Device::Cpu)
        .unwrap()
        .unsqueeze(0)
        .unwrap();
    m.forward(&x, &p, None, None)
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1()
        .unwrap()
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[test]
fn samples_sharing_a_prefill_have_the_logprobs_the_model_scores() {
    let (m, tok) = setup(Arch::Qwen3, 1);
    let prompt = tok.encode("you open the fridge 1 .").unwrap();
    let p = SampleParams {
        max_new_tokens: 12,
        seed: 7,
        ..Default::default()
    };
    let out = generate(&m, &tok, std::slice::from_ref(&prompt), 3, &p).unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].len(), 3);
    assert_ne!(out[0][0].tokens, out[0][1].tokens, "independent samples");
    let pairs: Vec<(Vec<u32>, Vec<u32>)> = out[0]
        .iter()
        .map(|s| (prompt.clone(), s.tokens.clone()))
        .collect();
    let scored = score(&m, &pairs).unwrap();
    for (s, lp) in out[0].iter().zip(&scored) {
        assert_eq!(s.logprobs.len(), s.tokens.len());
        assert!(
            max_diff(&s.logprobs, lp) < 1e-4,
            "{:?} vs {lp:?}",
            s.logprobs
        );
    }
    // seeded
    assert_eq!(
        generate(&m, &tok, std::slice::from_ref(&prompt), 3, &p).unwrap(),
        out
    );
    // equal prompts in one call share one prefill, a shorter one beside them is padded: every
    // sample still has the log-probabilities the model scores, and the equal prompts' samples
    // are drawn independently
    let short = tok.encode("go to cabinet 2").unwrap();
    let prompts = vec![prompt.clone(), short.clone(), prompt.clone()];
    let out = generate(&m, &tok, &prompts, 4, &p).unwrap();
    assert_ne!(out[0], out[2], "equal prompts, independent samples");
    for (pr, samples) in prompts.iter().zip(&out) {
        let pairs: Vec<(Vec<u32>, Vec<u32>)> = samples
            .iter()
            .map(|s| (pr.clone(), s.tokens.clone()))
            .collect();
        for (s, lp) in samples.iter().zip(score(&m, &pairs).unwrap()) {
            assert!(
                max_diff(&s.logprobs, &lp) < 1e-4,
                "{:?} vs {lp:?}",
                s.logprobs
            );
        }
    }
}

#[test]
fn constrained_generation_stays_within_the_allowed_responses() {
    let (m, tok) = setup(Arch::Qwen2, 3);
    let eos = tok.eos_ids[0];
    // (word-level pieces carry their leading space)
    let with_eos = |s: &str| {
        let mut v = tok.encode(s).unwrap();
        v.push(eos);
        v
    };
    let allowed = vec![
        vec![
            with_eos(" go to cabinet 2"),
            with_eos(" take egg 1 from fridge 1"),
        ],
        vec![with_eos(" yes"), with_eos(" no")],
    ];
    assert_eq!(
        allowed_next(&allowed[0], &tok.encode(" go to").unwrap()),
        tok.encode(" go to cabinet").unwrap()[2..].to_vec()
    );
    let maybe = tok.encode(" maybe").unwrap();
    assert!(
        allowed_next(&allowed[1], &maybe).is_empty(),
        "{maybe:?} {allowed:?}"
    );
    let prompts = vec![
        tok.encode("you open the fridge 1 .").unwrap(),
        tok.encode("the fridge 1 is closed .").unwrap(),
    ];
    let p = SampleParams {
        max_new_tokens: 12,
        seed: 11,
        ..Default::default()
    };
    let out = generate_within(&m, &tok, &prompts, 8, &p, Some(&allowed)).unwrap();
    let mut seen = std::collections::HashSet::new();
    for (pi, samples) in out.iter().enumerate() {
        for s in samples {
            assert!(allowed[pi].contains(&s.tokens), "{:?}", s.text);
            assert_eq!(s.finish, Finish::Eos);
            seen.insert(s.tokens.clone());
        }
    }
    assert!(seen.len() >= 3, "sampling explores the allowed set");
    // The recorded log-probabilities are over the tokens each token was drawn among: scoring
    // within the same choices gives them again, a token with one choice has 0, and the model's
    // free log-probability of a token is never above its constrained one.
    let pairs: Vec<(Vec<u32>, Vec<u32>)> = out[0]
        .iter()
        .map(|s| (prompts[0].clone(), s.tokens.clone()))
        .collect();
    let choices: Vec<Option<Vec<Vec<u32>>>> = out[0]
        .iter()
        .map(|s| Some(rla_lm::choices_along(&allowed[0], &s.tokens)))
        .collect();
    let free = score(&m, &pairs).unwrap();
    let borrowed: Vec<Option<&[Vec<u32>]>> = choices.iter().map(Option::as_deref).collect();
    let within = score_within(&m, &pairs, &borrowed).unwrap();
    for ((s, lp), (f, c)) in out[0].iter().zip(&within).zip(free.iter().zip(&choices)) {
        assert!(max_diff(&s.logprobs, lp) < 1e-4, "{:?} {lp:?}", s.logprobs);
        for (t, ch) in c.as_ref().unwrap().iter().enumerate() {
            assert!(f[t] <= lp[t] + 1e-5);
            if ch.len() == 1 {
                assert_eq!(s.logprobs[t], 0.0);
            } else {
                assert!(s.logprobs[t] < 0.0);
            }
        }
    }
    // An untrained model left free almost never writes an allowed response.
    let free = generate(&m, &tok, &prompts, 8, &p).unwrap();
    let free_ok = free
        .iter()
        .enumerate()
        .flat_map(|(pi, v)| v.iter().map(move |s| (pi, s)))
        .filter(|(pi, s)| allowed[*pi].contains(&s.tokens))
        .count();
    assert!(free_ok < 8, "{free_ok} of 16 free samples allowed");
    // Mismatched lists are an error, not a panic.
    assert!(generate_within(&m, &tok, &prompts, 1, &p, Some(&allowed[..1])).is_err());
}

#[test]
fn left_padded_batches_generate_what_single_prompts_do() {
    let (m, tok) = setup(Arch::Qwen2, 2);
    let prompts: Vec<Vec<u32>> = [
        "you",
        "go to cabinet 2 take egg 1",
        "the fridge 1 is closed .",
    ]
    .iter()
    .map(|s| tok.encode(s).unwrap())
    .collect();
    let p = SampleParams::greedy(10);
    let batched = generate(&m, &tok, &prompts, 2, &p).unwrap();
    for (i, pr) in prompts.iter().enumerate() {
        let single = generate(&m, &tok, std::slice::from_ref(pr), 1, &p).unwrap();
        assert_eq!(batched[i][0].tokens, single[0][0].tokens, "prompt {i}");
        assert_eq!(
            batched[i][1].tokens, single[0][0].tokens,
            "prompt {i}, second copy"
        );
        assert!(max_diff(&batched[i][0].logprobs, &single[0][0].logprobs) < 1e-4);
    }
    // top-k 1 is greedy
    let k1 = SampleParams {
        top_k: 1,
        max_new_tokens: 10,
        seed: 3,
        ..Default::default()
    };
    assert_eq!(
        generate(&m, &tok, &prompts, 1, &k1).unwrap()[1][0].tokens,
        batched[1][0].tokens
    );
}

#[test]
fn stop_strings_and_length_end_generation() {
    let (m, tok) = setup(Arch::Qwen3, 3);
    let prompt = tok.encode("you").unwrap();
    let free = generate(
        &m,
        &tok,
        std::slice::from_ref(&prompt),
        1,
        &SampleParams::greedy(8),
    )
    .unwrap()[0][0]
        .clone();
    assert_eq!(free.finish, Finish::Length);
    assert_eq!(free.tokens.len(), 8);
    // stop at the text of the third generated token
    let third = tok.decode(&free.tokens[2..3]).unwrap();
    let p = SampleParams {
        stop: vec![third.clone()],
        ..SampleParams::greedy(8)
    };
    let s = generate(&m, &tok, &[prompt], 1, &p).unwrap()[0][0].clone();
    assert_eq!(s.finish, Finish::Stop);
    assert!(!s.text.contains(third.as_str()) || s.text.len() < free.text.len());
    assert!(s.tokens.len() <= 3);
}

fn sft_pairs(tok: &Tok) -> Vec<(Vec<u32>, Vec<u32>)> {
    CORPUS
        .lines()
        .map(|l| {
            let words: Vec<&str> = l.split(' ').collect();
            let (a, b) = words.split_at(words.len() / 2);
            (
                tok.encode(&a.join(" ")).unwrap(),
                tok.encode(&format!(" {}", b.join(" "))).unwrap(),
            )
        })
        .collect()
}

#[test]
fn sft_measurably_lowers_the_loss() {
    let (mut m, tok) = setup(Arch::Qwen2, 4);
    let vars = m.make_trainable().unwrap();
    let mut opt = AdamW::new(vars).unwrap();
    let cfg = TrainConfig {
        lr: 3e-3,
        micro_batch: 2,
        ..Default::default()
    };
    let pairs = sft_pairs(&tok);
    let before = sft_eval(&m, &pairs, tok.pad_id).unwrap();
    for _ in 0..40 {
        sft_step(&m, &mut opt, &cfg, &pairs, tok.pad_id).unwrap();
    }
    let after = sft_eval(&m, &pairs, tok.pad_id).unwrap();
    assert!(after < 0.3 * before, "SFT loss {before:.3} → {after:.3}");
}

/// A toy bandit: the reward is 1 when the first generated word is "yes".
#[test]
fn ppo_clip_measurably_raises_the_reward() {
    let (mut m, tok) = setup(Arch::Qwen3, 5);
    let vars = m.make_trainable().unwrap();
    let mut opt = AdamW::new(vars).unwrap();
    let cfg = TrainConfig {
        lr: 2e-3,
        micro_batch: 8,
        ..Default::default()
    };
    let yes = tok.encode(" yes").unwrap()[0];
    let prompt = tok.encode("<|im_start|>").unwrap();
    let reward_of = |m: &Transformer, seed: u64| -> f64 {
        let out = generate(
            m,
            &tok,
            std::slice::from_ref(&prompt),
            64,
            &SampleParams {
                max_new_tokens: 1,
                seed,
                ..Default::default()
            },
        )
        .unwrap();
        out[0].iter().filter(|s| s.tokens[0] == yes).count() as f64 / 64.0
    };
    let start = reward_of(&m, 1000);
    for it in 0..40 {
        let out = generate(
            &m,
            &tok,
            std::slice::from_ref(&prompt),
            16,
            &SampleParams {
                max_new_tokens: 2,
                seed: it,
                ..Default::default()
            },
        )
        .unwrap();
        let r: Vec<f32> = out[0]
            .iter()
            .map(|s| (s.tokens[0] == yes) as i32 as f32)
            .collect();
        let mean = r.iter().sum::<f32>() / 16.0;
        let std = (r.iter().map(|x| (x - mean).powi(2)).sum::<f32>() / 16.0).sqrt();
        let samples: Vec<PpoSample> = out[0]
            .iter()
            .zip(&r)
            .map(|(s, x)| PpoSample {
                prompt: prompt.clone(),
                response: s.tokens.clone(),
                advantage: if std > 1e-6 { (x - mean) / std } else { 0.0 },
                old_logprobs: s.logprobs.clone(),
                ref_logprobs: None,
                choices: None,
            })
            .collect();
        for _ in 0..2 {
            ppo_step(&m, &mut opt, &cfg, &samples, tok.pad_id).unwrap();
        }
    }
    let end = reward_of(&m, 1000);
    assert!(
        end > start + 0.4 && end > 0.6,
        "reward {start:.2} → {end:.2}"
    );
}

/// Answers drawn among allowed ones learn among them: a token that had one choice gets no
/// gradient, and PPO raises the rewarded answer's share of constrained samples.
#[test]
fn constrained_ppo_learns_among_the_allowed_answers_only() {
    let (mut m, tok) = setup(Arch::Qwen3, 9);
    let vars = m.make_trainable().unwrap();
    let mut opt = AdamW::new(vars).unwrap();
    let cfg = TrainConfig {
        lr: 2e-3,
        micro_batch: 8,
        ..Default::default()
    };
    let eos = tok.eos_ids[0];
    let answer = |t: &str| {
        let mut v = tok.encode(t).unwrap();
        v.push(eos);
        v
    };
    let prompt = tok.encode("the fridge 1 is closed .").unwrap();
    let sample = |m: &Transformer, allowed: &[Vec<u32>], n: usize, seed: u64| {
        let p = SampleParams {
            max_new_tokens: 8,
            seed,
            ..Default::default()
        };
        generate_within(
            m,
            &tok,
            std::slice::from_ref(&prompt),
            n,
            &p,
            Some(&[allowed.to_vec()]),
        )
        .unwrap()
        .remove(0)
    };
    let to_ppo = |s: &rla_model::sample::Sample, allowed: &[Vec<u32>], advantage: f32| PpoSample {
        prompt: prompt.clone(),
        response: s.tokens.clone(),
        advantage,
        old_logprobs: s.logprobs.clone(),
        ref_logprobs: None,
        choices: Some(rla_lm::choices_along(allowed, &s.tokens)),
    };
    // one allowed answer: every token forced, nothing to learn
    let only = vec![answer(" go to cabinet 2")];
    let forced: Vec<PpoSample> = sample(&m, &only, 4, 1)
        .iter()
        .map(|s| to_ppo(s, &only, 1.0))
        .collect();
    assert!(forced
        .iter()
        .all(|s| s.old_logprobs.iter().all(|&x| x == 0.0)));
    let st = ppo_step(&m, &mut opt, &cfg, &forced, tok.pad_id).unwrap();
    assert_eq!(st.grad_norm, 0.0, "forced tokens carry no gradient");
    // two answers sharing their first token: reward " go to cabinet 2"
    let two = vec![answer(" go to cabinet 2"), answer(" go to fridge 1")];
    let good = two[0].clone();
    let share = |m: &Transformer, seed: u64| {
        let v = sample(m, &two, 64, seed);
        v.iter().filter(|s| s.tokens == good).count() as f64 / 64.0
    };
    let start = share(&m, 1000);
    for it in 0..30 {
        let v = sample(&m, &two, 16, it);
        let r: Vec<f64> = v.iter().map(|s| (s.tokens == good) as i32 as f64).collect();
        let Some(adv) = rla_core::stats::standardize(&r) else {
            continue;
        };
        let batch: Vec<PpoSample> = v
            .iter()
            .zip(adv)
            .map(|(s, a)| to_ppo(s, &two, a as f32))
            .collect();
        let st = ppo_step(&m, &mut opt, &cfg, &batch, tok.pad_id).unwrap();
        assert!(st.grad_norm > 0.0);
    }
    let end = share(&m, 1000);
    assert!(
        end > start + 0.3 && end > 0.8,
        "share {start:.2} → {end:.2}"
    );
}

#[test]
fn gradient_accumulation_equals_one_big_batch() {
    let pairs = sft_pairs(&build_word_level(CORPUS, 1).unwrap());
    let mut results = Vec::new();
    for mb in [1usize, 2, 16] {
        let (mut m, tok) = setup(Arch::Qwen2, 6);
        let vars = m.make_trainable().unwrap();
        let mut opt = AdamW::new(vars).unwrap();
        let cfg = TrainConfig {
            lr: 1e-3,
            micro_batch: mb,
            max_grad_norm: 0.05,
            ..Default::default()
        };
        let s = sft_step(&m, &mut opt, &cfg, &pairs, tok.pad_id).unwrap();
        results.push((s, logits(&m, &[4, 5, 6])));
    }
    for r in &results[1..] {
        assert!((r.0.loss - results[0].0.loss).abs() < 1e-5);
        assert!((r.0.grad_norm - results[0].0.grad_norm).abs() < 1e-4);
        assert!(max_diff(&r.1, &results[0].1) < 1e-5);
    }
    assert!(results[0].0.grad_norm > 0.05, "clipping was exercised");
}

#[test]
fn optimiser_state_resumes_exactly() {
    let pairs = sft_pairs(&build_word_level(CORPUS, 1).unwrap());
    let cfg = TrainConfig {
        lr: 1e-3,
        ..Default::default()
    };
    let dir = tempfile::tempdir().unwrap();
    // uninterrupted: three steps
    let (mut a, tok) = setup(Arch::Qwen2, 7);
    let mut oa = AdamW::new(a.make_trainable().unwrap()).unwrap();
    for _ in 0..3 {
        sft_step(&a, &mut oa, &cfg, &pairs, tok.pad_id).unwrap();
    }
    // interrupted after two: save model and optimiser, load both, one more step
    let (mut b, _) = setup(Arch::Qwen2, 7);
    let mut ob = AdamW::new(b.make_trainable().unwrap()).unwrap();
    for _ in 0..2 {
        sft_step(&b, &mut ob, &cfg, &pairs, tok.pad_id).unwrap();
    }
    save_model(&b, dir.path()).unwrap();
    ob.save(&dir.path().join("optimizer.safetensors")).unwrap();
    let mut c = load_model(dir.path(), DType::F32, &Device::Cpu).unwrap();
    let mut oc = AdamW::new(c.make_trainable().unwrap()).unwrap();
    oc.load(&dir.path().join("optimizer.safetensors")).unwrap();
    assert_eq!(oc.step, 2);
    sft_step(&c, &mut oc, &cfg, &pairs, tok.pad_id).unwrap();
    assert!(max_diff(&logits(&a, &[4, 9, 2]), &logits(&c, &[4, 9, 2])) < 1e-6);
}

#[test]
fn hf_layout_round_trips_including_sharded_bf16() {
    let (m, _) = setup(Arch::Qwen3, 8);
    let dir = tempfile::tempdir().unwrap();
    save_model(&m, dir.path()).unwrap();
    let back = load_model(dir.path(), DType::F32, &Device::Cpu).unwrap();
    assert_eq!(logits(&m, &[1, 2, 3, 4]), logits(&back, &[1, 2, 3, 4]));
    let cfg: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("config.json")).unwrap())
            .unwrap();
    assert_eq!(cfg["architectures"][0], "Qwen3ForCausalLM");
    assert_eq!(cfg["torch_dtype"], "float32");

    // two bf16 shards with an index, as large checkpoints come
    let sharded = tempfile::tempdir().unwrap();
    std::fs::copy(
        dir.path().join("config.json"),
        sharded.path().join("config.json"),
    )
    .unwrap();
    let named = m.named_tensors();
    let (mut s1, mut s2) = (
        std::collections::BTreeMap::new(),
        std::collections::BTreeMap::new(),
    );
    let mut map = serde_json::Map::new();
    for (i, (n, t)) in named.iter().enumerate() {
        let (dst, file) = if i % 2 == 0 {
            (&mut s1, "model-00001-of-00002.safetensors")
        } else {
            (&mut s2, "model-00002-of-00002.safetensors")
        };
        dst.insert(n.clone(), t.to_dtype(DType::BF16).unwrap());
        map.insert(n.clone(), file.into());
    }
    save_tensors(
        &s1,
        &sharded.path().join("model-00001-of-00002.safetensors"),
    )
    .unwrap();
    save_tensors(
        &s2,
        &sharded.path().join("model-00002-of-00002.safetensors"),
    )
    .unwrap();
    std::fs::write(
        sharded.path().join("model.safetensors.index.json"),
        serde_json::json!({"metadata": {}, "weight_map": map}).to_string(),
    )
    .unwrap();
    let bf = load_model(sharded.path(), DType::F32, &Device::Cpu).unwrap();
    let d = max_diff(&logits(&m, &[1, 2, 3, 4]), &logits(&bf, &[1, 2, 3, 4]));
    assert!(d > 0.0 && d < 2e-2, "bf16 rounding only: {d}");
    // and run in bf16 itself
    let half = load_model(sharded.path(), DType::BF16, &Device::Cpu).unwrap();
    assert_eq!(half.dtype, DType::BF16);
    let x = Tensor::new(&[[1u32, 2, 3]], &Device::Cpu).unwrap();
    let p = Tensor::new(&[[0u32, 1, 2]], &Device::Cpu).unwrap();
    assert_eq!(
        half.forward(&x, &p, None, None).unwrap().dtype(),
        DType::BF16
    );
}

#[test]
fn bad_checkpoints_are_named() {
    let (m, _) = setup(Arch::Qwen2, 9);
    let dir = tempfile::tempdir().unwrap();
    save_model(&m, dir.path()).unwrap();
    let mut named = m.named_tensors();
    named.remove("model.layers.1.mlp.up_proj.weight");
    save_tensors(&named, &dir.path().join("model.safetensors")).unwrap();
    let e = load_model(dir.path(), DType::F32, &Device::Cpu)
        .unwrap_err()
        .to_string();
    assert!(e.contains("model.layers.1.mlp.up_proj.weight"), "{e}");
    let cfg = std::fs::read_to_string(dir.path().join("config.json"))
        .unwrap()
        .replace("Qwen2ForCausalLM", "GPT2LMHeadModel");
    std::fs::write(dir.path().join("config.json"), cfg).unwrap();
    let e = load_model(dir.path(), DType::F32, &Device::Cpu)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("GPT2LMHeadModel") && e.contains("config.json"),
        "{e}"
    );
}

#[test]
fn weights_with_nan_configs_out_of_range_and_models_past_memory_are_refused() {
    let (m, tok) = setup(Arch::Qwen3, 4);
    let dir = tempfile::tempdir().unwrap();
    save_model(&m, dir.path()).unwrap();
    // one NaN in one tensor: named when the weights are read, by any reader
    let mut named = m.named_tensors();
    let w = named["model.norm.weight"].clone();
    let mut v = w.to_vec1::<f32>().unwrap();
    v[3] = f32::NAN;
    named.insert(
        "model.norm.weight".into(),
        Tensor::from_vec(v, w.shape(), &Device::Cpu).unwrap(),
    );
    save_tensors(&named, &dir.path().join("model.safetensors")).unwrap();
    let e = load_model(dir.path(), DType::F32, &Device::Cpu)
        .unwrap_err()
        .to_string();
    assert!(e.contains("model.norm.weight") && e.contains("NaN"), "{e}");

    // values no model can run with, and shapes that overflow or cannot fit
    let base = ModelConfig::tiny(Arch::Qwen3, tok.vocab_size(), 32, 2, 4, 2);
    for (edit, says) in [
        (
            Box::new(|c: &mut ModelConfig| c.rms_norm_eps = -1.0) as Box<dyn Fn(&mut ModelConfig)>,
            "rms_norm_eps",
        ),
        (
            Box::new(|c: &mut ModelConfig| c.rope_theta = -1.0),
            "rope_theta",
        ),
        (
            Box::new(|c: &mut ModelConfig| c.rope_theta = f64::NAN),
            "rope_theta",
        ),
        (
            Box::new(|c: &mut ModelConfig| {
                c.hidden_size = 1 << 62;
                c.head_dim = Some(8);
            }),
            "overflows",
        ),
    ] {
        let mut c = base.clone();
        edit(&mut c);
        let e = c.validate().unwrap_err();
        assert!(e.contains(says), "{e}");
    }
    for (hidden, layers) in [(1_000_000_000usize, 2usize), (32, 1_000_000_000)] {
        let mut c = base.clone();
        c.hidden_size = hidden;
        c.intermediate_size = hidden * 3;
        c.head_dim = Some(8);
        c.num_hidden_layers = layers;
        c.validate().unwrap();
        let e = rla_model::Lm::init(&c, tok.clone(), 0, DType::F32, &Device::Cpu)
            .err()
            .expect("refused")
            .to_string();
        assert!(e.contains("GiB") && e.contains("memory"), "{e}");
    }
    // a model that fits to hold but not to train with AdamW is refused when training starts
    let mem = rla_model::config::memory_bytes().unwrap();
    let mut c = base.clone();
    c.hidden_size = 64;
    c.head_dim = Some(16);
    c.intermediate_size = 64;
    c.vocab_size = tok.vocab_size();
    c.num_hidden_layers = 1;
    let per_layer = c.num_params() as u64;
    // about mem / 8 parameters: half the memory in f32, twice it with AdamW's state
    c.num_hidden_layers = (mem / 8 / per_layer) as usize;
    assert!(c.check_fits(4, "hold").is_ok());
    assert!(c.check_fits(16, "train").unwrap_err().contains("train"));
}

#[test]
fn prompts_past_the_context_are_refused() {
    use rla_lm::Sampler;
    let (m, tok) = setup(Arch::Qwen2, 6);
    let dir = tempfile::tempdir().unwrap();
    save_model(&m, dir.path()).unwrap();
    tok.save(dir.path()).unwrap();
    let cfg = dir.path().join("config.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
    v["max_position_embeddings"] = 16.into();
    std::fs::write(&cfg, v.to_string()).unwrap();
    let lm = rla_model::Lm::load(dir.path(), DType::F32, &Device::Cpu).unwrap();
    assert_eq!(lm.context_len(), Some(16));
    let p = |n| rla_lm::SampleParams::greedy(n);
    assert!(lm.generate(&[vec![1; 10]], 1, &p(6)).is_ok());
    let e = lm
        .generate(&[vec![1; 10]], 1, &p(7))
        .unwrap_err()
        .to_string();
    assert!(e.contains("context of 16"), "{e}");
    let e = lm
        .generate(&[vec![1; 17]], 1, &p(1))
        .unwrap_err()
        .to_string();
    assert!(e.contains("17 tokens"), "{e}");
    assert!(lm.score(&[(vec![1; 10], vec![1; 7])]).is_err());
}

#[test]
fn lora_trains_only_adapters_merges_and_exports_in_peft_format() {
    let (mut m, tok) = setup(Arch::Qwen2, 10);
    let base = logits(&m, &[3, 4, 5, 6]);
    let base_w = m.blocks[0]
        .q
        .w
        .flatten_all()
        .unwrap()
        .to_vec1::<f32>()
        .unwrap();
    let lc = LoraConfig {
        r: 4,
        alpha: 8.0,
        ..Default::default()
    };
    let vars = lora::attach(&mut m, &lc, 0).unwrap();
    assert_eq!(vars.len(), 2 * 7 * 2);
    assert_eq!(logits(&m, &[3, 4, 5, 6]), base, "B = 0 at initialisation");
    let mut opt = AdamW::new(vars).unwrap();
    let cfg = TrainConfig {
        lr: 5e-3,
        ..Default::default()
    };
    for _ in 0..5 {
        sft_step(&m, &mut opt, &cfg, &sft_pairs(&tok), tok.pad_id).unwrap();
    }
    let adapted = logits(&m, &[3, 4, 5, 6]);
    assert!(max_diff(&adapted, &base) > 1e-3, "adapters learned");
    assert_eq!(
        m.blocks[0]
            .q
            .w
            .flatten_all()
            .unwrap()
            .to_vec1::<f32>()
            .unwrap(),
        base_w,
        "base frozen"
    );

    let dir = tempfile::tempdir().unwrap();
    lora::save_peft(&m, &lc, dir.path(), "tiny-base").unwrap();
    let c: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("adapter_config.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        (
            c["peft_type"].as_str(),
            c["r"].as_u64(),
            c["lora_alpha"].as_f64()
        ),
        (Some("LORA"), Some(4), Some(8.0))
    );
    let t =
        candle_core::safetensors::load(dir.path().join("adapter_model.safetensors"), &Device::Cpu)
            .unwrap();
    let a = &t["base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"];
    let b = &t["base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight"];
    assert_eq!((a.dims(), b.dims()), (&[4usize, 32][..], &[32usize, 4][..]));

    // import into a fresh base: same outputs
    let (mut fresh, _) = setup(Arch::Qwen2, 10);
    let got = lora::load_peft(&mut fresh, dir.path()).unwrap();
    assert_eq!(got.r, 4);
    assert!(max_diff(&logits(&fresh, &[3, 4, 5, 6]), &adapted) < 1e-5);
    // merge: same outputs without adapters
    lora::merge(&mut fresh).unwrap();
    assert!(fresh.blocks[0].q.lora.is_none());
    assert!(max_diff(&logits(&fresh, &[3, 4, 5, 6]), &adapted) < 1e-4);
}

/// The update's vital signs on a hand-built batch: old log-probabilities shifted by known amounts
/// give a known clip fraction, and the entropy at the decision tokens is that of the choices'
/// distribution, computed here by scoring each choice.
#[test]
fn a_ppo_step_reports_its_clip_fraction_and_the_entropy_at_its_decisions() {
    let (mut m, tok) = setup(Arch::Qwen3, 4);
    let vars = m.make_trainable().unwrap();
    let mut opt = AdamW::new(vars).unwrap();
    let cfg = TrainConfig {
        lr: 1e-3,
        micro_batch: 2,
        ..Default::default()
    };
    let eos = tok.eos_ids[0];
    let answer = |t: &str| {
        let mut v = tok.encode(t).unwrap();
        v.push(eos);
        v
    };
    let prompt = tok.encode("the fridge 1 is closed .").unwrap();
    // two answers that part at their third token ("cabinet" or "fridge"): one decision token
    let two = vec![answer(" go to cabinet 2"), answer(" go to fridge 1")];
    let mut samples = Vec::new();
    for (k, resp) in two.iter().enumerate() {
        let choices = rla_lm::choices_along(&two, resp);
        let now = rla_model::sample::score_within(
            &m,
            &[(prompt.clone(), resp.clone())],
            &[Some(&choices)],
        )
        .unwrap()
        .remove(0);
        // the first answer's decision token drawn by a policy 0.5 nats less likely (ratio
        // e^0.5 ≈ 1.65, outside [0.8, 1.2]); every other token as the model scores it now
        let old: Vec<f32> = now
            .iter()
            .zip(&choices)
            .map(|(&x, c)| if k == 0 && c.len() > 1 { x - 0.5 } else { x })
            .collect();
        samples.push(PpoSample {
            prompt: prompt.clone(),
            response: resp.clone(),
            advantage: if k == 0 { 1.0 } else { -1.0 },
            old_logprobs: old,
            ref_logprobs: None,
            choices: Some(choices),
        });
    }
    let tokens: usize = samples.iter().map(|s| s.response.len()).sum();
    // the entropy of the two-way choice, from the two answers' scores at their decision token
    let decision_lp: Vec<f64> = samples
        .iter()
        .map(|s| {
            let i = s
                .choices
                .as_ref()
                .unwrap()
                .iter()
                .position(|c| c.len() > 1)
                .unwrap();
            let now = rla_model::sample::score_within(
                &m,
                &[(s.prompt.clone(), s.response.clone())],
                &[s.choices.as_deref()],
            )
            .unwrap();
            now[0][i] as f64
        })
        .collect();
    let want = rla_core::vitals::entropy(&decision_lp).unwrap();
    let st = ppo_step(&m, &mut opt, &cfg, &samples, tok.pad_id).unwrap();
    assert_eq!(st.clip_fraction, Some(1.0 / tokens as f64));
    let got = st.decision_entropy.unwrap();
    assert!((got - want).abs() < 1e-4, "entropy {got} against {want}");
    assert!(got > 0.0 && got <= 2f64.ln() + 1e-6);
}

/// At a temperature other than 1 the sampler records the log-probabilities of the tempered
/// distribution it draws from, the learner scores at the same temperature, and a PPO step on
/// fresh samples starts at ratio 1 (on-policy); scored at temperature 1 the same samples would
/// be off-policy.
#[test]
fn tempered_samples_record_tempered_log_probabilities_and_train_on_policy() {
    let (mut m, tok) = setup(Arch::Qwen3, 6);
    let vars = m.make_trainable().unwrap();
    let mut opt = AdamW::new(vars).unwrap();
    let t = 0.6;
    let cfg = TrainConfig {
        lr: 1e-3,
        micro_batch: 4,
        temperature: t,
        ..Default::default()
    };
    let eos = tok.eos_ids[0];
    let answer = |s: &str| {
        let mut v = tok.encode(s).unwrap();
        v.push(eos);
        v
    };
    let prompt = tok.encode("the fridge 1 is closed .").unwrap();
    let allowed = vec![
        answer(" go to cabinet 2"),
        answer(" go to fridge 1"),
        answer(" open fridge 1"),
    ];
    let p = SampleParams {
        max_new_tokens: 8,
        temperature: t,
        seed: 3,
        ..Default::default()
    };
    let out = generate_within(
        &m,
        &tok,
        std::slice::from_ref(&prompt),
        8,
        &p,
        Some(std::slice::from_ref(&allowed)),
    )
    .unwrap()
    .remove(0);
    let samples: Vec<PpoSample> = out
        .iter()
        .enumerate()
        .map(|(i, s)| PpoSample {
            prompt: prompt.clone(),
            response: s.tokens.clone(),
            advantage: if i % 2 == 0 { 1.0 } else { -1.0 },
            old_logprobs: s.logprobs.clone(),
            ref_logprobs: None,
            choices: Some(rla_lm::choices_along(&allowed, &s.tokens)),
        })
        .collect();
    let pairs: Vec<(Vec<u32>, Vec<u32>)> = samples
        .iter()
        .map(|s| (s.prompt.clone(), s.response.clone()))
        .collect();
    let choices: Vec<Option<&[Vec<u32>]>> = samples.iter().map(|s| s.choices.as_deref()).collect();
    let tempered = rla_model::sample::score_within_at(&m, &pairs, &choices, t).unwrap();
    let plain = rla_model::sample::score_within(&m, &pairs, &choices).unwrap();
    let mut differs = false;
    for ((s, a), b) in samples.iter().zip(&tempered).zip(&plain) {
        for ((&rec, &x), &y) in s.old_logprobs.iter().zip(a).zip(b) {
            assert!((rec - x).abs() < 1e-4, "recorded {rec}, tempered score {x}");
            differs |= (rec - y).abs() > 1e-3;
        }
    }
    assert!(
        differs,
        "temperature 0.6 changes the decision tokens' log-probabilities"
    );
    let st = ppo_step(&m, &mut opt, &cfg, &samples, tok.pad_id).unwrap();
    assert_eq!(st.clip_fraction, Some(0.0), "on-policy: every ratio is 1");
}

#[test]
fn packed_rows_score_and_train_as_one_row_a_response() {
    use rla_model::batch::Batch;
    use rla_model::loss::response_logprobs;
    let (mut m, tok) = setup(Arch::Qwen3, 11);
    let vars = m.make_trainable().unwrap();
    let enc = |s: &str| tok.encode(s).unwrap();
    let (p1, p2) = (
        enc("you arrive at fridge 1 . the fridge 1 is closed ."),
        enc("go to cabinet 2"),
    );
    // three responses after one prompt (two of them equal), one after another, a one-token one
    let (r1, r2, r3, r4) = (
        enc("you open the fridge 1 ."),
        enc("\\boxed{1}"),
        enc("yes no maybe \\boxed{-1}"),
        enc("take egg 1"),
    );
    let r5 = vec![r1[0]];
    let groups: Vec<(&[u32], Vec<&[u32]>)> =
        vec![(&p1, vec![&r1, &r2, &r3, &r2, &r5]), (&p2, vec![&r4])];
    let flat: Vec<(&[u32], &[u32])> = groups
        .iter()
        .flat_map(|(p, rs)| rs.iter().map(move |r| (*p, *r)))
        .collect();
    let packed = Batch::packed(&groups, tok.pad_id, &Device::Cpu).unwrap();
    let plain = Batch::new(flat.iter().copied(), tok.pad_id, &Device::Cpu).unwrap();
    assert_eq!(
        packed.ids.dims2().unwrap().0,
        2,
        "two rows for six responses"
    );
    assert_eq!(
        packed.ids.dims2().unwrap().1,
        p1.len() + r1.len() + 2 * r2.len() + r3.len() + r5.len() - 5
    );
    let mut grads = Vec::new();
    let mut values = Vec::new();
    for b in [&packed, &plain] {
        let lp = response_logprobs(&m, b).unwrap();
        let masked = (&lp * &b.resp_mask).unwrap();
        let g = masked.sum_all().unwrap().backward().unwrap();
        values.push(masked.flatten_all().unwrap().to_vec1::<f32>().unwrap());
        grads.push(
            vars.iter()
                .flat_map(|(_, v)| {
                    g.get(v.as_tensor())
                        .unwrap()
                        .flatten_all()
                        .unwrap()
                        .to_vec1::<f32>()
                        .unwrap()
                })
                .collect::<Vec<f32>>(),
        );
    }
    assert!(
        values[0].iter().any(|&x| x < -0.1),
        "real log-probabilities"
    );
    assert!(
        max_diff(&values[0], &values[1]) < 1e-5,
        "{:?} vs {:?}",
        values[0],
        values[1]
    );
    assert!(grads[0].iter().any(|&x| x.abs() > 1e-4));
    assert!(max_diff(&grads[0], &grads[1]) < 1e-4);
    // a response that saw another response's tokens would differ: swap two responses' order
    let swapped: Vec<(&[u32], Vec<&[u32]>)> = vec![(&p1, vec![&r3, &r1])];
    let s = Batch::packed(&swapped, tok.pad_id, &Device::Cpu).unwrap();
    let lp = (response_logprobs(&m, &s).unwrap() * &s.resp_mask).unwrap();
    let lp = lp.to_vec2::<f32>().unwrap();
    let (a, c) = (
        &values[1][..r1.len()],
        &values[1][2 * plain.resp_len..2 * plain.resp_len + r3.len()],
    );
    assert!(max_diff(&lp[1][..r1.len()], a) < 1e-5);
    assert!(max_diff(&lp[0][..r3.len()], c) < 1e-5);
    // scoring packs the pairs of one prompt: the same numbers as one pair at a time
    let pairs: Vec<(Vec<u32>, Vec<u32>)> =
        flat.iter().map(|(p, r)| (p.to_vec(), r.to_vec())).collect();
    let all = score(&m, &pairs).unwrap();
    for (pair, row) in pairs.iter().zip(&all) {
        let one = score(&m, std::slice::from_ref(pair)).unwrap();
        assert!(max_diff(row, &one[0]) < 1e-5);
    }
}
