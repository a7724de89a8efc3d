//! # rla-torch — a learner on PyTorch FSDP2 behind the [`Learner`] trait
//!
//! The loop, the settings and the rules stay in Rust; the update of a model runs in an existing
//! distributed trainer: a Python worker launched with `torchrun` (one process per device, as
//! many machines as the rendezvous joins) over a Hugging Face checkpoint, sharded with FSDP2
//! (`fully_shard`), optionally with PEFT LoRA, bf16 compute over f32 master weights, activation
//! checkpointing and CPU offload; gloo on CPUs, NCCL on GPUs. The protocol is narrow, shaped like
//! the trainer APIs people use (Tinker's `forward_backward` / `optim_step`): `init`,
//! `logprobs`, `forward_backward`, `optim_step`, `set_lr`, `save_state` / `load_state`,
//! `export`, `health`, `shutdown` ([`wire`] for the framing; the worker's docstring for the
//! ops). The loop sends the token ids its sampler returned; nothing is re-tokenised.
//!
//! The loss is the candle learner's: PPO-clip (log-ratio clamp, k3 KL against the frozen
//! reference) or the SFT negative log-likelihood, the token mean within each sequence, then the
//! mean over sequences, whatever the ranks and micro-batches.
//!
//! [`TorchModel`] pairs the worker with a sampler: in process, a model of another back end
//! (candle) that loads the worker's new weights after every update
//! ([`Learner::sync_weights`]); with inference servers, none (the servers sample, and the
//! push modes carry the exported weights to them).

pub mod wire;
mod worker;

pub use worker::{Worker, WorkerError, WORKER_SOURCE};

use rla_lm::{
    Backend, Codec, Learner, LmError, Model, OpenOptions, PpoSample, Sample, Sampler, StepStats,
};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::path::{Path, PathBuf};
use wire::Array;

/// Which learner trains a model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LearnerKind {
    /// The in-process candle learner.
    #[default]
    Candle,
    /// The PyTorch FSDP2 worker.
    Torch,
}

/// A model's learner (`[policy.learner]`, `[reward.learner]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LearnerSpec {
    /// `candle` (in process) or `torch` (the FSDP2 worker).
    pub backend: LearnerKind,
    /// The Python interpreter that has PyTorch, transformers and safetensors (and peft for
    /// LoRA).
    pub python: String,
    /// Processes (devices) per node.
    pub nproc: usize,
    /// Nodes (machines). With more than one, this machine is node 0 and each other one runs
    /// the worker's torchrun with its `--node-rank` (see docs/learner.md).
    pub nnodes: usize,
    /// `HOST:PORT` of the rendezvous (node 0's address the other nodes reach), when `nnodes > 1`.
    pub rdzv_endpoint: Option<String>,
    /// Keeps the sharded weights and optimiser state in CPU memory (FSDP2's CPU offload).
    pub offload: bool,
    /// Recomputes activations in the backward pass instead of keeping them.
    pub activation_checkpointing: bool,
    /// Micro-batches hold at most this many tokens (longest row × rows; 0: only the
    /// model's `micro_batch` sequences bound them).
    pub token_budget: usize,
    /// Seconds a call (and the worker's start) may take.
    pub timeout_s: f64,
    /// Stay on the CPU (gloo) even where CUDA is present.
    pub cpu: bool,
    /// The GPUs of this machine the worker uses, one a process (`"0,1,2,3"`, its
    /// `CUDA_VISIBLE_DEVICES`), so the policy's and the judge's learners, and servers, can
    /// share a machine; unset, it inherits the run's.
    pub devices: Option<String>,
}

impl Default for LearnerSpec {
    fn default() -> Self {
        LearnerSpec {
            backend: LearnerKind::Candle,
            python: "python3".into(),
            nproc: 1,
            nnodes: 1,
            rdzv_endpoint: None,
            offload: false,
            activation_checkpointing: false,
            token_budget: 0,
            timeout_s: 600.0,
            cpu: false,
            devices: None,
        }
    }
}

