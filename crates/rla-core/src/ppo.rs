//! The PPO-clip objective with a k3 KL penalty, as numbers (the model crate applies the same
//! definitions to tensors).

use serde::{Deserialize, Serialize};

/// Default clip range ε.
pub const CLIP_EPS: f64 = 0.2;
/// The log-ratio is clamped to `[−10, 10]` before exponentiation.
pub const LOG_RATIO_CLAMP: f64 = 10.0;
/// Default weight β of the k3 KL penalty.
pub const KL_BETA: f64 = 0.01;

/// Which policy the KL penalty compares against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KlReference {
    /// The policy as it was before this iteration's update.
    PreUpdate,
    /// A frozen copy of the model as training started: the warm start; with LoRA, the base
    /// weights with the adapters off (default).
    #[default]
    Frozen,
}

/// Hyper-parameters of the PPO-clip objective.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PpoConfig {
    /// Clip range ε (default 0.2).
    pub clip_eps: f64,
    /// Clamp of the log-ratio before `exp` (default 10).
    pub log_ratio_clamp: f64,
    /// Weight β of the k3 KL penalty (default 0.01; 0 disables it).
    pub kl_beta: f64,
    /// The KL reference.
    pub kl_reference: KlReference,
}

impl Default for PpoConfig {
    fn default() -> Self {
        PpoConfig {
            clip_eps: CLIP_EPS,
            log_ratio_clamp: LOG_RATIO_CLAMP,
            kl_beta: KL_BETA,
            kl_reference: KlReference::Frozen,
        }
    }
}

impl PpoConfig {
    /// Whether the KL term compares against a frozen reference policy (β > 0, `kl_reference =
    /// frozen`): the model as training started must then be kept.
    pub fn frozen_reference(&self) -> bool {
        self.kl_beta > 0.0 && self.kl_reference == KlReference::Frozen
    }

    /// Checks `0 < ε < 1`, clamp > 0, β ≥ 0.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.clip_eps > 0.0 && self.clip_eps < 1.0) {
            return Err(format!("clip_eps = {} must lie in (0, 1)", self.clip_eps));
        }
        if self.log_ratio_clamp.is_nan() || self.log_ratio_clamp <= 0.0 {
            return Err(format!(
                "log_ratio_clamp = {} must be positive",
                self.log_ratio_clamp
            ));
        }
        if self.kl_beta.is_nan() || self.kl_beta < 0.0 {
            return Err(format!("kl_beta = {} must be ≥ 0", self.kl_beta));
        }
        Ok(())
    }
}

/// Importance ratio `exp(clamp(logp − logp_old, −c, c))`.
pub fn ratio(logp: f64, logp_old: f64, clamp: f64) -> f64 {
    (logp - logp_old).clamp(-clamp, clamp).exp()
}

/// PPO-clip loss of one token:
///
/// ```text
/// ratio = exp(clamp(logp − logp_old, −10, 10))
/// loss  = −min(ratio·A, clip(ratio, 1−ε, 1+ε)·A)
/// ```
pub fn clip_token_loss(logp: f64, logp_old: f64, advantage: f64, cfg: &PpoConfig) -> f64 {
    let r = ratio(logp, logp_old, cfg.log_ratio_clamp);
    let clipped = r.clamp(1.0 - cfg.clip_eps, 1.0 + cfg.clip_eps);
    -(r * advantage).min(clipped * advantage)
}

/// Derivative of [`clip_token_loss`] with respect to `logp`: `−A·ratio` where the unclipped
/// term is the minimum and the log-ratio is inside its clamp, 0 elsewhere.
pub fn clip_token_loss_grad(logp: f64, logp_old: f64, advantage: f64, cfg: &PpoConfig) -> f64 {
    let d = logp - logp_old;
    if d.abs() >= cfg.log_ratio_clamp {
        return 0.0;
    }
    let r = d.exp();
    let clipped = r.clamp(1.0 - cfg.clip_eps, 1.0 + cfg.clip_eps);
    if r * advantage <= clipped * advantage {
        -advantage * r
    } else {
        0.0
    }
}

/// The k3 estimate of KL(π ‖ π_ref) at one token:
///
/// ```text
/// q  = logp_ref − logp
/// kl = exp(q) − q − 1        (≥ 0, zero iff logp = logp_ref)
/// ```
pub fn k3_kl(logp: f64, logp_ref: f64) -> f64 {
    let q = logp_ref - logp;
    q.exp() - q - 1.0
}

/// Derivative of [`k3_kl`] with respect to `logp`: `1 − exp(q)`.
pub fn k3_kl_grad(logp: f64, logp_ref: f64) -> f64 {
    1.0 - (logp_ref - logp).exp()
}

/// The per-token quantities of one response token.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenLogps {
    /// log π_θ(token) under the policy being trained.
    pub logp: f64,
    /// log π_old(token) under the policy that sampled it.
    pub logp_old: f64,
    /// log π_ref(token) under the KL reference.
    pub logp_ref: f64,
}

/// Loss of one token: PPO-clip plus `β·k3`.
pub fn token_loss(t: &TokenLogps, advantage: f64, cfg: &PpoConfig) -> f64 {
    clip_token_loss(t.logp, t.logp_old, advantage, cfg) + cfg.kl_beta * k3_kl(t.logp, t.logp_ref)
}

