//! Right-padded training batches of (prompt, response) pairs, and packed ones: the responses
//! that share a prompt follow it in one row, each attending to the prompt and to itself only, so
//! the prompt is computed once for all of them (the m verdicts of a judged step, the rollouts that
//! reached the same state).

use crate::ModelError;
use candle_core::{Device, Tensor};

/// Inputs of a batch and the positions of each response: position t of row b predicts token
/// t + 1 of its prompt + response from `ids[b, ..=t]`. A packed batch has more responses (N) than
/// rows (B); an unpacked one one response a row.
#[derive(Debug, Clone)]
pub struct Batch {
    /// `[B, L]` input ids.
    pub ids: Tensor,
    /// `[B, L]` positions of a packed batch (each response starts where its prompt ends); `None`:
    /// `0..L` in every row.
    pub positions: Option<Tensor>,
    /// `[B, 1, L, L]` additive attention mask of a packed batch (a response sees its prompt and
    /// its own earlier tokens); `None`: causal.
    pub mask: Option<Tensor>,
    /// `[N·R]` indices into the flattened `[B·L]` positions of each response's window
    /// (R = the longest response; shorter responses repeat their last position, masked out).
    pub resp_idx: Tensor,
    /// `[N, R]` response targets.
    pub resp_targets: Tensor,
    /// `[N, R]` f32, 1 on real response tokens.
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
            positions: None,
            mask: None,
            resp_idx: Tensor::from_vec(ri, b * r, dev)?,
            resp_targets: Tensor::from_vec(rt, (b, r), dev)?,
            resp_mask: Tensor::from_vec(rm, (b, r), dev)?,
            resp_len: r,
            resp_choices: None,
            temperature: 1.0,
        })
    }

    /// A packed batch: one row for each group, its prompt followed by each of its responses (all
    /// but their last token, which is only a target); responses are numbered group by group, in
    /// order. Every response is scored exactly as in its own row of [`Batch::new`] (masked keys
    /// weigh exactly nothing), at the cost of one prompt a group. Groups of one response each give
    /// [`Batch::new`]'s batch.
    pub fn packed(
        groups: &[(&[u32], Vec<&[u32]>)],
        pad: u32,
        dev: &Device,
    ) -> Result<Batch, ModelError> {
        if groups.iter().all(|(_, rs)| rs.len() == 1) {
            return Batch::new(groups.iter().map(|(p, rs)| (*p, rs[0])), pad, dev);
        }
        if groups.iter().any(|(_, rs)| rs.is_empty()) {
            return Err(ModelError::Other("a packed group without responses".into()));
        }
        rla_lm::check_training_pairs(
            groups
                .iter()
                .flat_map(|(p, rs)| rs.iter().map(move |r| (*p, *r))),
        )
        .map_err(ModelError::Other)?;
        let row_len = |(p, rs): &(&[u32], Vec<&[u32]>)| -> usize {
            p.len() + rs.iter().map(|r| r.len() - 1).sum::<usize>()
        };
        let l = groups.iter().map(row_len).max().unwrap_or(1).max(1);
        let b = groups.len();
        let r = groups
            .iter()
            .flat_map(|(_, rs)| rs.iter().map(|x| x.len()))
            .max()
            .unwrap_or(1);
        let (mut ids, mut pos) = (Vec::with_capacity(b * l), Vec::with_capacity(b * l));
        let mut mask = vec![-1e9f32; b * l * l];
        let (mut ri, mut rt, mut rm) = (vec![], vec![], vec![]);
        for (row, (p, rs)) in groups.iter().enumerate() {
            let m = &mut mask[row * l * l..(row + 1) * l * l];
            let pl = p.len();
            ids.extend_from_slice(p);
            pos.extend(0..pl as u32);
            for i in 0..pl {
                m[i * l..i * l + i + 1].fill(0.0);
            }
            let mut start = pl;
            for x in rs {
                let inputs = &x[..x.len() - 1];
                ids.extend_from_slice(inputs);
                pos.extend((0..inputs.len() as u32).map(|j| pl as u32 + j));
                for j in 0..inputs.len() {
                    let q = start + j;
                    m[q * l..q * l + pl].fill(0.0);
                    m[q * l + start..q * l + q + 1].fill(0.0);
                }
                for j in 0..r {
                    let j = j.min(x.len() - 1);
                    // token 0 is predicted by the prompt's last position, token j by input j − 1
                    let t = if j == 0 { pl - 1 } else { start + j - 1 };
                    ri.push((row * l + t) as u32);
                }
                for j in 0..r {
                    rt.push(if j < x.len() { x[j] } else { pad });
                    rm.push(if j < x.len() { 1f32 } else { 0f32 });
                }
                start += inputs.len();
            }
            for q in start..l {
                // padding sees itself: its outputs are never read
                m[q * l + q] = 0.0;
            }
            ids.extend(std::iter::repeat_n(pad, l - start));
            pos.extend(std::iter::repeat_n(0u32, l - start));
        }
        let n = rt.len() / r;
        Ok(Batch {
            ids: Tensor::from_vec(ids, (b, l), dev)?,
            positions: Some(Tensor::from_vec(pos, (b, l), dev)?),
            mask: Some(Tensor::from_vec(mask, (b, 1, l, l), dev)?),
            resp_idx: Tensor::from_vec(ri, n * r, dev)?,
            resp_targets: Tensor::from_vec(rt, (n, r), dev)?,
            resp_mask: Tensor::from_vec(rm, (n, r), dev)?,
            resp_len: r,
            resp_choices: None,
            temperature: 1.0,
        })
    }

    /// [`Batch::packed`] of `items` grouped into `rows` (indices, as [`packed_groups`] gives
    /// them): each row the first item's prompt and every item's response, in order.
    pub fn packed_rows<'a, T>(
        items: &'a [T],
        rows: &[Vec<usize>],
        prompt: impl Fn(&'a T) -> &'a [u32],
        response: impl Fn(&'a T) -> &'a [u32],
        pad: u32,
        dev: &Device,
    ) -> Result<Batch, ModelError> {
        let packed: Vec<(&[u32], Vec<&[u32]>)> = rows
            .iter()
            .map(|g| {
                (
                    prompt(&items[g[0]]),
                    g.iter().map(|&i| response(&items[i])).collect(),
                )
            })
            .collect();
        Batch::packed(&packed, pad, dev)
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

/// Indices of `items` grouped by equal prompts, groups in order of first appearance and items in
/// order within a group.
pub fn group_by_prompt<'a, T>(
    items: &'a [T],
    prompt: impl Fn(&'a T) -> &'a [u32],
) -> Vec<Vec<usize>> {
    let mut at: std::collections::HashMap<&'a [u32], usize> = std::collections::HashMap::new();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (i, x) in items.iter().enumerate() {
        let g = *at.entry(prompt(x)).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[g].push(i);
    }
    groups
}

/// Indices of `items` grouped by equal prompts ([`group_by_prompt`]), the groups in order of
/// their packed length (stable): each micro-batch then pads its rows to nearly the same length.
pub(crate) fn packed_groups<'a, T>(
    items: &'a [T],
    prompt: impl Fn(&'a T) -> &'a [u32],
    response_len: impl Fn(&T) -> usize,
) -> Vec<Vec<usize>> {
    let mut groups = group_by_prompt(items, &prompt);
    groups.sort_by_key(|g| {
        prompt(&items[g[0]]).len() + g.iter().map(|&i| response_len(&items[i])).sum::<usize>()
    });
    groups
}
