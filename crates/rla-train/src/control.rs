//! The SFT controls: the minutes of a run spent on more supervised fine-tuning of its warm start
//! instead of RL. An RL run that does not beat them has not shown an effect of RL. Two:
//! `sft` goes on with the base's own recipe (its `recipe.json`, [`crate::recipe`]) —
//! demonstrations and DAgger's labels of the policy's own states at the base's label share, at
//! its last learning rate, with its optimiser's state where the base ships one —; `sft-demos`
//! trains on fresh demonstrations of the setting's expert alone, at the end of the warm start's
//! cosine, with a fresh optimiser.

use crate::config::RunConfig;
use crate::pretrain::Example;
use crate::recipe::Recipe;
use crate::registry::AnySetting;
use crate::setting::{Ctx, Split};
use anyhow::{Context, Result};
use rla_lm::{Backend, OpenOptions, StepStats, TrainOptions};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Instant;

/// Which SFT control.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ControlKind {
    /// `sft`: the base's own recipe, demonstrations and labels of the policy's own states.
    #[serde(rename = "sft")]
    Recipe,
    /// `sft-demos`: fresh demonstrations alone.
    #[serde(rename = "sft-demos")]
    Demos,
}

impl ControlKind {
    /// Both, in the order tables list them.
    pub const ALL: [ControlKind; 2] = [ControlKind::Recipe, ControlKind::Demos];

    /// The name `ablate --modes` takes, which is also the control's folder.
    pub fn name(self) -> &'static str {
        match self {
            ControlKind::Recipe => "sft",
            ControlKind::Demos => "sft-demos",
        }
    }

    /// The control a name names.
    pub fn from_name(name: &str) -> Option<ControlKind> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// A record written before there were two controls held the demonstrations' one.
fn demos() -> ControlKind {
    ControlKind::Demos
}

/// What the control did and what its policy scores.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ControlResult {
    /// Which control.
    #[serde(default = "demos")]
    pub kind: ControlKind,
    /// The seconds it was given (the compared run's training time).
    pub budget_seconds: f64,
    /// The seconds its demonstrations, labels and SFT steps took.
    pub seconds: f64,
    /// SFT steps taken.
    pub steps: usize,
    /// Demonstration steps generated.
    pub examples: usize,
    /// States of the policy's own episodes labelled by the expert (`sft`).
    #[serde(default)]
    pub labels: usize,
    /// The share of each batch that is labels (the base's, for `sft`; 0 for `sft-demos`).
    #[serde(default)]
    pub label_share: f64,
    /// Rows of the SFT batches, and how many of them were labels.
    #[serde(default)]
    pub rows: (usize, usize),
    /// The learning rate (the base's last, for `sft`; the warm start's schedule's last, for
    /// `sft-demos`).
    pub lr: f64,
    /// Which optimiser state the SFT started from: the base's, or a fresh one and why.
    #[serde(default)]
    pub optimizer: String,
    /// SFT loss of the first and the last step.
    pub loss: (f64, f64),
    /// Success on the evaluation splits, as the runs are evaluated (the sampled mean; each task's
    /// mean score in `evals/<split>-<iteration>.json` of the control's folder, at the compared
    /// run's last iteration).
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
    /// Success on the in-domain split, as the runs are evaluated (each task's mean score in
    /// `evals/<split>-<iteration>.json` of the control's folder).
    pub in_domain: f64,
    /// On the OOD split.
    pub ood: f64,
    /// On the validation split, when the config evaluates it.
    pub validation: Option<f64>,
}

/// The file of [`Progress`] in the control's checkpoint folder.
const PROGRESS: &str = "control-progress.json";

/// Training tasks the `sft` control's policy plays for each batch of labels (fewer when the
/// base's rounds played fewer): DAgger's rounds in smaller steps, at the rounds' ratio of SFT
/// steps to tasks played.
pub const LABEL_TASKS: usize = 100;

