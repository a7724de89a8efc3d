//! The four tests that keep the model honest: every weight gets a gradient; logits equal
//! candle-transformers' reference models; the PPO-clip gradient matches finite differences;
//! generation with the KV cache equals generation without it.

mod common;
use candle_core::{DType, Device, Tensor, D};
use common::max_diff;
use rla_core::ppo::PpoConfig;
use rla_model::config::{Arch, ModelConfig};
use rla_model::loss::{ppo_loss, token_logprobs};
use rla_model::model::{KvCache, Transformer};
use rla_model::weights::init_tensors;
use std::collections::HashMap;

fn tiny(arch: Arch, tied: bool) -> ModelConfig {
    let mut c = ModelConfig::tiny(arch, 61, 32, 2, 4, 2);
    c.tie_word_embeddings = tied;
    c.rope_theta = 5000.0;
    if arch == Arch::Qwen3 {
        c.head_dim = Some(16); // wider than hidden / heads, as in real Qwen3
    }
    if arch == Arch::Llama {
        // Llama 3's scaled frequencies, short enough to change every one of them here
        c.extra.insert(
            "rope_scaling".into(),
            serde_json::json!({"rope_type": "llama3", "factor": 4.0, "low_freq_factor": 1.0,
                "high_freq_factor": 4.0, "original_max_position_embeddings": 16}),
        );
    }
    c
}

/// Every architecture, tied and untied.
const ARCHS: [(Arch, bool); 6] = [
    (Arch::Qwen2, false),
    (Arch::Qwen2, true),
    (Arch::Qwen3, false),
    (Arch::Qwen3, true),
    (Arch::Llama, false),
    (Arch::Llama, true),
];

fn model(cfg: &ModelConfig, dtype: DType, seed: u64) -> Transformer {
    let t = init_tensors(cfg, seed, dtype, &Device::Cpu).unwrap();
    // non-trivial biases and norms so their gradients and their effect are visible
    let t = t
        .into_iter()
        .map(|(n, x)| {
            let y = if n.ends_with(".bias") || n.ends_with("norm.weight") {
                (x.clone() + x.randn_like(0.0, 0.1).unwrap()).unwrap()
            } else {
                x
            };
            (n, y)
        })
        .collect();
    Transformer::from_tensors(cfg, &t, &Device::Cpu, dtype).unwrap()
}

fn ids(rows: &[&[u32]]) -> Tensor {
    Tensor::new(
        rows.iter().map(|r| r.to_vec()).collect::<Vec<_>>(),
        &Device::Cpu,
    )
    .unwrap()
}

#[test]
fn every_trainable_variable_gets_a_gradient() {
    for (arch, tied) in ARCHS {
        let mut cfg = tiny(arch, tied);
        if arch == Arch::Llama && !tied {
            cfg.attention_bias = Some(true); // q, k, v and o biases
        }
        let mut m = model(&cfg, DType::F32, 1);
        let vars = m.make_trainable().unwrap();
        let x = ids(&[&[1, 5, 9, 2, 7], &[3, 3, 8, 1, 0]]);
        let y = ids(&[&[5, 9, 2, 7, 4], &[3, 8, 1, 0, 6]]);
        let loss = token_logprobs(&m, &x, &y)
            .unwrap()
            .mean_all()
            .unwrap()
            .neg()
            .unwrap();
        let grads = loss.backward().unwrap();
        assert_eq!(vars.len(), rla_model::model::tensor_shapes(&cfg).len());
        for (n, v) in &vars {
            let g = grads
                .get(v.as_tensor())
                .unwrap_or_else(|| panic!("{arch:?} tied={tied}: no gradient for {n}"));
            let norm = g
                .sqr()
                .unwrap()
                .sum_all()
                .unwrap()
                .to_scalar::<f32>()
                .unwrap();
            assert!(
                norm > 0.0 && norm.is_finite(),
                "{arch:?}: zero gradient for {n}"
            );
        }
    }
}

/// One decoding step of a reference model: (token, offset) → logits.
type StepFn = Box<dyn FnMut(&Tensor, usize) -> Tensor>;

