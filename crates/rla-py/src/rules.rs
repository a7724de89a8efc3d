//! The paper's rules, from `rla-core`, on plain numbers.

use crate::value_error;
use pyo3::prelude::*;
use rla_core::adapt::{accept_rewrite, adaptation_direction, AdaptConfig, Direction};
use rla_core::filter::{task_accuracy, Band};
use rla_core::ppo::{k3_kl, token_loss, PpoConfig, TokenLogps};
use rla_core::reward::{step_reward_value, StepScore};
use rla_core::theory::{
    empirical_precision, ideal_judge_precision, theorem1_lower_bound, Calibration,
};
use rla_core::{consistency_advantages, consistency_raw, policy_advantages};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(step_reward, m)?)?;
    m.add_function(wrap_pyfunction!(step_rewards, m)?)?;
    m.add_function(wrap_pyfunction!(advantages, m)?)?;
    m.add_function(wrap_pyfunction!(consistency_reward, m)?)?;
    m.add_function(wrap_pyfunction!(consistency_advantages_of, m)?)?;
    m.add_function(wrap_pyfunction!(accuracy, m)?)?;
    m.add_function(wrap_pyfunction!(in_band, m)?)?;
    m.add_function(wrap_pyfunction!(direction, m)?)?;
    m.add_function(wrap_pyfunction!(accept, m)?)?;
    m.add_function(wrap_pyfunction!(theorem1_bound, m)?)?;
    m.add_function(wrap_pyfunction!(ideal_precision, m)?)?;
    m.add_function(wrap_pyfunction!(precision, m)?)?;
    m.add_function(wrap_pyfunction!(calibration, m)?)?;
    m.add_function(wrap_pyfunction!(ppo_token_loss, m)?)?;
    m.add_function(wrap_pyfunction!(k3, m)?)?;
    m.add("POLICY_BAND", (Band::POLICY.low, Band::POLICY.high))?;
    m.add("REWARD_BAND", (Band::REWARD.low, Band::REWARD.high))?;
    Ok(())
}

/// A judge verdict from its number: +1, −1, or 0 (unparsed).
fn score(v: f64) -> PyResult<StepScore> {
    if v == 1.0 {
        Ok(StepScore::Positive)
    } else if v == -1.0 {
        Ok(StepScore::Negative)
    } else if v == 0.0 {
        Ok(StepScore::Unparsed)
    } else {
        Err(value_error(format!(
            "judge verdict {v}: must be 1, -1 or 0 (unparsed)"
        )))
    }
}

fn scores(vs: &[f64]) -> PyResult<Vec<StepScore>> {
    vs.iter().map(|&v| score(v)).collect()
}

fn finite(name: &str, v: f64) -> PyResult<f64> {
    if v.is_finite() {
        Ok(v)
    } else {
        Err(value_error(format!("{name} = {v}: must be finite")))
    }
}

fn adapt_config(acc_low: f64, acc_high: f64) -> PyResult<AdaptConfig> {
    let cfg = AdaptConfig { acc_low, acc_high };
    cfg.validate().map_err(value_error)?;
    Ok(cfg)
}

fn samples(m: usize) -> PyResult<usize> {
    if m == 0 {
        Err(value_error("judge_samples = 0: must be at least 1"))
    } else {
        Ok(m)
    }
}

fn share(name: &str, v: f64) -> PyResult<f64> {
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(value_error(format!("{name} = {v}: must lie in [0, 1]")))
    }
}

/// `R_i = O + λ·mean_j S_ij` for one step.
#[pyfunction]
#[pyo3(signature = (outcome, scores, lam = 1.0))]
fn step_reward(outcome: f64, scores: Vec<f64>, lam: f64) -> PyResult<f64> {
    let s = self::scores(&scores)?;
    Ok(step_reward_value(
        finite("outcome", outcome)?,
        &s,
        finite("lam", lam)?,
    ))
}

/// `R_i` for every step of one trajectory: `scores[i]` holds the verdicts of step i.
#[pyfunction]
#[pyo3(signature = (outcome, scores, lam = 1.0))]
fn step_rewards(outcome: f64, scores: Vec<Vec<f64>>, lam: f64) -> PyResult<Vec<f64>> {
    scores
        .iter()
        .map(|s| step_reward(outcome, s.clone(), lam))
        .collect()
}