/// Where a control stopped: written in its checkpoint's folder at each point of its curve, so
/// that a killed control goes on from its last point.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct Progress {
    #[serde(default = "demos")]
    kind: ControlKind,
    seconds: f64,
    steps: usize,
    examples: usize,
    chunk: u64,
    loss: (f64, f64),
    curve: Vec<ControlPoint>,
    /// Every label so far (prompt, answer), and the chunks of tasks they came from.
    #[serde(default)]
    labels: Vec<(String, String)>,
    #[serde(default)]
    label_chunk: u64,
    /// SFT steps since the last labels were made.
    #[serde(default)]
    since_labels: usize,
    #[serde(default)]
    rows: (usize, usize),
}

/// Fine-tunes the policy the config starts from (`policy.path`) for `budget_seconds` as the
/// control `kind` does, saves it as `dir/policy`, evaluates it as the runs are evaluated, and
/// records the result in `dir/control.json`; a finished control is read back instead of run
/// again. `marks` are the compared run's evaluations, (iteration, training seconds up to it):
/// the control is evaluated when its own SFT seconds reach each (its evaluations not counted),
/// checkpointed there (`dir/checkpoint`, with the optimiser's state), and a control killed in
/// between goes on from its last point.
pub fn sft_control(
    backend: &dyn Backend,
    cfg: &RunConfig,
    kind: ControlKind,
    dir: &Path,
    budget_seconds: f64,
    marks: &[(usize, f64)],
    progress: bool,
) -> Result<ControlResult> {
    let record = dir.join("control.json");
    if record.exists() {
        let text = rla_core::file::read_to_string(&record)?;
        let r: ControlResult = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a control's record", record.display()))?;
        anyhow::ensure!(
            r.kind == kind,
            "{} holds the {} control, not {}: move it aside or choose another --out",
            record.display(),
            r.kind.name(),
            kind.name()
        );
        return Ok(r);
    }
    let setting = crate::registry::setting(cfg)?;
    let r = control_with(
        backend,
        setting,
        cfg,
        kind,
        dir,
        budget_seconds,
        marks,
        progress,
    )?;
    crate::run::write_atomic(&record, &serde_json::to_string_pretty(&r)?)?;
    Ok(r)
}

/// Success on (in-domain, OOD, validation), as the runs are evaluated
/// ([`crate::evals::evaluate`]); each sampled evaluation's per-task scores kept in `dir/evals/`
/// at `iteration`, the compared run's.
fn evaluate(
    setting: &mut dyn AnySetting,
    cfg: &RunConfig,
    lm: &dyn rla_lm::Model,
    (dir, iteration): (&Path, usize),
    progress: bool,
) -> Result<(f64, f64, Option<f64>)> {
    let ctx = Ctx {
        cfg,
        k: cfg.iterations,
        progress,
        run: None,
    };
    let mut at = |split: Split, n: usize| -> Result<f64> {
        let e = crate::evals::evaluate(setting, ctx, lm, (split, n), iteration)?;
        if let Some(s) = &e.sampled {
            s.write(dir)?;
        }
        Ok(e.success())
    };
    let e = &cfg.eval;
    let in_domain = at(Split::InDomain, e.in_domain)?;
    let ood = at(Split::Ood, e.ood)?;
    let validation = (e.validation > 0)
        .then(|| at(Split::Validation, e.validation))
        .transpose()?;
    Ok((in_domain, ood, validation))
}

/// How a control trains: its rate, its share of labels and how often they are made, and the
/// optimiser state it starts from.
struct Plan {
    lr: f64,
    share: f64,
    /// Tasks played for each batch of labels, and the SFT steps taken on them.
    label_tasks: usize,
    label_steps: usize,
    /// The folder whose optimiser state the first open reads, and what the record says of it.
    optimizer: (Option<std::path::PathBuf>, String),
}

