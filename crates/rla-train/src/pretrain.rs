//! Tiny models trained from scratch, shared by every setting's warm start: the model shape
//! from the config, SFT on (prompt, answer) examples with the config's schedule and a training
//! curve, and the model saved as an HF folder. What each setting demonstrates lives in its own
//! folder (`household/warm.rs`, …).

use crate::config::{ModelSpec, RunConfig};
use crate::play::{encode_prompt, encode_response};
use anyhow::Result;
use candle_core::Device;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rla_model::config::{Arch, ModelConfig};
use rla_model::tok::Tok;
use rla_model::train::TrainConfig;
use rla_model::{Learner, Lm};
use std::path::Path;

pub use crate::setting::Example;

fn tiny_config(spec: &ModelSpec, vocab: usize) -> Result<ModelConfig> {
    let arch = match spec.tiny.arch.as_str() {
        "qwen2" => Arch::Qwen2,
        "qwen3" => Arch::Qwen3,
        a => anyhow::bail!("tiny.arch = {a:?}: use qwen2 or qwen3"),
    };
    let t = &spec.tiny;
    let c = ModelConfig::tiny(
        arch,
        vocab,
        t.hidden_size,
        t.num_hidden_layers,
        t.num_attention_heads,
        t.num_key_value_heads,
    );
    c.validate().map_err(anyhow::Error::msg)?;
    Ok(c)
}

fn encode_pairs(tok: &Tok, ex: &[Example]) -> Result<Vec<(Vec<u32>, Vec<u32>)>> {
    ex.iter()
        .map(|(p, a)| Ok((encode_prompt(tok, p)?, encode_response(tok, a)?)))
        .collect()
}

/// The chat template's markers, added to every tiny tokenizer's corpus.
pub const CHAT_MARKERS: &str = "<|im_start|>user\n<|im_end|>\n<|im_start|>assistant\n";

/// The text of (prompt, answer) examples, a line each, for building a word-level vocabulary.
pub fn example_corpus<'a>(examples: impl Iterator<Item = &'a Example>) -> String {
    let mut corpus = String::new();
    for (p, a) in examples {
        corpus.push_str(p);
        corpus.push('\n');
        corpus.push_str(a);
        corpus.push('\n');
    }
    corpus
}

/// A point of a training curve, measured by a [`Probe`] after `step` SFT steps.
pub type CurvePoint = serde_json::Map<String, serde_json::Value>;

/// What measures a model during SFT: called every `every` steps (and after the last), it returns
/// the curve point's figures.
pub type Probe<'a> = Box<dyn FnMut(&Lm) -> Result<CurvePoint> + 'a>;

/// SFT for `cfg.pretrain`'s schedule over `steps` minibatches; returns the loss of the first and
/// last step and the training curve (one point every `every` steps and after the last, when a
/// probe is given; each point also holds the mean training loss since the previous one and the
/// learning rate). `on_point` sees the model and the curve so far after each point (to save
/// them as they grow).
#[allow(clippy::too_many_arguments)]
pub fn sft(
    lm: &mut Lm,
    cfg: &RunConfig,
    data: &[(Vec<u32>, Vec<u32>)],
    steps: usize,
    seed: u64,
    bar: Option<&indicatif::ProgressBar>,
    mut probe: Option<(usize, Probe<'_>)>,
    on_point: &mut dyn FnMut(&Lm, &[CurvePoint]) -> Result<()>,
) -> Result<((f64, f64), Vec<CurvePoint>)> {
    let batch = cfg.pretrain.batch;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut first, mut last) = (f64::NAN, f64::NAN);
    let mut curve = Vec::new();
    let (mut sum, mut n) = (0.0, 0usize);
    for i in 0..steps {
        let b: Vec<(Vec<u32>, Vec<u32>)> = data
            .choose_multiple(&mut rng, batch.min(data.len()))
            .cloned()
            .collect();
        let lr = cfg.pretrain.lr_at(i, steps);
        lm.train_cfg.lr = lr;
        let s = lm.sft_update(&b)?;
        if i == 0 {
            first = s.loss;
        }
        last = s.loss;
        sum += s.loss;
        n += 1;
        if let Some(p) = bar {
            p.inc(1);
            p.set_message(format!("loss {:.3}", s.loss));
        }
        if (i + 1) % (steps / 10).max(1) == 0 {
            tracing::info!(
                step = i + 1,
                of = steps,
                loss = format!("{:.3}", s.loss),
                lr = format!("{lr:.2e}"),
                "SFT"
            );
        }
        if let Some((every, f)) = probe.as_mut() {
            let due = (*every > 0 && (i + 1) % *every == 0) || i + 1 == steps;
            if due {
                let mut point = f(lm)?;
                point.insert("step".into(), (i + 1).into());
                point.insert("train_loss".into(), (sum / n as f64).into());
                point.insert("lr".into(), lr.into());
                tracing::info!(point = %serde_json::Value::Object(point.clone()), "curve");
                curve.push(point);
                on_point(lm, &curve)?;
                (sum, n) = (0.0, 0);
            }
        }
    }
    Ok(((first, last), curve))
}