impl LearnerSpec {
    /// Checks the settings; the error names the key.
    pub fn validate(&self, table: &str) -> Result<(), String> {
        if self.nproc == 0 || self.nnodes == 0 {
            return Err(format!(
                "{table}.nproc and {table}.nnodes must be at least 1"
            ));
        }
        for (key, v, max) in [
            ("nproc", self.nproc, 1 << 10),
            ("nnodes", self.nnodes, 1 << 12),
            ("token_budget", self.token_budget, 1 << 30),
        ] {
            if v > max {
                return Err(format!("{table}.{key} = {v}: at most {max}"));
            }
        }
        if !(self.timeout_s.is_finite() && self.timeout_s > 0.0) {
            return Err(format!(
                "{table}.timeout_s must be a positive number of seconds"
            ));
        }
        if self.timeout_s > 7.0 * 86_400.0 {
            return Err(format!(
                "{table}.timeout_s = {}: at most 604800 (a week)",
                self.timeout_s
            ));
        }
        if let Some(d) = &self.devices {
            let ids: Vec<&str> = d.split(',').map(str::trim).collect();
            if ids.iter().any(|i| i.parse::<u32>().is_err()) {
                return Err(format!(
                    "{table}.devices = {d:?}: list GPU numbers separated by commas, as \"0,1,2,3\""
                ));
            }
            if ids.len() != self.nproc {
                return Err(format!(
                    "{table}.devices lists {} GPUs for nproc = {} processes: one each",
                    ids.len(),
                    self.nproc
                ));
            }
        }
        match (&self.rdzv_endpoint, self.nnodes > 1) {
            (None, true) => Err(format!(
                "{table}.nnodes = {}: set {table}.rdzv_endpoint to HOST:PORT of this machine, \
                 which the other nodes reach",
                self.nnodes
            )),
            (Some(ep), _)
                if ep
                    .rsplit_once(':')
                    .is_none_or(|(_, p)| p.parse::<u16>().is_err()) =>
            {
                Err(format!("{table}.rdzv_endpoint = {ep:?}: use HOST:PORT"))
            }
            _ if self.backend == LearnerKind::Candle && *self != LearnerSpec::default() => Err(
                format!("{table} sets the torch worker's options but backend = \"candle\""),
            ),
            _ => Ok(()),
        }
    }
}

fn lost(e: WorkerError) -> LmError {
    LmError::backend(e)
}

fn abs(p: &Path) -> String {
    std::path::absolute(p)
        .unwrap_or_else(|_| p.to_path_buf())
        .to_string_lossy()
        .into_owned()
}

/// The arrays of a batch of (prompt, response) pairs, in the worker's layout.
fn batch<'a>(pairs: impl Iterator<Item = (&'a [u32], &'a [u32])>) -> Vec<(String, Array)> {
    let (mut tokens, mut lengths, mut plens) = (vec![], vec![], vec![]);
    for (p, r) in pairs {
        tokens.extend(p.iter().chain(r).map(|&t| t as i32));
        lengths.push((p.len() + r.len()) as i32);
        plens.push(p.len() as i32);
    }
    vec![
        ("tokens".into(), Array::I32(tokens)),
        ("lengths".into(), Array::I32(lengths)),
        ("prompt_lengths".into(), Array::I32(plens)),
    ]
}

/// The per-token choices of constrained responses as two flat arrays: `choice_counts` (one per
/// response token, 0 for a free one) and `choice_tokens` (the choices, in order).
fn choice_arrays(choices: &[Option<&[Vec<u32>]>], lens: &[usize]) -> Vec<(String, Array)> {
    if choices.iter().all(Option::is_none) {
        return vec![];
    }
    let (mut counts, mut tokens) = (vec![], vec![]);
    for (c, &n) in choices.iter().zip(lens) {
        for t in 0..n {
            let here = c.and_then(|c| c.get(t)).map(Vec::as_slice).unwrap_or(&[]);
            counts.push(here.len() as i32);
            tokens.extend(here.iter().map(|&x| x as i32));
        }
    }
    vec![
        ("choice_counts".into(), Array::I32(counts)),
        ("choice_tokens".into(), Array::I32(tokens)),
    ]
}

