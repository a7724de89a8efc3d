//! `rlanything serve`: the OpenAI-compatible API over a checkpoint, so generation can be spread
//! over processes and machines without GPUs, and the remote path is tested over real HTTP. A
//! trainer pushes its new weights with `POST /update_weights_from_disk` (SGLang's call), or
//! LoRA adapters with `POST /v1/load_lora_adapter` (vLLM's call).

use anyhow::{Context, Result};
use candle_core::{DType, Device};
use clap::Args as ClapArgs;
use rla_model::Lm;
use std::path::PathBuf;

/// Serve a checkpoint over the OpenAI-compatible API.
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// A checkpoint folder (Hugging Face layout), or a Hugging Face id (`owner/name[@rev]`)
    /// found in the local hub cache.
    #[arg(long)]
    pub model: PathBuf,
    /// The model's name in requests and `/v1/models` (default: the folder's name, or the hub
    /// id).
    #[arg(long)]
    pub name: Option<String>,
    /// Address to listen on; beyond loopback it needs --api-key-env.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port (0 picks a free one; the address is printed).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Model calls (completions, chat, weight and adapter updates) run at once, each on a thread
    /// of its own (generation itself runs one request at a time, on every core); connections
    /// themselves hold no thread.
    #[arg(long, default_value_t = 4)]
    pub workers: usize,
    /// A LoRA adapter (PEFT folder) to serve as a model of its own, `NAME=DIR` or `DIR` (named
    /// after the folder), like vLLM's `--lora-modules`; repeat for more.
    #[arg(long = "adapter", value_name = "[NAME=]DIR")]
    pub adapters: Vec<String>,
    /// Take only requests with `Authorization: Bearer <KEY>`; the key is read from this
    /// environment variable.
    #[arg(long)]
    pub api_key_env: Option<String>,
    /// Seconds a request's head and body may take to arrive; past them the client is answered
    /// 408 and its connection closed (a client that declares a body and never sends it, or
    /// trickles it).
    #[arg(long, default_value_t = 60.0)]
    pub body_timeout_secs: f64,
}

pub fn run(a: Args) -> Result<()> {
    let key = crate::access::api_key(a.api_key_env.as_deref())?;
    if key.as_deref() == Some("") {
        anyhow::bail!(
            "--api-key-env: the environment variable {} is empty",
            a.api_key_env.as_deref().unwrap_or("")
        );
    }
    if !crate::access::is_loopback(&a.host) {
        if key.is_none() {
            anyhow::bail!(
                "--host {} is reachable beyond this machine: give --api-key-env VAR (requests must \
                 then carry `Authorization: Bearer <key>`), or bind 127.0.0.1",
                a.host
            );
        }
        eprintln!(
            "serve: listening on {}:{}, beyond this machine: whoever reaches the port with the key \
             generates with the model, and loads weights (/update_weights_from_disk) and adapters \
             (/v1/load_lora_adapter) from any folder this user can read",
            a.host, a.port
        );
    }
    let model = crate::backend::model_dir(&a.model)?;
    let lm = Lm::load(&model, DType::F32, &Device::Cpu)
        .with_context(|| format!("loading {}", model.display()))?;
    let name = a.name.unwrap_or_else(|| {
        if !a.model.exists() {
            // a hub id: its name
            return a.model.display().to_string();
        }
        model
            .canonicalize()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "model".into())
    });
    let addr = format!("{}:{}", a.host, a.port);
    let body_timeout = std::time::Duration::try_from_secs_f64(a.body_timeout_secs)
        .ok()
        .filter(|d| !d.is_zero() && a.body_timeout_secs <= 86_400.0)
        .ok_or_else(|| {
            anyhow::anyhow!(
                "--body-timeout-secs {}: from above 0 to 86400 seconds",
                a.body_timeout_secs
            )
        })?;
    let options = rla_remote::server::Options {
        api_key: key,
        body_timeout,
        ..Default::default()
    };
    let loaders = rla_remote::server::Loaders::<Lm> {
        weights: Some(Box::new(|dir: &std::path::Path| {
            Lm::load(dir, DType::F32, &Device::Cpu).map_err(|e| e.to_string())
        })),
        adapter: Some(Box::new(|base: &Lm, dir: &std::path::Path| {
            base.with_adapter(dir).map_err(|e| e.to_string())
        })),
    };
    let mut adapters = Vec::new();
    for spec in &a.adapters {
        let (aname, dir) = match spec.split_once('=') {
            Some((n, d)) => (n.to_string(), PathBuf::from(d)),
            None => {
                let d = PathBuf::from(spec);
                let n = d
                    .canonicalize()
                    .ok()
                    .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                    .with_context(|| format!("--adapter {spec}: no such folder"))?;
                (n, d)
            }
        };
        if aname.is_empty() || aname == name {
            anyhow::bail!("--adapter {spec}: an adapter needs a name other than the model's");
        }
        lm.with_adapter(&dir)
            .with_context(|| format!("--adapter {spec}: loading {}", dir.display()))?;
        adapters.push((aname, dir));
    }
    let server = rla_remote::server::start_with(lm, loaders, &name, &addr, a.workers, options)
        .with_context(|| format!("listening on {addr}"))?;
    for (aname, dir) in &adapters {
        rla_remote::client::load_adapter(&server.url(), None, aname, &dir.to_string_lossy())
            .with_context(|| format!("--adapter {aname}"))?;
        println!("adapter `{aname}` from {}", dir.display());
    }
    // the address on its own line, flushed, for scripts that start servers on port 0
    println!("serving `{name}` on {}", server.url());

    use std::io::Write;
    std::io::stdout().flush()?;
    server.wait();
    Ok(())
}

/// Probe a server.
#[derive(ClapArgs, Debug)]
pub struct ProbeArgs {
    /// The server's base URL (`http://host:port`).
    #[arg(long)]
    pub url: String,
    /// The model's name on it.
    #[arg(long)]
    pub model: String,
    /// Send `Authorization: Bearer <KEY>`, the key read from this environment variable.
    #[arg(long)]
    pub api_key_env: Option<String>,
    /// Seconds allowed for each request.
    #[arg(long, default_value_t = 120.0)]
    pub timeout_s: f64,
}

pub fn probe(a: ProbeArgs) -> Result<()> {
    let key = crate::access::api_key(a.api_key_env.as_deref())?;
    if !(a.timeout_s > 0.0 && a.timeout_s.is_finite()) {
        anyhow::bail!("--timeout-s must be positive");
    }
    let checks = rla_remote::probe::probe(
        &a.url,
        &a.model,
        key.as_deref(),
        std::time::Duration::from_secs_f64(a.timeout_s),
    );
    let mut missing = Vec::new();
    for c in &checks {
        let (mark, what) = match &c.result {
            Ok(s) => ("yes", s.clone()),
            Err(e) => ("no ", e.clone()),
        };
        let need = if c.needed {
            "needed"
        } else {
            "used if present"
        };
        println!("{mark}  {:<48} ({need}) {what}", c.feature);
        if c.needed && c.result.is_err() {
            missing.push(c.feature);
        }
    }
    if !missing.is_empty() {
        anyhow::bail!(
            "{} cannot serve RL runs: it lacks {}",
            a.url,
            missing.join("; ")
        );
    }
    println!("{} serves what RL runs need", a.url);
    Ok(())
}