fn plan(cfg: &RunConfig, kind: ControlKind, from: &Path) -> Result<Plan> {
    match kind {
        ControlKind::Demos => {
            // the warm start's schedule ends at this rate; the control goes on from there
            let steps = cfg.pretrain.policy_steps.max(1);
            Ok(Plan {
                lr: cfg.pretrain.lr_at(steps - 1, steps),
                share: 0.0,
                label_tasks: 0,
                label_steps: 0,
                optimizer: (None, "fresh".into()),
            })
        }
        ControlKind::Recipe => {
            let r = Recipe::for_policy(from)?.with_context(|| {
                format!(
                    "the sft control goes on with the base's own recipe, and {} is missing \
                     (pretrain and DAgger write it: label_share, dagger_tasks, dagger_steps, \
                     last_lr, optimizer_state; write it by hand for a base made before them), \
                     or use sft-demos",
                    Recipe::path_for(from).display()
                )
            })?;
            let state = from.join("optimizer.safetensors");
            let optimizer = match (r.optimizer_state, state.is_file()) {
                (true, true) => (
                    Some(from.to_path_buf()),
                    format!("the base's ({})", state.display()),
                ),
                (true, false) => anyhow::bail!(
                    "{}: optimizer_state = true, but {} is not there",
                    Recipe::path_for(from).display(),
                    state.display()
                ),
                (false, _) => (None, "fresh: the base ships no optimiser state".to_string()),
            };
            let label_tasks = r.dagger_tasks.min(LABEL_TASKS);
            let label_steps = match r.dagger_tasks {
                0 => 0,
                n => ((label_tasks * r.dagger_steps) as f64 / n as f64)
                    .round()
                    .max(1.0) as usize,
            };
            Ok(Plan {
                lr: r.last_lr,
                share: r.label_share,
                label_tasks,
                label_steps,
                optimizer,
            })
        }
    }
}

/// Rows of a batch of `batch` that are labels, at `share`.
pub fn label_rows(batch: usize, share: f64) -> usize {
    ((share * batch as f64).round() as usize).min(batch)
}

