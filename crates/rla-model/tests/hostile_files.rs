//! Files a user or a server hands the model: adapters are checked like weights (finite values,
//! r ≥ 1, a finite scale, an update within float16's range), and every config, adapter config
//! and tokenizer file is read only if it is a regular file of bounded size (a symlink to
//! `/dev/zero` is a clear error, not memory without bound).

use candle_core::{DType, Device, Tensor};
use rla_model::config::{Arch, ModelConfig};
use rla_model::lora::{self, LoraConfig};
use rla_model::tok::build_word_level;
use rla_model::Lm;
use std::collections::HashMap;
use std::path::Path;

const CORPUS: &str = "go to the fridge 1 open close take apple from in on put cabinet 2 3 look";

/// A base checkpoint in `dir/base` and an adapter of it (B non-zero, so it changes the model) in
/// `dir/adapter`.
fn base_and_adapter(dir: &Path) -> Lm {
    let tok = build_word_level(CORPUS, 1).unwrap();
    let cfg = ModelConfig::tiny(Arch::Qwen3, tok.vocab_size(), 32, 2, 4, 2);
    let mut m = Lm::init(&cfg, tok, 7, DType::F32, &Device::Cpu).unwrap();
    m.save_checkpoint(&dir.join("base")).unwrap();
    let lc = LoraConfig {
        r: 4,
        alpha: 8.0,
        targets: vec!["q_proj".into(), "v_proj".into()],
    };
    lora::attach(&mut m.model, &lc, 3).unwrap();
    lora::save_peft(&m.model, &lc, &dir.join("adapter"), "base").unwrap();
    edit_tensors(&dir.join("adapter"), |_, t| {
        (t.ones_like().unwrap() * 0.01).unwrap()
    });
    m
}

fn edit_tensors(adapter: &Path, f: impl Fn(&str, &Tensor) -> Tensor) {
    let p = adapter.join("adapter_model.safetensors");
    let t = candle_core::safetensors::load(&p, &Device::Cpu).unwrap();
    let t: HashMap<String, Tensor> = t.iter().map(|(k, v)| (k.clone(), f(k, v))).collect();
    candle_core::safetensors::save(&t, &p).unwrap();
}

fn edit_config(adapter: &Path, key: &str, v: serde_json::Value) {
    let p = adapter.join("adapter_config.json");
    let mut c: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    c[key] = v;
    std::fs::write(&p, c.to_string()).unwrap();
}

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

fn refused(m: &Lm, adapter: &Path) -> String {
    match m.with_adapter(adapter) {
        Ok(_) => panic!("{} was taken", adapter.display()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn adapters_are_checked_like_weights() {
    let dir = tempfile::tempdir().unwrap();
    let base = base_and_adapter(dir.path());
    let base = Lm::load(&dir.path().join("base"), DType::F32, &Device::Cpu)
        .map(|_| base)
        .unwrap();
    let good = dir.path().join("adapter");
    base.with_adapter(&good).unwrap();

    // a NaN in lora_B
    let nan = dir.path().join("nan");
    copy(&good, &nan);
    edit_tensors(&nan, |k, t| {
        if k.ends_with("lora_B.weight") {
            Tensor::full(f32::NAN, t.shape(), &Device::Cpu).unwrap()
        } else {
            t.clone()
        }
    });
    let e = refused(&base, &nan);
    assert!(e.contains("NaN") && e.contains("lora_B"), "{e}");

    // r = 0 (the tensors of rank 0 match it)
    let r0 = dir.path().join("r0");
    copy(&good, &r0);
    edit_config(&r0, "r", 0.into());
    edit_tensors(&r0, |k, t| {
        let (a, b) = t.dims2().unwrap();
        let dims = if k.ends_with("lora_A.weight") {
            (0, b)
        } else {
            (a, 0)
        };
        Tensor::zeros(dims, DType::F32, &Device::Cpu).unwrap()
    });
    let e = refused(&base, &r0);
    assert!(e.contains("r: 0"), "{e}");

    // α = 1e38: every output would be infinite
    let huge = dir.path().join("huge");
    copy(&good, &huge);
    edit_config(&huge, "lora_alpha", 1e38.into());
    let e = refused(&base, &huge);
    assert!(e.contains("changes a weight by"), "{e}");

    // α = 1e308 with r = 1e-… cannot be written in JSON; α/r beyond f64 can
    let inf = dir.path().join("inf");
    copy(&good, &inf);
    edit_config(&inf, "lora_alpha", 1.7e308.into());
    edit_config(&inf, "r", 4.into());
    let e = refused(&base, &inf);
    assert!(
        e.contains("changes a weight by") || e.contains("finite"),
        "{e}"
    );

    // the same checks when the adapter sits beside the base (Lm::load)
    let beside = dir.path().join("beside");
    copy(&dir.path().join("base"), &beside);
    copy(&nan, &beside);
    let e = Lm::load(&beside, DType::F32, &Device::Cpu).err().unwrap();
    assert!(e.to_string().contains("NaN"), "{e}");
}

#[test]
fn a_config_or_tokenizer_that_is_a_device_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let base = base_and_adapter(dir.path());
    for (folder, file) in [
        ("adapter", "adapter_config.json"),
        ("base", "config.json"),
        ("base", "tokenizer.json"),
        ("base", "tokenizer_config.json"),
    ] {
        let d = dir.path().join(format!("zero-{file}"));
        copy(&dir.path().join(folder), &d);
        std::fs::remove_file(d.join(file)).unwrap();
        std::os::unix::fs::symlink("/dev/zero", d.join(file)).unwrap();
        let e = if folder == "adapter" {
            refused(&base, &d)
        } else {
            Lm::load(&d, DType::F32, &Device::Cpu)
                .err()
                .unwrap()
                .to_string()
        };
        assert!(
            e.contains(file) && e.contains("a device, not a regular file"),
            "{file}: {e}"
        );
    }
}

#[test]
fn weights_that_are_a_device_are_refused_before_they_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let base = base_and_adapter(dir.path());
    for (folder, file) in [
        ("adapter", "adapter_model.safetensors"),
        ("base", "model.safetensors"),
    ] {
        let d = dir.path().join(format!("zero-{file}"));
        copy(&dir.path().join(folder), &d);
        std::fs::remove_file(d.join(file)).unwrap();
        std::os::unix::fs::symlink("/dev/zero", d.join(file)).unwrap();
        let e = if folder == "adapter" {
            refused(&base, &d)
        } else {
            Lm::load(&d, DType::F32, &Device::Cpu)
                .err()
                .unwrap()
                .to_string()
        };
        assert!(
            e.contains(file) && e.contains("a device, not a regular file"),
            "{file}: {e}"
        );
    }
}
