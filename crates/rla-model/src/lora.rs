//! LoRA adapters: rank-r updates `W + (α/r)·B·A` on the attention and MLP projections, with only
//! the adapters trained; merging into the base weights; export and import in PEFT's format
//! (`adapter_config.json`, `adapter_model.safetensors`) so PEFT and vLLM load them.

use crate::model::{Lora, Transformer};
use crate::weights::{save_tensors, write_atomic};
use crate::ModelError;
use candle_core::{DType, Tensor, Var};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::path::Path;

pub use rla_lm::{LoraConfig, ALL_TARGETS};

fn targeted(path: &str, targets: &[String]) -> bool {
    targets.iter().any(|t| path.ends_with(&format!(".{t}")))
}

/// Attaches fresh adapters (A ~ U(−1/√in, 1/√in) as PEFT's Kaiming init gives, B = 0) and returns
/// them as trainable variables named like PEFT's tensors (without the `base_model.model.` prefix).
pub fn attach(
    model: &mut Transformer,
    cfg: &LoraConfig,
    seed: u64,
) -> Result<Vec<(String, Var)>, ModelError> {
    if cfg.r == 0 {
        return Err(ModelError::Config("lora r must be at least 1".into()));
    }
    for t in &cfg.targets {
        if !ALL_TARGETS.contains(&t.as_str()) {
            return Err(ModelError::Config(format!(
                "unknown LoRA target {t}; choose from {ALL_TARGETS:?}"
            )));
        }
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (dtype, dev) = (model.dtype, model.device.clone());
    let mut vars = Vec::new();
    for (path, lin) in model.projections_mut() {
        if !targeted(&path, &cfg.targets) {
            continue;
        }
        let (out, inp) = lin.w.dims2()?;
        let bound = 1.0 / (inp as f64).sqrt();
        let a: Vec<f32> = (0..cfg.r * inp)
            .map(|_| rng.gen_range(-bound..bound) as f32)
            .collect();
        let a = Var::from_tensor(&Tensor::from_vec(a, (cfg.r, inp), &dev)?.to_dtype(dtype)?)?;
        let b = Var::from_tensor(&Tensor::zeros((out, cfg.r), dtype, &dev)?)?;
        lin.lora = Some(Lora {
            a: a.as_tensor().clone(),
            b: b.as_tensor().clone(),
            scale: cfg.alpha / cfg.r as f64,
        });
        vars.push((format!("{path}.lora_A.weight"), a));
        vars.push((format!("{path}.lora_B.weight"), b));
    }
    if vars.is_empty() {
        return Err(ModelError::Config(
            "no projection matched the LoRA targets".into(),
        ));
    }
    Ok(vars)
}

/// Folds every adapter into its base weight (`W ← W + (α/r)·B·A`) and removes it.
pub fn merge(model: &mut Transformer) -> Result<(), ModelError> {
    for (_, lin) in model.projections_mut() {
        if let Some(l) = lin.lora.take() {
            let d = (l.b.matmul(&l.a)? * l.scale)?;
            lin.w = (lin.w.detach() + d.detach())?;
        }
    }
    Ok(())
}

/// Writes the adapters in PEFT's format.
pub fn save_peft(
    model: &Transformer,
    cfg: &LoraConfig,
    dir: &Path,
    base_model: &str,
) -> Result<(), ModelError> {
    std::fs::create_dir_all(dir).map_err(|e| ModelError::io(dir, e))?;
    let mut t = BTreeMap::new();
    let mut m = model.clone();
    for (path, lin) in m.projections_mut() {
        if let Some(l) = &lin.lora {
            t.insert(
                format!("base_model.model.{path}.lora_A.weight"),
                l.a.to_dtype(DType::F32)?,
            );
            t.insert(
                format!("base_model.model.{path}.lora_B.weight"),
                l.b.to_dtype(DType::F32)?,
            );
        }
    }
    if t.is_empty() {
        return Err(ModelError::Other(
            "the model has no LoRA adapters to save".into(),
        ));
    }
    save_tensors(&t, &dir.join("adapter_model.safetensors"))?;
    let c = serde_json::json!({
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "base_model_name_or_path": base_model,
        "r": cfg.r,
        "lora_alpha": cfg.alpha,
        "lora_dropout": 0.0,
        "target_modules": cfg.targets,
        "bias": "none",
        "fan_in_fan_out": false,
        "inference_mode": true,
        "init_lora_weights": true,
        "use_rslora": false,
        "use_dora": false,
        "modules_to_save": null,
    });
    write_atomic(
        &dir.join("adapter_config.json"),
        serde_json::to_string_pretty(&c).expect("json").as_bytes(),
    )
}

/// The largest weight update `(α/r)·B·A` an adapter may make: float16's largest value. Real
/// weights lie far inside it; an update beyond it (an α of 1e38, say) turns every output into
/// infinities and NaN, which generation would print as end-of-text tokens without a word.
pub const MAX_UPDATE: f64 = 65504.0;

/// Refuses an adapter whose update `scale·B·A` of one projection is not finite or lies beyond
/// [`MAX_UPDATE`].
fn check_update(path: &str, a: &Tensor, b: &Tensor, scale: f64) -> Result<(), String> {
    let d = b
        .to_dtype(DType::F64)
        .and_then(|b| b.matmul(&a.to_dtype(DType::F64)?))
        .and_then(|d| {
            d.abs()?
                .max_keepdim(0)?
                .max_keepdim(1)?
                .flatten_all()?
                .to_vec1::<f64>()
        })
        .map_err(|e| e.to_string())?;
    let m = d.first().copied().unwrap_or(0.0) * scale.abs();
    if !m.is_finite() || m > MAX_UPDATE {
        return Err(format!(
            "the adapter of {path} changes a weight by {m:e} (scale α/r = {scale:e}); at most {MAX_UPDATE} is taken"
        ));
    }
    Ok(())
}

/// Reads a PEFT adapter folder and attaches its adapters; returns its settings. Adapters are
/// checked like weights: finite values, r ≥ 1, a finite scale α/r and an update within
/// [`MAX_UPDATE`].
pub fn load_peft(model: &mut Transformer, dir: &Path) -> Result<LoraConfig, ModelError> {
    let cpath = dir.join("adapter_config.json");
    let text = rla_core::file::read_to_string(&cpath).map_err(|e| ModelError::io(&cpath, e))?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| ModelError::invalid(&cpath, "json", e.to_string()))?;
    if v.get("peft_type").and_then(|x| x.as_str()) != Some("LORA") {
        return Err(ModelError::invalid(
            &cpath,
            "peft_type",
            "only LORA adapters are supported",
        ));
    }
    let r = v
        .get("r")
        .and_then(|x| x.as_u64())
        .ok_or_else(|| ModelError::invalid(&cpath, "r", "missing"))? as usize;
    let alpha = v
        .get("lora_alpha")
        .and_then(|x| x.as_f64())
        .ok_or_else(|| ModelError::invalid(&cpath, "lora_alpha", "missing"))?;
    if r == 0 {
        return Err(ModelError::invalid(
            &cpath,
            "r",
            "0; a LoRA rank is at least 1",
        ));
    }
    if !alpha.is_finite() || !(alpha / r as f64).is_finite() {
        return Err(ModelError::invalid(
            &cpath,
            "lora_alpha",
            format!("{alpha}: the scale α/r must be a finite number"),
        ));
    }
    let targets: Vec<String> = match v.get("target_modules") {
        Some(serde_json::Value::Array(a)) => a
            .iter()
            .filter_map(|x| x.as_str().map(str::to_string))
            .collect(),
        _ => {
            return Err(ModelError::invalid(
                &cpath,
                "target_modules",
                "expected a list",
            ))
        }
    };
    let wpath = dir.join("adapter_model.safetensors");
    let t = crate::weights::read_safetensors(&wpath)?;
    let (dtype, dev) = (model.dtype, model.device.clone());
    let mut found = 0;
    for (path, lin) in model.projections_mut() {
        let ka = format!("base_model.model.{path}.lora_A.weight");
        let kb = format!("base_model.model.{path}.lora_B.weight");
        if let (Some(a), Some(b)) = (t.get(&ka), t.get(&kb)) {
            let (out, inp) = lin.w.dims2()?;
            if a.dims() != [r, inp] || b.dims() != [out, r] {
                return Err(ModelError::invalid(
                    &wpath,
                    &ka,
                    format!(
                        "shapes {:?} and {:?}; this model with r = {r} needs [{r}, {inp}] and [{out}, {r}]",
                        a.dims(),
                        b.dims()
                    ),
                ));
            }
            let bad = |m: String| ModelError::invalid(&wpath, "weights", m);
            crate::weights::check_finite(&ka, a).map_err(bad)?;
            crate::weights::check_finite(&kb, b).map_err(bad)?;
            check_update(&path, a, b, alpha / r as f64).map_err(bad)?;
            lin.lora = Some(Lora {
                a: a.to_dtype(dtype)?.to_device(&dev)?,
                b: b.to_dtype(dtype)?.to_device(&dev)?,
                scale: alpha / r as f64,
            });
            found += 1;
        }
    }
    if found == 0 {
        return Err(ModelError::invalid(
            &wpath,
            "tensors",
            "no lora_A/lora_B pair matches this model",
        ));
    }
    Ok(LoraConfig { r, alpha, targets })
}
