//! Starting or resuming a run: the run folder, its state, and the two models loaded in process
//! (candle), each with its optimiser and its frozen KL reference (the warm start).

use crate::config::{ModelSpec, RunConfig};
use crate::run::{RunDir, RunState};
use crate::setting::{Setting, Split};
use crate::trainer::Trainer;
use anyhow::{Context, Result};
use rla_model::train::TrainConfig;
use rla_model::Lm;
use std::path::{Path, PathBuf};

/// Loads a model of the run for training; `resume` holds its optimiser state, and `reference`
/// finds the warm start that a resumed run's KL term compares against (asked only then).
pub fn load_model(
    spec: &ModelSpec,
    dir: &Path,
    lr: f64,
    ppo: &rla_core::ppo::PpoConfig,
    seed: u64,
    resume: Option<&Path>,
    reference: impl FnOnce() -> Result<PathBuf>,
) -> Result<Lm> {
    let dtype = rla_model::weights::parse_dtype(&spec.dtype).map_err(anyhow::Error::msg)?;
    let device = rla_model::lm::device(spec.cuda)?;
    let mut lm =
        Lm::load(dir, dtype, &device).with_context(|| format!("loading {}", dir.display()))?;
    let tc = TrainConfig {
        lr,
        micro_batch: spec.micro_batch,
        ppo: *ppo,
        ..Default::default()
    };
    lm.enable_training(tc, spec.lora.clone(), seed, resume)?;
    let frozen = ppo.kl_beta > 0.0 && ppo.kl_reference == rla_core::ppo::KlReference::Frozen;
    if let (Some(_), true) = (resume, frozen) {
        let r = reference()?;
        lm.load_reference(&r)
            .with_context(|| format!("loading the KL reference {}", r.display()))?;
    }
    Ok(lm)
}

/// Where a run's warm-started model lives: the config's path, else the run's `pretrained/`.
fn warm_start_dir(run: &RunDir, name: &str, spec: &ModelSpec) -> Result<PathBuf> {
    if let Some(p) = &spec.path {
        return Ok(p.clone());
    }
    let pre = run.path.join("pretrained").join(name);
    if !rla_model::weights::is_checkpoint(&pre) {
        anyhow::bail!(
            "no {name} model: set {name}.path in the config or run `rlanything pretrain` into {}",
            run.path.join("pretrained").display()
        );
    }
    Ok(pre)
}

/// Starts or resumes a run of `setting` in `dir`.
pub fn open<S: Setting>(
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
    let rd = RunDir::create(dir, &cfg, resume)?;
    let (state, from) = match rd.load_state(setting.name())? {
        Some(s) if resume => (s, Some(rd.checkpoint_dir())),
        Some(_) => anyhow::bail!(
            "{} already holds a run; pass --resume to continue it",
            dir.display()
        ),
        None => {
            rd.check_no_lost_state()?;
            (
                RunState::new(setting.name(), setting.initial_pool(&cfg)),
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
        let lm = load_model(
            spec,
            &start,
            spec.lr,
            &cfg.ppo,
            seed,
            from_dir.as_deref(),
            || warm_start_dir(&rd, name, spec),
        )?;
        models.push(lm);
    }
    let reward = models.pop().expect("two models");
    let policy = models.pop().expect("two models");
    let boxed = |name: &str, spec: &ModelSpec, lm: Lm| -> Result<Box<dyn rla_lm::Model>> {
        Ok(match &spec.server {
            None => Box::new(lm),
            Some(sv) => {
                let dir = sv
                    .weights_dir
                    .clone()
                    .unwrap_or_else(|| rd.path.join("served").join(name));
                Box::new(
                    crate::served::Served::new(lm, sv, dir)
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