fn check_pairs<'a>(pairs: impl Iterator<Item = (&'a [u32], &'a [u32])>) -> rla_lm::Result<()> {
    rla_lm::check_training_pairs(pairs).map_err(LmError::Unsupported)
}

/// Splits a flat list of per-token values by the responses' lengths.
fn split(flat: Vec<f32>, lens: impl Iterator<Item = usize>) -> rla_lm::Result<Vec<Vec<f32>>> {
    let mut out = vec![];
    let mut at = 0;
    for n in lens {
        let part = flat.get(at..at + n).ok_or_else(|| {
            LmError::Unsupported("the worker returned fewer log-probabilities than tokens".into())
        })?;
        out.push(part.to_vec());
        at += n;
    }
    Ok(out)
}

/// The learner: a running worker that holds the model, its optimiser and its KL reference.
pub struct TorchLearner {
    worker: Worker,
    lr: Option<f64>,
    frozen_reference: bool,
    /// The sampling temperature of its PPO samples (their log-probabilities are tempered).
    temperature: f64,
}

impl TorchLearner {
    /// Starts a worker on the checkpoint in `dir` and initialises it for training with
    /// `opts.train` (which must be set); the worker's files go to `scratch`.
    pub fn start(
        dir: &Path,
        opts: &OpenOptions,
        spec: &LearnerSpec,
        scratch: &Path,
    ) -> rla_lm::Result<TorchLearner> {
        let t = opts.train.as_ref().ok_or_else(|| {
            LmError::Unsupported(
                "the torch learner is for training; open the model to train".into(),
            )
        })?;
        let worker = Worker::start(spec, scratch).map_err(lost)?;
        let dtype = match opts.dtype.as_str() {
            "" => "f32".to_string(),
            d => match rla_lm::Precision::parse(d).map_err(LmError::Unsupported)? {
                rla_lm::Precision::F32 => "f32".into(),
                rla_lm::Precision::Bf16 => "bf16".into(),
                rla_lm::Precision::F16 => "f16".into(),
                rla_lm::Precision::F64 => {
                    return Err(LmError::Unsupported(
                        "the torch learner computes in f32, bf16 or f16, not f64".into(),
                    ))
                }
            },
        };
        let frozen = t.ppo.frozen_reference();
        let config = json!({
            "model_dir": abs(dir),
            "dtype": dtype,
            "lr": t.lr,
            "micro_batch": t.micro_batch,
            "token_budget": spec.token_budget,
            "max_grad_norm": 1.0,
            "optimizer": {"beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.0},
            "ppo": {"clip_eps": t.ppo.clip_eps, "log_ratio_clamp": t.ppo.log_ratio_clamp,
                    "kl_beta": t.ppo.kl_beta},
            "temperature": if t.temperature > 0.0 { t.temperature } else { 1.0 },
            "lora": t.lora.as_ref().map(|l| json!({"r": l.r, "alpha": l.alpha, "targets": l.targets})),
            "seed": t.seed,
            "frozen_reference": frozen,
            "reference_dir": opts.reference.as_deref().map(abs),
            "resume": opts.resume.as_deref().map(|r| abs(&r.join(STATE_DIR))),
            "offload": spec.offload,
            "activation_checkpointing": spec.activation_checkpointing,
        });
        worker
            .call("init", json!({ "config": config }), vec![])
            .map_err(|e| LmError::Unsupported(format!("loading {}: {e}", dir.display())))?;
        Ok(TorchLearner {
            worker,
            lr: None,
            frozen_reference: frozen,
            temperature: if t.temperature > 0.0 {
                t.temperature
            } else {
                1.0
            },
        })
    }

    /// The worker's own report: its world size, torch version, device, and whether it holds
    /// a model.
    pub fn health(&self) -> rla_lm::Result<serde_json::Value> {
        Ok(self.call("health", json!({}), vec![])?.header)
    }

    /// The running worker.
    pub fn worker(&self) -> &Worker {
        &self.worker
    }

    fn call(
        &self,
        op: &str,
        args: serde_json::Value,
        arrays: Vec<(String, Array)>,
    ) -> rla_lm::Result<wire::Message> {
        self.worker.call(op, args, arrays).map_err(lost)
    }

    /// Log-probabilities of the responses under `which` model at `temperature`.
    fn logprobs(
        &self,
        which: &str,
        pairs: &[(Vec<u32>, Vec<u32>)],
        choices: &[Option<&[Vec<u32>]>],
        temperature: f64,
    ) -> rla_lm::Result<Vec<Vec<f32>>> {
        if pairs.is_empty() {
            return Ok(vec![]);
        }
        check_pairs(pairs.iter().map(|(p, r)| (p.as_slice(), r.as_slice())))?;
        let mut arrays = batch(pairs.iter().map(|(p, r)| (p.as_slice(), r.as_slice())));
        let lens: Vec<usize> = pairs.iter().map(|(_, r)| r.len()).collect();
        arrays.extend(choice_arrays(choices, &lens));
        let mut m = self.call(
            "logprobs",
            json!({ "which": which, "temperature": temperature }),
            arrays,
        )?;
        let flat = m
            .take("logprobs")
            .ok_or_else(|| LmError::Unsupported("the worker's reply has no logprobs".into()))?
            .into_f32("logprobs")
            .map_err(LmError::Unsupported)?;
        split(flat, pairs.iter().map(|(_, r)| r.len()))
    }

    fn step(&mut self, loss: &str, arrays: Vec<(String, Array)>) -> rla_lm::Result<StepStats> {
        if let Some(lr) = self.lr.take() {
            self.call("set_lr", json!({ "lr": lr }), vec![])?;
        }
        let m = self.call("forward_backward", json!({ "loss": loss }), arrays)?;
        let s = self.call("optim_step", json!({}), vec![])?;
        let num = |m: &wire::Message, k: &str| m.header[k].as_f64().unwrap_or(f64::NAN);
        Ok(StepStats {
            loss: num(&m, "loss"),
            grad_norm: num(&s, "grad_norm"),
            sequences: m.header["sequences"].as_u64().unwrap_or(0) as usize,
            tokens: m.header["tokens"].as_u64().unwrap_or(0) as usize,
            clip_fraction: m.header["clip_fraction"].as_f64(),
            decision_entropy: None,
        })
    }
}

/// Where a checkpoint keeps the worker's sharded state (model, optimiser, RNG).
pub const STATE_DIR: &str = "learner_state";

impl Learner for TorchLearner {
    fn ppo_update(&mut self, samples: &[PpoSample]) -> rla_lm::Result<StepStats> {
        PpoSample::check_all(samples).map_err(LmError::Unsupported)?;
        check_pairs(
            samples
                .iter()
                .map(|s| (s.prompt.as_slice(), s.response.as_slice())),
        )?;
        let mut arrays = batch(
            samples
                .iter()
                .map(|s| (s.prompt.as_slice(), s.response.as_slice())),
        );
        let flat = |f: &dyn Fn(&PpoSample) -> &[f32]| {
            samples.iter().flat_map(|s| f(s).iter().copied()).collect()
        };
        arrays.push((
            "old_logprobs".into(),
            Array::F32(flat(&|s| &s.old_logprobs)),
        ));
        if samples.iter().all(|s| s.ref_logprobs.is_some()) {
            arrays.push((
                "ref_logprobs".into(),
                Array::F32(flat(&|s| s.ref_logprobs.as_deref().unwrap_or(&[]))),
            ));
        }
        arrays.push((
            "advantages".into(),
            Array::F32(samples.iter().map(|s| s.advantage).collect()),
        ));
        let choices: Vec<Option<&[Vec<u32>]>> =
            samples.iter().map(|s| s.choices.as_deref()).collect();
        let lens: Vec<usize> = samples.iter().map(|s| s.response.len()).collect();
        arrays.extend(choice_arrays(&choices, &lens));
        self.step("ppo", arrays)
    }

