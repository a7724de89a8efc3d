//! The update's vital signs: how far an update moved the policy and how much of its batch the
//! clip bounded, from per-token log-probabilities alone.
//!
//! - the **clip fraction**: the share of response tokens whose ratio `π/π_old` lies outside
//!   `[1 − ε, 1 + ε]` (where the clipped objective stops the gradient);
//! - the **KL between the policy before and after the update**, `KL(π_old ‖ π_new)`, estimated on
//!   the tokens the old policy drew with k3 (`exp(q) − q − 1`, `q = log π_new − log π_old`; never
//!   negative, unbiased), as a mean over all response tokens and over the **decision tokens** alone
//!   (those drawn among more than one allowed token: under constrained decoding a token with one
//!   choice has log-probability 0 under every policy and says nothing);
//! - the **entropy** of a distribution given by its log-probabilities.

/// Whether a response token was a decision: drawn freely (no list of choices) or among more than
/// one allowed token.
pub fn is_decision(choices: Option<&[u32]>) -> bool {
    choices.is_none_or(|c| c.len() > 1)
}

/// The share of tokens whose ratio `exp(logp − logp_old)` lies outside `[1 − ε, 1 + ε]`; `None`
/// for no tokens.
pub fn clip_fraction(logp: &[f64], logp_old: &[f64], eps: f64) -> Option<f64> {
    assert_eq!(
        logp.len(),
        logp_old.len(),
        "one old log-probability a token"
    );
    if logp.is_empty() {
        return None;
    }
    let out = logp
        .iter()
        .zip(logp_old)
        .filter(|(l, o)| ((*l - *o).exp() - 1.0).abs() > eps)
        .count();
    Some(out as f64 / logp.len() as f64)
}

/// The k3 estimate of `KL(π_old ‖ π_new)` over tokens drawn from `π_old`: the mean of
/// `exp(q) − q − 1`, `q = logp_new − logp_old`, over the tokens `keep` selects; `None` when it
/// selects none.
pub fn update_kl(logp_old: &[f64], logp_new: &[f64], keep: impl Fn(usize) -> bool) -> Option<f64> {
    assert_eq!(
        logp_old.len(),
        logp_new.len(),
        "one new log-probability a token"
    );
    let (mut sum, mut n) = (0.0, 0usize);
    for (i, (o, w)) in logp_old.iter().zip(logp_new).enumerate() {
        if keep(i) {
            let q = w - o;
            sum += q.exp() - q - 1.0;
            n += 1;
        }
    }
    (n > 0).then(|| sum / n as f64)
}

/// The entropy `−Σ p log p` (in nats) of a distribution given by its log-probabilities (which
/// need not be normalised: they are normalised here); `None` for an empty one.
pub fn entropy(logps: &[f64]) -> Option<f64> {
    let m = logps.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if logps.is_empty() || !m.is_finite() {
        return None;
    }
    let z: f64 = logps.iter().map(|l| (l - m).exp()).sum();
    let lz = m + z.ln();
    Some(
        -logps
            .iter()
            .map(|l| {
                let lp = l - lz;
                lp.exp() * lp
            })
            .sum::<f64>(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clip_fraction_counts_ratios_outside_the_range() {
        let old = [0.0, 0.0, 0.0, 0.0];
        // ratios 1, e^0.1 ≈ 1.105, e^-0.3 ≈ 0.741, e^0.19 ≈ 1.209
        let new = [0.0, 0.1, -0.3, 0.19];
        assert_eq!(clip_fraction(&new, &old, 0.2), Some(0.5));
        assert_eq!(clip_fraction(&new, &old, 0.3), Some(0.0));
        assert_eq!(clip_fraction(&[], &[], 0.2), None);
    }

    #[test]
    fn the_update_kl_is_zero_for_no_move_and_known_otherwise() {
        let old = [-0.5, -1.0, 0.0];
        assert_eq!(update_kl(&old, &old, |_| true), Some(0.0));
        let new = [-0.5 + 0.2, -1.0 - 0.4, 0.0];
        let k = |q: f64| q.exp() - q - 1.0;
        let all = update_kl(&old, &new, |_| true).unwrap();
        assert!((all - (k(0.2) + k(-0.4)) / 3.0).abs() < 1e-12);
        // the last token had one choice: the decision tokens' mean leaves it out
        let decisions = update_kl(&old, &new, |i| i < 2).unwrap();
        assert!((decisions - (k(0.2) + k(-0.4)) / 2.0).abs() < 1e-12);
        assert!(decisions > all);
        assert_eq!(update_kl(&old, &new, |_| false), None);
    }

    #[test]
    fn entropy_of_known_distributions() {
        let two = entropy(&[0.5f64.ln(), 0.5f64.ln()]).unwrap();
        assert!((two - 2f64.ln()).abs() < 1e-12);
        // unnormalised log-probabilities are normalised first
        let three = entropy(&[7.0, 7.0, 7.0]).unwrap();
        assert!((three - 3f64.ln()).abs() < 1e-12);
        assert!(entropy(&[0.0]).unwrap().abs() < 1e-12);
        let p = [0.9f64, 0.1];
        let want = -(0.9 * 0.9f64.ln() + 0.1 * 0.1f64.ln());
        assert!((entropy(&p.map(f64::ln)).unwrap() - want).abs() < 1e-12);
        assert_eq!(entropy(&[]), None);
        assert!(is_decision(None) && is_decision(Some(&[1, 2])) && !is_decision(Some(&[1])));
    }
}
