//! Checkpoint files in Hugging Face's layout: `config.json` and `model.safetensors` (or sharded,
//! with `model.safetensors.index.json`), any of f32 / f16 / bf16, converted to the run's dtype.

use crate::config::ModelConfig;
use crate::model::{tensor_shapes, Transformer};
use crate::ModelError;
use candle_core::{DType, Device, Tensor};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr_normal::sample_normal;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

mod rand_distr_normal {
    use rand::Rng;
    /// A standard normal sample (Box–Muller), so no extra crate is needed.
    pub fn sample_normal(rng: &mut impl Rng) -> f32 {
        let u1: f64 = rng.gen_range(f64::EPSILON..1.0);
        let u2: f64 = rng.gen();
        ((-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()) as f32
    }
}

/// Parses a dtype name (`float32`, `bf16` …).
pub fn parse_dtype(s: &str) -> Result<DType, String> {
    Ok(match rla_lm::Precision::parse(s)? {
        rla_lm::Precision::F32 => DType::F32,
        rla_lm::Precision::F16 => DType::F16,
        rla_lm::Precision::Bf16 => DType::BF16,
        rla_lm::Precision::F64 => DType::F64,
    })
}

/// HF's name of a dtype.
pub fn dtype_name(d: DType) -> &'static str {
    match d {
        DType::F16 => "float16",
        DType::BF16 => "bfloat16",
        DType::F64 => "float64",
        _ => "float32",
    }
}

/// Reads every tensor of a checkpoint folder, converted to `dtype` on `device`.
pub fn load_tensors(
    dir: &Path,
    dtype: DType,
    device: &Device,
) -> Result<BTreeMap<String, Tensor>, ModelError> {
    let index = dir.join("model.safetensors.index.json");
    let files: Vec<std::path::PathBuf> = if index.exists() {
        let text = rla_core::file::read_to_string(&index).map_err(|e| ModelError::io(&index, e))?;
        let v: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| ModelError::invalid(&index, "json", e.to_string()))?;
        let map = v
            .get("weight_map")
            .and_then(|m| m.as_object())
            .ok_or_else(|| ModelError::invalid(&index, "weight_map", "missing or not an object"))?;
        let mut f: Vec<String> = map
            .values()
            .filter_map(|x| x.as_str().map(str::to_string))
            .collect();
        f.sort();
        f.dedup();
        f.into_iter().map(|n| dir.join(n)).collect()
    } else {
        vec![dir.join("model.safetensors")]
    };
    let mut out = BTreeMap::new();
    for f in files {
        if !f.exists() {
            return Err(ModelError::io(
                &f,
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
            ));
        }
        let ts = read_safetensors(&f)?;
        for (n, t) in ts {
            check_finite(&n, &t).map_err(|m| ModelError::invalid(&f, "weights", m))?;
            out.insert(n, t.to_dtype(dtype)?.to_device(device)?);
        }
    }
    Ok(out)
}

/// Every tensor of a safetensors file, on the CPU. The file must be a regular file (after
/// following links: a link to `/dev/zero` is refused, not read until memory runs out) no larger,
/// by its metadata, than this machine's memory.
pub fn read_safetensors(path: &Path) -> Result<HashMap<String, Tensor>, ModelError> {
    let limit = crate::config::memory_bytes().unwrap_or(u64::MAX);
    let bytes = rla_core::file::read_sized(path, limit).map_err(|e| ModelError::io(path, e))?;
    candle_core::safetensors::load_buffer(&bytes, &Device::Cpu)
        .map_err(|e| ModelError::invalid(path, "safetensors", e.to_string()))
}

/// Refuses a floating-point tensor holding NaN or an infinity, naming it: such weights make every
/// output NaN, which generation would print as end-of-text tokens without a word.
pub fn check_finite(name: &str, t: &Tensor) -> Result<(), String> {
    if !t.dtype().is_float() {
        return Ok(());
    }
    let f = t.to_dtype(DType::F32).map_err(|e| e.to_string())?;
    let bad = f
        .flatten_all()
        .and_then(|x| x.to_vec1::<f32>())
        .map_err(|e| e.to_string())?
        .iter()
        .filter(|x| !x.is_finite())
        .count();
    if bad > 0 {
        return Err(format!(
            "tensor {name} holds {bad} NaN or infinite value(s) of {}",
            t.elem_count()
        ));
    }
    Ok(())
}

/// Loads `config.json` and the weights of a checkpoint folder.
pub fn load_model(dir: &Path, dtype: DType, device: &Device) -> Result<Transformer, ModelError> {
    let cfg = ModelConfig::load(&dir.join("config.json"))?;
    let tensors = load_tensors(dir, dtype, device)?;
    Transformer::from_tensors(&cfg, &tensors, device, dtype)
}

/// Random weights for a configuration: N(0, 0.02) matrices, unit norms, zero biases.
pub fn init_tensors(
    cfg: &ModelConfig,
    seed: u64,
    dtype: DType,
    device: &Device,
) -> Result<BTreeMap<String, Tensor>, ModelError> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = BTreeMap::new();
    for (n, shape) in tensor_shapes(cfg) {
        let numel: usize = shape.iter().product();
        let data: Vec<f32> = if n.ends_with("norm.weight") {
            vec![1.0; numel]
        } else if n.ends_with(".bias") {
            vec![0.0; numel]
        } else {
            (0..numel).map(|_| 0.02 * sample_normal(&mut rng)).collect()
        };
        out.insert(n, Tensor::from_vec(data, shape, device)?.to_dtype(dtype)?);
    }
    Ok(out)
}

/// Writes bytes to `path` through a temporary file and a rename, so a crash never leaves a torn
/// file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ModelError> {
    Ok(rla_lm::write_atomic(path, bytes)?)
}

pub use rla_lm::{check_checkpoint_dest, is_checkpoint, replace_dir_atomic};

/// Saves named tensors as one safetensors file (atomically).
pub fn save_tensors(tensors: &BTreeMap<String, Tensor>, path: &Path) -> Result<(), ModelError> {
    let tmp = path.with_extension("safetensors.tmp");
    let map: HashMap<String, Tensor> = tensors
        .iter()
        .map(|(k, v)| Ok((k.clone(), v.to_device(&Device::Cpu)?.contiguous()?)))
        .collect::<Result<_, candle_core::Error>>()?;
    candle_core::safetensors::save(&map, &tmp)
        .map_err(|e| ModelError::invalid(&tmp, "safetensors", e.to_string()))?;
    std::fs::rename(&tmp, path).map_err(|e| ModelError::io(path, e))
}

/// Saves a model in HF layout: `config.json` and `model.safetensors` (in the model's dtype).
pub fn save_model(model: &Transformer, dir: &Path) -> Result<(), ModelError> {
    std::fs::create_dir_all(dir).map_err(|e| ModelError::io(dir, e))?;
    let mut cfg = model.cfg.clone();
    cfg.torch_dtype = Some(dtype_name(model.dtype).to_string());
    // The keys transformers' AutoConfig needs.
    let model_type = model.arch.model_type();
    cfg.extra.entry("model_type").or_insert(model_type.into());
    cfg.extra.entry("hidden_act").or_insert("silu".into());
    if model.arch != crate::config::Arch::Llama {
        cfg.extra
            .entry("use_sliding_window")
            .or_insert(false.into());
    }
    let json = serde_json::to_string_pretty(&cfg).map_err(|e| ModelError::Other(e.to_string()))?;
    save_tensors(&model.named_tensors(), &dir.join("model.safetensors"))?;
    write_atomic(&dir.join("config.json"), json.as_bytes())
}