/// Policy advantages of one task's rollouts: the paper's (standardised per step index) or one
/// of the run config's other `advantage` kinds (`keep_finished`, `trajectory` with its weight,
/// `judge_centred` with the rollouts' outcomes).
#[pyfunction]
#[pyo3(signature = (rollouts, kind = "paper", outcomes = None, trajectory_weight = 0.5))]
fn advantages(
    rollouts: Vec<Vec<f64>>,
    kind: &str,
    outcomes: Option<Vec<f64>>,
    trajectory_weight: f64,
) -> PyResult<Vec<Vec<Option<f64>>>> {
    for (j, r) in rollouts.iter().enumerate() {
        for (i, &v) in r.iter().enumerate() {
            finite(&format!("rollouts[{j}][{i}]"), v)?;
        }
    }
    if outcomes.is_some() && kind != "judge_centred" {
        return Err(value_error(format!(
            "outcomes are read only with kind=\"judge_centred\" (not {kind:?})"
        )));
    }
    match kind {
        "paper" => Ok(policy_advantages(&rollouts)),
        "keep_finished" => Ok(rla_core::policy_advantages_keeping_finished(&rollouts)),
        "trajectory" => {
            if !(trajectory_weight > 0.0 && trajectory_weight.is_finite()) {
                return Err(value_error(format!(
                    "trajectory_weight = {trajectory_weight} must be > 0"
                )));
            }
            Ok(rla_core::policy_advantages_with_trajectory(
                &rollouts,
                trajectory_weight,
            ))
        }
        "judge_centred" => {
            let o = outcomes.ok_or_else(|| {
                value_error("kind=\"judge_centred\" needs the rollouts' outcomes".to_string())
            })?;
            if o.len() != rollouts.len() {
                return Err(value_error(format!(
                    "{} outcomes for {} rollouts",
                    o.len(),
                    rollouts.len()
                )));
            }
            for (j, &v) in o.iter().enumerate() {
                finite(&format!("outcomes[{j}]"), v)?;
            }
            Ok(rla_core::policy_advantages_centring_judge_only(&rollouts, &o))
        }
        other => Err(value_error(format!(
            "kind = {other:?}: one of \"paper\", \"keep_finished\", \"trajectory\", \"judge_centred\""
        ))),
    }
}

/// The raw consistency reward `R_i·S_ij` of one judge sample (−2 when unparsed).
#[pyfunction]
fn consistency_reward(step_reward: f64, score: f64) -> PyResult<f64> {
    Ok(consistency_raw(
        finite("step_reward", step_reward)?,
        self::score(score)?,
    ))
}

/// Advantages of the m judge samples of one step.
#[pyfunction]
fn consistency_advantages_of(step_reward: f64, scores: Vec<f64>) -> PyResult<Vec<Option<f64>>> {
    Ok(consistency_advantages(
        finite("step_reward", step_reward)?,
        &self::scores(&scores)?,
    ))
}

/// A task's accuracy: the share of successful rollouts.
#[pyfunction]
fn accuracy(successes: usize, rollouts: usize) -> PyResult<f64> {
    if successes > rollouts {
        return Err(value_error(format!(
            "{successes} successes out of {rollouts} rollouts"
        )));
    }
    Ok(task_accuracy(successes, rollouts))
}

/// Whether `low ≤ acc ≤ high`.
#[pyfunction]
fn in_band(acc: f64, low: f64, high: f64) -> PyResult<bool> {
    let band = Band { low, high };
    band.validate().map_err(value_error)?;
    Ok(band.contains(share("acc", acc)?))
}

fn direction_name(d: Direction) -> &'static str {
    match d {
        Direction::Harder => "harder",
        Direction::Easier => "easier",
        Direction::Keep => "keep",
    }
}

/// Which rewrite a task with accuracy `acc` needs: "harder", "easier" or "keep".
#[pyfunction]
#[pyo3(signature = (acc, acc_low = 0.2, acc_high = 0.8))]
fn direction(acc: f64, acc_low: f64, acc_high: f64) -> PyResult<&'static str> {
    let cfg = adapt_config(acc_low, acc_high)?;
    Ok(direction_name(adaptation_direction(
        share("acc", acc)?,
        &cfg,
    )))
}

