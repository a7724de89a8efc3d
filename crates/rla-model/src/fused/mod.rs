//! Fused CPU kernels with their own backward passes: attention (grouped-query, causal or with an
//! additive mask, reading keys and values in any layout), RMSNorm, and the log-probability of
//! target tokens (log-softmax and gather in one pass).
//!
//! A chain of plain tensor ops allocates and traverses a fresh tensor per op, forward and
//! backward; these kernels do each job in one pass over the data (attention with one small GEMM
//! per head instead of a batched product per op). Each is a candle custom op whose `bwd` returns
//! the exact gradient, so training goes through them. They run for f32 and f64 tensors on the CPU;
//! on other devices and dtypes the plain-op versions run instead, and the tests check that both
//! agree in value and in gradient.
//!
//! One file per kernel family (`linear`, `attention`, `rms_norm`, `rotary`, `swiglu`, `logprob`),
//! their plain-op versions in `reference`, the tables a forward pass shares in `tables`, what the
//! kernels share in `kernel`, and the vectorised `exp` in `exp`.

mod attention;
mod exp;
pub(crate) mod kernel;
mod linear;
mod logprob;
mod reference;
mod rms_norm;
mod rotary;
mod swiglu;
mod tables;

pub use attention::attention;
pub use exp::exp_f32_slice;
pub use kernel::{fusable, Float};
pub use linear::linear;
pub use logprob::token_logprobs;
pub use reference::{
    attention_plain, linear_plain, rms_norm_plain, rope_plain, swiglu_plain, token_logprobs_plain,
};
pub use rms_norm::rms_norm;
pub use rotary::rope;
pub use swiglu::swiglu;
pub use tables::{AttentionMask, Rotary};
