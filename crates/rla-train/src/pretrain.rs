//! Tiny models trained from scratch, shared by every setting's warm start: the model shape
//! from the config, SFT on (prompt, answer) examples with the config's schedule and a training
//! curve, and the model saved as an HF folder. What each setting demonstrates lives in its own
//! folder (`household/warm.rs`, …). Models come from the run's [`Backend`].

use crate::config::{ModelSpec, RunConfig};
use crate::play::{encode_prompt, encode_response};
use anyhow::Result;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rla_lm::{Codec, Model, TrainOptions};

pub use crate::setting::{Example, WarmStart};

/// Tokenises (prompt, answer) examples as the model reads and writes them.
pub fn encode_pairs<C: Codec + ?Sized>(
    codec: &C,
    ex: &[Example],
) -> Result<Vec<(Vec<u32>, Vec<u32>)>> {
    ex.iter()
        .map(|(p, a)| Ok((encode_prompt(codec, p)?, encode_response(codec, a)?)))
        .collect()
}

/// One demonstration step of a policy that answers among a state's choices: its prompt, the
/// expert's answer, the actions it could have chosen among there, and its task's index.
#[derive(Debug, Clone)]
pub struct Demo {
    /// The policy's prompt.
    pub prompt: String,
    /// The expert's answer.
    pub answer: String,
    /// The actions it could choose among (the household's admissible commands, the desktop's
    /// candidates).
    pub choices: Vec<String>,
    /// Its task's index in the task list.
    pub task: usize,
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
pub type Probe<'a> = Box<dyn FnMut(&dyn Model) -> Result<CurvePoint> + 'a>;

/// What sees the model and the curve so far after each point of a curve.
pub type OnPoint<'a> = dyn FnMut(&dyn Model, &[CurvePoint]) -> Result<()> + 'a;

/// SFT for `cfg.pretrain`'s schedule over `steps` minibatches; returns the loss of the first and
/// last step and the training curve (one point every `every` steps and after the last, when a
/// probe is given; each point also holds the mean training loss since the previous one and the
/// learning rate). `on_point` sees the model and the curve so far after each point (to save
/// them as they grow).
#[allow(clippy::too_many_arguments)]
pub fn sft(
    lm: &mut dyn Model,
    cfg: &RunConfig,
    data: &[(Vec<u32>, Vec<u32>)],
    steps: usize,
    seed: u64,
    bar: Option<&indicatif::ProgressBar>,
    probe: Option<(usize, Probe<'_>)>,
    on_point: &mut OnPoint<'_>,
) -> Result<((f64, f64), Vec<CurvePoint>)> {
    sft_from(
        lm,
        cfg,
        data,
        (steps, 0, Vec::new()),
        seed,
        bar,
        probe,
        on_point,
    )
}

/// [`sft`] taken up at step `from` of `steps`, with the curve so far: the model is the one saved
/// at that step (with its optimiser's state), and the batches of the steps before are drawn
/// again and dropped, so the steps after are those of an SFT never stopped. The first loss
/// returned is NaN when `from` > 0.
#[allow(clippy::too_many_arguments)]
pub fn sft_from(
    lm: &mut dyn Model,
    cfg: &RunConfig,
    data: &[(Vec<u32>, Vec<u32>)],
    (steps, from, curve): (usize, usize, Vec<CurvePoint>),
    seed: u64,
    bar: Option<&indicatif::ProgressBar>,
    mut probe: Option<(usize, Probe<'_>)>,
    on_point: &mut OnPoint<'_>,
) -> Result<((f64, f64), Vec<CurvePoint>)> {
    let batch = cfg.pretrain.batch;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for _ in 0..from.min(steps) {
        // the same draws as the steps taken before, in order
        data.choose_multiple(&mut rng, batch.min(data.len()))
            .for_each(drop);
    }
    if let Some(p) = bar {
        p.set_position(from as u64);
    }
    let (mut first, mut last) = (f64::NAN, f64::NAN);
    let mut curve = curve;
    let (mut sum, mut n) = (0.0, 0usize);
    for i in from..steps {
        let b: Vec<(Vec<u32>, Vec<u32>)> = data
            .choose_multiple(&mut rng, batch.min(data.len()))
            .cloned()
            .collect();
        let lr = cfg.pretrain.lr_at(i, steps);
        lm.set_lr(lr);
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
                // what an SFT taken up later reports as its first and last loss
                if curve.is_empty() && from == 0 {
                    point.insert("first_loss".into(), first.into());
                }
                point.insert("step_loss".into(), s.loss.into());
                tracing::info!(point = %serde_json::Value::Object(point.clone()), "curve");
                curve.push(point);
                on_point(lm, &curve)?;
                (sum, n) = (0.0, 0);
            }
        }
    }
    Ok(((first, last), curve))
}

/// The share of held-out prompts whose greedy answer is right, drawn among each prompt's
/// allowed answers when `allowed` is given (as a constrained policy plays), 64 prompts a call.
/// `mistake(i, text)` reads prompt `i`'s answer: `None` when it is right, else what to write
/// down of the mistake; the first 50 mistakes are returned.
pub fn greedy_accuracy(
    lm: &dyn Model,
    prompts: &[Vec<u32>],
    allowed: Option<&[Vec<Vec<u32>>]>,
    max_new_tokens: usize,
    mut mistake: impl FnMut(usize, &str) -> Option<String>,
) -> Result<(f64, Vec<String>)> {
    let p = rla_lm::SampleParams::greedy(max_new_tokens);
    let (mut right, mut wrong) = (0usize, Vec::new());
    for (c, chunk) in prompts.chunks(64).enumerate() {
        let out = match allowed {
            Some(a) => lm.generate_within(chunk, 1, &p, &a[c * 64..c * 64 + chunk.len()])?,
            None => lm.generate(chunk, 1, &p)?,
        };
        for (j, s) in out.iter().enumerate() {
            let text = s.first().map_or("", |s| s.text.as_str());
            match mistake(c * 64 + j, text) {
                None => right += 1,
                Some(m) if wrong.len() < 50 => wrong.push(m),
                Some(_) => {}
            }
        }
    }
    Ok((right as f64 / prompts.len().max(1) as f64, wrong))
}

/// What [`fit_tiny`] fits.
pub struct Fit<'a> {
    /// The model's name: its folder under `out`.
    pub name: &'a str,
    /// Its config table.
    pub spec: &'a ModelSpec,
    /// Every text the model will read or write: its word-level vocabulary.
    pub corpus: &'a str,
    /// The examples.
    pub data: &'a [Example],
    /// SFT steps.
    pub steps: usize,
    /// Files (name, content) saved beside the model.
    pub files: Vec<(String, String)>,
    /// What measures the model, and every how many steps (0: after the last only).
    pub probe: Option<(usize, Probe<'a>)>,
}

/// Makes a tiny model of the spec's shape over the corpus's words, fits it by SFT on the
/// examples for `steps` steps, and saves it as `out/NAME` with `files` beside it. With a probe
/// the training curve is written to `out/curve-NAME.jsonl` as it grows (the model beside it) and
/// its last point is part of the returned line, which says what was done.
pub fn fit_tiny(w: WarmStart, fit: Fit<'_>) -> Result<String> {
    let WarmStart {
        backend,
        cfg,
        out,
        progress,
    } = w;
    let Fit {
        name,
        spec,
        corpus,
        data,
        steps,
        files,
        probe,
    } = fit;
    if let Some(line) = crate::resume::finished_line(out, name)? {
        return Ok(line);
    }
    let train = TrainOptions {
        lr: cfg.pretrain.lr,
        micro_batch: spec.micro_batch,
        seed: cfg.seed.wrapping_add(name.len() as u64),
        ..Default::default()
    };
    let curve_path = out.join(format!("curve-{name}.jsonl"));
    let saved = out.join(name);
    // an earlier attempt's model at the last point of its curve, with its optimiser's state and
    // that curve, saved together (`TAKE_UP_CURVE`)
    let taken_up = crate::resume::start(out, name)?
        && saved.join("optimizer.safetensors").is_file()
        && saved.join(TAKE_UP_CURVE).is_file();
    let (mut lm, from, curve0) = if taken_up {
        let curve = read_curve(&saved.join(TAKE_UP_CURVE))?;
        let at = last_step(&curve).unwrap_or(0);
        let opts = rla_lm::OpenOptions {
            dtype: spec.dtype.clone(),
            train: Some(train.clone()),
            resume: Some(saved.clone()),
            ..Default::default()
        };
        let lm = backend
            .open(&saved, &opts)
            .map_err(|e| anyhow::anyhow!("{name}, taken up at step {at}: {e}"))?;
        tracing::info!(model = name, step = at, "SFT taken up where it stopped");
        (lm, at, curve)
    } else {
        let lm = backend
            .fresh(&spec.tiny, corpus, &train)
            .map_err(|e| anyhow::anyhow!("{name}.tiny: {e}"))?;
        (lm, 0, Vec::new())
    };
    let enc = encode_pairs(&*lm, data)?;
    let bar = progress.then(|| crate::bar(steps as u64, &format!("pretrain {name}")));
    std::fs::create_dir_all(out)?;
    // a whole folder or none: a kill mid-save leaves nothing that looks finished. With `curve`
    // (the curve so far) the model is saved with its optimiser's state and that curve, which a
    // pretrain taken up reads together; without, the weights alone, as the model is kept
    let save = |lm: &dyn Model, curve: Option<&str>| -> Result<()> {
        rla_lm::replace_dir_atomic(&out.join(name), |tmp| -> Result<()> {
            match curve {
                None => lm.export(tmp, None)?,
                Some(text) => {
                    lm.save(tmp)?;
                    rla_lm::write_atomic(&tmp.join(TAKE_UP_CURVE), text.as_bytes())?;
                }
            }
            for (file, text) in &files {
                rla_lm::write_atomic(&tmp.join(file), text.as_bytes())?;
            }
            Ok(())
        })
    };
    // the model as it stands at each point of the curve, beside the curve so far
    let mut write_curve = |lm: &dyn Model, c: &[CurvePoint]| -> Result<()> {
        let text = curve_text(c);
        save(lm, Some(&text))?;
        crate::run::write_atomic(&curve_path, &text)?;
        crate::resume::saved()
    };

    let ((a, b), curve) = sft_from(
        &mut *lm,
        cfg,
        &enc,
        (steps, from, curve0),
        cfg.seed.wrapping_add(3),
        bar.as_ref(),
        probe,
        &mut write_curve,
    )?;
    // taken up: the first step's loss is the first point's
    let loss_at = |p: Option<&CurvePoint>, k: &str| {
        p.and_then(|p| p.get(k))
            .and_then(|l| l.as_f64())
            .unwrap_or(f64::NAN)
    };
    let a = if from > 0 {
        loss_at(curve.first(), "first_loss")
    } else {
        a
    };
    let b = if from >= steps {
        loss_at(curve.last(), "step_loss")
    } else {
        b
    };
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    save(&*lm, None)?;
    if name == "policy" {
        // SFT on demonstrations alone, the weights kept without the optimiser's state
        crate::recipe::Recipe {
            label_share: 0.0,
            dagger_tasks: 0,
            dagger_steps: 0,
            last_lr: cfg.pretrain.lr_at(steps.max(1) - 1, steps.max(1)),
            optimizer_state: false,
            source: "pretrain".into(),
        }
        .write(out)?;
    }

    let last = curve
        .last()
        .map(|p| {
            format!(
                ", last curve point {}",
                serde_json::Value::Object(p.clone())
            )
        })
        .unwrap_or_default();
    let params = lm
        .parameter_count()
        .map_or_else(|| "?".to_string(), |n| n.to_string());
    let line = format!(
        "{name}: {params} parameters, {} examples, SFT loss {a:.3} → {b:.3}{last}",
        enc.len()
    );
    crate::resume::finish(out, name, line.clone().into())?;
    Ok(line)
}

/// The file, in a model's folder saved at a point of its curve (with the optimiser's state),
/// holding the curve up to that point: what a pretrain taken up after a kill goes on from.
pub const TAKE_UP_CURVE: &str = "curve-so-far.jsonl";

/// A warm start through the candle back end, quiet, for tests.
#[cfg(test)]
pub(crate) fn candle_warm_start<'a>(cfg: &'a RunConfig, out: &'a std::path::Path) -> WarmStart<'a> {
    WarmStart {
        backend: &rla_model::Candle,
        cfg,
        out,
        progress: false,
    }
}

/// A curve as its file holds it: one JSON object a line ([`read_curve`] reads it back).
pub fn curve_text(curve: &[CurvePoint]) -> String {
    curve
        .iter()
        .map(|p| serde_json::Value::Object(p.clone()).to_string() + "\n")
        .collect()
}

/// The SFT step of a curve's last point.
pub fn last_step(curve: &[CurvePoint]) -> Option<usize> {
    curve
        .last()
        .and_then(|p| p.get("step"))
        .and_then(|s| s.as_u64())
        .map(|s| s as usize)
}

/// The training curve written at `path` (none when there is no file).
pub fn read_curve(path: &std::path::Path) -> Result<Vec<CurvePoint>> {
    if !path.exists() {
        return Ok(vec![]);
    }
    rla_core::file::read_to_string(path)?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            anyhow::Context::with_context(serde_json::from_str(l), || {
                format!("{}: {l}", path.display())
            })
        })
        .collect()
}

/// A household config with the smallest models (unlisted, constrained, with notes) and the
/// shortest warm start (4 tasks, a few cosine steps), for tests.
#[cfg(test)]
pub(crate) fn tiny_test_config() -> RunConfig {
    // the household's table as a config file gives it
    let household = "[household]\neval_step_limit = 3\nprompt_style = \"unlisted\"\n\
                     constrain_actions = true\nnotes = true\n";
    let mut cfg = RunConfig {
        pretrain: crate::config::PretrainConfig {
            tasks: 4,
            policy_steps: 2,
            reward_steps: 1,
            batch: 4,
            schedule: crate::config::LrSchedule::Cosine,
            ..Default::default()
        },
        ..toml::from_str(household).expect("the household's table")
    };
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
