//! Batched sampling with a KV cache: left-padded prompts share one prefill each (the m samples of
//! a prompt copy its cached keys and values instead of recomputing them), finished rows leave the
//! batch, and every sampled token comes with its log-probability.

use crate::model::{KvCache, Transformer};
use crate::ops::{log_softmax_last, padded_causal_mask};
use crate::tok::Tok;
use crate::ModelError;
use candle_core::{DType, Device, Tensor};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

pub use rla_lm::{Finish, Sample, SampleParams};

/// Draws a token from one row of logits.
pub fn draw(logits: &[f32], p: &SampleParams, rng: &mut ChaCha8Rng) -> u32 {
    if p.temperature <= 0.0 {
        let mut best = 0;
        for (i, &x) in logits.iter().enumerate() {
            if x > logits[best] {
                best = i;
            }
        }
        return best as u32;
    }
    if p.top_k == 0 && p.top_p >= 1.0 {
        // Plain sampling needs no sort: draw from the tempered softmax directly.
        let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
        let w: Vec<f64> = logits
            .iter()
            .map(|&x| ((x as f64 - max) / p.temperature).exp())
            .collect();
        let mut u = rng.gen::<f64>() * w.iter().sum::<f64>();
        for (i, &q) in w.iter().enumerate() {
            if u < q {
                return i as u32;
            }
            u -= q;
        }
        return (w.len() - 1) as u32;
    }
    let mut idx: Vec<usize> = (0..logits.len()).collect();
    idx.sort_by(|&a, &b| logits[b].total_cmp(&logits[a]));
    if p.top_k > 0 {
        idx.truncate(p.top_k);
    }
    let max = logits[idx[0]] as f64;
    let mut probs: Vec<f64> = idx
        .iter()
        .map(|&i| ((logits[i] as f64 - max) / p.temperature).exp())
        .collect();
    let total: f64 = probs.iter().sum();
    probs.iter_mut().for_each(|x| *x /= total);
    if p.top_p < 1.0 {
        let mut cum = 0.0;
        let mut keep = probs.len();
        for (k, &q) in probs.iter().enumerate() {
            cum += q;
            if cum >= p.top_p {
                keep = k + 1;
                break;
            }
        }
        probs.truncate(keep);
        idx.truncate(keep);
    }
    let total: f64 = probs.iter().sum();
    let mut u = rng.gen::<f64>() * total;
    for (k, &q) in probs.iter().enumerate() {
        if u < q {
            return idx[k] as u32;
        }
        u -= q;
    }
    idx[probs.len() - 1] as u32
}

fn to_rows(t: &Tensor) -> candle_core::Result<Vec<Vec<f32>>> {
    t.to_dtype(DType::F32)?
        .to_device(&Device::Cpu)?
        .to_vec2::<f32>()
}

/// Generates `n` samples for each prompt (token ids). Returns `out[prompt][sample]`.
pub fn generate(
    model: &Transformer,
    tok: &Tok,
    prompts: &[Vec<u32>],
    n: usize,
    p: &SampleParams,
) -> Result<Vec<Vec<Sample>>, ModelError> {
    generate_within(model, tok, prompts, n, p, None)
}

pub use rla_lm::allowed_next;

/// [`generate`], optionally constrained: with `allowed[prompt]` (complete token sequences, each
/// normally ending in an end-of-sequence token), every response of that prompt is drawn only among
/// tokens that keep it a prefix of one of them (constrained decoding over a token trie). The
/// recorded log-probability of a constrained token is over the tokens it was drawn among
/// ([`rla_lm::logprob_within`]), the policy that played; [`score_within`] gives the same numbers
/// later. A prompt with an empty list is unconstrained.
pub fn generate_within(
    model: &Transformer,
    tok: &Tok,
    prompts: &[Vec<u32>],
    n: usize,
    p: &SampleParams,
    allowed: Option<&[Vec<Vec<u32>>]>,
) -> Result<Vec<Vec<Sample>>, ModelError> {
    generate_seeded(model, tok, prompts, n, p, allowed, None)
}

