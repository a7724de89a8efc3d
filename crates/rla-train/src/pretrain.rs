//! Warm starts for tiny models trained from scratch: a word-level tokenizer built from the
//! environment's text, the policy fitted by SFT on expert demonstrations taken in noisy states,
//! and the reward model fitted by SFT on weak labels (each step labelled with its trajectory's
//! outcome, with a reasoning phrase naming what the step did).

use crate::config::{ModelSpec, RunConfig};
use crate::notes::Notes;
use crate::prompts::{
    judge_answer, judge_prompt, policy_answer_styled, policy_prompt_styled, PromptStyle,
};
use crate::rollout::{encode_prompt, encode_response};
use anyhow::{Context, Result};
use candle_core::Device;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rla_env::household::expert::{GoalSpec, SearchExpert};
use rla_env::household::splits::{eval_tasks, train_tasks, Split};
use rla_env::household::{Household, TaskSpec};
use rla_env::Environment;
use rla_model::config::{Arch, ModelConfig};
use rla_model::tok::{build_word_level, Tok};
use rla_model::train::TrainConfig;
use rla_model::{Learner, Lm};
use std::path::Path;

/// A (prompt text, answer text) example.
pub type Example = (String, String);

/// Demonstrations: policy examples and judge examples from noisy expert episodes.
pub fn demonstrations(
    tasks: &[TaskSpec],
    noise: f64,
    window: usize,
    style: PromptStyle,
    notes: bool,
    seed: u64,
) -> Result<(Vec<Example>, Vec<Example>)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut pol, mut jud) = (Vec::new(), Vec::new());
    for t in tasks {
        // two episodes per task: one at the given noise, one noisier, so the judge sees failures
        for eps_noise in [noise, (noise * 2.0).min(0.9)] {
            let mut env = Household::from_task(t)?;
            let goal = GoalSpec::from_task(env.world(), t).map_err(anyhow::Error::msg)?;
            let mut obs = env.reset();
            let mut memo = notes.then(|| Notes::from_intro(&obs));
            let mut hist: Vec<(String, String)> = Vec::new();
            let mut steps: Vec<(String, String, String)> = Vec::new(); // (obs, answer, action)
            let mut won = false;
            let mut searcher = SearchExpert::new(env.world());
            for _ in 0..t.step_limit {
                let adm = env.admissible().to_vec();
                let Some(a) = searcher.next(env.world(), env.state(), &goal) else {
                    break;
                };
                let expert_cmd = env
                    .world()
                    .command(env.state(), a)
                    .context("expert action admissible")?;
                let expert_idx = adm
                    .iter()
                    .position(|c| *c == expert_cmd)
                    .context("in list")?;
                let prompt = policy_prompt_styled(
                    &t.sentence(),
                    &hist,
                    window,
                    &obs,
                    &adm,
                    style,
                    &memo.as_ref().map(Notes::render).unwrap_or_default(),
                );
                pol.push((prompt, policy_answer_styled(&expert_cmd, expert_idx, style)));
                let (cmd, idx) = if rng.gen::<f64>() < eps_noise {
                    let k = rng.gen_range(0..adm.len());
                    (adm[k].clone(), k)
                } else {
                    (expert_cmd, expert_idx)
                };
                let act = env.parse(&cmd).context("admissible command")?;
                let r = env.step(&cmd);
                searcher.observe(env.world(), env.state(), act);
                if let Some(n) = &mut memo {
                    n.observe(&r.feedback);
                }
                steps.push((
                    obs.clone(),
                    policy_answer_styled(&cmd, idx, style),
                    cmd.clone(),
                ));
                hist.push((std::mem::replace(&mut obs, r.feedback.clone()), cmd));
                if r.done {
                    won = r.won;
                    break;
                }
            }
            // weak labels: every step gets its trajectory's outcome
            let mut next = steps
                .iter()
                .skip(1)
                .map(|s| s.0.clone())
                .collect::<Vec<_>>();
            next.push(obs.clone());
            for ((o, ans, act), nx) in steps.iter().zip(next) {
                jud.push((
                    judge_prompt(&t.sentence(), o, ans, act, &nx),
                    judge_answer(act, won),
                ));
            }
        }
    }
    pol.shuffle(&mut rng);
    jud.shuffle(&mut rng);
    Ok((pol, jud))
}

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

