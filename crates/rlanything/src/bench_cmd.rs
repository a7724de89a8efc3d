//! `rlanything bench lm`: model throughput on this machine, with model FLOPs utilisation, and
//! what generating through an OpenAI-compatible server on loopback costs. `rlanything bench
//! iteration`: the training seconds an iteration of a run's config takes, phase by phase.

use anyhow::Result;
use candle_core::{DType, Device, Tensor};
use rla_model::config::{Arch, ModelConfig};
use rla_model::sample::SampleParams;
use rla_model::tok::build_word_level;
use rla_model::train::TrainConfig;
use rla_model::{Learner, Lm, Sampler};
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Subcommand)]
pub enum BenchCmd {
    /// Prefill, decode (batch 1 and 32) and training throughput of a tiny model.
    Lm {
        /// Width of the benchmark model.
        #[arg(long, default_value_t = 256)]
        hidden: usize,
        /// Blocks.
        #[arg(long, default_value_t = 4)]
        layers: usize,
        /// Vocabulary size.
        #[arg(long, default_value_t = 4096)]
        vocab: usize,
        /// Also save the benchmark checkpoint here (for benchmarks/lm_bench_torch.py).
        #[arg(long)]
        save: Option<PathBuf>,
        /// Measure this checkpoint instead of a tiny random model (such as one `lm convert`
        /// wrote); --hidden, --layers and --vocab are then the checkpoint's.
        #[arg(long, conflicts_with = "save")]
        model: Option<PathBuf>,
        /// Threads (default: RAYON_NUM_THREADS, else the physical cores).
        #[arg(long)]
        threads: Option<usize>,
        /// Run only these measurements (for profiling one of them).
        #[arg(long, value_enum, value_delimiter = ',')]
        only: Vec<Measurement>,
        /// Timed repetitions of each measurement (after one untimed warm-up).
        #[arg(long, default_value_t = 3)]
        reps: usize,
    },
    /// Training seconds an iteration of a run config: the iterations played in a fresh run
    /// folder with no evaluation, each phase's seconds (rollouts, judge, update, adaptation)
    /// and their mean.
    Iteration {
        /// Run configuration (TOML).
        #[arg(long)]
        config: PathBuf,
        /// Iterations to time.
        #[arg(long, default_value_t = 3)]
        iterations: usize,
        /// Sets a key of the config (`--set household.train_end_loops=6`; repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<rla_train::config::Override>,
        /// The run's seed.
        #[arg(long)]
        seed: Option<u64>,
        /// Keep the run here (a new folder) instead of a temporary one.
        #[arg(long)]
        run: Option<PathBuf>,
        /// Print the table as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `bench iteration`: trains `iterations` iterations of `config` without evaluation and prints
/// the seconds of each phase of each, and their means.
fn bench_iteration(
    config: &std::path::Path,
    iterations: usize,
    ov: &[rla_train::config::Override],
    run: Option<PathBuf>,
    json: bool,
) -> Result<()> {
    let mut cfg = rla_train::config::RunConfig::load_with(config, ov)?;
    cfg.iterations = iterations.max(1);
    (cfg.eval.in_domain, cfg.eval.ood, cfg.eval.validation) = (0, 0, 0);
    let tmp = tempfile::tempdir()?;
    let dir = run.unwrap_or_else(|| tmp.path().join("run"));
    if dir.exists() {
        anyhow::bail!("{} exists: bench iteration times a new run", dir.display());
    }
    let metrics = crate::train_cmd::train_run_metrics(cfg, &dir, false, false)?;
    let rows: Vec<[f64; 5]> = metrics
        .iter()
        .filter(|m| m.iteration > 0)
        .map(|m| {
            let t = [m.time_rollout, m.time_judge, m.time_update, m.time_adapt];
            [t[0], t[1], t[2], t[3], t.iter().sum()]
        })
        .collect();
    let n = rows.len().max(1) as f64;
    let mean: Vec<f64> = (0..5)
        .map(|c| rows.iter().map(|r| r[c]).sum::<f64>() / n)
        .collect();
    if json {
        let v = serde_json::json!({
            "config": config.display().to_string(),
            "iterations": rows.iter().map(|r| serde_json::json!({
                "rollout": r[0], "judge": r[1], "update": r[2], "adapt": r[3], "total": r[4],
            })).collect::<Vec<_>>(),
            "mean": { "rollout": mean[0], "judge": mean[1], "update": mean[2], "adapt": mean[3], "total": mean[4] },
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    println!("{}: training seconds an iteration", config.display());
    println!("iteration   rollout    judge   update    adapt    total");
    for (m, r) in metrics.iter().filter(|m| m.iteration > 0).zip(&rows) {
        println!(
            "{:>9} {:>9.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1}",
            m.iteration, r[0], r[1], r[2], r[3], r[4]
        );
    }
    println!(
        "{:>9} {:>9.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1}",
        "mean", mean[0], mean[1], mean[2], mean[3], mean[4]
    );
    Ok(())
}

/// One measurement of `bench lm`.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Measurement {
    /// Prefill of 8 × 256 tokens.
    Prefill,
    /// Decode at batch 1.
    Decode1,
    /// Decode at batch 32.
    Decode32,
    /// Decode at batch 32 through `rlanything serve`'s server on loopback (HTTP, JSON and the
    /// remote sampler's checks), against the same in process.
    Served32,
    /// Forward + backward + AdamW on 8 × 128 tokens.
    Train,
}

/// Decode at batch 32, in process and through a server on loopback, with the cost of the HTTP
/// path.
fn served_decode(
    lm: &Lm,
    vocab: usize,
    reps: usize,
    flops_per_token: f64,
    report: &dyn Fn(&str, f64, f64, f64),
) -> Result<()> {
    let batch = 32;
    let prompts: Vec<Vec<u32>> = (0..batch)
        .map(|i| {
            (0..16)
                .map(|j| ((i * 16 + j) % (vocab - 4)) as u32 + 4)
                .collect()
        })
        .collect();
    let p = SampleParams {
        max_new_tokens: 64,
        seed: 0,
        ..Default::default()
    };
    let served = Lm {
        model: lm.model.clone(),
        tok: lm.tok.clone(),
        train_cfg: TrainConfig::default(),
        opt: None,
        lora: None,
        reference: None,
    };
    let server = rla_remote::server::start(
        served,
        "bench",
        "127.0.0.1:0",
        2,
        rla_remote::server::Options::default(),
    )?;
    let remote = rla_remote::client::RemoteSampler::new(
        lm.tok.clone(),
        rla_remote::client::Endpoints::one(&server.url(), "bench"),
    )?;
    let time = |s: &dyn Sampler| -> Result<f64> {
        s.generate(&prompts, 1, &p)?;
        let t = Instant::now();
        for _ in 0..reps {
            let out = s.generate(&prompts, 1, &p)?;
            anyhow::ensure!(out.iter().all(|g| g[0].tokens.len() == 64), "short samples");
        }
        Ok(t.elapsed().as_secs_f64())
    };
    // alternate, so both see the same machine
    let (mut local, mut http) = (0.0, 0.0);
    for _ in 0..2 {
        local += time(lm)?;
        http += time(&remote)?;
    }
    tracing::debug!(local, http, "seconds");
    let tokens = (2 * reps * batch * 64) as f64;
    report("decode 32, in process", tokens, local, flops_per_token);
    report("decode 32, via serve", tokens, http, flops_per_token);
    println!(
        "the HTTP path costs {:.1}% of in-process decode throughput at batch 32",
        100.0 * (1.0 - local / http)
    );
    server.stop();
    Ok(())
}

/// Peak f32 FLOP/s of this CPU: cores × GHz × FLOPs per cycle (32 with AVX2+FMA, 64 with AVX-512).
fn cpu_peak(threads: usize) -> (f64, String) {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let mhz = info
        .lines()
        .find(|l| l.starts_with("cpu MHz"))
        .and_then(|l| l.split(':').nth(1))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .unwrap_or(2000.0);
    let flags = info.lines().find(|l| l.starts_with("flags")).unwrap_or("");
    let per_cycle = if flags.contains(" avx512f") {
        64.0
    } else if flags.contains(" fma") && flags.contains(" avx2") {
        32.0
    } else {
        8.0
    };
    let peak = threads as f64 * mhz * 1e6 * per_cycle;
    (
        peak,
        format!(
            "{threads} cores × {:.2} GHz × {per_cycle} f32 FLOP/cycle = {:.1} GFLOP/s",
            mhz / 1000.0,
            peak / 1e9
        ),
    )
}

fn corpus(vocab: usize) -> String {
    // a corpus with exactly enough distinct words for the vocabulary
    (0..vocab.saturating_sub(4) / 2)
        .map(|i| format!("w{i} "))
        .collect::<String>()
        + "\n"
        + &(0..vocab.saturating_sub(4) / 2)
            .map(|i| format!("v{i} "))
            .collect::<String>()
}

pub fn run(cmd: BenchCmd) -> Result<()> {
    let (hidden, layers, vocab, save, model, threads, only, reps) = match cmd {
        BenchCmd::Iteration {
            config,
            iterations,
            set,
            seed,
            run,
            json,
        } => {
            let ov = crate::train_cmd::overrides(&set, seed)?;
            return bench_iteration(&config, iterations, &ov, run, json);
        }
        BenchCmd::Lm {
            hidden,
            layers,
            vocab,
            save,
            model,
            threads,
            only,
            reps,
        } => (hidden, layers, vocab, save, model, threads, only, reps),
    };
    let reps = reps.max(1);
    let wanted = |m: Measurement| only.is_empty() || only.contains(&m);
    // no tensor op has run yet, so the kernels' thread pools start with this count
    let threads = rla_model::set_thread_count(threads);
    let (mut lm, cfg) = match &model {
        Some(dir) => {
            let lm = Lm::load(dir, DType::F32, &Device::Cpu)?;
            let cfg = lm.model.cfg.clone();
            (lm, cfg)
        }
        None => {
            let tok = build_word_level(&corpus(vocab), 1)?;
            let mut cfg = ModelConfig::tiny(
                Arch::Qwen3,
                tok.vocab_size().max(vocab),
                hidden,
                layers,
                (hidden / 64).max(1),
                (hidden / 128).max(1),
            );
            cfg.intermediate_size = hidden * 3;
            (Lm::init(&cfg, tok, 0, DType::F32, &Device::Cpu)?, cfg)
        }
    };
    lm.tok.eos_ids.clear(); // run every decode to its full length
    if let Some(dir) = &save {
        lm.save(dir)?;
    }
    let n = cfg.num_params() as f64;
    let (peak, peak_desc) = cpu_peak(threads);
    println!(
        "model: {}{:?} architecture, {:.2} M parameters (hidden {}, {} layers, vocab {})",
        model
            .as_ref()
            .map(|d| format!("{}, ", d.display()))
            .unwrap_or_default(),
        lm.model.arch,
        n / 1e6,
        cfg.hidden_size,
        cfg.num_hidden_layers,
        cfg.vocab_size
    );
    println!("peak:  {peak_desc}");
    println!("{:<22} {:>12} {:>10}", "measurement", "tokens/s", "MFU");
    let report = |name: &str, tokens: f64, secs: f64, flops_per_token: f64| {
        let tps = tokens / secs;
        println!(
            "{name:<22} {tps:>12.0} {:>9.1}%",
            100.0 * tps * flops_per_token / peak
        );
    };
    if wanted(Measurement::Prefill) {
        // prefill: 8 × 256 tokens
        let (b, t) = (8usize, 256usize);
        let ids = Tensor::from_vec(
            (0..b * t)
                .map(|i| (i % cfg.vocab_size) as u32)
                .collect::<Vec<_>>(),
            (b, t),
            &Device::Cpu,
        )?;
        let pos = Tensor::arange(0u32, t as u32, &Device::Cpu)?
            .unsqueeze(0)?
            .broadcast_as((b, t))?
            .contiguous()?;
        lm.model.forward(&ids, &pos, None, None)?;
        let s = Instant::now();
        for _ in 0..reps {
            lm.model.forward(&ids, &pos, None, None)?;
        }
        report(
            "prefill (8×256)",
            (reps * b * t) as f64,
            s.elapsed().as_secs_f64(),
            2.0 * n,
        );
    }
    // decode
    for (batch, m) in [(1usize, Measurement::Decode1), (32, Measurement::Decode32)] {
        if !wanted(m) {
            continue;
        }
        let prompts: Vec<Vec<u32>> = (0..batch)
            .map(|i| {
                (0..16)
                    .map(|j| ((i * 16 + j) % (cfg.vocab_size - 4)) as u32 + 4)
                    .collect()
            })
            .collect();
        let p = SampleParams {
            max_new_tokens: 64,
            seed: 0,
            ..Default::default()
        };
        lm.generate(&prompts, 1, &p)?;
        let s = Instant::now();
        for _ in 0..reps {
            lm.generate(&prompts, 1, &p)?;
        }
        let secs = s.elapsed().as_secs_f64();
        report(
            &format!("decode batch {batch} (64 new)"),
            (reps * batch * 64) as f64,
            secs,
            2.0 * n,
        );
    }
    if wanted(Measurement::Served32) {
        served_decode(&lm, cfg.vocab_size, reps, 2.0 * n, &report)?;
    }
    if wanted(Measurement::Train) {
        // training: forward + backward + AdamW on 8 × 128 tokens
        lm.enable_training(
            TrainConfig {
                lr: 1e-4,
                micro_batch: 8,
                ..Default::default()
            },
            None,
            0,
            None,
        )?;
        let pairs: Vec<(Vec<u32>, Vec<u32>)> = (0..8)
            .map(|i| {
                (
                    (0..1).map(|j| (i + j) as u32 + 4).collect(),
                    (0..128)
                        .map(|j| ((i * 128 + j) % (cfg.vocab_size - 4)) as u32 + 4)
                        .collect(),
                )
            })
            .collect();
        lm.sft_update(&pairs)?;
        let s = Instant::now();
        for _ in 0..reps {
            lm.sft_update(&pairs)?;
        }
        report(
            "train (8×128, fwd+bwd+AdamW)",
            (reps * 8 * 128) as f64,
            s.elapsed().as_secs_f64(),
            6.0 * n,
        );
    }
    Ok(())
}
