//! DAgger, for every setting whose expert can name the right action at any state: the fitted
//! policy plays fresh training tasks greedily (as it is evaluated), the setting's expert labels
//! the states it reached, and SFT goes on over the demonstrations and every round's labels
//! (`pretrain.dagger_rounds`). The setting supplies the play-and-label step and the probe; the
//! rounds, the batches' mix, the curve and the saving are here.

use crate::play::Trajectory;
use crate::pretrain::{encode_pairs, Demo, Example, Probe, SftPosition, WarmStart};
use anyhow::{Context, Result};
use indicatif::ProgressBar;
use rla_lm::{Model, SampleParams};

/// Plays each task once with the policy under the given sampling, stepping the bar.
pub type Play<'a, T> =
    dyn Fn(&dyn Model, &[T], &SampleParams, Option<&ProgressBar>) -> Result<Vec<Trajectory>> + 'a;

/// The expert's actions at the states the episodes of the tasks reached.
pub type Label<'a, T> = dyn Fn(&[T], &[Trajectory]) -> Result<Vec<Demo>> + 'a;

/// What a setting gives the rounds; `T` is its task.
pub struct Rounds<'a, T> {
    /// The demonstrations the policy was fitted on.
    pub demos: &'a [Example],
    /// Round `r`'s fresh training tasks (`pretrain.dagger_tasks` of them).
    pub tasks: &'a dyn Fn(usize) -> Vec<T>,
    /// The step limit of a round's episodes (the progress bar's length per task).
    pub step_limit: usize,
    /// Plays a round's tasks.
    pub play: &'a Play<'a, T>,
    /// Labels the states a round's episodes reached.
    pub label: &'a Label<'a, T>,
    /// The policy's probe (held-out steps, validation success), made afresh each round.
    pub probe: &'a dyn Fn() -> Probe<'a>,
    /// Files saved beside the policy (name, text).
    pub files: Vec<(String, String)>,
}

/// The file, in the policy's folder saved after a DAgger round or where a budget stopped a
/// round's SFT (with the optimiser's state), holding the rounds' state: what a pretrain taken up
/// goes on from.
const STATE: &str = "dagger-state.json";

/// DAgger's rounds so far, saved with the policy after each.
#[derive(serde::Serialize, serde::Deserialize)]
struct RoundsState {
    /// Rounds finished.
    rounds: usize,
    /// The share of its tasks the last round's policy won.
    won_last: f64,
    /// Every round's labels (prompt, answer).
    labels: Vec<(String, String)>,
    /// The policy's curve up to the last round.
    curve: Vec<crate::pretrain::CurvePoint>,
    /// Where the SFT of the round after them stopped, that round's tasks played and labelled
    /// (`won_last` and the last of `labels` are theirs): the round goes on from there.
    #[serde(default)]
    sft: Option<SftPosition>,
}

/// The demonstrations and the labels with the labels repeated until they are about `share` of
/// the whole (at least once each), so that a batch drawn from it is about `share` labels.
pub fn mix<T: Clone>(demos: &[T], labels: &[T], share: f64) -> Vec<T> {
    let want = share / (1.0 - share) * demos.len() as f64;
    let times = ((want / labels.len().max(1) as f64).round() as usize).max(1);
    let mut out = demos.to_vec();
    for _ in 0..times {
        out.extend_from_slice(labels);
    }
    out
}