    fn sft_update(&mut self, pairs: &[(Vec<u32>, Vec<u32>)]) -> rla_lm::Result<StepStats> {
        check_pairs(pairs.iter().map(|(p, r)| (p.as_slice(), r.as_slice())))?;
        self.step(
            "sft",
            batch(pairs.iter().map(|(p, r)| (p.as_slice(), r.as_slice()))),
        )
    }

    fn reference_logprobs_within(
        &self,
        pairs: &[(Vec<u32>, Vec<u32>)],
        choices: &[Option<&[Vec<u32>]>],
    ) -> rla_lm::Result<Vec<Vec<f32>>> {
        if !self.frozen_reference {
            return Err(LmError::Unsupported(
                "no KL reference: enable training with kl_beta > 0 and a frozen reference".into(),
            ));
        }
        rla_lm::check_choice_lists(pairs, choices).map_err(LmError::Unsupported)?;
        self.logprobs("reference", pairs, choices, self.temperature)
    }

    fn logprobs_within(
        &self,
        pairs: &[(Vec<u32>, Vec<u32>)],
        choices: &[Option<&[Vec<u32>]>],
    ) -> rla_lm::Result<Vec<Vec<f32>>> {
        rla_lm::check_choice_lists(pairs, choices).map_err(LmError::Unsupported)?;
        self.logprobs("policy", pairs, choices, self.temperature)
    }

