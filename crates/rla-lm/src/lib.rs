//! # rla-lm — what the loop asks of a model
//!
//! The RLAnything loop needs two things of each model, and nothing more:
//!
//! - a [`Sampler`]: tokenise text and apply the chat template, generate `n` samples per prompt
//!   with the log-probability of every sampled token, generate only among allowed answers, and
//!   score given responses;
//! - a [`Learner`]: apply PPO-clip and SFT updates, save a checkpoint, score responses under the
//!   frozen reference policy of the KL term, and push updated weights to wherever sampling
//!   happens ([`Learner::sync_weights`], a no-op when the model samples in the same process).
//!
//! A [`Backend`] opens saved models and makes fresh ones: the one door through which the loop,
//! the settings and the warm starts get their models. The in-process candle back end
//! (`rla_model::Candle`, its model `rla_model::Lm`) implements all three; an inference server's
//! client implements [`Sampler`]. This crate holds the traits and their data types only: no
//! tensor library, so settings and the loop build without one.

mod backend;
pub mod hub;

pub use backend::{
    check_checkpoint_dest, is_checkpoint, replace_dir_atomic, write_atomic, Backend, LoraConfig,
    OpenOptions, Precision, TinyShape, TrainOptions, ALL_TARGETS,
};

use serde::{Deserialize, Serialize};
use std::path::Path;

/// An error of a model back end, with its cause.
#[derive(Debug, thiserror::Error)]
pub enum LmError {
    /// The back end's own error.
    #[error(transparent)]
    Backend(Box<dyn std::error::Error + Send + Sync>),
    /// A request the back end cannot serve.
    #[error("{0}")]
    Unsupported(String),
    /// A request longer than the model's context (prompt and new tokens together).
    #[error("{0}")]
    TooLong(String),
}

/// Checks that every prompt and `extra` tokens after it fit in a context of `context` tokens.
pub fn check_context(
    lengths: impl IntoIterator<Item = usize>,
    extra: usize,
    context: Option<usize>,
) -> Result<()> {
    let Some(ctx) = context else {
        return Ok(());
    };
    for (i, len) in lengths.into_iter().enumerate() {
        if len.saturating_add(extra) > ctx {
            return Err(LmError::TooLong(format!(
                "prompt {i} has {len} tokens and {extra} more were asked for, past the model's \
                 context of {ctx} tokens"
            )));
        }
    }
    Ok(())
}

impl LmError {
    /// Wraps a back end's error.
    pub fn backend<E: std::error::Error + Send + Sync + 'static>(e: E) -> LmError {
        LmError::Backend(Box::new(e))
    }
}

/// Results of model calls.
pub type Result<T, E = LmError> = std::result::Result<T, E>;

/// How to sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SampleParams {
    /// Softmax temperature; 0 means greedy.
    pub temperature: f64,
    /// Nucleus mass (1 keeps everything).
    pub top_p: f64,
    /// Keep only the k most likely tokens (0 keeps everything).
    pub top_k: usize,
    /// Most tokens to generate.
    pub max_new_tokens: usize,
    /// Generation ends when the text contains one of these (the text is cut before it).
    pub stop: Vec<String>,
    /// Seed of the sampler.
    pub seed: u64,
}

impl Default for SampleParams {
    fn default() -> Self {
        SampleParams {
            temperature: 1.0,
            top_p: 1.0,
            top_k: 0,
            max_new_tokens: 64,
            stop: vec![],
            seed: 0,
        }
    }
}

impl SampleParams {
    /// Greedy decoding.
    pub fn greedy(max_new_tokens: usize) -> Self {
        SampleParams {
            temperature: 0.0,
            max_new_tokens,
            ..Default::default()
        }
    }
}

/// Why a sample ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Finish {
    /// An end-of-sequence token.
    Eos,
    /// A stop string.
    Stop,
    /// `max_new_tokens`.
    Length,
}