/// [`generate_within`] with each prompt's own seed when `seeds` is given
/// ([`rla_lm::Request::seeds`]): sample `j` of prompt `i` draws from its own generator,
/// seeded by [`rla_lm::sample_seed`]`(seeds[i], j)`, so its tokens do not depend on the rest of
/// the batch; without, the whole call draws from one generator seeded by `p.seed`.
pub fn generate_seeded(
    model: &Transformer,
    tok: &Tok,
    prompts: &[Vec<u32>],
    n: usize,
    p: &SampleParams,
    allowed: Option<&[Vec<Vec<u32>>]>,
    seeds: Option<&[u64]>,
) -> Result<Vec<Vec<Sample>>, ModelError> {
    // On the CPU, run inside the kernels' thread pool: each of the many small parallel sections of
    // a decoding step then starts from a pool thread instead of waking the pool from outside.
    let model = model.detached();
    model
        .device
        .with_context(|| generate_inner(&model, tok, prompts, n, p, allowed, seeds))
}

fn generate_inner(
    model: &Transformer,
    tok: &Tok,
    prompts: &[Vec<u32>],
    n: usize,
    p: &SampleParams,
    allowed: Option<&[Vec<Vec<u32>>]>,
    seeds: Option<&[u64]>,
) -> Result<Vec<Vec<Sample>>, ModelError> {
    if let Some(a) = allowed {
        if a.len() != prompts.len() {
            return Err(ModelError::Other(format!(
                "{} allowed-response lists for {} prompts",
                a.len(),
                prompts.len()
            )));
        }
    }
    if let Some(s) = seeds {
        if s.len() != prompts.len() {
            return Err(ModelError::Other(format!(
                "{} seeds for {} prompts",
                s.len(),
                prompts.len()
            )));
        }
    }
    let dev = model.device.clone();
    let np = prompts.len();
    if np == 0 || n == 0 {
        return Ok(vec![Vec::new(); np]);
    }
    if prompts.iter().any(|x| x.is_empty()) {
        return Err(ModelError::Other("empty prompt".into()));
    }
    let lmax = prompts.iter().map(Vec::len).max().unwrap_or(0);
    // Prefill each distinct prompt (with its allowed answers) once: equal prompts share the
    // prefill as the n samples of one prompt do.
    let allowed_of = |i: usize| allowed.map(|a| a[i].as_slice()).unwrap_or(&[]);
    let mut first: std::collections::HashMap<(&[u32], &[Vec<u32>]), u32> =
        std::collections::HashMap::new();
    let mut unique: Vec<usize> = Vec::new(); // prompt index of each distinct prompt
    let of: Vec<u32> = (0..np)
        .map(|i| {
            *first
                .entry((prompts[i].as_slice(), allowed_of(i)))
                .or_insert_with(|| {
                    unique.push(i);
                    unique.len() as u32 - 1
                })
        })
        .collect();
    let (cache, last, valid_u) = prefill(model, tok, prompts, &unique, lmax, &dev)?;
    // Share the prefill among the n samples of each prompt.
    let rows: Vec<u32> = (0..np)
        .flat_map(|i| std::iter::repeat_n(of[i], n))
        .collect();
    let mut cache = cache.select_rows(&rows)?;
    cache.reserve(p.max_new_tokens)?;
    let mut cur = last.index_select(&Tensor::new(rows.as_slice(), &dev)?, 0)?;
    let mut valid: Vec<Vec<bool>> = rows.iter().map(|&r| valid_u[r as usize].clone()).collect();
    let mut next_pos: Vec<u32> = (0..np)
        .flat_map(|i| std::iter::repeat_n(prompts[i].len() as u32, n))
        .collect();
    let mut active: Vec<usize> = (0..rows.len()).collect(); // sample index of each batch row
    let mut out: Vec<Sample> = (0..rows.len())
        .map(|_| Sample {
            tokens: vec![],
            logprobs: vec![],
            text: String::new(),
            finish: Finish::Length,
        })
        .collect();
    // one generator for the call, or one for each sample of a prompt with its own seed
    let mut shared = ChaCha8Rng::seed_from_u64(p.seed);
    let mut own: Vec<ChaCha8Rng> = match seeds {
        Some(s) => (0..np * n)
            .map(|r| ChaCha8Rng::seed_from_u64(rla_lm::sample_seed(s[r / n], r % n)))
            .collect(),
        None => Vec::new(),
    };
    let mut live = vec![true; active.len()];
    for step in 0..p.max_new_tokens {
        // the log-probabilities of the distribution the token is drawn from: the tempered one
        // (greedy decoding records the model's own)
        let scaled = if p.temperature > 0.0 && p.temperature != 1.0 {
            (cur.to_dtype(DType::F32)? / p.temperature)?
        } else {
            cur.to_dtype(DType::F32)?
        };
        let lp = to_rows(&log_softmax_last(&scaled)?)?;
        let raw = to_rows(&cur)?;
        let mut fed = Vec::with_capacity(active.len());
        for (row, &s) in active.iter().enumerate() {
            if !live[row] {
                fed.push(tok.pad_id);
                continue;
            }
            let choices = match allowed {
                Some(a) if !a[s / n].is_empty() => allowed_next(&a[s / n], &out[s].tokens),
                _ => Vec::new(),
            };
            let rng = match own.get_mut(s) {
                Some(r) => r,
                None => &mut shared,
            };
            let t = if choices.is_empty() {
                draw(&raw[row], p, rng)
            } else {
                let masked: Vec<f32> = choices.iter().map(|&c| raw[row][c as usize]).collect();
                choices[draw(&masked, p, rng) as usize]
            };
            let o = &mut out[s];
            o.tokens.push(t);
            o.logprobs
                .push(rla_lm::logprob_within(&lp[row], t, &choices));
            if tok.eos_ids.contains(&t) {
                o.finish = Finish::Eos;
                live[row] = false;
                fed.push(tok.pad_id);
                continue;
            }
            if !p.stop.is_empty() {
                let text = tok.decode(&o.tokens)?;
                if let Some(cut) = p.stop.iter().filter_map(|st| text.find(st.as_str())).min() {
                    o.text = text[..cut].to_string();
                    o.finish = Finish::Stop;
                    live[row] = false;
                    fed.push(tok.pad_id);
                    continue;
                }
            }
            fed.push(t);
        }
        let n_live = live.iter().filter(|&&x| x).count();
        if n_live == 0 || step + 1 == p.max_new_tokens {
            break;
        }
        // finished rows stay in the batch (fed padding, never read) until half of it has
        // finished: leaving the batch copies every cached key and value of those that stay
        if 2 * n_live <= active.len() {
            let keep: Vec<u32> = (0..active.len() as u32)
                .filter(|&r| live[r as usize])
                .collect();
            cache = cache.select_rows(&keep)?;
            cache.reserve(p.max_new_tokens - step)?;
            valid = keep.iter().map(|&r| valid[r as usize].clone()).collect();
            next_pos = keep.iter().map(|&r| next_pos[r as usize]).collect();
            active = keep.iter().map(|&r| active[r as usize]).collect();
            fed = keep.iter().map(|&r| fed[r as usize]).collect();
            live = vec![true; keep.len()];
        }
        for v in valid.iter_mut() {
            v.push(true);
        }
        let r = active.len();
        let x = Tensor::from_vec(fed, (r, 1), &dev)?;
        let ps = Tensor::from_vec(next_pos.clone(), (r, 1), &dev)?;
        next_pos.iter_mut().for_each(|q| *q += 1);
        let mask = padded_causal_mask(&valid, 1, &dev)?;
        cur = model
            .forward(&x, &ps, Some(&mask), Some(&mut cache))?
            .squeeze(1)?;
    }
    for o in out.iter_mut() {
        if o.finish != Finish::Stop {
            let body: Vec<u32> = o
                .tokens
                .iter()
                .copied()
                .filter(|t| !tok.eos_ids.contains(t))
                .collect();
            o.text = tok.decode(&body)?;
        }
    }
    let mut it = out.into_iter();
    Ok((0..np).map(|_| it.by_ref().take(n).collect()).collect())
}