/// `pretrain.dagger_rounds` rounds of DAgger on the fitted policy (`out/policy`): each plays
/// fresh training tasks greedily (`r.tasks`, `r.play`) and labels every state reached
/// (`r.label`), then trains on the
/// demonstrations and all labels so far at the schedule's last rate; the policy is measured
/// after each round (a point of its curve, `out/curve-policy.jsonl`) and saved with its
/// optimiser's state, the labels so far and the curve (`STATE` in its folder), so that a
/// pretrain killed between rounds goes on with the next ([`crate::resume`]); where the
/// invocation's budget stops the rounds — before a round's play, or within its SFT, its labels
/// saved — they go on from there. The policy is kept without them at the end. Returns a line saying what was done.
pub fn dagger<T>(w: WarmStart, r: Rounds<'_, T>) -> Result<String> {
    let (cfg, out) = (w.cfg, w.out);
    if let Some(line) = crate::resume::finished_line(out, "dagger")? {
        return Ok(line);
    }
    let p = &cfg.pretrain;
    let steps = p.policy_steps.max(1);
    let dir = out.join("policy");
    // the rounds an earlier attempt finished: saved in the policy's folder with the model, the
    // labels and the curve they end at (a folder replaced whole, so the four always agree)
    let state: Option<RoundsState> = if crate::resume::start(out, "dagger")? {
        let f = dir.join(STATE);
        f.is_file()
            .then(|| -> Result<RoundsState> {
                serde_json::from_str(&rla_core::file::read_to_string(&f)?)
                    .with_context(|| format!("{} is not DAgger's state", f.display()))
            })
            .transpose()?
    } else {
        None
    };
    let done = state.as_ref().map_or(0, |s| s.rounds.min(p.dagger_rounds));
    // a round stopped within its SFT
    let mut within = state
        .as_ref()
        .and_then(|s| s.sft.clone())
        .filter(|_| done < p.dagger_rounds);
    let resumed = state.is_some();
    // SFT from here on at the rate the schedule ended at
    let mut flat = cfg.clone();
    flat.pretrain.lr = p.lr_at(steps - 1, steps);
    flat.pretrain.schedule = crate::config::LrSchedule::Constant;
    flat.pretrain.warmup = 0;
    let opts = rla_lm::OpenOptions {
        dtype: cfg.policy.dtype.clone(),
        train: Some(rla_lm::TrainOptions {
            lr: flat.pretrain.lr,
            micro_batch: cfg.policy.micro_batch,
            seed: cfg.seed.wrapping_add(101),
            ..Default::default()
        }),
        // after a finished round (or within one), the optimiser's state saved with it
        resume: resumed.then(|| dir.clone()),
        ..Default::default()
    };
    let mut lm = w.backend.open(&dir, &opts)?;
    let demos = encode_pairs(&*lm, r.demos)?;
    let (mut labels_text, mut curve, mut won_last) = match state {
        Some(s) => (s.labels, s.curve, s.won_last),
        // the curve as the rounds find it (a continued base's holds its own rounds)
        None => (
            Vec::new(),
            crate::pretrain::read_curve(&out.join("curve-policy.jsonl"))?,
            0.0,
        ),
    };
    let mut labels_enc = Vec::new();
    for (prompt, answer) in &labels_text {
        labels_enc.push((
            crate::play::encode_prompt(&*lm, prompt)?,
            crate::play::encode_response(&*lm, answer)?,
        ));
    }
    let curve_path = out.join("curve-policy.jsonl");
    // the policy's folder, replaced whole: with the rounds' state, the model with its
    // optimiser's state beside it; without, the weights alone
    let keep = |lm: &dyn Model, state: Option<&RoundsState>| -> Result<()> {
        rla_lm::replace_dir_atomic(&dir, |tmp| -> Result<()> {
            match state {
                Some(state) => {
                    lm.save(tmp)?;
                    rla_lm::write_atomic(
                        &tmp.join(STATE),
                        serde_json::to_string(state)?.as_bytes(),
                    )?;
                }
                None => lm.export(tmp, None)?,
            }
            for (file, text) in &r.files {
                rla_lm::write_atomic(&tmp.join(file), text.as_bytes())?;
            }
            Ok(())
        })
    };
    let sp = SampleParams::greedy(cfg.policy.max_new_tokens);
    let mut labelled = labels_text.len();
    for round in done..p.dagger_rounds {
        let seed = cfg.seed.wrapping_add(104_729 + round as u64);
        let at = match within.take() {
            // the round's tasks were played and labelled before its SFT stopped
            Some(at) => at,
            None => {
                // the invocation's budget spent: the rounds so far saved, then stopped before
                // this one's play
                if crate::resume::spent() {
                    let state = RoundsState {
                        rounds: round,
                        won_last,
                        labels: std::mem::take(&mut labels_text),
                        curve: std::mem::take(&mut curve),
                        sft: None,
                    };
                    keep(&*lm, Some(&state))?;
                    crate::resume::saved(&format!(
                        "DAgger: {round} of {} rounds done",
                        p.dagger_rounds
                    ))?;
                    return Err(crate::resume::stop());
                }
                let tasks = (r.tasks)(round);
                let bar = w.progress.then(|| {
                    crate::bar(
                        (tasks.len() * r.step_limit) as u64,
                        &format!("DAgger round {}: the policy plays", round + 1),
                    )
                });
                let trajs = (r.play)(&*lm, &tasks, &sp, bar.as_ref())?;
                if let Some(b) = bar {
                    b.finish_and_clear();
                }
                won_last =
                    trajs.iter().filter(|t| t.won()).count() as f64 / tasks.len().max(1) as f64;
                let labels = (r.label)(&tasks, &trajs)?;
                labelled += labels.len();
                for d in &labels {
                    labels_enc.push((
                        crate::play::encode_prompt(&*lm, &d.prompt)?,
                        crate::play::encode_response(&*lm, &d.answer)?,
                    ));
                    labels_text.push((d.prompt.clone(), d.answer.clone()));
                }
                SftPosition::start()
            }
        };
        let data = mix(&demos, &labels_enc, p.dagger_label_share);
        let bar = w.progress.then(|| {
            crate::bar(
                p.dagger_steps as u64,
                &format!("DAgger round {}: SFT", round + 1),
            )
        });
        // where a budget stops the round's SFT: the model with its optimiser's state, the
        // labels with this round's, the curve before it and where the SFT stands (its end is
        // saved below, with the round's point)
        let mut on_save = |lm: &dyn Model, at: &SftPosition| -> Result<()> {
            if at.step == p.dagger_steps {
                return Ok(());
            }
            let state = RoundsState {
                rounds: round,
                won_last,
                labels: labels_text.clone(),
                curve: curve.clone(),
                sft: Some(at.clone()),
            };
            keep(lm, Some(&state))?;
            crate::resume::saved(&format!(
                "DAgger round {} of {}: SFT step {} of {}",
                round + 1,
                p.dagger_rounds,
                at.step,
                p.dagger_steps
            ))
        };
        let (_, points) = crate::pretrain::sft_from(
            &mut *lm,
            &flat,
            &data,
            (p.dagger_steps, at),
            seed,
            bar.as_ref(),
            Some((0, (r.probe)())),
            &mut on_save,
        )?;
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        // SFT steps counted on from the curve's last point (a base continued from another goes
        // on from where that one's curve ended)
        let before = crate::pretrain::last_step(&curve).unwrap_or(p.policy_steps);
        for mut point in points {
            point.insert("step".into(), (before + p.dagger_steps).into());
            point.insert("dagger_round".into(), (round + 1).into());
            point.insert("dagger_train_success".into(), won_last.into());
            tracing::info!(point = %serde_json::Value::Object(point.clone()), "DAgger");
            curve.push(point);
        }
        // the round's model with its optimiser's state, the labels so far and the curve, in one
        // folder replaced whole; then the curve beside it
        let state = RoundsState {
            rounds: round + 1,
            won_last,
            labels: labels_text,
            curve,
            sft: None,
        };
        keep(&*lm, Some(&state))?;
        (labels_text, curve) = (state.labels, state.curve);
        crate::run::write_atomic(&curve_path, &crate::pretrain::curve_text(&curve))?;
        crate::resume::saved(&format!(
            "DAgger: {} of {} rounds done",
            round + 1,
            p.dagger_rounds
        ))?;
    }
    // the policy as it is kept: the weights alone
    keep(&*lm, None)?;
    crate::recipe::Recipe {
        label_share: p.dagger_label_share,
        dagger_tasks: p.dagger_tasks,
        dagger_steps: p.dagger_steps,
        last_lr: flat.pretrain.lr,
        optimizer_state: false,
        source: "dagger".into(),
    }
    .write(out)?;
    let line = format!(
        "policy, DAgger: {} rounds of {} tasks played greedily ({:.1}% won in the last), {labelled} \
         states labelled by the expert, {} SFT steps a round, {:.0}% of each batch labels",
        p.dagger_rounds,
        p.dagger_tasks,
        100.0 * won_last,
        p.dagger_steps,
        100.0 * p.dagger_label_share
    );
    crate::resume::finish(out, "dagger", line.clone().into())?;
    Ok(line)
}