fn reference_config(cfg: &ModelConfig) -> serde_json::Value {
    let mut v = serde_json::to_value(cfg).unwrap();
    let o = v.as_object_mut().unwrap();
    o.insert("num_key_value_heads".into(), cfg.kv_heads().into());
    o.insert("head_dim".into(), cfg.head_dim().into());
    o.insert("sliding_window".into(), 4096.into());
    o.insert("max_window_layers".into(), 0.into());
    o.insert("use_sliding_window".into(), false.into());
    o.insert("hidden_act".into(), "silu".into());
    o.insert(
        "attention_bias".into(),
        cfg.attention_bias.unwrap_or(false).into(),
    );
    v
}

/// candle-transformers' Llama (rope scaling included) with its KV cache.
fn llama(
    rc: serde_json::Value,
    vb: candle_nn::VarBuilder,
) -> (
    candle_transformers::models::llama::Llama,
    candle_transformers::models::llama::Cache,
) {
    use candle_transformers::models::llama;
    let c: llama::LlamaConfig = serde_json::from_value(rc).unwrap();
    let c = c.into_config(false);
    let cache = llama::Cache::new(true, DType::F32, &c, &Device::Cpu).unwrap();
    (llama::Llama::load(vb, &c).unwrap(), cache)
}

#[test]
fn logits_equal_candle_transformers_reference_models() {
    use candle_nn::VarBuilder;
    for (arch, tied) in ARCHS {
        let cfg = tiny(arch, tied);
        let m = model(&cfg, DType::F32, 2);
        let tensors: HashMap<String, Tensor> = m.named_tensors().into_iter().collect();
        let x = ids(&[&[1, 5, 9, 2, 7, 11, 3], &[3, 3, 8, 1, 0, 12, 60]]);
        let pos = Tensor::arange(0u32, 7, &Device::Cpu)
            .unwrap()
            .unsqueeze(0)
            .unwrap()
            .broadcast_as((2, 7))
            .unwrap()
            .contiguous()
            .unwrap();
        let ours = m.forward(&x, &pos, None, None).unwrap();
        let rc = reference_config(&cfg);
        let vb = VarBuilder::from_tensors(tensors, DType::F32, &Device::Cpu);
        let theirs_last = match arch {
            Arch::Qwen2 => {
                let c: candle_transformers::models::qwen2::Config =
                    serde_json::from_value(rc).unwrap();
                let mut r =
                    candle_transformers::models::qwen2::ModelForCausalLM::new(&c, vb).unwrap();
                r.forward(&x, 0).unwrap()
            }
            Arch::Qwen3 => {
                let c: candle_transformers::models::qwen3::Config =
                    serde_json::from_value(rc).unwrap();
                let mut r =
                    candle_transformers::models::qwen3::ModelForCausalLM::new(&c, vb).unwrap();
                r.forward(&x, 0).unwrap()
            }
            Arch::Llama => {
                let (r, mut cache) = llama(rc, vb);
                r.forward(&x, 0, &mut cache).unwrap()
            }
        };
        let ours_last = ours.narrow(1, 6, 1).unwrap();
        let diff = max_diff(&ours_last, &theirs_last.reshape((2, 1, 61)).unwrap());
        assert!(diff < 1e-4, "{arch:?} tied={tied}: max |Δlogit| = {diff}");
    }
}