/// Prefills the prompts `unique` (indices into `prompts`) in batches of similar length, each
/// left-padded to its own longest and its cache then left-padded to `lmax`: the cache of every
/// prompt over `lmax` positions, the logits after each prompt, and which positions are real.
fn prefill(
    model: &Transformer,
    tok: &Tok,
    prompts: &[Vec<u32>],
    unique: &[usize],
    lmax: usize,
    dev: &Device,
) -> Result<(KvCache, Tensor, Vec<Vec<bool>>), ModelError> {
    let mut order: Vec<usize> = (0..unique.len()).collect();
    order.sort_by_key(|&u| prompts[unique[u]].len());
    let mut parts: Vec<(KvCache, Tensor)> = Vec::new();
    for chunk in order.chunks(16) {
        let l = chunk
            .iter()
            .map(|&u| prompts[unique[u]].len())
            .max()
            .unwrap_or(1);
        let (mut ids, mut pos, mut valid) = (vec![], vec![], vec![]);
        for &u in chunk {
            let pr = &prompts[unique[u]];
            let pad = l - pr.len();
            ids.extend(std::iter::repeat_n(tok.pad_id, pad).chain(pr.iter().copied()));
            pos.extend(std::iter::repeat_n(0u32, pad).chain(0..pr.len() as u32));
            valid.push(
                std::iter::repeat_n(false, pad)
                    .chain(std::iter::repeat_n(true, pr.len()))
                    .collect::<Vec<bool>>(),
            );
        }
        let x = Tensor::from_vec(ids, (chunk.len(), l), dev)?;
        let ps = Tensor::from_vec(pos, (chunk.len(), l), dev)?;
        let mask = padded_causal_mask(&valid, l, dev)?;
        let mut cache = KvCache::default();
        // only the last position's logits are needed: the output projection of every prompt
        // position would cost a [prompts, length, vocabulary] tensor (gigabytes with a real
        // vocabulary)
        let hidden = model.hidden(&x, &ps, Some(&mask), Some(&mut cache))?;
        let last = model.logits(&hidden.narrow(1, l - 1, 1)?.squeeze(1)?.contiguous()?)?;
        parts.push((cache.left_padded(lmax)?, last));
    }
    // back to the order of `unique`
    let mut at = vec![0u32; unique.len()];
    for (k, &u) in order.iter().enumerate() {
        at[u] = k as u32;
    }
    let (caches, lasts): (Vec<KvCache>, Vec<Tensor>) = parts.into_iter().unzip();
    let cache = KvCache::cat(&caches)?.select_rows(&at)?;
    let last = Tensor::cat(&lasts, 0)?.index_select(&Tensor::new(at.as_slice(), dev)?, 0)?;
    let valid = unique
        .iter()
        .map(|&i| {
            let len = prompts[i].len();
            std::iter::repeat_n(false, lmax - len)
                .chain(std::iter::repeat_n(true, len))
                .collect()
        })
        .collect();
    Ok((cache, last, valid))
}

