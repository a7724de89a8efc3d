//! A model that learns in process and samples on inference servers: rollouts, judging and
//! scoring go to the servers through [`rla_remote::client::RemoteSampler`]; updates run here;
//! after every update the new weights are written where the servers read them and the servers
//! are told to load them, as the `push` setting says: a checkpoint loaded with SGLang's
//! `/update_weights_from_disk`, a LoRA adapter loaded under a new name with vLLM's
//! `/v1/load_lora_adapter` (the following requests name it), or a checkpoint and a reload
//! command. `rlanything serve` takes all of them. The servers get the starting weights before
//! the first request, so every sample of the run comes from the weights the loop believes it
//! is sampling.

use crate::config::{Push, ServerSpec};
use anyhow::{Context, Result};
use rla_lm::{Codec, Learner, Model, PpoSample, Sample, SampleParams, Sampler, StepStats};
use rla_remote::client::{Endpoints, RemoteSampler};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The in-process learner and its servers.
pub struct Served {
    lm: Box<dyn Model>,
    remote: RemoteSampler<Box<dyn Codec>>,
    dir: PathBuf,
    version: u64,
    push: Push,
    model: String,
    reload_command: Option<String>,
}

impl Served {
    /// The learner `lm` with generation on `spec`'s servers, which tokenise with `codec` (the
    /// model's own tokenizer); new weights go to `dir`.
    pub fn new(
        lm: Box<dyn Model>,
        codec: Box<dyn Codec>,
        spec: &ServerSpec,
        dir: PathBuf,
    ) -> Result<Served> {
        let api_key = match &spec.api_key_env {
            Some(v) => Some(std::env::var(v).with_context(|| {
                format!("server.api_key_env: the environment variable {v} is not set")
            })?),
            None => None,
        };
        let cfg = Endpoints {
            urls: spec.endpoints.clone(),
            model: spec.model.clone(),
            api_key,
            timeout: Duration::from_secs_f64(spec.timeout_s),
            head_timeout: Duration::from_secs_f64(spec.head_timeout_s.unwrap_or(spec.timeout_s)),
            tries: spec.tries,
            concurrency: spec.concurrency,
            cooldown: Duration::from_secs(5),
            lora_api: spec.lora_api,
        };
        let remote = RemoteSampler::new(codec, cfg)?;
        let mut s = Served {
            lm,
            remote,
            dir,
            version: 0,
            push: spec.push,
            model: spec.model.clone(),
            reload_command: spec.reload_command.clone(),
        };
        s.push()
            .context("sending the starting weights to the servers")?;
        Ok(s)
    }

    /// Writes the weights as a new version and points the servers at it; the version before
    /// stays (a server may still be reading it), older ones go.
    fn push(&mut self) -> Result<()> {
        self.version += 1;
        let path = self.dir.join(format!("v{:06}", self.version));
        std::fs::create_dir_all(&self.dir)
            .with_context(|| format!("creating {}", self.dir.display()))?;
        let adapter_for = (self.push == Push::Lora).then_some(self.model.as_str());
        rla_lm::replace_dir_atomic(&path, |tmp| self.lm.export(tmp, adapter_for)).with_context(
            || format!("writing the weights for the servers to {}", path.display()),
        )?;
        let abs = path.canonicalize().unwrap_or(path.clone());
        let shown = abs.to_string_lossy().into_owned();
        match self.push {
            Push::Disk => self.remote.update_weights(&shown),
            Push::Lora => self
                .remote
                .load_adapter(&format!("{}-v{}", self.model, self.version), &shown),
            Push::Command => {
                let cmd = self.reload_command.as_deref().unwrap_or_default();
                run_reload(&cmd.replace("{path}", &shown))?;
                Ok(())
            }
        }
        .with_context(|| format!("loading {shown} on the servers"))?;
        if self.version > 2 {
            let old = self.dir.join(format!("v{:06}", self.version - 2));
            let _ = std::fs::remove_dir_all(old);
        }
        Ok(())
    }

    /// Where the current weights are.
    pub fn weights_dir(&self) -> &Path {
        &self.dir
    }
}

