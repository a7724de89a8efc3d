//! Starting or resuming a run: the run folder, its state, and the two models opened through the
//! run's [`Backend`], each with its optimiser and its frozen KL reference (the warm start).

use crate::config::{ModelSpec, RunConfig};
use crate::run::{RunDir, RunState};
use crate::setting::{Setting, Split};
use crate::trainer::Trainer;
use anyhow::{Context, Result};
use rla_lm::{Backend, Model, OpenOptions, TrainOptions};
use rla_torch::LearnerKind;
use std::path::{Path, PathBuf};

/// What opening a model of the run for training needs besides its folder.
pub struct Opening<'a> {
    /// The model's config table.
    pub spec: &'a ModelSpec,
    /// The PPO objective.
    pub ppo: &'a rla_core::ppo::PpoConfig,
    /// Seeds fresh LoRA adapters.
    pub seed: u64,
    /// The checkpoint holding its optimiser state, when resuming.
    pub resume: Option<&'a Path>,
    /// Where a learner outside this process keeps its files (the torch worker's source and
    /// log, the weights it hands the sampler).
    pub scratch: &'a Path,
}

/// Opens a model of the run for training; `reference` finds the warm start that a resumed run's
/// KL term compares against (asked only then).
pub fn load_model(
    backend: &'static dyn Backend,
    dir: &Path,
    o: Opening<'_>,
    reference: impl FnOnce() -> Result<PathBuf>,
) -> Result<Box<dyn Model>> {
    let reference = match (o.resume, o.ppo.frozen_reference()) {
        (Some(_), true) => Some(reference()?),
        _ => None,
    };
    let opts = OpenOptions {
        dtype: o.spec.dtype.clone(),
        train: Some(TrainOptions {
            lr: o.spec.lr,
            micro_batch: o.spec.micro_batch,
            ppo: *o.ppo,
            lora: o.spec.lora.clone(),
            seed: o.seed,
            // the episodes it trains on are drawn at its sampling temperature
            temperature: o.spec.temperature,
        }),
        resume: o.resume.map(Path::to_path_buf),
        reference,
    };
    Ok(match o.spec.learner.backend {
        LearnerKind::Candle => backend.open(dir, &opts)?,
        LearnerKind::Torch => {
            let here = o.spec.server.is_none();
            let m = rla_torch::open(backend, dir, &opts, &o.spec.learner, o.scratch, here)?;
            Box::new(m)
        }
    })
}

/// Where a run's warm-started model lives: the config's path, else the run's `pretrained/`.
fn warm_start_dir(run: &RunDir, name: &str, spec: &ModelSpec) -> Result<PathBuf> {
    if let Some(p) = &spec.path {
        return Ok(p.clone());
    }
    let pre = run.path.join("pretrained").join(name);
    if !rla_lm::is_checkpoint(&pre) {
        anyhow::bail!(
            "no {name} model: set {name}.path in the config or run `rlanything pretrain` into {}",
            run.path.join("pretrained").display()
        );
    }
    Ok(pre)
}

/// Starts or resumes a run of `setting` in `dir`.
pub fn open<S: Setting>(
    backend: &'static dyn Backend,
    setting: S,
    cfg: RunConfig,
    dir: &Path,
    resume: bool,
    progress: bool,
) -> Result<Trainer<S>> {
    for (key, split, n) in [
        ("in_domain", Split::InDomain, cfg.eval.in_domain),
        ("ood", Split::Ood, cfg.eval.ood),
        ("validation", Split::Validation, cfg.eval.validation),
    ] {
        if let Some(size) = setting.split_size(split).filter(|&s| n > s) {
            anyhow::bail!(
                "[eval] {key} = {n}: the {} setting's {key} split holds {size} tasks; ask for at most {size}",
                setting.name()
            );
        }
    }
    let mut rd = RunDir::create(dir, &cfg, resume)?;
    // what the run writes into its state (a rewrite's files) names the run's folder from
    // anywhere, so the run resumes from any working folder
    rd.path = std::path::absolute(&rd.path)
        .with_context(|| format!("the run folder {}", rd.path.display()))?;
    let (state, from) = match rd.load_state(setting.name())? {
        Some(s) if resume => (s, Some(rd.checkpoint_dir())),
        Some(_) => anyhow::bail!(
            "{} already holds a run; pass --resume to continue it",
            dir.display()
        ),
        None => {
            rd.check_no_lost_state()?;
            (
                RunState::new(setting.name(), setting.initial_pool(&cfg)?),
                None,
            )
        }
    };
    let mut models = Vec::new();
    for (name, spec, seed) in [
        ("policy", &cfg.policy, cfg.seed),
        ("reward", &cfg.reward, cfg.seed + 1),
    ] {
        let from_dir = from.as_ref().map(|ck| ck.join(name));
        let start = match &from_dir {
            Some(d) => d.clone(),
            None => warm_start_dir(&rd, name, spec)?,
        };
        let scratch = rd.path.join("learner").join(name);
        let opening = Opening {
            spec,
            ppo: &cfg.ppo,
            seed,
            resume: from_dir.as_deref(),
            scratch: &scratch,
        };
        let lm = load_model(backend, &start, opening, || warm_start_dir(&rd, name, spec))?;
        models.push((lm, start));
    }
    let reward = models.pop().expect("two models");
    let policy = models.pop().expect("two models");
    let boxed = |name: &str,
                 spec: &ModelSpec,
                 (lm, from): (Box<dyn Model>, PathBuf)|
     -> Result<Box<dyn Model>> {
        Ok(match &spec.server {
            None => lm,
            Some(sv) => {
                let dir = sv
                    .weights_dir
                    .clone()
                    .unwrap_or_else(|| rd.path.join("served").join(name));
                let codec = backend.codec(&from)?;
                Box::new(
                    crate::served::Served::new(lm, codec, sv, dir)
                        .with_context(|| format!("{name}.server"))?,
                )
            }
        })
    };
    let policy = boxed("policy", &cfg.policy, policy)?;
    let reward = boxed("reward", &cfg.reward, reward)?;
    Ok(Trainer {
        cfg,
        setting,
        policy,
        reward,
        state,
        dir: rd,
        progress,
    })
}