/// One generated response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// The generated token ids (the end-of-sequence token included, if any).
    pub tokens: Vec<u32>,
    /// `log π(token)` of each generated token under the model (temperature 1).
    pub logprobs: Vec<f32>,
    /// The decoded text, cut before a stop string.
    pub text: String,
    /// Why it ended.
    pub finish: Finish,
}

/// The most likely tokens at each position of each sequence: `(token id, log-probability)`,
/// most likely first.
pub type Alternatives = Vec<Vec<Vec<(u32, f32)>>>;

/// One PPO training sample: a (prompt, response) pair with its advantage and the log-probs of the
/// response tokens under the sampling policy (and the KL reference).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PpoSample {
    /// Prompt token ids.
    pub prompt: Vec<u32>,
    /// Response token ids.
    pub response: Vec<u32>,
    /// The sample's advantage, broadcast over its tokens.
    pub advantage: f32,
    /// `log π_old` per response token.
    pub old_logprobs: Vec<f32>,
    /// `log π_ref` per response token, when the KL reference differs from `π_old`.
    #[serde(default)]
    pub ref_logprobs: Option<Vec<f32>>,
    /// When the response was drawn among allowed answers (constrained decoding): for each
    /// response token, the tokens it was drawn among ([`choices_along`]). Every log-probability
    /// of the sample (old, reference and the learner's own) is then over those tokens only, as
    /// the policy that played drew them; a token with one choice has log-probability 0 and no
    /// gradient.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choices: Option<Vec<Vec<u32>>>,
}

impl PpoSample {
    /// Checks that every sample has one old (and, when given, one reference) log-probability
    /// per response token; the error says so. Every learner checks its batch with this.
    pub fn check_all(samples: &[PpoSample]) -> std::result::Result<(), String> {
        let fits = |s: &PpoSample| {
            s.old_logprobs.len() == s.response.len()
                && s.ref_logprobs
                    .as_ref()
                    .is_none_or(|r| r.len() == s.response.len())
        };
        if !samples.iter().all(fits) {
            return Err(
                "a PPO sample needs one old (and reference) log-prob per response token".into(),
            );
        }
        for s in samples {
            check_choices(&s.response, s.choices.as_deref())?;
        }
        Ok(())
    }
}

/// The tokens that may follow `done` so that a response stays a prefix of one of `allowed`
/// (complete answers as token sequences), sorted; empty when none does.
pub fn allowed_next(allowed: &[Vec<u32>], done: &[u32]) -> Vec<u32> {
    let mut next: Vec<u32> = allowed
        .iter()
        .filter(|a| a.len() > done.len() && a.starts_with(done))
        .map(|a| a[done.len()])
        .collect();
    next.sort_unstable();
    next.dedup();
    next
}

/// For each token of `response`, drawn among the answers `allowed`, the tokens it was drawn
/// among ([`allowed_next`] of the tokens before it). A token the answers do not allow gets an
/// empty list; [`check_choices`] refuses that.
pub fn choices_along(allowed: &[Vec<u32>], response: &[u32]) -> Vec<Vec<u32>> {
    (0..response.len())
        .map(|t| allowed_next(allowed, &response[..t]))
        .collect()
}

/// Checks the per-token choices of a constrained response: one list per token, each holding its
/// token. The error names the first position that fails.
pub fn check_choices(
    response: &[u32],
    choices: Option<&[Vec<u32>]>,
) -> std::result::Result<(), String> {
    let Some(c) = choices else { return Ok(()) };
    if c.len() != response.len() {
        return Err(format!(
            "a constrained sample has choices for {} of its {} response tokens",
            c.len(),
            response.len()
        ));
    }
    if let Some(t) = (0..c.len()).find(|&t| !c[t].contains(&response[t])) {
        return Err(format!(
            "response token {t} ({}) is not among the tokens it was drawn from ({:?})",
            response[t], c[t]
        ));
    }
    Ok(())
}

