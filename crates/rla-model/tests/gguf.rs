//! GGUF files written here the way llama.cpp writes them (q/k rows permuted, the tokenizer as
//! `tokenizer.ggml.*` metadata) convert back to the model they came from: the same logits from
//! F32, errors within each format's precision from F16, BF16, Q8_0, Q4_0 and Q4_1; the
//! tokenizer's pre-tokenizer, special tokens and chat template; and bad files are named errors.

mod common;
use candle_core::quantized::gguf_file::{self, Value};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{DType, Device, Tensor};
use common::max_diff;
use rla_lm::Codec;
use rla_lm::Message;
use rla_model::config::{Arch, ModelConfig};
use rla_model::gguf::{convert, permute};
use rla_model::weights::init_tensors;
use rla_model::{Lm, ModelError, Transformer};
use std::collections::BTreeMap;
use std::path::Path;

const SPECIAL: [&str; 2] = ["<|im_start|>", "<|im_end|>"];
const TEMPLATE: &str = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

/// A byte-level BPE vocabulary: the special tokens, the 256 byte symbols and a few merges.
fn vocab() -> (Vec<String>, Vec<String>, Vec<i32>) {
    let mut tokens: Vec<String> = SPECIAL.iter().map(|s| s.to_string()).collect();
    let mut bytes: Vec<char> = tokenizers::pre_tokenizers::byte_level::ByteLevel::alphabet()
        .into_iter()
        .collect();
    bytes.sort();
    tokens.extend(bytes.iter().map(|c| c.to_string()));
    let merges = ["Ġ t", "h e", "Ġt he", "1 2"];
    for m in merges {
        tokens.push(m.replace(' ', ""));
    }
    let mut types = vec![3, 3];
    types.resize(tokens.len(), 1);
    (
        tokens,
        merges.iter().map(|s| s.to_string()).collect(),
        types,
    )
}

fn config(vocab: usize) -> ModelConfig {
    let mut c = ModelConfig::tiny(Arch::Llama, vocab, 32, 2, 4, 2);
    c.intermediate_size = 64;
    c.tie_word_embeddings = false;
    c.rope_theta = 50_000.0;
    c.rms_norm_eps = 1e-5;
    c.max_position_embeddings = 2048;
    c
}

fn strings(v: &[String]) -> Value {
    Value::Array(v.iter().map(|s| Value::String(s.clone())).collect())
}