/// A warm start's policy: fitted by SFT on its demonstrations `data` for `pretrain.policy_steps`
/// steps (or taken from `policy.path`), measured by `probe` as it learns, with `files` saved
/// beside it; then, when `pretrain.dagger_rounds` asks for them, the setting's DAgger rounds
/// (`rounds`). A line for each.
pub fn fit_policy(
    w: WarmStart,
    corpus: &str,
    data: &[Example],
    files: Vec<(String, String)>,
    probe: Option<(usize, Probe<'_>)>,
    rounds: impl FnOnce() -> Result<String>,
) -> Result<Vec<String>> {
    let fit = crate::pretrain::Fit {
        name: "policy",
        spec: &w.cfg.policy,
        corpus,
        data,
        steps: w.cfg.pretrain.policy_steps,
        files,
        probe,
    };
    let mut lines = vec![fit_or_continue(w, fit)?];
    if w.cfg.pretrain.dagger_rounds > 0 {
        lines.push(rounds()?);
    }
    Ok(lines)
}

/// A warm start's judge: fitted by SFT on its examples for `pretrain.reward_steps` steps (or
/// taken from `reward.path`).
pub fn fit_judge(w: WarmStart, corpus: &str, data: &[Example]) -> Result<String> {
    let fit = crate::pretrain::Fit {
        name: "reward",
        spec: &w.cfg.reward,
        corpus,
        data,
        steps: w.cfg.pretrain.reward_steps,
        files: vec![],
        probe: None,
    };
    fit_or_continue(w, fit)
}

/// Fits a tiny model ([`crate::pretrain::fit_tiny`]), unless the config names one
/// (`policy.path`, `reward.path`): that one is not fitted again but copied to `out/name` as it
/// is, with its folder's training curve beside it, so that DAgger and the manifest go on from it
/// (a base made once, then given more rounds).
pub fn fit_or_continue(w: WarmStart, fit: crate::pretrain::Fit<'_>) -> Result<String> {
    match &fit.spec.path {
        Some(from) => {
            // copied once: after a kill, DAgger's rounds may have moved it on
            if let Some(line) = crate::resume::finished_line(w.out, fit.name)? {
                return Ok(line);
            }
            let line = continue_from(from, w.out, fit.name)?;
            crate::resume::finish(w.out, fit.name, line.clone().into())?;
            Ok(line)
        }
        None => crate::pretrain::fit_tiny(w, fit),
    }
}

fn continue_from(from: &std::path::Path, out: &std::path::Path, name: &str) -> Result<String> {
    use anyhow::Context;
    std::fs::create_dir_all(out)?;
    let same = |a: &std::path::Path, b: &std::path::Path| {
        a.canonicalize()
            .ok()
            .zip(b.canonicalize().ok())
            .is_some_and(|(a, b)| a == b)
    };
    let to = out.join(name);
    if !same(from, &to) {
        rla_lm::replace_dir_atomic(&to, |tmp| -> Result<()> {
            std::fs::create_dir_all(tmp)?;
            for e in std::fs::read_dir(from)
                .with_context(|| format!("{name}.path {}", from.display()))?
            {
                let e = e?;
                if e.file_type()?.is_file() {
                    std::fs::copy(e.path(), tmp.join(e.file_name()))?;
                }
            }
            Ok(())
        })?;
        let curve = format!("curve-{name}.jsonl");
        if let Some(c) = from
            .parent()
            .map(|p| p.join(&curve))
            .filter(|c| c.is_file())
        {
            rla_lm::write_atomic(&out.join(&curve), &std::fs::read(c)?)?;
        }
        // the policy's recipe goes with it (DAgger's rounds, if any follow, write their own)
        let recipe = crate::recipe::Recipe::path_for(from);
        if name == "policy" && recipe.is_file() {
            rla_lm::write_atomic(&out.join(crate::recipe::FILE), &std::fs::read(recipe)?)?;
        }
    }
    Ok(format!(
        "{name}: {} as it is (not fitted again)",
        from.display()
    ))
}

/// The checks both settings' DAgger labels pass: each label's prompt is one the policy saw,
/// token for token, in its own episode; an episode's labels name each action once (`action`
/// reads a label's action, checking it is one of its state's choices); the first state of every
/// episode is labelled and no more states than were played; and a policy of a few SFT steps
/// strays from the expert, which names another action somewhere.
#[cfg(test)]
pub(crate) fn check_labels(
    lm: &dyn Model,
    labels: &[Demo],
    trajs: &[Trajectory],
    action: impl Fn(&Demo) -> String,
) {
    let mut differ = 0;
    let mut named = std::collections::HashSet::new();
    for d in labels {
        let ids = crate::play::encode_prompt(lm, &d.prompt).unwrap();
        let s = trajs[d.task]
            .steps
            .iter()
            .find(|s| s.prompt_ids == ids)
            .unwrap_or_else(|| panic!("a prompt the policy never saw: {}", d.prompt));
        let act = action(d);
        assert!(named.insert((d.task, act.clone())), "{act} twice");
        differ += usize::from(act != s.action);
    }
    let steps: usize = trajs.iter().map(|t| t.steps.len()).sum();
    assert!(labels.len() <= steps && labels.len() >= trajs.len());
    assert!(differ > 0, "the labels repeat the policy's actions");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_repeated_to_their_share_of_the_batch() {
        let demos = vec![0u8; 90];
        let labels = vec![1u8; 10];
        let m = mix(&demos, &labels, 0.5);
        assert_eq!(m.iter().filter(|x| **x == 1).count(), 90);
        assert_eq!(m.len(), 180);
        let m = mix(&demos, &labels, 0.25);
        assert_eq!(m.iter().filter(|x| **x == 1).count(), 30);
        // more labels than their share still go in once each
        let m = mix(&labels, &demos, 0.1);
        assert_eq!(m.len(), 100);
    }
}