#[test]
fn logits_of_every_position_equal_the_reference_with_its_own_cache() {
    // The reference returns only the last position; step it one token at a time with its own
    // KV cache and compare every position.
    use candle_nn::VarBuilder;
    for arch in [Arch::Qwen2, Arch::Qwen3, Arch::Llama] {
        let cfg = tiny(arch, false);
        let m = model(&cfg, DType::F32, 3);
        let tensors: HashMap<String, Tensor> = m.named_tensors().into_iter().collect();
        let seq = [4u32, 17, 23, 42, 8, 15];
        let x = ids(&[&seq]);
        let pos = Tensor::arange(0u32, 6, &Device::Cpu)
            .unwrap()
            .unsqueeze(0)
            .unwrap();
        let ours = m.forward(&x, &pos, None, None).unwrap();
        let vb = VarBuilder::from_tensors(tensors, DType::F32, &Device::Cpu);
        let rc = reference_config(&cfg);
        let mut step: StepFn = match arch {
            Arch::Qwen2 => {
                let c: candle_transformers::models::qwen2::Config =
                    serde_json::from_value(rc).unwrap();
                let mut r =
                    candle_transformers::models::qwen2::ModelForCausalLM::new(&c, vb).unwrap();
                Box::new(move |t, o| r.forward(t, o).unwrap())
            }
            Arch::Qwen3 => {
                let c: candle_transformers::models::qwen3::Config =
                    serde_json::from_value(rc).unwrap();
                let mut r =
                    candle_transformers::models::qwen3::ModelForCausalLM::new(&c, vb).unwrap();
                Box::new(move |t, o| r.forward(t, o).unwrap())
            }
            Arch::Llama => {
                let (r, mut cache) = llama(rc, vb);
                Box::new(move |t, o| r.forward(t, o, &mut cache).unwrap())
            }
        };
        for (i, &tok) in seq.iter().enumerate() {
            let theirs = step(&ids(&[&[tok]]), i).flatten_all().unwrap();
            let mine = ours.narrow(1, i, 1).unwrap().flatten_all().unwrap();
            let diff = max_diff(&mine, &theirs);
            assert!(diff < 1e-4, "{arch:?} position {i}: {diff}");
        }
    }
}

#[test]
fn ppo_clip_gradient_matches_finite_differences() {
    let cfg = tiny(Arch::Qwen3, false);
    let mut m = model(&cfg, DType::F64, 4);
    let vars = m.make_trainable().unwrap();
    let x = ids(&[&[1, 5, 9, 2, 7], &[3, 3, 8, 1, 0]]);
    let y = ids(&[&[5, 9, 2, 7, 4], &[3, 8, 1, 0, 6]]);
    let mask = Tensor::new(
        &[[0f64, 0., 1., 1., 1.], [0., 1., 1., 1., 0.]],
        &Device::Cpu,
    )
    .unwrap();
    let adv = Tensor::new(&[1.3f64, -0.7], &Device::Cpu).unwrap();
    let old = token_logprobs(&m, &x, &y).unwrap().detach();
    // move old away from the current policy so that some tokens are clipped and some are not
    let old = (old
        + Tensor::new(
            &[
                [0.3f64, -0.05, 0.1, -0.3, 0.02],
                [0.05, -0.25, 0.01, 0.4, 0.0],
            ],
            &Device::Cpu,
        )
        .unwrap())
    .unwrap();
    let reference = (old.clone() - 0.1).unwrap();
    let pc = PpoConfig {
        kl_beta: 0.05,
        ..PpoConfig::default()
    };
    let loss_of = |m: &Transformer| -> Tensor {
        let lp = token_logprobs(m, &x, &y).unwrap();
        ppo_loss(&lp, &old, Some(&reference), &adv, &mask, &pc).unwrap()
    };
    let loss = loss_of(&m);
    let grads = loss.backward().unwrap();
    let h = 1e-6;
    let mut checked = 0;
    for (name, var) in vars.iter().filter(|(n, _)| {
        n.contains("layers.1.self_attn.q_proj")
            || n.contains("mlp.down_proj")
            || n.contains("embed")
            || n.contains("k_norm")
    }) {
        let g = grads
            .get(var.as_tensor())
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1::<f64>()
            .unwrap();
        let base = var
            .as_tensor()
            .flatten_all()
            .unwrap()
            .to_vec1::<f64>()
            .unwrap();
        for idx in [0usize, 7, base.len() / 2, base.len() - 1] {
            let mut p = base.clone();
            p[idx] += h;
            var.set(&Tensor::from_vec(p.clone(), var.shape(), &Device::Cpu).unwrap())
                .unwrap();
            let lp = loss_of(&m).to_scalar::<f64>().unwrap();
            p[idx] -= 2.0 * h;
            var.set(&Tensor::from_vec(p, var.shape(), &Device::Cpu).unwrap())
                .unwrap();
            let lm = loss_of(&m).to_scalar::<f64>().unwrap();
            var.set(&Tensor::from_vec(base.clone(), var.shape(), &Device::Cpu).unwrap())
                .unwrap();
            let fd = (lp - lm) / (2.0 * h);
            assert!(
                (fd - g[idx]).abs() < 1e-6 + 1e-4 * fd.abs(),
                "{name}[{idx}]: analytic {} vs numeric {fd}",
                g[idx]
            );
            checked += 1;
        }
    }
    assert!(checked >= 16);
}