/// Writes `tensors` (HF names) as llama.cpp would, matrices in `dtype`, into `path`;
/// `edit` may change the metadata and tensor list first.
fn write_gguf(
    path: &Path,
    cfg: &ModelConfig,
    tensors: &BTreeMap<String, Tensor>,
    dtype: GgmlDType,
    pre: &str,
    edit: impl FnOnce(&mut Vec<(String, Value)>, &mut Vec<(String, QTensor)>),
) {
    let (tokens, merges, types) = vocab();
    let mut meta: Vec<(String, Value)> = vec![
        ("general.architecture".into(), Value::String("llama".into())),
        ("general.name".into(), Value::String("tiny".into())),
        (
            "llama.block_count".into(),
            Value::U32(cfg.num_hidden_layers as u32),
        ),
        ("llama.context_length".into(), Value::U32(2048)),
        (
            "llama.embedding_length".into(),
            Value::U32(cfg.hidden_size as u32),
        ),
        (
            "llama.feed_forward_length".into(),
            Value::U32(cfg.intermediate_size as u32),
        ),
        ("llama.attention.head_count".into(), Value::U32(4)),
        ("llama.attention.head_count_kv".into(), Value::U32(2)),
        ("llama.rope.freq_base".into(), Value::F32(50_000.0)),
        (
            "llama.attention.layer_norm_rms_epsilon".into(),
            Value::F32(1e-5),
        ),
        ("llama.rope.dimension_count".into(), Value::U32(8)),
        ("tokenizer.ggml.model".into(), Value::String("gpt2".into())),
        ("tokenizer.ggml.pre".into(), Value::String(pre.into())),
        ("tokenizer.ggml.tokens".into(), strings(&tokens)),
        ("tokenizer.ggml.merges".into(), strings(&merges)),
        (
            "tokenizer.ggml.token_type".into(),
            Value::Array(types.iter().map(|&t| Value::I32(t)).collect()),
        ),
        ("tokenizer.ggml.bos_token_id".into(), Value::U32(0)),
        ("tokenizer.ggml.eos_token_id".into(), Value::U32(1)),
        ("tokenizer.ggml.add_bos_token".into(), Value::Bool(false)),
        (
            "tokenizer.chat_template".into(),
            Value::String(TEMPLATE.into()),
        ),
    ];
    let mut qs: Vec<(String, QTensor)> = Vec::new();
    let g = |n: &str| -> String {
        let n = n
            .replace("model.layers.", "blk.")
            .replace("self_attn.q_proj", "attn_q")
            .replace("self_attn.k_proj", "attn_k")
            .replace("self_attn.v_proj", "attn_v")
            .replace("self_attn.o_proj", "attn_output")
            .replace("mlp.gate_proj", "ffn_gate")
            .replace("mlp.up_proj", "ffn_up")
            .replace("mlp.down_proj", "ffn_down")
            .replace("post_attention_layernorm", "ffn_norm")
            .replace("input_layernorm", "attn_norm");
        match n.as_str() {
            "model.embed_tokens.weight" => "token_embd.weight".into(),
            "model.norm.weight" => "output_norm.weight".into(),
            "lm_head.weight" => "output.weight".into(),
            _ => n,
        }
    };
    for (n, t) in tensors {
        let t = if n.ends_with("q_proj.weight") {
            permute(t, 4).unwrap()
        } else if n.ends_with("k_proj.weight") {
            permute(t, 2).unwrap()
        } else {
            t.clone()
        };
        let ty = if t.rank() == 1 { GgmlDType::F32 } else { dtype };
        qs.push((g(n), QTensor::quantize(&t, ty).unwrap()));
    }
    edit(&mut meta, &mut qs);
    let mut f = std::fs::File::create(path).unwrap();
    let m: Vec<(&str, &Value)> = meta.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let t: Vec<(&str, &QTensor)> = qs.iter().map(|(k, v)| (k.as_str(), v)).collect();
    gguf_file::write(&mut f, &m, &t).unwrap();
}

fn model() -> (ModelConfig, BTreeMap<String, Tensor>) {
    let cfg = config(vocab().0.len());
    let t = init_tensors(&cfg, 4, DType::F32, &Device::Cpu).unwrap();
    // visible norms, so a norm taken from the wrong place shows
    let t = t
        .into_iter()
        .map(|(n, x)| {
            let y = if n.ends_with("norm.weight") {
                (x.clone() + x.randn_like(0.0, 0.2).unwrap()).unwrap()
            } else {
                (x * 4.0).unwrap()
            };
            (n, y)
        })
        .collect();
    (cfg, t)
}

fn logits(m: &Transformer, ids: &[u32]) -> Tensor {
    let x = Tensor::new(ids, &Device::Cpu)
        .unwrap()
        .unsqueeze(0)
        .unwrap();
    let n = ids.len() as u32;
    let pos = Tensor::arange(0u32, n, &Device::Cpu)
        .unwrap()
        .unsqueeze(0)
        .unwrap();
    m.forward(&x, &pos, None, None).unwrap()
}

/// √(Σ(a−b)²/Σb²) over every tensor.
fn relative_error(a: &BTreeMap<String, Tensor>, b: &BTreeMap<String, Tensor>) -> f64 {
    let (mut num, mut den) = (0f64, 0f64);
    for (n, x) in b {
        let y = &a[n];
        num += (y - x)
            .unwrap()
            .sqr()
            .unwrap()
            .sum_all()
            .unwrap()
            .to_scalar::<f32>()
            .unwrap() as f64;
        den += x
            .sqr()
            .unwrap()
            .sum_all()
            .unwrap()
            .to_scalar::<f32>()
            .unwrap() as f64;
    }
    (num / den).sqrt()
}