/// Takes `n` items from `queue`, refilled from a shuffle of `all` whenever it runs dry.
fn draw<T: Clone>(
    queue: &mut Vec<T>,
    all: &[T],
    n: usize,
    rng: &mut rand_chacha::ChaCha8Rng,
) -> Vec<T> {
    let mut out = Vec::with_capacity(n);
    while out.len() < n && !all.is_empty() {
        if queue.is_empty() {
            queue.extend_from_slice(all);
            rand::seq::SliceRandom::shuffle(&mut queue[..], rng);
        }
        out.extend(queue.pop());
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn control_with(
    backend: &dyn Backend,
    mut setting: Box<dyn AnySetting>,
    cfg: &RunConfig,
    kind: ControlKind,
    dir: &Path,
    budget: f64,
    marks: &[(usize, f64)],
    progress: bool,
) -> Result<ControlResult> {
    let from = cfg.policy.path.as_ref().with_context(|| {
        format!(
            "the {} control fine-tunes the run's warm start: set policy.path",
            kind.name()
        )
    })?;
    let plan = plan(cfg, kind, from)?;
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
    if let Some(p) = &resumed {
        anyhow::ensure!(
            p.kind == kind,
            "{} is the {} control's, not {}'s: move it aside or choose another --out",
            progress_file.display(),
            p.kind.name(),
            kind.name()
        );
    }
    let opts = OpenOptions {
        dtype: cfg.policy.dtype.clone(),
        train: Some(TrainOptions {
            lr: plan.lr,
            micro_batch: cfg.policy.micro_batch,
            seed: cfg.seed,
            ..Default::default()
        }),
        resume: match &resumed {
            Some(_) => Some(checkpoint.clone()),
            None => plan.optimizer.0.clone(),
        },
        ..Default::default()
    };
    let mut lm = match &resumed {
        Some(_) => backend.open(&checkpoint, &opts)?,
        None => backend.open(from, &opts)?,
    };
    let bar = progress.then(|| {
        crate::bar(
            budget.ceil() as u64,
            &format!("SFT control {} (s)", kind.name()),
        )
    });
    let mut at = resumed.unwrap_or(Progress {
        kind,
        seconds: 0.0,
        steps: 0,
        examples: 0,
        chunk: 0,
        loss: (f64::NAN, f64::NAN),
        curve: Vec::new(),
        labels: Vec::new(),
        label_chunk: 0,
        since_labels: 0,
        rows: (0, 0),
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
    let encode = |lm: &dyn rla_lm::Model, (p, a): &Example| -> Result<(Vec<u32>, Vec<u32>)> {
        Ok((
            crate::play::encode_prompt(lm, p)?,
            crate::play::encode_response(lm, a)?,
        ))
    };
    let mut labels: Vec<(Vec<u32>, Vec<u32>)> = Vec::new();
    for l in &at.labels {
        labels.push(encode(&*lm, l)?);
    }
    let mut label_queue: Vec<(Vec<u32>, Vec<u32>)> = Vec::new();
    let per_batch = label_rows(cfg.pretrain.batch, plan.share);
    let mut pool: Vec<(Vec<u32>, Vec<u32>)> = Vec::new();
    let mut start = Instant::now();
    let spent = |start: &Instant, at: &Progress| at.seconds + start.elapsed().as_secs_f64();
    loop {
        if let Some(&(k, t)) = ahead.peek() {
            if spent(&start, &at) >= t {
                ahead.next();
                at.seconds = spent(&start, &at);
                let (in_domain, ood, validation) =
                    evaluate(&mut *setting, cfg, &*lm, (dir, k), false)?;
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
        // the policy as it now is plays fresh tasks, and the expert labels where it went
        if per_batch > 0 && (labels.is_empty() || at.since_labels >= plan.label_steps) {
            let fresh = setting.own_state_labels(cfg, &*lm, at.label_chunk, plan.label_tasks)?;
            at.label_chunk += 1;
            at.since_labels = 0;
            for l in fresh {
                labels.push(encode(&*lm, &l)?);
                at.labels.push(l);
            }
            anyhow::ensure!(
                !labels.is_empty(),
                "the {} setting's expert labelled no state of the policy's {} episodes",
                setting.name(),
                plan.label_tasks
            );
            // the newest labels are drawn from this batch on
            label_queue.clear();
        }
        let demos_per_batch = cfg.pretrain.batch - per_batch;
        while pool.len() < demos_per_batch {
            let fresh: Vec<Example> = setting.demonstrations(cfg, at.chunk)?;
            anyhow::ensure!(
                !fresh.is_empty(),
                "the {} setting gave no demonstrations",
                setting.name()
            );
            at.chunk += 1;
            at.examples += fresh.len();
            for e in &fresh {
                pool.push(encode(&*lm, e)?);
            }
            rand::seq::SliceRandom::shuffle(&mut pool[..], &mut rng);
        }
        let mut b: Vec<(Vec<u32>, Vec<u32>)> = pool.split_off(pool.len() - demos_per_batch);
        let from_labels = draw(&mut label_queue, &labels, per_batch, &mut rng);
        at.rows.1 += from_labels.len();
        b.extend(from_labels);
        at.rows.0 += b.len();
        let StepStats { loss: l, .. } = lm.sft_update(&b)?;
        if at.steps == 0 {
            at.loss.0 = l;
        }
        at.loss.1 = l;
        at.steps += 1;
        at.since_labels += 1;
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
    let (in_domain, ood, validation) =
        evaluate(&mut *setting, cfg, &*lm, (dir, cfg.iterations), progress)?;
    Ok(ControlResult {
        kind,
        budget_seconds: budget,
        seconds,
        steps: at.steps,
        examples: at.examples,
        labels: at.labels.len(),
        label_share: plan.share,
        rows: at.rows,
        lr: plan.lr,
        optimizer: plan.optimizer.1,
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
            ControlKind::Demos,
            &dir.path().join("x"),
            0.5,
            &[],
            false,
        )
        .unwrap_err();
        assert!(e.to_string().contains("policy.path"), "{e}");

        let out = dir.path().join("sft");
        let r = sft_control(
            &rla_model::Candle,
            &cfg,
            ControlKind::Demos,
            &out,
            1.0,
            &[],
            false,
        )
        .unwrap();
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
        let again = sft_control(
            &rla_model::Candle,
            &cfg,
            ControlKind::Demos,
            &out,
            100.0,
            &[],
            false,
        )
        .unwrap();
        assert_eq!(again, r);
        std::fs::write(out.join("control.json"), "{").unwrap();
        let e = sft_control(
            &rla_model::Candle,
            &cfg,
            ControlKind::Demos,
            &out,
            1.0,
            &[],
            false,
        )
        .unwrap_err();
        assert!(format!("{e:#}").contains("control.json"), "{e:#}");

        // at the compared run's evaluations: a point after as many seconds of SFT as it had
        // trained by then (a mark at or past the budget is the final evaluation itself)
        let marked = dir.path().join("marked");
        let marks = [(4, 0.1), (8, 0.2), (12, 3.0)];
        let r = sft_control(
            &rla_model::Candle,
            &cfg,
            ControlKind::Demos,
            &marked,
            3.0,
            &marks,
            false,
        )
        .unwrap();
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
        let resumed = sft_control(
            &rla_model::Candle,
            &cfg,
            ControlKind::Demos,
            &marked,
            3.0,
            &marks,
            false,
        )
        .unwrap();
        assert_eq!(resumed.curve, r.curve);
        // (on a loaded machine one step may outlast the budget: then nothing is left to go on)
        assert!(
            resumed.steps >= r.curve[1].steps && resumed.seconds >= 3.0,
            "{resumed:?}"
        );
        assert!(marked.join("policy/model.safetensors").exists());
        // the demonstrations' control trains on no labels, with a fresh optimiser
        assert_eq!(
            (r.kind, r.labels, r.label_share),
            (ControlKind::Demos, 0, 0.0)
        );
        assert_eq!(r.rows, (cfg.pretrain.batch * r.steps, 0), "{r:?}");
        assert_eq!(r.optimizer, "fresh");
    }

    #[test]
    fn a_batch_takes_its_share_of_labels_and_draws_them_all_before_any_again() {
        assert_eq!(label_rows(32, 0.5), 16);
        assert_eq!(label_rows(4, 0.3), 1);
        assert_eq!(label_rows(4, 0.0), 0);
        let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(0);
        let all: Vec<u32> = (0..5).collect();
        let mut queue = Vec::new();
        let mut first: Vec<u32> = draw(&mut queue, &all, 3, &mut rng);
        first.extend(draw(&mut queue, &all, 2, &mut rng));
        first.sort();
        assert_eq!(first, all, "each label once before any twice");
        assert_eq!(draw(&mut queue, &all, 7, &mut rng).len(), 7);
        assert!(draw(&mut queue, &[], 3, &mut rng).is_empty());
    }

    /// `sft` goes on with the base's recipe: half of each batch DAgger's labels of the states
    /// the policy itself reached, at the base's last rate; it is checkpointed and evaluated at
    /// the compared run's evaluations like the demonstrations' control.
    #[test]
    fn the_recipe_control_trains_on_labels_of_the_policys_own_states_at_the_bases_share() {
        use crate::config::SettingConfig;
        let mut cfg = crate::pretrain::tiny_test_config();
        cfg.eval.in_domain = 2;
        cfg.eval.ood = 2;
        cfg.eval.validation = 2;
        crate::household::config::HouseholdConfig::of_mut(&mut cfg).train_step_limit = 4;
        cfg.validate().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let pre = dir.path().join("pre");
        crate::registry::setting(&cfg)
            .unwrap()
            .warm_start(crate::pretrain::candle_warm_start(&cfg, &pre))
            .unwrap();
        cfg.policy.path = Some(pre.join("policy"));
        // the pretrain records its recipe: demonstrations alone, at its schedule's last rate
        let made = Recipe::for_policy(&pre.join("policy")).unwrap().unwrap();
        assert_eq!(
            (made.label_share, made.last_lr, made.optimizer_state),
            (0.0, cfg.pretrain.lr_at(1, 2), false)
        );
        // a base made by DAgger at a share of one half
        let recipe = Recipe {
            label_share: 0.5,
            dagger_tasks: 2,
            dagger_steps: 3,
            last_lr: 2e-3,
            optimizer_state: false,
            source: "test".into(),
        };
        recipe.write(&pre).unwrap();
        let out = dir.path().join("sft");
        let marks = [(3, 0.2)];
        let r = sft_control(
            &rla_model::Candle,
            &cfg,
            ControlKind::Recipe,
            &out,
            2.0,
            &marks,
            false,
        )
        .unwrap();
        assert_eq!(
            (r.kind, r.label_share, r.lr),
            (ControlKind::Recipe, 0.5, 2e-3)
        );
        assert_eq!(r.optimizer, "fresh: the base ships no optimiser state");
        assert!(r.labels > 0 && r.steps > 0 && r.examples > 0, "{r:?}");
        // two of each batch of four are labels
        assert_eq!(r.rows, (4 * r.steps, 2 * r.steps), "{r:?}");
        // the labels are kept with the checkpoint, made afresh every three steps (the base's
        // three steps a round of two tasks)
        let progress: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(out.join("checkpoint/control-progress.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(progress["kind"], "sft");
        let at_mark = progress["steps"].as_u64().unwrap() as usize;
        let chunks = progress["label_chunk"].as_u64().unwrap() as usize;
        assert!(
            chunks >= 1 && (chunks - 1) * 3 <= at_mark && at_mark <= chunks * 3,
            "{progress}"
        );
        assert!(!progress["labels"].as_array().unwrap().is_empty());
        // evaluated and checkpointed at the mark, and at the end
        assert_eq!(r.curve.len(), 1, "{r:?}");
        assert!(r.curve[0].validation.is_some() && r.validation.is_some());
        assert!(out.join("checkpoint/model.safetensors").exists());
        let before = std::fs::read(pre.join("policy/model.safetensors")).unwrap();
        let after = std::fs::read(out.join("policy/model.safetensors")).unwrap();
        assert_ne!(before, after);
        // the folder holds the recipe's control: asking it for the other is refused by name
        let e = sft_control(
            &rla_model::Candle,
            &cfg,
            ControlKind::Demos,
            &out,
            1.0,
            &[],
            false,
        )
        .unwrap_err();
        assert!(
            format!("{e:#}").contains("holds the sft control, not sft-demos"),
            "{e:#}"
        );

        // a base that ships its optimiser's state goes on with it; one that says so and does
        // not is named
        let claims = Recipe {
            optimizer_state: true,
            ..recipe.clone()
        };
        claims.write(&pre).unwrap();
        let e = sft_control(
            &rla_model::Candle,
            &cfg,
            ControlKind::Recipe,
            &dir.path().join("o"),
            0.5,
            &[],
            false,
        )
        .unwrap_err();
        assert!(format!("{e:#}").contains("optimizer.safetensors"), "{e:#}");
        std::fs::copy(
            out.join("checkpoint/optimizer.safetensors"),
            pre.join("policy/optimizer.safetensors"),
        )
        .unwrap();
        let r = sft_control(
            &rla_model::Candle,
            &cfg,
            ControlKind::Recipe,
            &dir.path().join("o"),
            0.5,
            &[],
            false,
        )
        .unwrap();
        assert!(r.optimizer.starts_with("the base's"), "{r:?}");
        // a base with no recipe is named, with the other control
        std::fs::remove_file(pre.join(crate::recipe::FILE)).unwrap();
        let e = sft_control(
            &rla_model::Candle,
            &cfg,
            ControlKind::Recipe,
            &dir.path().join("n"),
            0.5,
            &[],
            false,
        )
        .unwrap_err();
        let e = format!("{e:#}");
        assert!(e.contains("recipe.json") && e.contains("sft-demos"), "{e}");
    }
}