    fn sft_loss(&self, pairs: &[(Vec<u32>, Vec<u32>)]) -> rla_lm::Result<f64> {
        let lp = self.logprobs("policy", pairs, &vec![None; pairs.len()], 1.0)?;
        let total: f64 = lp
            .iter()
            .map(|r| -r.iter().map(|&x| x as f64).sum::<f64>() / r.len().max(1) as f64)
            .sum();
        Ok(total / pairs.len().max(1) as f64)
    }

    fn set_lr(&mut self, lr: f64) {
        // sent before the next update (set_lr cannot fail; the call can)
        self.lr = Some(lr);
    }

    fn save(&self, dir: &Path) -> rla_lm::Result<()> {
        self.export(dir, None)?;
        self.call(
            "save_state",
            json!({ "dir": abs(&dir.join(STATE_DIR)) }),
            vec![],
        )?;
        Ok(())
    }

    fn export(&self, dir: &Path, adapter_for: Option<&str>) -> rla_lm::Result<()> {
        self.call(
            "export",
            json!({ "dir": abs(dir), "adapter_for": adapter_for }),
            vec![],
        )
        .map_err(|e| match e {
            LmError::Backend(b) if b.to_string().contains("no LoRA adapter") => {
                LmError::Unsupported("the model trains no LoRA adapter to export".into())
            }
            e => e,
        })?;
        Ok(())
    }
}

/// A model that learns in the torch worker and samples with another back end's model in this
/// process (reloaded from the worker's weights after every update), or not at all here when
/// inference servers sample.
pub struct TorchModel {
    learner: TorchLearner,
    codec: Box<dyn Codec>,
    sampler: Option<Box<dyn Model>>,
    backend: &'static dyn Backend,
    sample_opts: OpenOptions,
    scratch: PathBuf,
}

/// Opens the checkpoint in `dir` for training in a torch worker (`opts.train` set), with a
/// sampler of `backend` in this process when `sample_here`; the worker's files go to `scratch`.
pub fn open(
    backend: &'static dyn Backend,
    dir: &Path,
    opts: &OpenOptions,
    spec: &LearnerSpec,
    scratch: &Path,
    sample_here: bool,
) -> rla_lm::Result<TorchModel> {
    let learner = TorchLearner::start(dir, opts, spec, scratch)?;
    let sample_opts = OpenOptions {
        dtype: opts.dtype.clone(),
        ..Default::default()
    };
    let sampler = match sample_here {
        true => Some(backend.open(dir, &sample_opts)?),
        false => None,
    };
    Ok(TorchModel {
        learner,
        codec: backend.codec(dir)?,
        sampler,
        backend,
        sample_opts,
        scratch: scratch.to_path_buf(),
    })
}

impl TorchModel {
    /// The learner.
    pub fn learner(&self) -> &TorchLearner {
        &self.learner
    }