/// `log π(response_t | prompt, response_<t)` for each (prompt, response) pair, without gradients.
pub fn score(
    model: &Transformer,
    pairs: &[(Vec<u32>, Vec<u32>)],
) -> Result<Vec<Vec<f32>>, ModelError> {
    let model = model.detached();
    model.device.with_context(|| score_inner(&model, pairs))
}

/// [`score`] of responses drawn among allowed answers: with `choices[i]` (the tokens each response
/// token of pair `i` was drawn among) the log-probabilities are over those tokens only.
pub fn score_within(
    model: &Transformer,
    pairs: &[(Vec<u32>, Vec<u32>)],
    choices: &[Option<&[Vec<u32>]>],
) -> Result<Vec<Vec<f32>>, ModelError> {
    score_within_at(model, pairs, choices, 1.0)
}

/// [`score_within`] under the tempered distribution `softmax(logits / temperature)`, as
/// [`generate_within`] records the log-probabilities of what it draws at that temperature.
pub fn score_within_at(
    model: &Transformer,
    pairs: &[(Vec<u32>, Vec<u32>)],
    choices: &[Option<&[Vec<u32>]>],
    temperature: f64,
) -> Result<Vec<Vec<f32>>, ModelError> {
    rla_lm::check_choice_lists(pairs, choices).map_err(ModelError::Other)?;
    let model = model.detached();
    model
        .device
        .with_context(|| score_inner_within(&model, pairs, Some(choices), temperature))
}

