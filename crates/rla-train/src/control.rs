//! The SFT control: the minutes of a run spent on more supervised fine-tuning of its warm start,
//! on fresh demonstrations of the setting's expert, instead of RL. An RL run that does not beat
//! it has not shown an effect of RL.

use crate::config::RunConfig;
use crate::pretrain::Example;
use crate::registry::AnySetting;
use crate::setting::{Ctx, Split};
use anyhow::{Context, Result};
use rla_lm::{Backend, OpenOptions, StepStats, TrainOptions};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Instant;

/// What the control did and what its policy scores.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ControlResult {
    /// The seconds it was given (the compared run's training time).
    pub budget_seconds: f64,
    /// The seconds its demonstrations and SFT steps took.
    pub seconds: f64,
    /// SFT steps taken.
    pub steps: usize,
    /// Demonstration steps generated.
    pub examples: usize,
    /// The learning rate (the warm start's schedule's last rate).
    pub lr: f64,
    /// SFT loss of the first and the last step.
    pub loss: (f64, f64),
    /// Greedy success on the evaluation splits, as the runs are evaluated.
    pub in_domain: f64,
    /// On the OOD split.
    pub ood: f64,
    /// On the validation split, when the config evaluates it.
    pub validation: Option<f64>,
}

/// Fine-tunes the policy the config starts from (`policy.path`) for `budget_seconds` on
/// demonstrations of fresh training tasks, saves it as `dir/policy`, evaluates it as the runs
/// are evaluated, and records the result in `dir/control.json`; a finished control is read back
/// instead of run again.
pub fn sft_control(
    backend: &dyn Backend,
    cfg: &RunConfig,
    dir: &Path,
    budget_seconds: f64,
    progress: bool,
) -> Result<ControlResult> {
    let record = dir.join("control.json");
    if record.exists() {
        let text = rla_core::file::read_to_string(&record)?;
        return serde_json::from_str(&text)
            .with_context(|| format!("{} is not a control's record", record.display()));
    }
    let setting = crate::registry::setting(cfg)?;
    let r = control_with(backend, setting, cfg, dir, budget_seconds, progress)?;
    crate::run::write_atomic(&record, &serde_json::to_string_pretty(&r)?)?;
    Ok(r)
}