/// Checks the choice lists of (prompt, response) pairs scored within choices: one list (or
/// `None`) per pair, each as [`check_choices`] wants it.
pub fn check_choice_lists(
    pairs: &[(Vec<u32>, Vec<u32>)],
    choices: &[Option<&[Vec<u32>]>],
) -> std::result::Result<(), String> {
    if choices.len() != pairs.len() {
        return Err(format!(
            "{} choice lists for {} pairs",
            choices.len(),
            pairs.len()
        ));
    }
    for ((_, r), &c) in pairs.iter().zip(choices) {
        check_choices(r, c)?;
    }
    Ok(())
}

/// The log-probability of `target` among `choices` (or among all tokens when `choices` is
/// empty) from a row of log-probabilities over the vocabulary: what a constrained sampler
/// records and a learner trains on.
pub fn logprob_within(logprobs: &[f32], target: u32, choices: &[u32]) -> f32 {
    if choices.is_empty() {
        return logprobs[target as usize];
    }
    let m = choices
        .iter()
        .map(|&c| logprobs[c as usize])
        .fold(f32::NEG_INFINITY, f32::max);
    if m == f32::NEG_INFINITY {
        return f32::NEG_INFINITY;
    }
    let z: f32 = choices
        .iter()
        .map(|&c| (logprobs[c as usize] - m).exp())
        .sum();
    logprobs[target as usize] - m - z.ln()
}

/// Checks that every (prompt, response) pair a learner trains on has a prompt and a response.
pub fn check_training_pairs<'a>(
    mut pairs: impl Iterator<Item = (&'a [u32], &'a [u32])>,
) -> std::result::Result<(), String> {
    if pairs.any(|(p, r)| p.is_empty() || r.is_empty()) {
        return Err("a training pair needs a non-empty prompt and response".into());
    }
    Ok(())
}

/// What one update did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct StepStats {
    /// The loss of the step (before the update).
    pub loss: f64,
    /// Global gradient norm before clipping.
    pub grad_norm: f64,
    /// Sequences used.
    pub sequences: usize,
    /// Response tokens used.
    pub tokens: usize,
    /// PPO: the share of response tokens whose ratio `π/π_old` lay outside the clip range
    /// (measured before the step), when the back end reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clip_fraction: Option<f64>,
    /// PPO: the mean entropy (nats) of the policy at the decision tokens (drawn freely, or among
    /// more than one allowed token: over those tokens only), when the back end reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_entropy: Option<f64>,
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// The text.
    pub content: String,
}

impl Message {
    /// A message.
    pub fn new(role: &str, content: &str) -> Self {
        Message {
            role: role.into(),
            content: content.into(),
        }
    }
}

/// One message of a conversation with a vision-language model: text, and optionally one image
/// shown after it (a PNG file's bytes, such as a desktop screenshot).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VisualMessage {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// The text.
    pub text: String,
    /// A PNG image, if any.
    pub png: Option<Vec<u8>>,
}

/// Implements [`Codec`] for a type by handing every call to the codec in one of its fields:
/// `codec_by_field!([C: Codec] Wrapper<C>, inner);` (empty brackets for a type without
/// parameters).
#[macro_export]
macro_rules! codec_by_field {
    ([$($gen:tt)*] $ty:ty, $field:ident) => {
        impl<$($gen)*> $crate::Codec for $ty {
            fn encode(&self, text: &str) -> $crate::Result<Vec<u32>> {
                $crate::Codec::encode(&self.$field, text)
            }
            fn decode(&self, ids: &[u32]) -> $crate::Result<String> {
                $crate::Codec::decode(&self.$field, ids)
            }
            fn eos_ids(&self) -> &[u32] {
                $crate::Codec::eos_ids(&self.$field)
            }
            fn chat_template(
                &self,
                messages: &[$crate::Message],
                add_generation_prompt: bool,
            ) -> $crate::Result<Option<String>> {
                $crate::Codec::chat_template(&self.$field, messages, add_generation_prompt)
            }
        }
    };
}