fn score_inner(
    model: &Transformer,
    pairs: &[(Vec<u32>, Vec<u32>)],
) -> Result<Vec<Vec<f32>>, ModelError> {
    score_inner_within(model, pairs, None, 1.0)
}

fn score_inner_within(
    model: &Transformer,
    pairs: &[(Vec<u32>, Vec<u32>)],
    choices: Option<&[Option<&[Vec<u32>]>]>,
    temperature: f64,
) -> Result<Vec<Vec<f32>>, ModelError> {
    // the pairs of one prompt share a packed row; 16 rows a batch, in order of length
    let groups = crate::batch::packed_groups(pairs, |(p, _)| p.as_slice(), |(_, r)| r.len());
    let mut out = vec![Vec::new(); pairs.len()];
    for rows in groups.chunks(16) {
        let mut b = crate::batch::Batch::packed_rows(
            pairs,
            rows,
            |(p, _)| p.as_slice(),
            |(_, r)| r.as_slice(),
            0,
            &model.device,
        )?;
        if let Some(ch) = choices {
            b = b.within(rows.iter().flatten().map(|&i| ch[i]))?;
        }
        let b = b.tempered(temperature);
        let lp = crate::loss::response_logprobs(model, &b)?
            .to_dtype(DType::F32)?
            .to_vec2::<f32>()?;
        for (&i, row) in rows.iter().flatten().zip(lp) {
            out[i] = row[..pairs[i].1.len()].to_vec();
        }
    }
    Ok(out)
}

/// The `k` most likely tokens and their log-probabilities (temperature 1, most likely first) at
/// every response position of each (prompt, response) pair.
pub fn top_logprobs(
    model: &Transformer,
    pairs: &[(Vec<u32>, Vec<u32>)],
    k: usize,
) -> Result<rla_lm::Alternatives, ModelError> {
    let model = &model.detached();
    model.device.with_context(|| {
        let mut out = Vec::with_capacity(pairs.len());
        for (p, r) in pairs {
            if p.is_empty() || r.is_empty() {
                out.push(vec![]);
                continue;
            }
            // the logits that predict each response token: positions |p|-1 … |p|+|r|-2
            let mut ids = p.clone();
            ids.extend(&r[..r.len() - 1]);
            let l = ids.len();
            let x = Tensor::from_vec(ids, (1, l), &model.device)?;
            let pos = Tensor::arange(0u32, l as u32, &model.device)?.unsqueeze(0)?;
            let h = model.hidden(&x, &pos, None, None)?;
            let h = h.narrow(1, p.len() - 1, r.len())?;
            let lp = log_softmax_last(&model.logits(&h)?.to_dtype(DType::F32)?)?
                .squeeze(0)?
                .to_vec2::<f32>()?;
            out.push(
                lp.into_iter()
                    .map(|row| {
                        let mut idx: Vec<u32> = (0..row.len() as u32).collect();
                        let k = k.min(idx.len());
                        if k > 0 && k < idx.len() {
                            idx.select_nth_unstable_by(k - 1, |&a, &b| {
                                row[b as usize].total_cmp(&row[a as usize])
                            });
                        }
                        idx.truncate(k);
                        idx.sort_by(|&a, &b| row[b as usize].total_cmp(&row[a as usize]));
                        idx.into_iter().map(|i| (i, row[i as usize])).collect()
                    })
                    .collect(),
            );
        }
        Ok(out)
    })
}