/// Whether a rewrite proposed in `direction` is accepted, its accuracy `acc_new` measured.
#[pyfunction]
#[pyo3(signature = (direction, acc, acc_new, acc_low = 0.2, acc_high = 0.8))]
fn accept(direction: &str, acc: f64, acc_new: f64, acc_low: f64, acc_high: f64) -> PyResult<bool> {
    let d = match direction {
        "harder" => Direction::Harder,
        "easier" => Direction::Easier,
        "keep" => Direction::Keep,
        other => {
            return Err(value_error(format!(
                "direction {other:?}: harder, easier or keep"
            )))
        }
    };
    let cfg = adapt_config(acc_low, acc_high)?;
    Ok(accept_rewrite(
        d,
        share("acc", acc)?,
        share("acc_new", acc_new)?,
        &cfg,
    ))
}

/// Theorem 1's bound `1 − exp(−m(μ−1)²/4)`; `None` when μ ≤ 1.
#[pyfunction]
fn theorem1_bound(mu: f64, judge_samples: usize) -> PyResult<Option<f64>> {
    if !(0.0..=2.0).contains(&mu) {
        return Err(value_error(format!("mu = {mu}: must lie in [0, 2]")));
    }
    Ok(theorem1_lower_bound(mu, samples(judge_samples)?))
}

/// The exact precision of an idealised judge with these `p₊`, `p₋` and m samples.
#[pyfunction]
fn ideal_precision(p_plus: f64, p_minus: f64, judge_samples: usize) -> PyResult<f64> {
    Ok(ideal_judge_precision(
        share("p_plus", p_plus)?,
        share("p_minus", p_minus)?,
        samples(judge_samples)?,
    ))
}

/// Measured precision over pairs: `(precision, ties, pairs)`, `None` if a side is empty.
#[pyfunction]
fn precision(positive: Vec<f64>, negative: Vec<f64>) -> PyResult<Option<(f64, f64, u64)>> {
    for (name, xs) in [("positive", &positive), ("negative", &negative)] {
        for (i, &v) in xs.iter().enumerate() {
            finite(&format!("{name}[{i}]"), v)?;
        }
    }
    Ok(empirical_precision(&positive, &negative).map(|p| (p.precision, p.ties, p.pairs)))
}

/// `(p₊, p₋, μ)` from labelled verdicts; each `None` where its side was not seen.
#[pyfunction]
fn calibration(
    labels: Vec<bool>,
    scores: Vec<f64>,
) -> PyResult<(Option<f64>, Option<f64>, Option<f64>)> {
    if labels.len() != scores.len() {
        return Err(value_error(format!(
            "{} labels for {} verdicts",
            labels.len(),
            scores.len()
        )));
    }
    let mut c = Calibration::default();
    for (&l, &s) in labels.iter().zip(&scores) {
        c.observe(l, score(s)?);
    }
    Ok((c.p_plus(), c.p_minus(), c.mu()))
}

/// The PPO-clip loss of one token with the k3 KL penalty against `logp_ref`.
#[pyfunction]
#[pyo3(signature = (logp, logp_old, advantage, logp_ref = None, clip_eps = 0.2, kl_beta = 0.01))]
fn ppo_token_loss(
    logp: f64,
    logp_old: f64,
    advantage: f64,
    logp_ref: Option<f64>,
    clip_eps: f64,
    kl_beta: f64,
) -> PyResult<f64> {
    let cfg = PpoConfig {
        clip_eps,
        kl_beta,
        ..PpoConfig::default()
    };
    cfg.validate().map_err(value_error)?;
    let t = TokenLogps {
        logp: finite("logp", logp)?,
        logp_old: finite("logp_old", logp_old)?,
        logp_ref: finite("logp_ref", logp_ref.unwrap_or(logp))?,
    };
    Ok(token_loss(&t, finite("advantage", advantage)?, &cfg))
}

/// The k3 estimate of KL(π‖π_ref) at one token.
#[pyfunction]
fn k3(logp: f64, logp_ref: f64) -> PyResult<f64> {
    Ok(k3_kl(finite("logp", logp)?, finite("logp_ref", logp_ref)?))
}