/// Runs a reload command through the shell; its failure names the command, its status and the
/// end of what it printed.
fn run_reload(cmd: &str) -> Result<()> {
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdin(std::process::Stdio::null())
        .output()
        .with_context(|| format!("starting the reload command `{cmd}`"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: String = err
            .chars()
            .rev()
            .take(500)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        anyhow::bail!("the reload command `{cmd}` failed ({}): {tail}", out.status);
    }
    Ok(())
}

rla_lm::codec_by_field!([] Served, remote);

impl Sampler for Served {
    fn sample(&self, r: &rla_lm::Request) -> rla_lm::Result<Vec<Vec<Sample>>> {
        self.remote.sample(r)
    }
    fn score(&self, pairs: &[(Vec<u32>, Vec<u32>)]) -> rla_lm::Result<Vec<Vec<f32>>> {
        self.remote.score(pairs)
    }
    fn generate_visual(
        &self,
        chats: &[Vec<rla_lm::VisualMessage>],
        n: usize,
        p: &SampleParams,
    ) -> rla_lm::Result<Vec<Vec<Sample>>> {
        self.remote.generate_visual(chats, n, p)
    }
}

impl Learner for Served {
    fn ppo_update(&mut self, samples: &[PpoSample]) -> rla_lm::Result<StepStats> {
        self.lm.ppo_update(samples)
    }
    fn sft_update(&mut self, pairs: &[(Vec<u32>, Vec<u32>)]) -> rla_lm::Result<StepStats> {
        self.lm.sft_update(pairs)
    }
    fn reference_logprobs_within(
        &self,
        pairs: &[(Vec<u32>, Vec<u32>)],
        choices: &[Option<&[Vec<u32>]>],
    ) -> rla_lm::Result<Vec<Vec<f32>>> {
        self.lm.reference_logprobs_within(pairs, choices)
    }
    fn logprobs_within(
        &self,
        pairs: &[(Vec<u32>, Vec<u32>)],
        choices: &[Option<&[Vec<u32>]>],
    ) -> rla_lm::Result<Vec<Vec<f32>>> {
        self.lm.logprobs_within(pairs, choices)
    }
    fn sft_loss(&self, pairs: &[(Vec<u32>, Vec<u32>)]) -> rla_lm::Result<f64> {
        self.lm.sft_loss(pairs)
    }
    fn set_lr(&mut self, lr: f64) {
        self.lm.set_lr(lr);
    }
    fn save(&self, dir: &Path) -> rla_lm::Result<()> {
        self.lm.save(dir)
    }
    fn export(&self, dir: &Path, adapter_for: Option<&str>) -> rla_lm::Result<()> {
        self.lm.export(dir, adapter_for)
    }
    fn sync_weights(&mut self) -> rla_lm::Result<()> {
        self.push()
            .map_err(|e| rla_lm::LmError::Unsupported(format!("{e:#}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RunConfig;

    #[test]
    fn server_settings_are_checked() {
        let mut c = RunConfig::default();
        c.policy.server = Some(ServerSpec::default());
        assert!(c
            .validate()
            .unwrap_err()
            .contains("policy.server.endpoints is empty"));
        let sv = c.policy.server.as_mut().unwrap();
        sv.endpoints = vec!["localhost:8000".into()];
        assert!(c.validate().unwrap_err().contains("`localhost:8000`"));
        let sv = c.policy.server.as_mut().unwrap();
        sv.endpoints = vec!["http://127.0.0.1:8000".into()];
        sv.tries = 0;
        assert!(c.validate().unwrap_err().contains("policy.server"));
        c.policy.server.as_mut().unwrap().tries = 2;
        c.validate().unwrap();
        let t: RunConfig = toml::from_str(
            "[reward.server]\nendpoints = [\"http://a:1\"]\nmodel = \"judge\"\ntimeout_s = 5\n",
        )
        .unwrap();
        let sv = t.reward.server.unwrap();
        assert_eq!(
            (sv.model.as_str(), sv.timeout_s, sv.tries),
            ("judge", 5.0, 4)
        );
        assert!(toml::from_str::<RunConfig>("[policy.server]\nendpoint = []\n").is_err());
    }

    /// A tiny model and its tokenizer.
    fn tiny_lm() -> (Box<dyn Model>, Box<dyn Codec>) {
        let shape = rla_lm::TinyShape {
            hidden_size: 8,
            num_hidden_layers: 1,
            num_attention_heads: 2,
            num_key_value_heads: 1,
            ..Default::default()
        };
        let lm = rla_lm::Backend::fresh(&rla_model::Candle, &shape, "a b\n", &Default::default())
            .unwrap();
        let tok = rla_model::tok::build_word_level("a b\n", 1).unwrap();
        (lm, Box::new(tok))
    }

    #[test]
    fn push_settings_are_checked() {
        let mut c = RunConfig::default();
        c.policy.server = Some(ServerSpec {
            endpoints: vec!["http://127.0.0.1:8000".into()],
            push: Push::Lora,
            ..Default::default()
        });
        assert!(c.validate().unwrap_err().contains("[policy.lora]"));
        c.policy.lora = Some(rla_lm::LoraConfig::default());
        c.validate().unwrap();
        let sv = c.policy.server.as_mut().unwrap();
        sv.push = Push::Command;
        assert!(c.validate().unwrap_err().contains("reload_command"));
        c.policy.server.as_mut().unwrap().reload_command = Some("true".into());
        c.validate().unwrap();
        let sv = c.policy.server.as_mut().unwrap();
        sv.push = Push::Disk;
        assert!(c.validate().unwrap_err().contains("push is not"));
        let t: RunConfig = toml::from_str(
            "[policy.lora]\nr = 4\n[policy.server]\nendpoints = [\"http://a:1\"]\npush = \"lora\"\nlora_api = \"sglang\"\n",
        )
        .unwrap();
        let sv = t.policy.server.unwrap();
        assert_eq!(
            (sv.push, sv.lora_api),
            (Push::Lora, rla_remote::client::LoraApi::Sglang)
        );
        assert!(toml::from_str::<RunConfig>("[policy.server]\npush = \"rsync\"\n").is_err());
    }

    #[test]
    fn time_limits_are_read_and_checked() {
        let mut t: RunConfig = toml::from_str(
            "[policy.server]\nendpoints = [\"http://a:1/v1\"]\ntimeout_s = 120\nhead_timeout_s = 30\n\
             [logging]\nwandb = { project = \"p\", start_timeout_s = 5 }\n",
        )
        .unwrap();
        t.validate().unwrap();
        let sv = t.policy.server.as_ref().unwrap();
        assert_eq!((sv.timeout_s, sv.head_timeout_s), (120.0, Some(30.0)));
        let w = t.logging.wandb.as_ref().unwrap();
        assert_eq!((w.start_timeout_s, w.finish_timeout_s), (5.0, 120.0));
        t.policy.server.as_mut().unwrap().head_timeout_s = Some(0.0);
        assert!(t.validate().unwrap_err().contains("head_timeout_s"));
        t.policy.server.as_mut().unwrap().head_timeout_s = None;
        t.logging.wandb.as_mut().unwrap().finish_timeout_s = 1e20;
        assert!(t.validate().unwrap_err().contains("finish_timeout_s"));
    }

    #[test]
    fn a_reload_command_runs_on_each_new_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("reloads.txt");
        let spec = ServerSpec {
            // nothing listens here: with a reload command the servers are not called
            endpoints: vec!["http://127.0.0.1:9".into()],
            push: Push::Command,
            reload_command: Some(format!("echo {{path}} >> {}", log.display())),
            ..Default::default()
        };
        let (lm, tok) = tiny_lm();
        let mut s = Served::new(lm, tok, &spec, dir.path().join("w")).unwrap();
        s.sync_weights().unwrap();
        let lines: Vec<String> = std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .map(String::from)
            .collect();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].ends_with("v000001") && lines[1].ends_with("v000002"));
        for l in &lines {
            assert!(rla_lm::is_checkpoint(Path::new(l)), "{l}");
        }
        // a failing command stops the run with what it said
        let spec = ServerSpec {
            reload_command: Some("echo no such server >&2; exit 3".into()),
            ..spec
        };
        let (lm, tok) = tiny_lm();
        let e = Served::new(lm, tok, &spec, dir.path().join("w2"))
            .err()
            .unwrap();
        let e = format!("{e:#}");
        assert!(e.contains("no such server") && e.contains("exit"), "{e}");
    }

    #[test]
    fn a_missing_api_key_variable_is_named() {
        let (lm, tok) = tiny_lm();
        let spec = ServerSpec {
            endpoints: vec!["http://127.0.0.1:9".into()],
            api_key_env: Some("RLA_TEST_NO_SUCH_KEY".into()),
            ..Default::default()
        };
        let dir = tempfile::tempdir().unwrap();
        let e = Served::new(lm, tok, &spec, dir.path().join("w"))
            .err()
            .unwrap();
        assert!(format!("{e:#}").contains("RLA_TEST_NO_SUCH_KEY"), "{e:#}");
    }
}