/// SFT for `steps` minibatches; returns the loss of the first and last step.
pub fn sft(
    lm: &mut Lm,
    data: &[(Vec<u32>, Vec<u32>)],
    steps: usize,
    batch: usize,
    seed: u64,
    bar: Option<&indicatif::ProgressBar>,
) -> Result<(f64, f64)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut first, mut last) = (f64::NAN, f64::NAN);
    for i in 0..steps {
        let b: Vec<(Vec<u32>, Vec<u32>)> = data
            .choose_multiple(&mut rng, batch.min(data.len()))
            .cloned()
            .collect();
        let s = lm.sft_update(&b)?;
        if i == 0 {
            first = s.loss;
        }
        last = s.loss;
        if let Some(p) = bar {
            p.inc(1);
            p.set_message(format!("loss {:.3}", s.loss));
        }
        if (i + 1) % (steps / 10).max(1) == 0 {
            tracing::info!(
                step = i + 1,
                of = steps,
                loss = format!("{:.3}", s.loss),
                "SFT"
            );
        }
    }
    Ok((first, last))
}

/// Builds the tokenizer and both tiny models, warm-starts them, and saves them under `out`
/// (`out/policy`, `out/reward`). Returns a line per model describing what was done.
pub fn household_warm_start(cfg: &RunConfig, out: &Path, progress: bool) -> Result<Vec<String>> {
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed.wrapping_add(29));
    let tasks: Vec<TaskSpec> = train_tasks(cfg.pretrain.tasks, cfg.seed.wrapping_add(17))
        .into_iter()
        .map(|t| {
            if rng.gen::<f64>() < cfg.pretrain.hint_fraction {
                rla_env::household::perturb::apply(
                    &t,
                    &rla_env::household::perturb::Perturbation::AddHint,
                    0,
                )
                .unwrap_or(t)
            } else {
                t
            }
        })
        .collect();
    let (pol, jud) = demonstrations(
        &tasks,
        cfg.pretrain.noise,
        cfg.household.history_window,
        cfg.household.prompt_style,
        cfg.household.notes,
        cfg.seed,
    )?;
    // The vocabulary: every text the models will read or write, plus the evaluation scenes' intros.
    let mut corpus = example_corpus(pol.iter().chain(jud.iter()));
    for t in eval_tasks(Split::InDomain)
        .iter()
        .chain(eval_tasks(Split::Ood).iter())
    {
        let mut env = Household::from_task(t)?;
        corpus.push_str(&env.reset());
        corpus.push('\n');
        corpus.push_str(&env.admissible().join("\n"));
        corpus.push('\n');
    }
    corpus.push_str(CHAT_MARKERS);
    let tok = build_word_level(&corpus, 1)?;
    let mut lines = Vec::new();
    for (name, spec, data, steps) in [
        ("policy", &cfg.policy, &pol, cfg.pretrain.policy_steps),
        ("reward", &cfg.reward, &jud, cfg.pretrain.reward_steps),
    ] {
        // the policy records how it plays, for `eval`
        let files = match name {
            "policy" => vec![crate::rollout::Episodes::evaluation(cfg).record()?],
            _ => vec![],
        };
        lines.push(fit_tiny(
            cfg, name, spec, &tok, data, steps, out, &files, progress,
        )?);
    }
    Ok(lines)
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
    let (a, b) = sft(
        &mut lm,
        &enc,
        steps,
        cfg.pretrain.batch,
        cfg.seed.wrapping_add(3),
        bar.as_ref(),
    )?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    lm.opt = None;
    // a whole folder or none: a kill mid-save leaves nothing that looks finished
    rla_model::weights::replace_dir_atomic(&out.join(name), |tmp| {
        lm.save_checkpoint(tmp)?;
        for (file, text) in files {
            rla_model::weights::write_atomic(&tmp.join(file), text.as_bytes())?;
        }
        Ok(())
    })?;
    Ok(format!(
        "{name}: {} parameters, {} examples, SFT loss {a:.3} → {b:.3}",
        mc.num_params(),
        enc.len()
    ))
}
