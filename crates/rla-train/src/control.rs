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
    /// The control evaluated at the compared run's evaluations: at each, the minutes of SFT
    /// that run had spent training by then (its curve at equal minutes).
    #[serde(default)]
    pub curve: Vec<ControlPoint>,
}

/// The control evaluated after as many seconds of SFT as the compared run had trained by one of
/// its evaluations.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ControlPoint {
    /// The compared run's iteration at that evaluation.
    pub iteration: usize,
    /// The seconds of SFT behind the point (the run's training seconds up to that iteration).
    pub seconds: f64,
    /// SFT steps taken by then.
    pub steps: usize,
    /// Greedy success on the in-domain split.
    pub in_domain: f64,
    /// On the OOD split.
    pub ood: f64,
    /// On the validation split, when the config evaluates it.
    pub validation: Option<f64>,
}

/// The file of [`Progress`] in the control's checkpoint folder.
const PROGRESS: &str = "control-progress.json";

/// Where a control stopped: written in its checkpoint's folder at each point of its curve, so
/// that a killed control goes on from its last point.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct Progress {
    seconds: f64,
    steps: usize,
    examples: usize,
    chunk: u64,
    loss: (f64, f64),
    curve: Vec<ControlPoint>,
}

/// Fine-tunes the policy the config starts from (`policy.path`) for `budget_seconds` on
/// demonstrations of fresh training tasks, saves it as `dir/policy`, evaluates it as the runs
/// are evaluated, and records the result in `dir/control.json`; a finished control is read back
/// instead of run again. `marks` are the compared run's evaluations, (iteration, training
/// seconds up to it): the control is evaluated when its own SFT seconds reach each (its
/// evaluations not counted), checkpointed there (`dir/checkpoint`, with the optimiser's state),
/// and a control killed in between goes on from its last point.
pub fn sft_control(
    backend: &dyn Backend,
    cfg: &RunConfig,
    dir: &Path,
    budget_seconds: f64,
    marks: &[(usize, f64)],
    progress: bool,
) -> Result<ControlResult> {
    let record = dir.join("control.json");
    if record.exists() {
        let text = rla_core::file::read_to_string(&record)?;
        return serde_json::from_str(&text)
            .with_context(|| format!("{} is not a control's record", record.display()));
    }
    let setting = crate::registry::setting(cfg)?;
    let r = control_with(backend, setting, cfg, dir, budget_seconds, marks, progress)?;
    crate::run::write_atomic(&record, &serde_json::to_string_pretty(&r)?)?;
    Ok(r)
}

/// Greedy success on (in-domain, OOD, validation), as the runs are evaluated.
fn evaluate(
    setting: &mut dyn AnySetting,
    cfg: &RunConfig,
    lm: &dyn rla_lm::Model,
    progress: bool,
) -> Result<(f64, f64, Option<f64>)> {
    let ctx = Ctx {
        cfg,
        k: cfg.iterations,
        progress,
        run: None,
    };
    let e = &cfg.eval;
    let in_domain = setting.evaluate(ctx, lm, Split::InDomain, e.in_domain)?;
    let ood = setting.evaluate(ctx, lm, Split::Ood, e.ood)?;
    let validation = (e.validation > 0)
        .then(|| setting.evaluate(ctx, lm, Split::Validation, e.validation))
        .transpose()?;
    Ok((in_domain, ood, validation))
}