impl<C: Codec + ?Sized> Codec for Box<C> {
    fn encode(&self, text: &str) -> Result<Vec<u32>> {
        (**self).encode(text)
    }
    fn decode(&self, ids: &[u32]) -> Result<String> {
        (**self).decode(ids)
    }
    fn eos_ids(&self) -> &[u32] {
        (**self).eos_ids()
    }
    fn chat_template(
        &self,
        messages: &[Message],
        add_generation_prompt: bool,
    ) -> Result<Option<String>> {
        (**self).chat_template(messages, add_generation_prompt)
    }
}

/// A model's text side: its tokenizer and chat template. A sampler that generates elsewhere (an
/// inference server's client) tokenises here with the model's own tokenizer.
pub trait Codec: Send + Sync {
    /// Token ids of a text (no special tokens added).
    fn encode(&self, text: &str) -> Result<Vec<u32>>;
    /// The text of token ids.
    fn decode(&self, ids: &[u32]) -> Result<String>;
    /// The end-of-sequence token ids.
    fn eos_ids(&self) -> &[u32];
    /// The chat template applied to messages, or `None` when the model has no template.
    fn chat_template(
        &self,
        messages: &[Message],
        add_generation_prompt: bool,
    ) -> Result<Option<String>>;
}

/// One generation call: `n` samples for each prompt, drawn as `params` says; with `allowed`,
/// every sample of prompt `i` is one of `allowed[i]` (token sequences, each ending in an
/// end-of-sequence token).
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The prompts' token ids.
    pub prompts: &'a [Vec<u32>],
    /// Samples per prompt.
    pub n: usize,
    /// How to sample.
    pub params: &'a SampleParams,
    /// The answers each prompt's samples are drawn among, when constrained.
    pub allowed: Option<&'a [Vec<Vec<u32>>]>,
    /// Each prompt's own seed, when given: the samples of prompt `i` draw from streams of
    /// `seeds[i]` alone (sample `j` from [`sample_seed`]`(seeds[i], j)`), whatever else the call
    /// holds, so that a prompt's draws do not depend on its neighbours; `None` draws the whole
    /// call from `params.seed`.
    pub seeds: Option<&'a [u64]>,
}

/// The seed of sample `j` of a prompt whose own seed is `seed` ([`Request::seeds`]).
pub fn sample_seed(seed: u64, j: usize) -> u64 {
    rla_core::seed::stream(seed, &[j as u64])
}

/// A model that samples: the loop's rollouts, judging and evaluation go through this. Its
/// text side (tokenizer, chat template) is its [`Codec`].
pub trait Sampler: Codec {
    /// The samples of a request, one list per prompt, each sample with the log-probability of
    /// every token it drew.
    fn sample(&self, r: &Request) -> Result<Vec<Vec<Sample>>>;

    /// `n` samples for each prompt, each with its per-token log-probabilities.
    fn generate(
        &self,
        prompts: &[Vec<u32>],
        n: usize,
        params: &SampleParams,
    ) -> Result<Vec<Vec<Sample>>> {
        let allowed = None;
        self.sample(&Request {
            prompts,
            n,
            params,
            allowed,
            seeds: None,
        })
    }

    /// Like [`Sampler::generate`], but every sample of prompt `i` is one of `allowed[i]`.
    fn generate_within(
        &self,
        prompts: &[Vec<u32>],
        n: usize,
        params: &SampleParams,
        allowed: &[Vec<Vec<u32>>],
    ) -> Result<Vec<Vec<Sample>>> {
        let allowed = Some(allowed);
        self.sample(&Request {
            prompts,
            n,
            params,
            allowed,
            seeds: None,
        })
    }

    /// `log π(response token)` of every response token of each (prompt, response) pair.
    fn score(&self, pairs: &[(Vec<u32>, Vec<u32>)]) -> Result<Vec<Vec<f32>>>;

    /// The number of token ids the model knows, when the back end knows it (a server then
    /// refuses prompts with ids outside it).
    fn vocab_size(&self) -> Option<usize> {
        None
    }

