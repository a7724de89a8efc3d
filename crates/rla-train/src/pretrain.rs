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

/// What saves an SFT where it stands: called with the model and its [`SftPosition`] after each
/// point of the curve, and where the invocation's budget stops the SFT ([`crate::resume`]).
pub type OnSave<'a> = dyn FnMut(&dyn Model, &SftPosition) -> Result<()> + 'a;

/// Where an SFT stands after some of its steps. Saved beside the model and its optimiser's
/// state, it is what an SFT taken up goes on from, as if it had never stopped: the next batches
/// follow from the sampler's place, the next point's mean loss from the losses since the last.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SftPosition {
    /// Steps taken.
    pub step: usize,
    /// The batch sampler's place in its stream: the word position of the ChaCha8 generator
    /// seeded with the SFT's seed.
    pub sampler: u128,
    /// The training curve so far.
    pub curve: Vec<CurvePoint>,
    /// The sum of the training losses since the curve's last point (its bits: exact, NaN too).
    #[serde(with = "f64_bits")]
    pub loss_sum: f64,
    /// How many losses that sum holds.
    pub losses: usize,
    /// The first step's loss (NaN before it).
    #[serde(with = "f64_bits")]
    pub first_loss: f64,
    /// The last step's loss (NaN before the first).
    #[serde(with = "f64_bits")]
    pub last_loss: f64,
}

impl SftPosition {
    /// An SFT before its first step.
    pub fn start() -> SftPosition {
        SftPosition {
            step: 0,
            sampler: 0,
            curve: Vec::new(),
            loss_sum: 0.0,
            losses: 0,
            first_loss: f64::NAN,
            last_loss: f64::NAN,
        }
    }

    /// The position saved at `path` (a model's folder's [`SFT_POSITION`]).
    pub fn read(path: &std::path::Path) -> Result<SftPosition> {
        let text = rla_core::file::read_to_string(path)?;
        anyhow::Context::with_context(serde_json::from_str(&text), || {
            format!("{} is not an SFT's position", path.display())
        })
    }
}

/// An `f64` kept as its bits, so that it reads back exactly, NaN included.
mod f64_bits {
    pub fn serialize<S: serde::Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(v.to_bits())
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        <u64 as serde::Deserialize>::deserialize(d).map(f64::from_bits)
    }
}

/// SFT for `cfg.pretrain`'s schedule over `steps` minibatches; returns the loss of the first and
/// last step and the training curve (one point every `every` steps and after the last, when a
/// probe is given; each point also holds the mean training loss since the previous one and the
/// learning rate). `on_save` sees the model and where the SFT stands after each point (to save
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
    on_save: &mut OnSave<'_>,
) -> Result<((f64, f64), Vec<CurvePoint>)> {
    sft_from(
        lm,
        cfg,
        data,
        (steps, SftPosition::start()),
        seed,
        bar,
        probe,
        on_save,
    )
}

