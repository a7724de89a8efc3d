//! Right-padded training batches of (prompt, response) pairs.

use crate::ModelError;
use candle_core::{Device, Tensor};

/// Inputs of a batch and the positions of each row's response: position t of row b predicts
/// token t + 1 of its prompt + response from `ids[b, ..=t]`.
#[derive(Debug, Clone)]
pub struct Batch {
    /// `[B, L]` input ids.
    pub ids: Tensor,
    /// `[B·R]` indices into the flattened `[B·L]` positions of each row's response window
    /// (R = the longest response; shorter rows repeat their last position, masked out).
    pub resp_idx: Tensor,
    /// `[B, R]` response targets.
    pub resp_targets: Tensor,
    /// `[B, R]` f32, 1 on real response tokens.
    pub resp_mask: Tensor,
    /// R.
    pub resp_len: usize,
    /// With constrained responses, the `B·R` lists of tokens each response position was drawn
    /// among (empty: any token); their log-probabilities are then over those tokens only.
    pub resp_choices: Option<Vec<Vec<u32>>>,
    /// The sampling temperature the responses were drawn at: their log-probabilities are those
    /// of the tempered distribution `softmax(logits / T)` (1: the model's own).
    pub temperature: f64,
}

impl Batch {
    /// Builds a batch; `pad` fills the tail of shorter rows.
    pub fn new<'a>(
        pairs: impl Iterator<Item = (&'a [u32], &'a [u32])>,
        pad: u32,
        dev: &Device,
    ) -> Result<Batch, ModelError> {
        let pairs: Vec<(&[u32], &[u32])> = pairs.collect();
        rla_lm::check_training_pairs(pairs.iter().copied()).map_err(ModelError::Other)?;
        let l = pairs
            .iter()
            .map(|(p, r)| p.len() + r.len() - 1)
            .max()
            .unwrap_or(1);
        let mut ids = Vec::new();
        for (p, r) in &pairs {
            // the last response token is only a target, never an input
            let n = p.len() + r.len() - 1;
            ids.extend(p.iter().chain(r.iter()).copied().take(n));
            ids.extend(std::iter::repeat_n(pad, l - n));
        }
        let b = pairs.len();
        let r = pairs.iter().map(|(_, x)| x.len()).max().unwrap_or(1);
        let (mut ri, mut rt, mut rm) = (vec![], vec![], vec![]);
        for (row, (p, x)) in pairs.iter().enumerate() {
            for j in 0..r {
                let t = p.len() - 1 + j.min(x.len() - 1);
                ri.push((row * l + t) as u32);
                rt.push(if j < x.len() { x[j] } else { pad });
                rm.push(if j < x.len() { 1f32 } else { 0f32 });
            }
        }
        Ok(Batch {
            ids: Tensor::from_vec(ids, (b, l), dev)?,
            resp_idx: Tensor::from_vec(ri, b * r, dev)?,
            resp_targets: Tensor::from_vec(rt, (b, r), dev)?,
            resp_mask: Tensor::from_vec(rm, (b, r), dev)?,
            resp_len: r,
            resp_choices: None,
            temperature: 1.0,
        })
    }

    /// The batch scored at the sampling temperature `t` (values ≤ 0, greedy decoding, score at 1).
    pub fn tempered(mut self, t: f64) -> Batch {
        self.temperature = if t > 0.0 { t } else { 1.0 };
        self
    }

    /// The batch with its rows' responses drawn among choices: `choices` holds, per row, the
    /// tokens each response token was drawn among, or `None` for a free row.
    pub fn within<'a>(
        mut self,
        choices: impl Iterator<Item = Option<&'a [Vec<u32>]>>,
    ) -> Result<Batch, ModelError> {
        let (b, r) = self.resp_targets.dims2()?;
        let rows: Vec<Option<&[Vec<u32>]>> = choices.collect();
        if rows.len() != b {
            return Err(ModelError::Other(format!(
                "{} choice lists for a batch of {b} rows",
                rows.len()
            )));
        }
        let mut out = vec![Vec::new(); b * r];
        for (row, c) in rows.into_iter().enumerate() {
            for (j, ch) in c.into_iter().flatten().enumerate().take(r) {
                out[row * r + j] = ch.clone();
            }
        }
        self.resp_choices = out.iter().any(|c| !c.is_empty()).then_some(out);
        Ok(self)
    }
}
