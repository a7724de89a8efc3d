//! The one function that picks the model back end the commands open and make models with:
//! runs, warm starts, the SFT control and evaluation all get their models through it.
//! Candle in this process is the back end today; another (a PyTorch trainer, a remote
//! learner) plugs in here, chosen from the config.

use rla_lm::{Backend, Model, OpenOptions};
use std::path::{Path, PathBuf};

/// The back end models come from.
pub fn backend() -> &'static dyn Backend {
    &rla_model::Candle
}

/// Opens the model in `dir` to sample from (evaluation), naming the folder on failure.
pub fn open_sampler(dir: &Path) -> anyhow::Result<Box<dyn Model>> {
    Ok(backend().open(dir, &OpenOptions::default())?)
}

/// The folder a command's model argument names: the folder itself, or, where no such folder is
/// here, the Hugging Face id it reads as (`owner/name`, `owner/name@revision`) found in the local
/// hub cache (`$HF_HUB_CACHE`, `$HF_HOME/hub`, `~/.cache/huggingface/hub`).
pub fn model_dir(reference: &Path) -> anyhow::Result<PathBuf> {
    rla_lm::hub::resolve(reference, Path::new("")).map_err(anyhow::Error::msg)
}