    /// How many weights the model has, when the back end knows.
    fn parameter_count(&self) -> Option<usize> {
        None
    }

    /// The longest sequence the model takes (prompt and generated tokens together), when the
    /// back end knows it; longer requests are refused ([`LmError::TooLong`]).
    fn context_len(&self) -> Option<usize> {
        None
    }

    /// The `k` most likely tokens, with their log-probabilities, at every response position of
    /// each (prompt, response) pair (most likely first): the alternatives an inference server
    /// reports as `top_logprobs`.
    fn top_logprobs(&self, pairs: &[(Vec<u32>, Vec<u32>)], k: usize) -> Result<Alternatives> {
        let _ = (pairs, k);
        Err(LmError::Unsupported(
            "this back end does not report alternatives (top_logprobs)".into(),
        ))
    }

    /// `n` replies to each conversation whose messages may hold images, generated by a
    /// vision-language model that applies its own chat template and image processing (so the
    /// samples' prompt token ids stay with it). Each sample's response tokens and
    /// log-probabilities are as in [`Sampler::generate`]. A text-only model refuses.
    fn generate_visual(
        &self,
        chats: &[Vec<VisualMessage>],
        n: usize,
        p: &SampleParams,
    ) -> Result<Vec<Vec<Sample>>> {
        let _ = (chats, n, p);
        Err(LmError::Unsupported(
            "this model reads text only: screenshots need a vision-language model on an inference server".into(),
        ))
    }
}

/// A model that learns.
pub trait Learner {
    /// One PPO-clip update over the samples (their KL reference log-probabilities included).
    fn ppo_update(&mut self, samples: &[PpoSample]) -> Result<StepStats>;

    /// One supervised update over (prompt, response) pairs.
    fn sft_update(&mut self, pairs: &[(Vec<u32>, Vec<u32>)]) -> Result<StepStats>;

    /// `log π_ref(response token)` under the frozen reference policy of the KL term (the model as
    /// training started; with LoRA, the base weights with the adapter off).
    fn reference_logprobs(&self, pairs: &[(Vec<u32>, Vec<u32>)]) -> Result<Vec<Vec<f32>>> {
        self.reference_logprobs_within(pairs, &vec![None; pairs.len()])
    }

    /// [`Learner::reference_logprobs`] of responses drawn among allowed answers: with
    /// `choices[i]` (the tokens each response token of pair `i` was drawn among, see
    /// [`PpoSample::choices`]; `None` for a free response) the log-probabilities are over those
    /// tokens only. The lists are checked with [`check_choice_lists`].
    fn reference_logprobs_within(
        &self,
        pairs: &[(Vec<u32>, Vec<u32>)],
        choices: &[Option<&[Vec<u32>]>],
    ) -> Result<Vec<Vec<f32>>>;

    /// `log π(response token)` under the model as it is now, over the allowed tokens where
    /// `choices[i]` gives them (as [`Learner::reference_logprobs_within`]): what the trainer
    /// compares with the samples' `old_logprobs` after an update. A back end that cannot score
    /// says so, and the update's KL is not measured.
    fn logprobs_within(
        &self,
        pairs: &[(Vec<u32>, Vec<u32>)],
        choices: &[Option<&[Vec<u32>]>],
    ) -> Result<Vec<Vec<f32>>> {
        let _ = (pairs, choices);
        Err(LmError::Unsupported(
            "this learner does not score its samples after an update".into(),
        ))
    }

    /// The SFT loss of (prompt, response) pairs, without an update (a held-out loss).
    fn sft_loss(&self, pairs: &[(Vec<u32>, Vec<u32>)]) -> Result<f64>;

    /// Sets the learning rate of the following updates (a schedule's step).
    fn set_lr(&mut self, lr: f64);

    /// Saves the model (weights, tokenizer, optimiser state; a LoRA adapter in PEFT's format).
    fn save(&self, dir: &Path) -> Result<()>;