fn control_with(
    backend: &dyn Backend,
    mut setting: Box<dyn AnySetting>,
    cfg: &RunConfig,
    dir: &Path,
    budget: f64,
    marks: &[(usize, f64)],
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
    let checkpoint = dir.join("checkpoint");
    // the progress lies in the checkpoint's folder: both are replaced at once
    let progress_file = checkpoint.join(PROGRESS);
    let resumed: Option<Progress> =
        if progress_file.exists() {
            let text = rla_core::file::read_to_string(&progress_file)?;
            Some(serde_json::from_str(&text).with_context(|| {
                format!("{} is not a control's progress", progress_file.display())
            })?)
        } else {
            None
        };
    let opts = OpenOptions {
        dtype: cfg.policy.dtype.clone(),
        train: Some(TrainOptions {
            lr,
            micro_batch: cfg.policy.micro_batch,
            seed: cfg.seed,
            ..Default::default()
        }),
        resume: resumed.as_ref().map(|_| checkpoint.clone()),
        ..Default::default()
    };
    let mut lm = match &resumed {
        Some(_) => backend.open(&checkpoint, &opts)?,
        None => backend.open(from, &opts)?,
    };
    let bar = progress.then(|| crate::bar(budget.ceil() as u64, "SFT control (s)"));
    let mut at = resumed.unwrap_or(Progress {
        seconds: 0.0,
        steps: 0,
        examples: 0,
        chunk: 0,
        loss: (f64::NAN, f64::NAN),
        curve: Vec::new(),
    });
    // the marks still ahead, in order of their seconds
    let mut ahead: Vec<(usize, f64)> = marks
        .iter()
        .copied()
        .filter(|&(k, t)| t < budget && !at.curve.iter().any(|p| p.iteration == k))
        .collect();
    ahead.sort_by(|a, b| a.1.total_cmp(&b.1));
    let mut ahead = ahead.into_iter().peekable();
    // a resumed control draws its batches afresh from where its demonstrations had got to
    let mut rng =
        <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(match at.curve.len() {
            0 => cfg.seed,
            n => rla_core::seed::mix(cfg.seed, &format!("sft-control/{n}")),
        });
    let mut pool: Vec<(Vec<u32>, Vec<u32>)> = Vec::new();
    let mut start = Instant::now();
    let spent = |start: &Instant, at: &Progress| at.seconds + start.elapsed().as_secs_f64();
    loop {
        if let Some(&(k, t)) = ahead.peek() {
            if spent(&start, &at) >= t {
                ahead.next();
                at.seconds = spent(&start, &at);
                let (in_domain, ood, validation) = evaluate(&mut *setting, cfg, &*lm, false)?;
                at.curve.push(ControlPoint {
                    iteration: k,
                    seconds: at.seconds,
                    steps: at.steps,
                    in_domain,
                    ood,
                    validation,
                });
                rla_lm::replace_dir_atomic(&checkpoint, |tmp| -> Result<()> {
                    lm.save(tmp)?;
                    crate::run::write_atomic(
                        &tmp.join(PROGRESS),
                        &serde_json::to_string_pretty(&at)?,
                    )?;
                    Ok(())
                })?;
                // the evaluation and the checkpoint are not SFT time
                start = Instant::now();
                continue;
            }
        }
        if spent(&start, &at) >= budget {
            break;
        }
        if pool.len() < cfg.pretrain.batch {
            let fresh: Vec<Example> = setting.demonstrations(cfg, at.chunk)?;
            anyhow::ensure!(
                !fresh.is_empty(),
                "the {} setting gave no demonstrations",
                setting.name()
            );
            at.chunk += 1;
            at.examples += fresh.len();
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
        if at.steps == 0 {
            at.loss.0 = l;
        }
        at.loss.1 = l;
        at.steps += 1;
        if let Some(b) = &bar {
            b.set_position(spent(&start, &at) as u64);
            b.set_message(format!("step {}, loss {l:.3}", at.steps));
        }
    }
    let seconds = spent(&start, &at);
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
    let (in_domain, ood, validation) = evaluate(&mut *setting, cfg, &*lm, progress)?;
    Ok(ControlResult {
        budget_seconds: budget,
        seconds,
        steps: at.steps,
        examples: at.examples,
        lr,
        loss: at.loss,
        in_domain,
        ood,
        validation,
        curve: at.curve,
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
        let e = sft_control(
            &rla_model::Candle,
            &none,
            &dir.path().join("x"),
            0.5,
            &[],
            false,
        )
        .unwrap_err();
        assert!(e.to_string().contains("policy.path"), "{e}");

        let out = dir.path().join("sft");
        let r = sft_control(&rla_model::Candle, &cfg, &out, 1.0, &[], false).unwrap();
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
        let again = sft_control(&rla_model::Candle, &cfg, &out, 100.0, &[], false).unwrap();
        assert_eq!(again, r);
        std::fs::write(out.join("control.json"), "{").unwrap();
        let e = sft_control(&rla_model::Candle, &cfg, &out, 1.0, &[], false).unwrap_err();
        assert!(format!("{e:#}").contains("control.json"), "{e:#}");

        // at the compared run's evaluations: a point after as many seconds of SFT as it had
        // trained by then (a mark at or past the budget is the final evaluation itself)
        let marked = dir.path().join("marked");
        let marks = [(4, 0.1), (8, 0.2), (12, 3.0)];
        let r = sft_control(&rla_model::Candle, &cfg, &marked, 3.0, &marks, false).unwrap();
        let at: Vec<usize> = r.curve.iter().map(|p| p.iteration).collect();
        assert_eq!(at, vec![4, 8], "{r:?}");
        assert!(
            r.curve[0].seconds >= 0.1 && r.curve[1].seconds >= 0.2,
            "{r:?}"
        );
        assert!(0 < r.curve[0].steps && r.curve[0].steps <= r.curve[1].steps);
        assert!(r.curve[1].steps <= r.steps && r.seconds >= 3.0, "{r:?}");
        // killed after its second point: it goes on from there, its points kept
        std::fs::remove_file(marked.join("control.json")).unwrap();
        std::fs::remove_dir_all(marked.join("policy")).unwrap();
        let progress: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(marked.join("checkpoint/control-progress.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(progress["curve"].as_array().unwrap().len(), 2);
        let resumed = sft_control(&rla_model::Candle, &cfg, &marked, 3.0, &marks, false).unwrap();
        assert_eq!(resumed.curve, r.curve);
        // (on a loaded machine one step may outlast the budget: then nothing is left to go on)
        assert!(
            resumed.steps >= r.curve[1].steps && resumed.seconds >= 3.0,
            "{resumed:?}"
        );
        assert!(marked.join("policy/model.safetensors").exists());
    }
}
