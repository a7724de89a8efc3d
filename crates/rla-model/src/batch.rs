//! Right-padded training batches of (prompt, response) pairs.

use crate::ModelError;
use candle_core::{Device, Tensor};

/// Inputs, targets and the response mask of a batch. Position t of row b predicts
/// `targets[b, t]` from `ids[b, ..=t]`; the mask is 1 where that target is a response token.
#[derive(Debug, Clone)]
pub struct Batch {
    /// `[B, L]` input ids.
    pub ids: Tensor,
    /// `[B, L]` next-token targets.
    pub targets: Tensor,
    /// `[B, L]` f32, 1 on response targets.
    pub mask: Tensor,
    /// Row lengths of prompt + response − 1.
    pub lens: Vec<usize>,
    /// `[B·R]` indices into the flattened `[B·L]` positions of each row's response window
    /// (R = the longest response; shorter rows repeat their last position, masked out).
    pub resp_idx: Tensor,
    /// `[B, R]` response targets.
    pub resp_targets: Tensor,
    /// `[B, R]` f32, 1 on real response tokens.
    pub resp_mask: Tensor,
    /// R.
    pub resp_len: usize,
}

impl Batch {
    /// Builds a batch; `pad` fills the tail of shorter rows.
    pub fn new<'a>(
        pairs: impl Iterator<Item = (&'a [u32], &'a [u32])>,
        pad: u32,
        dev: &Device,
    ) -> Result<Batch, ModelError> {
        let pairs: Vec<(&[u32], &[u32])> = pairs.collect();
        if pairs.iter().any(|(p, r)| p.is_empty() || r.is_empty()) {
            return Err(ModelError::Other(
                "a training pair needs a non-empty prompt and response".into(),
            ));
        }
        let l = pairs
            .iter()
            .map(|(p, r)| p.len() + r.len() - 1)
            .max()
            .unwrap_or(1);
        let (mut ids, mut tg, mut mk, mut lens) = (vec![], vec![], vec![], vec![]);
        for (p, r) in &pairs {
            let full: Vec<u32> = p.iter().chain(r.iter()).copied().collect();
            let n = full.len() - 1;
            lens.push(n);
            for t in 0..l {
                ids.push(if t < n { full[t] } else { pad });
                tg.push(if t < n { full[t + 1] } else { pad });
                mk.push(if t + 1 >= p.len() && t < n {
                    1f32
                } else {
                    0f32
                });
            }
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
            targets: Tensor::from_vec(tg, (b, l), dev)?,
            mask: Tensor::from_vec(mk, (b, l), dev)?,
            lens,
            resp_idx: Tensor::from_vec(ri, b * r, dev)?,
            resp_targets: Tensor::from_vec(rt, (b, r), dev)?,
            resp_mask: Tensor::from_vec(rm, (b, r), dev)?,
            resp_len: r,
        })
    }
}