    fn sampler(&self) -> rla_lm::Result<&dyn Model> {
        self.sampler.as_deref().ok_or_else(|| {
            LmError::Unsupported("this model samples on inference servers, not here".into())
        })
    }
}

rla_lm::codec_by_field!([] TorchModel, codec);

impl Sampler for TorchModel {
    fn sample(&self, r: &rla_lm::Request) -> rla_lm::Result<Vec<Vec<Sample>>> {
        self.sampler()?.sample(r)
    }
    fn score(&self, pairs: &[(Vec<u32>, Vec<u32>)]) -> rla_lm::Result<Vec<Vec<f32>>> {
        self.sampler()?.score(pairs)
    }
    fn top_logprobs(
        &self,
        pairs: &[(Vec<u32>, Vec<u32>)],
        k: usize,
    ) -> rla_lm::Result<rla_lm::Alternatives> {
        self.sampler()?.top_logprobs(pairs, k)
    }
    fn vocab_size(&self) -> Option<usize> {
        self.sampler.as_ref().and_then(|s| s.vocab_size())
    }
    fn parameter_count(&self) -> Option<usize> {
        self.sampler.as_ref().and_then(|s| s.parameter_count())
    }
    fn context_len(&self) -> Option<usize> {
        self.sampler.as_ref().and_then(|s| s.context_len())
    }
}

impl Learner for TorchModel {
    fn ppo_update(&mut self, samples: &[PpoSample]) -> rla_lm::Result<StepStats> {
        self.learner.ppo_update(samples)
    }
    fn sft_update(&mut self, pairs: &[(Vec<u32>, Vec<u32>)]) -> rla_lm::Result<StepStats> {
        self.learner.sft_update(pairs)
    }
    fn reference_logprobs_within(
        &self,
        pairs: &[(Vec<u32>, Vec<u32>)],
        choices: &[Option<&[Vec<u32>]>],
    ) -> rla_lm::Result<Vec<Vec<f32>>> {
        self.learner.reference_logprobs_within(pairs, choices)
    }
    fn logprobs_within(
        &self,
        pairs: &[(Vec<u32>, Vec<u32>)],
        choices: &[Option<&[Vec<u32>]>],
    ) -> rla_lm::Result<Vec<Vec<f32>>> {
        self.learner.logprobs_within(pairs, choices)
    }
    fn sft_loss(&self, pairs: &[(Vec<u32>, Vec<u32>)]) -> rla_lm::Result<f64> {
        self.learner.sft_loss(pairs)
    }
    fn set_lr(&mut self, lr: f64) {
        self.learner.set_lr(lr)
    }
    fn save(&self, dir: &Path) -> rla_lm::Result<()> {
        self.learner.save(dir)
    }
    fn export(&self, dir: &Path, adapter_for: Option<&str>) -> rla_lm::Result<()> {
        self.learner.export(dir, adapter_for)
    }
    fn sync_weights(&mut self) -> rla_lm::Result<()> {
        if self.sampler.is_none() {
            return Ok(());
        }
        let dir = self.scratch.join("weights");
        rla_lm::replace_dir_atomic(&dir, |tmp| self.learner.export(tmp, None))?;
        self.sampler = Some(self.backend.open(&dir, &self.sample_opts)?);
        Ok(())
    }
}