    /// Writes the weights alone, as an inference server or a later run loads them: the whole
    /// model without optimiser state, or, with `adapter_for` naming the base model, only the
    /// LoRA adapter in PEFT's format (an error when the model trains none).
    fn export(&self, dir: &Path, adapter_for: Option<&str>) -> Result<()>;

    /// Makes the weights just updated the ones samples are drawn from. In process the sampler
    /// is the learner and this does nothing; a remote sampler receives the new weights here.
    fn sync_weights(&mut self) -> Result<()> {
        Ok(())
    }
}

/// A model that samples and learns (the in-process model).
pub trait Model: Sampler + Learner {}

impl<T: Sampler + Learner> Model for T {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learners_refuse_samples_whose_lengths_disagree_and_empty_pairs() {
        let good = PpoSample {
            prompt: vec![1],
            response: vec![2, 3],
            advantage: 1.0,
            old_logprobs: vec![-1.0, -2.0],
            ref_logprobs: Some(vec![-1.0, -2.0]),
            choices: None,
        };
        assert!(PpoSample::check_all(std::slice::from_ref(&good)).is_ok());
        let short_old = PpoSample {
            old_logprobs: vec![-1.0],
            ..good.clone()
        };
        let short_ref = PpoSample {
            ref_logprobs: Some(vec![-1.0]),
            ..good.clone()
        };
        for bad in [short_old, short_ref] {
            let e = PpoSample::check_all(&[good.clone(), bad]).unwrap_err();
            assert!(e.contains("one old (and reference) log-prob"), "{e}");
        }
        let pairs: [(&[u32], &[u32]); 2] = [(&[1], &[2]), (&[1], &[])];
        assert!(check_training_pairs(pairs[..1].iter().copied()).is_ok());
        let e = check_training_pairs(pairs.iter().copied()).unwrap_err();
        assert!(e.contains("non-empty prompt and response"), "{e}");
        let constrained = PpoSample {
            choices: Some(vec![vec![2, 4], vec![3]]),
            ..good.clone()
        };
        assert!(PpoSample::check_all(std::slice::from_ref(&constrained)).is_ok());
        let outside = PpoSample {
            choices: Some(vec![vec![4, 5], vec![3]]),
            ..good.clone()
        };
        let e = PpoSample::check_all(&[outside]).unwrap_err();
        assert!(e.contains("response token 0 (2) is not among"), "{e}");
        let short = PpoSample {
            choices: Some(vec![vec![2]]),
            ..good
        };
        let e = PpoSample::check_all(&[short]).unwrap_err();
        assert!(e.contains("choices for 1 of its 2"), "{e}");
    }

    #[test]
    fn choices_follow_the_answers_trie_and_log_probs_renormalise_over_them() {
        let allowed = vec![vec![5, 6, 9], vec![5, 7, 9], vec![8, 9]];
        assert_eq!(
            choices_along(&allowed, &[5, 7, 9]),
            vec![vec![5, 8], vec![6, 7], vec![9]]
        );
        assert_eq!(
            choices_along(&allowed, &[5, 3]),
            vec![vec![5, 8], vec![6, 7]]
        );
        assert!(check_choices(&[5, 3], Some(&choices_along(&allowed, &[5, 3]))).is_err());
        // log-softmax over three tokens; among {0, 2} token 0 has log(e^0 / (e^0 + e^-1))
        let lp: Vec<f32> = [0f32, 1.0, -1.0]
            .iter()
            .map(|x| x - (1f32.exp() + 1.0 + (-1f32).exp()).ln())
            .collect();
        let want = -(1.0 + (-1f32).exp()).ln();
        assert!((logprob_within(&lp, 0, &[0, 2]) - want).abs() < 1e-6);
        assert_eq!(logprob_within(&lp, 2, &[2]), 0.0);
        assert_eq!(logprob_within(&lp, 1, &[]), lp[1]);
    }
}