fn greedy(m: &Transformer, prompt: &[u32], n: usize, cache: bool) -> Vec<u32> {
    let mut toks = prompt.to_vec();
    let mut kv = KvCache::default();
    for i in 0..n {
        let (x, pos) = if cache && i > 0 {
            let l = toks.len();
            (
                ids(&[&toks[l - 1..]]),
                Tensor::new(&[[(l - 1) as u32]], &Device::Cpu).unwrap(),
            )
        } else {
            let l = toks.len();
            (
                ids(&[&toks]),
                Tensor::arange(0u32, l as u32, &Device::Cpu)
                    .unwrap()
                    .unsqueeze(0)
                    .unwrap(),
            )
        };
        let logits = if cache {
            let offset = kv.len();
            let t = x.dim(1).unwrap();
            let mask = rla_model::ops::causal_mask(1, t, offset, &Device::Cpu).unwrap();
            m.forward(&x, &pos, Some(&mask), Some(&mut kv)).unwrap()
        } else {
            m.forward(&x, &pos, None, None).unwrap()
        };
        let last = logits
            .narrow(1, x.dim(1).unwrap() - 1, 1)
            .unwrap()
            .flatten_all()
            .unwrap();
        toks.push(last.argmax(D::Minus1).unwrap().to_scalar::<u32>().unwrap());
    }
    toks[prompt.len()..].to_vec()
}

#[test]
fn greedy_generation_with_kv_cache_equals_without() {
    for arch in [Arch::Qwen2, Arch::Qwen3, Arch::Llama] {
        let cfg = tiny(arch, true);
        // larger weights so that the argmax changes from step to step
        let t: std::collections::BTreeMap<String, Tensor> =
            init_tensors(&cfg, 5, DType::F32, &Device::Cpu)
                .unwrap()
                .into_iter()
                .map(|(n, x)| {
                    (
                        n.clone(),
                        if n.ends_with("norm.weight") {
                            x
                        } else {
                            (x * 20.0).unwrap()
                        },
                    )
                })
                .collect();
        let m = Transformer::from_tensors(&cfg, &t, &Device::Cpu, DType::F32).unwrap();
        let a = greedy(&m, &[3, 14, 15, 9, 26], 24, false);
        let b = greedy(&m, &[3, 14, 15, 9, 26], 24, true);
        assert_eq!(a, b, "{arch:?}");
        let distinct: std::collections::HashSet<_> = a.iter().collect();
        assert!(distinct.len() > 3, "degenerate generation {a:?}");
    }
}

#[test]
fn a_detached_model_gives_the_same_logits_and_records_no_graph() {
    let cfg = tiny(Arch::Llama, true);
    let mut m = model(&cfg, DType::F32, 8);
    m.make_trainable().unwrap();
    let x = ids(&[&[1, 5, 9, 2, 7]]);
    let pos = Tensor::arange(0u32, 5, &Device::Cpu)
        .unwrap()
        .unsqueeze(0)
        .unwrap();
    let tracked = m.forward(&x, &pos, None, None).unwrap();
    let d = m.detached();
    let free = d.forward(&x, &pos, None, None).unwrap();
    // the trainable model's output keeps its graph (and with it every activation); the
    // detached one's does not, and its logits are the same
    assert!(tracked.track_op());
    assert!(!free.track_op());
    assert_eq!(max_diff(&tracked, &free), 0.0);
}