#[test]
fn an_f32_file_converts_to_the_model_it_was_written_from() {
    let dir = tempfile::tempdir().unwrap();
    let (cfg, t) = model();
    let file = dir.path().join("tiny.gguf");
    write_gguf(&file, &cfg, &t, GgmlDType::F32, "smollm", |_, _| {});
    let out = dir.path().join("hf");
    let c = convert(&file, &out, DType::F32).unwrap();
    assert_eq!(c.config.kv_heads(), 2);
    assert!(!c.config.tie_word_embeddings);
    assert_eq!(c.name.as_deref(), Some("tiny"));
    let lm = Lm::load(&out, DType::F32, &Device::Cpu).unwrap();
    let original = Transformer::from_tensors(&cfg, &t, &Device::Cpu, DType::F32).unwrap();
    let ids = [5u32, 80, 33, 2, 140, 77, 9, 200];
    let d = max_diff(&logits(&lm.model, &ids), &logits(&original, &ids));
    assert!(d < 1e-5, "max |Δlogit| = {d}");
    // without undoing llama.cpp's permutation the rotary pairs are wrong
    let mut raw = t.clone();
    for (n, x) in raw.iter_mut() {
        if n.ends_with("q_proj.weight") {
            *x = permute(x, 4).unwrap();
        }
    }
    let wrong = Transformer::from_tensors(&cfg, &raw, &Device::Cpu, DType::F32).unwrap();
    assert!(max_diff(&logits(&wrong, &ids), &logits(&original, &ids)) > 1e-2);
}

#[test]
fn quantised_files_dequantise_within_their_precision() {
    let dir = tempfile::tempdir().unwrap();
    let (cfg, t) = model();
    let mut errors = Vec::new();
    for (ty, bound) in [
        (GgmlDType::F16, 1e-3),
        (GgmlDType::BF16, 8e-3),
        (GgmlDType::Q8_0, 1e-2),
        (GgmlDType::Q4_1, 0.2),
        (GgmlDType::Q4_0, 0.2),
    ] {
        let file = dir.path().join(format!("{ty:?}.gguf"));
        write_gguf(&file, &cfg, &t, ty, "smollm", |_, _| {});
        let out = dir.path().join(format!("{ty:?}"));
        let c = convert(&file, &out, DType::F32).unwrap();
        assert!(c.types.contains_key(&format!("{ty:?}")), "{:?}", c.types);
        let lm = Lm::load(&out, DType::F32, &Device::Cpu).unwrap();
        let e = relative_error(&lm.model.named_tensors(), &t);
        assert!(e > 0.0 && e < bound, "{ty:?}: relative error {e}");
        errors.push(e);
    }
    // finer formats lose less: F16 < BF16 < Q8_0 < the 4-bit ones
    assert!(
        errors[0] < errors[1] && errors[1] < errors[2] && errors[2] < errors[3].min(errors[4]),
        "{errors:?}"
    );
}

#[test]
fn the_tokenizer_and_chat_template_come_from_the_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let (cfg, t) = model();
    let mut ids = Vec::new();
    for pre in ["smollm", "gpt-2"] {
        let file = dir.path().join(format!("{pre}.gguf"));
        write_gguf(&file, &cfg, &t, GgmlDType::F32, pre, |_, _| {});
        let out = dir.path().join(pre);
        convert(&file, &out, DType::F32).unwrap();
        let lm = Lm::load(&out, DType::F32, &Device::Cpu).unwrap();
        let (tokens, _, _) = vocab();
        let id = |s: &str| tokens.iter().position(|t| t == s).unwrap() as u32;
        let e = lm.encode("<|im_start|> the 12").unwrap();
        // the special token is one id; " the" is merged to one token
        assert_eq!(&e[..2], &[0, id("Ġthe")], "{pre}: {e:?}");
        ids.push(e[2..].to_vec());
        assert_eq!(lm.decode(&e).unwrap(), "<|im_start|> the 12");
        assert_eq!(lm.eos_ids(), &[1]);
        let chat = lm
            .chat_template(&[Message::new("user", "hi")], true)
            .unwrap()
            .unwrap();
        assert_eq!(
            chat,
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
        );
    }
    // smollm's pre-tokenizer splits digits one by one, GPT-2's keeps " 12" for the merge
    assert_eq!(ids[0].len(), 3, "{ids:?}");
    assert_eq!(ids[1].len(), 2, "{ids:?}");
}