/// Loss of one sequence: the mean of [`token_loss`] over its response tokens (0 for none).
pub fn sequence_loss(tokens: &[TokenLogps], advantage: f64, cfg: &PpoConfig) -> f64 {
    if tokens.is_empty() {
        return 0.0;
    }
    tokens
        .iter()
        .map(|t| token_loss(t, advantage, cfg))
        .sum::<f64>()
        / tokens.len() as f64
}

/// Loss of a batch: token-mean within each sequence, then the mean over sequences.
pub fn batch_loss(batch: &[(Vec<TokenLogps>, f64)], cfg: &PpoConfig) -> f64 {
    if batch.is_empty() {
        return 0.0;
    }
    batch
        .iter()
        .map(|(toks, a)| sequence_loss(toks, *a, cfg))
        .sum::<f64>()
        / batch.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c() -> PpoConfig {
        PpoConfig::default()
    }

    #[test]
    fn on_policy_loss_is_minus_advantage() {
        assert_eq!(clip_token_loss(-1.3, -1.3, 2.0, &c()), -2.0);
        assert_eq!(clip_token_loss(-1.3, -1.3, -0.5, &c()), 0.5);
    }

    #[test]
    fn clipping_hand_computed() {
        // ratio = e^{0.5} ≈ 1.6487 > 1.2: for A > 0 the clipped term 1.2·A is the min
        let l = clip_token_loss(0.5, 0.0, 1.0, &c());
        assert!((l + 1.2).abs() < 1e-12);
        // for A < 0 the unclipped term is the min: -(1.6487·-1) = 1.6487
        let l = clip_token_loss(0.5, 0.0, -1.0, &c());
        assert!((l - 0.5f64.exp()).abs() < 1e-12);
        // ratio = e^{-0.5} ≈ 0.6065 < 0.8: for A > 0 the unclipped is the min
        let l = clip_token_loss(-0.5, 0.0, 1.0, &c());
        assert!((l + (-0.5f64).exp()).abs() < 1e-12);
        // for A < 0 the clipped 0.8·A is the min: loss = 0.8
        let l = clip_token_loss(-0.5, 0.0, -1.0, &c());
        assert!((l - 0.8).abs() < 1e-12);
    }

    #[test]
    fn log_ratio_clamp() {
        assert!((ratio(100.0, 0.0, 10.0) - 10f64.exp()).abs() < 1e-6);
        assert!((ratio(-100.0, 0.0, 10.0) - (-10f64).exp()).abs() < 1e-12);
    }

    #[test]
    fn k3_values() {
        assert_eq!(k3_kl(-2.0, -2.0), 0.0);
        // q = 1: e - 2
        assert!((k3_kl(-2.0, -1.0) - (1f64.exp() - 2.0)).abs() < 1e-12);
        assert!(k3_kl(0.0, -3.0) > 0.0);
    }

    #[test]
    fn gradients_match_finite_differences() {
        let cfg = c();
        let h = 1e-6;
        for &(lp, old, a) in &[
            (0.1, 0.0, 1.0),
            (-0.1, 0.0, 1.0),
            (0.1, 0.0, -1.0),
            (-0.1, 0.0, -1.0),
            (0.5, 0.0, 1.0),
            (-0.5, 0.0, -2.0),
        ] {
            let fd = (clip_token_loss(lp + h, old, a, &cfg)
                - clip_token_loss(lp - h, old, a, &cfg))
                / (2.0 * h);
            assert!(
                (fd - clip_token_loss_grad(lp, old, a, &cfg)).abs() < 1e-5,
                "{lp} {old} {a}"
            );
        }
        for &(lp, r) in &[(-1.0, -2.0), (-2.0, -1.0), (0.0, 0.0)] {
            let fd = (k3_kl(lp + h, r) - k3_kl(lp - h, r)) / (2.0 * h);
            assert!((fd - k3_kl_grad(lp, r)).abs() < 1e-5);
        }
    }

    #[test]
    fn aggregation_is_token_mean_then_sequence_mean() {
        let cfg = PpoConfig {
            kl_beta: 0.0,
            ..c()
        };
        let t = |lp: f64| TokenLogps {
            logp: lp,
            logp_old: 0.0,
            logp_ref: 0.0,
        };
        // sequence 1: one token, loss -1 (A = 1, ratio 1); sequence 2: three tokens, loss 2 each
        let batch = vec![(vec![t(0.0)], 1.0), (vec![t(0.0), t(0.0), t(0.0)], -2.0)];
        // token-mean then sequence-mean: (-1 + 2) / 2 = 0.5 (a flat token mean would be 5/4)
        assert!((batch_loss(&batch, &cfg) - 0.5).abs() < 1e-12);
        assert_eq!(sequence_loss(&[], 1.0, &cfg), 0.0);
    }

    #[test]
    fn kl_weight_applies() {
        let cfg = c();
        let tok = TokenLogps {
            logp: -2.0,
            logp_old: -2.0,
            logp_ref: -1.0,
        };
        let l = token_loss(&tok, 0.0, &cfg);
        assert!((l - 0.01 * (1f64.exp() - 2.0)).abs() < 1e-12);
    }

    #[test]
    fn config_validation() {
        assert!(PpoConfig {
            clip_eps: 0.0,
            ..c()
        }
        .validate()
        .unwrap_err()
        .contains("clip_eps"));
        assert!(PpoConfig {
            kl_beta: -1.0,
            ..c()
        }
        .validate()
        .unwrap_err()
        .contains("kl_beta"));
        assert!(c().validate().is_ok());
    }
}