/// What [`fit_tiny_with`] fits.
pub struct Fit<'a> {
    /// The model's name: its folder under `out`.
    pub name: &'a str,
    /// Its config table.
    pub spec: &'a ModelSpec,
    /// The tokenizer.
    pub tok: &'a Tok,
    /// The examples.
    pub data: &'a [Example],
    /// SFT steps.
    pub steps: usize,
    /// Files (name, content) saved beside the model.
    pub files: Vec<(String, String)>,
    /// What measures the model, and every how many steps (0: after the last only).
    pub probe: Option<(usize, Probe<'a>)>,
}

/// Initialises a tiny model with the tokenizer, fits it by SFT on `data` for `steps` steps, and
/// saves it as `out/name` with `files` (name, content) beside it. Returns a line describing what
/// was done.
#[allow(clippy::too_many_arguments)]
pub fn fit_tiny(
    cfg: &RunConfig,
    name: &str,
    spec: &ModelSpec,
    tok: &Tok,
    data: &[Example],
    steps: usize,
    out: &Path,
    files: &[(String, String)],
    progress: bool,
) -> Result<String> {
    fit_tiny_with(
        cfg,
        Fit {
            name,
            spec,
            tok,
            data,
            steps,
            files: files.to_vec(),
            probe: None,
        },
        out,
        progress,
    )
}

/// [`fit_tiny`] with a probe: the training curve is written to `out/curve-NAME.jsonl` as it
/// grows, and its last point is part of the returned line.
pub fn fit_tiny_with(cfg: &RunConfig, fit: Fit<'_>, out: &Path, progress: bool) -> Result<String> {
    let Fit {
        name,
        spec,
        tok,
        data,
        steps,
        files,
        probe,
    } = fit;
    let mc = tiny_config(spec, tok.vocab_size())?;
    let mut lm = Lm::init(
        &mc,
        tok.clone(),
        cfg.seed.wrapping_add(name.len() as u64),
        candle_core::DType::F32,
        &Device::Cpu,
    )?;
    lm.enable_training(
        TrainConfig {
            lr: cfg.pretrain.lr,
            micro_batch: spec.micro_batch,
            ..Default::default()
        },
        None,
        cfg.seed,
        None,
    )?;
    let enc = encode_pairs(tok, data)?;
    let bar = progress.then(|| crate::bar(steps as u64, &format!("pretrain {name}")));
    std::fs::create_dir_all(out)?;
    let curve_path = out.join(format!("curve-{name}.jsonl"));
    let save = |lm: &Lm| -> Result<()> {
        // a whole folder or none: a kill mid-save leaves nothing that looks finished
        Ok(rla_model::weights::replace_dir_atomic(
            &out.join(name),
            |tmp| {
                lm.save_checkpoint(tmp)?;
                for (file, text) in &files {
                    rla_model::weights::write_atomic(&tmp.join(file), text.as_bytes())?;
                }
                Ok(())
            },
        )?)
    };
    // the model as it stands at each point of the curve, beside the curve so far
    let mut write_curve = |lm: &Lm, c: &[CurvePoint]| -> Result<()> {
        save(lm)?;
        let text: String = c
            .iter()
            .map(|p| serde_json::Value::Object(p.clone()).to_string() + "\n")
            .collect();
        crate::run::write_atomic(&curve_path, &text)
    };

    let ((a, b), curve) = sft(
        &mut lm,
        cfg,
        &enc,
        steps,
        cfg.seed.wrapping_add(3),
        bar.as_ref(),
        probe,
        &mut write_curve,
    )?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    lm.opt = None;
    save(&lm)?;

    let last = curve
        .last()
        .map(|p| {
            format!(
                ", last curve point {}",
                serde_json::Value::Object(p.clone())
            )
        })
        .unwrap_or_default();
    Ok(format!(
        "{name}: {} parameters, {} examples, SFT loss {a:.3} → {b:.3}{last}",
        mc.num_params(),
        enc.len()
    ))
}

/// A household config with the smallest models (unlisted, constrained, with notes), for tests.
#[cfg(test)]
pub(crate) fn tiny_test_config() -> RunConfig {
    let mut cfg = RunConfig::default();
    cfg.household.prompt_style = crate::household::PromptStyle::Unlisted;
    cfg.household.constrain_actions = true;
    cfg.household.notes = true;
    for m in [&mut cfg.policy, &mut cfg.reward] {
        m.tiny.hidden_size = 16;
        m.tiny.num_hidden_layers = 1;
        m.tiny.num_attention_heads = 2;
        m.tiny.num_key_value_heads = 1;
        m.micro_batch = 8;
    }
    cfg
}

#[cfg(test)]
mod tests {
    use crate::config::LrSchedule;

    #[test]
    fn the_learning_rate_warms_up_then_follows_its_schedule() {
        let mut p = crate::config::PretrainConfig {
            lr: 1.0,
            warmup: 4,
            ..Default::default()
        };
        assert_eq!(p.lr_at(0, 100), 0.25);
        assert_eq!(p.lr_at(3, 100), 1.0);
        assert_eq!(p.lr_at(99, 100), 1.0);
        p.schedule = LrSchedule::Cosine;
        assert_eq!(p.lr_at(4, 100), 1.0);
        assert!(
            (p.lr_at(52, 100) - 0.55).abs() < 1e-9,
            "{}",
            p.lr_at(52, 100)
        );
        assert!((p.lr_at(100, 100) - 0.1).abs() < 1e-9);
    }
}