/// Sets a metadata key.
fn set(m: &mut [(String, Value)], key: &str, v: Value) {
    m.iter_mut().find(|(k, _)| k == key).unwrap().1 = v;
}

/// A change to a file's metadata and tensors before it is written.
type Edit = Box<dyn FnOnce(&mut Vec<(String, Value)>, &mut Vec<(String, QTensor)>)>;

fn err(file: &Path, out: &Path) -> String {
    convert(file, out, DType::F32).unwrap_err().to_string()
}

#[test]
fn bad_files_are_named_errors_and_leave_the_output_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let (cfg, t) = model();
    let good = dir.path().join("good.gguf");
    write_gguf(&good, &cfg, &t, GgmlDType::Q8_0, "smollm", |_, _| {});
    let out = dir.path().join("hf");
    convert(&good, &out, DType::F32).unwrap();
    let before = std::fs::read(out.join("model.safetensors")).unwrap();
    // not a GGUF file
    let junk = dir.path().join("junk.gguf");
    std::fs::write(&junk, b"not a gguf file at all").unwrap();
    let e = err(&junk, &out);
    assert!(e.contains("junk.gguf") && e.contains("GGUF"), "{e}");
    // cut short: the header reads, a tensor does not
    let bytes = std::fs::read(&good).unwrap();
    let cut = dir.path().join("cut.gguf");
    std::fs::write(&cut, &bytes[..bytes.len() - 4000]).unwrap();
    let e = err(&cut, &out);
    assert!(e.contains("cut.gguf"), "{e}");
    let cases: Vec<(&str, Edit, &str)> = vec![
        (
            "arch",
            Box::new(|m, _| set(m, "general.architecture", Value::String("mamba".into()))),
            "`mamba` is not supported",
        ),
        (
            "missing",
            Box::new(|_, q| q.retain(|(n, _)| n != "blk.1.ffn_up.weight")),
            "blk.1.ffn_up.weight",
        ),
        (
            "pre",
            Box::new(|m, _| set(m, "tokenizer.ggml.pre", Value::String("klingon".into()))),
            "tokenizer.ggml.pre: `klingon` is not supported",
        ),
        (
            "heads",
            Box::new(|m, _| {
                m.retain(|(k, _)| k != "llama.attention.head_count");
            }),
            "llama.attention.head_count: missing",
        ),
        (
            "merge",
            Box::new(|m, _| set(m, "tokenizer.ggml.merges", strings(&["Ġ zz".to_string()]))),
            "merge 0",
        ),
        // candle's reader divides by it
        (
            "alignment",
            Box::new(|m, _| m.push(("general.alignment".into(), Value::U32(0)))),
            "alignment.gguf: GGUF header: unreadable",
        ),
    ];
    for (name, edit, want) in cases {
        let f = dir.path().join(format!("{name}.gguf"));
        write_gguf(&f, &cfg, &t, GgmlDType::Q8_0, "smollm", edit);
        let e = err(&f, &out);
        assert!(e.contains(want), "{name}: {e}");
    }
    // tensors of NaN: named, not converted
    let mut nan = t.clone();
    let w = nan["model.norm.weight"].clone();
    nan.insert(
        "model.norm.weight".into(),
        Tensor::full(f32::NAN, w.shape(), &Device::Cpu).unwrap(),
    );
    let f = dir.path().join("nan.gguf");
    write_gguf(&f, &cfg, &nan, GgmlDType::F32, "smollm", |_, _| {});
    let e = err(&f, &out);
    assert!(e.contains("NaN") && e.contains("nan.gguf"), "{e}");
    // the converted folder is untouched by every failure, and no half-written folder is left
    let hidden: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .collect();
    assert!(hidden.is_empty(), "{hidden:?}");
    assert_eq!(
        std::fs::read(out.join("model.safetensors")).unwrap(),
        before
    );
    assert!(matches!(
        convert(&dir.path().join("absent.gguf"), &out, DType::F32),
        Err(ModelError::Io { .. })
    ));
    // a device (or a symlink to one) is not read
    let zero = dir.path().join("zero.gguf");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let e = err(&zero, &out);
    assert!(
        e.contains("zero.gguf") && e.contains("not a regular file"),
        "{e}"
    );
}