fn control_with(
    backend: &dyn Backend,
    mut setting: Box<dyn AnySetting>,
    cfg: &RunConfig,
    dir: &Path,
    budget: f64,
    progress: bool,
) -> Result<ControlResult> {
    let from = cfg
        .policy
        .path
        .as_ref()
        .context("the SFT control fine-tunes the run's warm start: set policy.path")?;
    // the warm start's schedule ends at this rate; the control goes on from there
    let steps = cfg.pretrain.policy_steps.max(1);
    let lr = cfg.pretrain.lr_at(steps - 1, steps);
    let opts = OpenOptions {
        dtype: cfg.policy.dtype.clone(),
        train: Some(TrainOptions {
            lr,
            micro_batch: cfg.policy.micro_batch,
            seed: cfg.seed,
            ..Default::default()
        }),
        ..Default::default()
    };
    let mut lm = backend.open(from, &opts)?;
    let bar = progress.then(|| crate::bar(budget.ceil() as u64, "SFT control (s)"));
    let start = Instant::now();
    let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(cfg.seed);
    let mut pool: Vec<(Vec<u32>, Vec<u32>)> = Vec::new();
    let (mut chunk, mut examples, mut n) = (0u64, 0usize, 0usize);
    let mut loss: (f64, f64) = (f64::NAN, f64::NAN);
    while start.elapsed().as_secs_f64() < budget {
        if pool.len() < cfg.pretrain.batch {
            let fresh: Vec<Example> = setting.demonstrations(cfg, chunk)?;
            anyhow::ensure!(
                !fresh.is_empty(),
                "the {} setting gave no demonstrations",
                setting.name()
            );
            chunk += 1;
            examples += fresh.len();
            for (p, a) in &fresh {
                pool.push((
                    crate::play::encode_prompt(&*lm, p)?,
                    crate::play::encode_response(&*lm, a)?,
                ));
            }
            rand::seq::SliceRandom::shuffle(&mut pool[..], &mut rng);
        }
        let b: Vec<(Vec<u32>, Vec<u32>)> = pool.split_off(pool.len() - cfg.pretrain.batch);
        let StepStats { loss: l, .. } = lm.sft_update(&b)?;
        if n == 0 {
            loss.0 = l;
        }
        loss.1 = l;
        n += 1;
        if let Some(b) = &bar {
            b.set_position(start.elapsed().as_secs_f64() as u64);
            b.set_message(format!("step {n}, loss {l:.3}"));
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let files = setting.policy_files(cfg)?;
    rla_lm::replace_dir_atomic(&dir.join("policy"), |tmp| -> Result<()> {
        lm.export(tmp, None)?;
        for (file, text) in &files {
            rla_lm::write_atomic(&tmp.join(file), text.as_bytes())?;
        }
        Ok(())
    })?;
    let ctx = Ctx {
        cfg,
        k: cfg.iterations,
        progress,
        run: None,
    };
    let e = &cfg.eval;
    let in_domain = setting.evaluate(ctx, &*lm, Split::InDomain, e.in_domain)?;
    let ood = setting.evaluate(ctx, &*lm, Split::Ood, e.ood)?;
    let validation = (e.validation > 0)
        .then(|| setting.evaluate(ctx, &*lm, Split::Validation, e.validation))
        .transpose()?;
    Ok(ControlResult {
        budget_seconds: budget,
        seconds,
        steps: n,
        examples,
        lr,
        loss,
        in_domain,
        ood,
        validation,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_control_fine_tunes_the_warm_start_for_its_budget_and_records_it() {
        let mut cfg = crate::pretrain::tiny_test_config();
        cfg.eval.in_domain = 2;
        cfg.eval.ood = 2;
        cfg.eval.validation = 0;
        cfg.validate().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let pre = dir.path().join("pre");
        crate::registry::setting(&cfg)
            .unwrap()
            .warm_start(crate::pretrain::candle_warm_start(&cfg, &pre))
            .unwrap();
        cfg.policy.path = Some(dir.path().join("pre/policy"));
        // without a warm start there is nothing to continue
        let mut none = cfg.clone();
        none.policy.path = None;
        let e =
            sft_control(&rla_model::Candle, &none, &dir.path().join("x"), 0.5, false).unwrap_err();
        assert!(e.to_string().contains("policy.path"), "{e}");

        let out = dir.path().join("sft");
        let r = sft_control(&rla_model::Candle, &cfg, &out, 1.0, false).unwrap();
        assert!(r.steps > 0 && r.examples > 0, "{r:?}");
        assert!(r.seconds >= 1.0, "{r:?}");
        assert!(r.loss.0.is_finite() && r.loss.1.is_finite());
        assert!((0.0..=1.0).contains(&r.in_domain) && (0.0..=1.0).contains(&r.ood));
        assert_eq!(r.validation, None);
        // the rate the warm start's cosine ended at
        assert_eq!(r.lr, cfg.pretrain.lr_at(1, 2));
        let before = std::fs::read(dir.path().join("pre/policy/model.safetensors")).unwrap();
        let after = std::fs::read(out.join("policy/model.safetensors")).unwrap();
        assert_ne!(
            before, after,
            "the control's policy is the warm start unchanged"
        );
        // a finished control is read back, not run again
        let again = sft_control(&rla_model::Candle, &cfg, &out, 100.0, false).unwrap();
        assert_eq!(again, r);
        std::fs::write(out.join("control.json"), "{").unwrap();
        let e = sft_control(&rla_model::Candle, &cfg, &out, 1.0, false).unwrap_err();
        assert!(format!("{e:#}").contains("control.json"), "{e:#}");
    }
}