/// [`sft`] taken up at `at` of `steps`: the model is the one saved there (with its optimiser's
/// state), the sampler goes on from its place, so the steps after are those of an SFT never
/// stopped. Where the invocation's budget is spent ([`crate::resume::spent`]) before a step,
/// the SFT is saved there through `on_save` and stops with [`crate::resume::stop`]'s error.
#[allow(clippy::too_many_arguments)]
pub fn sft_from(
    lm: &mut dyn Model,
    cfg: &RunConfig,
    data: &[(Vec<u32>, Vec<u32>)],
    (steps, at): (usize, SftPosition),
    seed: u64,
    bar: Option<&indicatif::ProgressBar>,
    mut probe: Option<(usize, Probe<'_>)>,
    on_save: &mut OnSave<'_>,
) -> Result<((f64, f64), Vec<CurvePoint>)> {
    let batch = cfg.pretrain.batch;
    let from = at.step;
    if from > steps {
        anyhow::bail!("an SFT of {steps} steps taken up at step {from}");
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_word_pos(at.sampler);
    if let Some(p) = bar {
        p.set_position(from as u64);
    }
    let mut at = at;
    // the step last saved through `on_save`
    let mut saved = None;
    for i in from..steps {
        // the invocation's budget spent: saved here (unless a point just was), then stopped
        if crate::resume::spent() {
            if saved != Some(i) {
                on_save(lm, &at)?;
            }
            return Err(crate::resume::stop());
        }
        let b: Vec<(Vec<u32>, Vec<u32>)> = data
            .choose_multiple(&mut rng, batch.min(data.len()))
            .cloned()
            .collect();
        let lr = cfg.pretrain.lr_at(i, steps);
        lm.set_lr(lr);
        let s = lm.sft_update(&b)?;
        crate::resume::step_taken();
        if i == 0 {
            at.first_loss = s.loss;
        }
        at.step = i + 1;
        at.sampler = rng.get_word_pos();
        at.last_loss = s.loss;
        at.loss_sum += s.loss;
        at.losses += 1;
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
                point.insert("train_loss".into(), (at.loss_sum / at.losses as f64).into());
                point.insert("lr".into(), lr.into());
                // what an SFT taken up later reports as its first and last loss
                if at.curve.is_empty() {
                    point.insert("first_loss".into(), at.first_loss.into());
                }
                point.insert("step_loss".into(), s.loss.into());
                tracing::info!(point = %serde_json::Value::Object(point.clone()), "curve");
                at.curve.push(point);
                (at.loss_sum, at.losses) = (0.0, 0);
                on_save(lm, &at)?;
                saved = Some(i + 1);
            }
        }
    }
    Ok(((at.first_loss, at.last_loss), at.curve))
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
    // an earlier attempt's model where it was saved, with its optimiser's state and where the
    // SFT stood, saved together (`SFT_POSITION`)
    let taken_up = crate::resume::start(out, name)?
        && saved.join("optimizer.safetensors").is_file()
        && saved.join(SFT_POSITION).is_file();
    let (mut lm, from) = if taken_up {
        let at = SftPosition::read(&saved.join(SFT_POSITION))?;
        let opts = rla_lm::OpenOptions {
            dtype: spec.dtype.clone(),
            train: Some(train.clone()),
            resume: Some(saved.clone()),
            ..Default::default()
        };
        let lm = backend
            .open(&saved, &opts)
            .map_err(|e| anyhow::anyhow!("{name}, taken up at step {}: {e}", at.step))?;
        tracing::info!(
            model = name,
            step = at.step,
            "SFT taken up where it stopped"
        );
        (lm, at)
    } else {
        let lm = backend
            .fresh(&spec.tiny, corpus, &train)
            .map_err(|e| anyhow::anyhow!("{name}.tiny: {e}"))?;
        (lm, SftPosition::start())
    };
    let enc = encode_pairs(&*lm, data)?;
    let bar = progress.then(|| crate::bar(steps as u64, &format!("pretrain {name}")));
    std::fs::create_dir_all(out)?;
    // a whole folder or none: a kill mid-save leaves nothing that looks finished. With `at`
    // (where the SFT stands) the model is saved with its optimiser's state and that position,
    // which a pretrain taken up reads together; without, the weights alone, as the model is kept
    let save = |lm: &dyn Model, at: Option<&SftPosition>| -> Result<()> {
        rla_lm::replace_dir_atomic(&out.join(name), |tmp| -> Result<()> {
            match at {
                None => lm.export(tmp, None)?,
                Some(at) => {
                    lm.save(tmp)?;
                    rla_lm::write_atomic(
                        &tmp.join(SFT_POSITION),
                        serde_json::to_string(at)?.as_bytes(),
                    )?;
                }
            }
            for (file, text) in &files {
                rla_lm::write_atomic(&tmp.join(file), text.as_bytes())?;
            }
            Ok(())
        })
    };
    // the model as it stands at each point of the curve (and where a budget stops the SFT),
    // beside the curve so far
    let mut on_save = |lm: &dyn Model, at: &SftPosition| -> Result<()> {
        save(lm, Some(at))?;
        if !at.curve.is_empty() {
            crate::run::write_atomic(&curve_path, &curve_text(&at.curve))?;
        }
        crate::resume::saved(&format!("{name}: SFT step {} of {steps}", at.step))
    };

    let ((a, b), curve) = sft_from(
        &mut *lm,
        cfg,
        &enc,
        (steps, from),
        cfg.seed.wrapping_add(3),
        bar.as_ref(),
        probe,
        &mut on_save,
    )?;
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

/// The file, in a model's folder saved at a point of its curve or where a budget stopped its SFT
/// (with the optimiser's state), holding where the SFT stood ([`SftPosition`]): what a pretrain
/// taken up goes on from.
pub const SFT_POSITION: &str = "sft-position.json";

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
