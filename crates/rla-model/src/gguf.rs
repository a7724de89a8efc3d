//! GGUF files, the format of llama.cpp: the metadata read into a Hugging Face `config.json`,
//! the tensors dequantised through candle's quantized module (F32, F16, BF16, Q4_0, Q4_1, Q5_0,
//! Q5_1, Q8_0 and the K-quants) with llama.cpp's permutation of the Llama q/k rows undone, the
//! tokenizer rebuilt from `tokenizer.ggml.*` as a `tokenizer.json`, and the chat template from
//! `tokenizer.chat_template`; [`convert`] writes all of it as a checkpoint folder.

use crate::config::{Arch, ModelConfig};
use crate::model::Transformer;
use crate::ModelError;
use candle_core::quantized::gguf_file::{Content, Value};
use candle_core::{DType, Device, Tensor};
use serde_json::{json, Map};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How many tensors had each GGUF type.
pub type TypeCounts = BTreeMap<String, usize>;

/// An open GGUF file.
pub struct Gguf {
    path: PathBuf,
    content: Content,
}

/// What [`convert`] wrote.
#[derive(Debug, Clone)]
pub struct Converted {
    /// The configuration.
    pub config: ModelConfig,
    /// The tensors' GGUF types and how many tensors had each.
    pub types: TypeCounts,
    /// The model's name in the file (`general.name`), if any.
    pub name: Option<String>,
}

/// Pre-tokenizers by llama.cpp's `tokenizer.ggml.pre` names: digits one by one, then GPT-2's
/// byte-level split.
const DIGITS_THEN_GPT2: &[&str] = &[
    "smollm",
    "starcoder",
    "refact",
    "codeshell",
    "command-r",
    "exaone",
    "minerva-7b",
];

/// Llama 3's split pattern.
const LLAMA3_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

impl Gguf {
    /// Reads a GGUF file's header: metadata and tensor table (the tensors stay on disk).
    pub fn open(path: &Path) -> Result<Gguf, ModelError> {
        let mut f = rla_core::file::open(path).map_err(|e| ModelError::io(path, e))?;
        // candle's reader panics on some hostile headers (a `general.alignment` of 0 divides by
        // zero): the panic is caught here and is this file's error
        let content = rla_core::file::catch_quiet(|| Content::read(&mut f))
            .map_err(|p| ModelError::invalid(path, "GGUF header", format!("unreadable ({p})")))?
            .map_err(|e| ModelError::invalid(path, "GGUF header", e.to_string()))?;
        Ok(Gguf {
            path: path.to_path_buf(),
            content,
        })
    }

    fn bad(&self, field: &str, message: impl Into<String>) -> ModelError {
        ModelError::invalid(&self.path, field, message.into())
    }

    /// A metadata value.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.content.metadata.get(key)
    }

    fn need(&self, key: &str) -> Result<&Value, ModelError> {
        self.get(key)
            .ok_or_else(|| self.bad(key, "missing from the metadata"))
    }

    fn uint(&self, key: &str) -> Result<Option<usize>, ModelError> {
        self.get(key)
            .map(|v| match v {
                Value::U8(x) => Ok(*x as usize),
                Value::U16(x) => Ok(*x as usize),
                Value::U32(x) => Ok(*x as usize),
                Value::U64(x) => Ok(*x as usize),
                Value::I32(x) if *x >= 0 => Ok(*x as usize),
                Value::I64(x) if *x >= 0 => Ok(*x as usize),
                v => Err(self.bad(key, format!("{v:?}: a non-negative integer"))),
            })
            .transpose()
    }

    fn need_uint(&self, key: &str) -> Result<usize, ModelError> {
        self.uint(key)?
            .ok_or_else(|| self.bad(key, "missing from the metadata"))
    }

    fn float(&self, key: &str) -> Result<Option<f64>, ModelError> {
        self.get(key)
            .map(|v| match v {
                Value::F32(x) => Ok(*x as f64),
                Value::F64(x) => Ok(*x),
                v => Err(self.bad(key, format!("{v:?}: a number"))),
            })
            .transpose()
    }

    fn string(&self, key: &str) -> Result<Option<&str>, ModelError> {
        self.get(key)
            .map(|v| {
                v.to_string()
                    .map(String::as_str)
                    .map_err(|_| self.bad(key, format!("{v:?}: a string")))
            })
            .transpose()
    }

    fn bool(&self, key: &str) -> Result<Option<bool>, ModelError> {
        self.get(key)
            .map(|v| match v {
                Value::Bool(b) => Ok(*b),
                v => Err(self.bad(key, format!("{v:?}: a boolean"))),
            })
            .transpose()
    }

    fn array(&self, key: &str) -> Result<&Vec<Value>, ModelError> {
        self.need(key)?
            .to_vec()
            .map_err(|_| self.bad(key, "not an array"))
    }

    fn strings(&self, key: &str) -> Result<Vec<String>, ModelError> {
        self.array(key)?
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.to_string()
                    .cloned()
                    .map_err(|_| self.bad(key, format!("element {i} is not a string")))
            })
            .collect()
    }

    fn ints(&self, key: &str) -> Result<Vec<i64>, ModelError> {
        self.array(key)?
            .iter()
            .enumerate()
            .map(|(i, v)| match v {
                Value::I32(x) => Ok(*x as i64),
                Value::U32(x) => Ok(*x as i64),
                Value::I8(x) => Ok(*x as i64),
                Value::U8(x) => Ok(*x as i64),
                _ => Err(self.bad(key, format!("element {i} is not an integer"))),
            })
            .collect()
    }

    /// `general.architecture`.
    pub fn architecture(&self) -> Result<&str, ModelError> {
        self.string("general.architecture")?
            .ok_or_else(|| self.bad("general.architecture", "missing from the metadata"))
    }

    /// The names of the tensors, sorted.
    pub fn tensor_names(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self
            .content
            .tensor_infos
            .keys()
            .map(String::as_str)
            .collect();
        v.sort();
        v
    }

    /// The Hugging Face configuration the metadata describe (Llama architecture).
    pub fn config(&self) -> Result<ModelConfig, ModelError> {
        let arch = self.architecture()?;
        if arch != "llama" {
            return Err(self.bad(
                "general.architecture",
                format!("`{arch}` is not supported: llama"),
            ));
        }
        let k = |s: &str| format!("llama.{s}");
        let heads = self.need_uint(&k("attention.head_count"))?;
        let hidden = self.need_uint(&k("embedding_length"))?;
        let head_dim = match self.uint(&k("attention.key_length"))? {
            Some(d) => d,
            None if heads > 0 => hidden / heads,
            None => 0,
        };
        if let Some(v) = self.uint(&k("attention.value_length"))? {
            if v != head_dim {
                return Err(self.bad(
                    &k("attention.value_length"),
                    format!("{v} differs from the key length {head_dim}"),
                ));
            }
        }
        if let Some(r) = self.uint(&k("rope.dimension_count"))? {
            if r != head_dim {
                return Err(self.bad(
                    &k("rope.dimension_count"),
                    format!("{r}: only rotary embeddings over the whole head ({head_dim}) are supported"),
                ));
            }
        }
        let vocab = match self.uint(&k("vocab_size"))? {
            Some(v) => v,
            None => self.strings("tokenizer.ggml.tokens")?.len(),
        };
        let mut extra = Map::new();
        extra.insert("model_type".into(), "llama".into());
        extra.insert("hidden_act".into(), "silu".into());
        match self.string(&k("rope.scaling.type"))? {
            None | Some("none") => {}
            Some("linear") => {
                let f = self
                    .float(&k("rope.scaling.factor"))?
                    .ok_or_else(|| self.bad(&k("rope.scaling.factor"), "missing"))?;
                extra.insert(
                    "rope_scaling".into(),
                    json!({"rope_type": "linear", "factor": f}),
                );
            }
            Some(other) => {
                return Err(self.bad(
                    &k("rope.scaling.type"),
                    format!("`{other}` is not supported: none or linear"),
                ))
            }
        }
        if self.content.tensor_infos.contains_key("rope_freqs.weight") {
            return Err(self.bad(
                "rope_freqs.weight",
                "per-frequency rotary factors (Llama 3.1's rope scaling in GGUF) are not read; convert the Hugging Face checkpoint instead",
            ));
        }
        for (key, name) in [
            ("tokenizer.ggml.bos_token_id", "bos_token_id"),
            ("tokenizer.ggml.eos_token_id", "eos_token_id"),
        ] {
            if let Some(id) = self.uint(key)? {
                extra.insert(name.into(), id.into());
            }
        }
        let cfg = ModelConfig {
            architectures: vec![Arch::Llama.class_name().into()],
            vocab_size: vocab,
            hidden_size: hidden,
            intermediate_size: self.need_uint(&k("feed_forward_length"))?,
            num_hidden_layers: self.need_uint(&k("block_count"))?,
            num_attention_heads: heads,
            num_key_value_heads: Some(self.uint(&k("attention.head_count_kv"))?.unwrap_or(heads)),
            head_dim: Some(head_dim),
            rms_norm_eps: self
                .float(&k("attention.layer_norm_rms_epsilon"))?
                .unwrap_or(1e-5),
            rope_theta: self.float(&k("rope.freq_base"))?.unwrap_or(10_000.0),
            max_position_embeddings: self.uint(&k("context_length"))?.unwrap_or(4096),
            tie_word_embeddings: !self.content.tensor_infos.contains_key("output.weight"),
            attention_bias: Some(self.content.tensor_infos.contains_key("blk.0.attn_q.bias")),
            torch_dtype: Some("float32".into()),
            extra,
        };
        cfg.validate().map_err(|m| self.bad("metadata", m))?;
        Ok(cfg)
    }

    /// A tensor of the open file `f` dequantised to f32 on the CPU, with its GGUF type.
    fn tensor(&self, f: &mut std::fs::File, name: &str) -> Result<(Tensor, String), ModelError> {
        let info = self.content.tensor_infos.get(name).ok_or_else(|| {
            ModelError::MissingTensor(format!("{name} (in {})", self.path.display()))
        })?;
        let q = info
            .read(f, self.content.tensor_data_offset, &Device::Cpu)
            .map_err(|e| self.bad(name, e.to_string()))?;
        let t = q
            .dequantize(&Device::Cpu)
            .and_then(|t| t.to_dtype(DType::F32))
            .map_err(|e| self.bad(name, e.to_string()))?;
        Ok((t, format!("{:?}", info.ggml_dtype)))
    }

    /// Every tensor of `cfg` under its Hugging Face name, in f32, with how many tensors of each
    /// GGUF type there were.
    pub fn tensors(
        &self,
        cfg: &ModelConfig,
    ) -> Result<(BTreeMap<String, Tensor>, TypeCounts), ModelError> {
        let mut out = BTreeMap::new();
        let mut types = BTreeMap::new();
        // one open file for every tensor
        let mut f = rla_core::file::open(&self.path).map_err(|e| ModelError::io(&self.path, e))?;
        let mut take = |gguf: &str, hf: String, heads: Option<usize>| -> Result<(), ModelError> {
            let (t, ty) = self.tensor(&mut f, gguf)?;
            let t = match heads {
                Some(n) => unpermute(&t, n).map_err(|e| self.bad(gguf, e.to_string()))?,
                None => t,
            };
            *types.entry(ty).or_insert(0) += 1;
            out.insert(hf, t);
            Ok(())
        };
        take(
            "token_embd.weight",
            "model.embed_tokens.weight".into(),
            None,
        )?;
        take("output_norm.weight", "model.norm.weight".into(), None)?;
        if !cfg.tie_word_embeddings {
            take("output.weight", "lm_head.weight".into(), None)?;
        }
        let (nh, nkv) = (cfg.num_attention_heads, cfg.kv_heads());
        for l in 0..cfg.num_hidden_layers {
            let (g, h) = (format!("blk.{l}"), format!("model.layers.{l}"));
            let mut names = vec![
                ("attn_q.weight", "self_attn.q_proj.weight", Some(nh)),
                ("attn_k.weight", "self_attn.k_proj.weight", Some(nkv)),
                ("attn_v.weight", "self_attn.v_proj.weight", None),
                ("attn_output.weight", "self_attn.o_proj.weight", None),
                ("ffn_gate.weight", "mlp.gate_proj.weight", None),
                ("ffn_up.weight", "mlp.up_proj.weight", None),
                ("ffn_down.weight", "mlp.down_proj.weight", None),
                ("attn_norm.weight", "input_layernorm.weight", None),
                ("ffn_norm.weight", "post_attention_layernorm.weight", None),
            ];
            if cfg.qkv_bias() {
                names.push(("attn_q.bias", "self_attn.q_proj.bias", Some(nh)));
                names.push(("attn_k.bias", "self_attn.k_proj.bias", Some(nkv)));
                names.push(("attn_v.bias", "self_attn.v_proj.bias", None));
            }
            if cfg.o_bias() {
                names.push(("attn_output.bias", "self_attn.o_proj.bias", None));
            }
            for (gn, hn, heads) in names {
                take(&format!("{g}.{gn}"), format!("{h}.{hn}"), heads)?;
            }
        }
        Ok((out, types))
    }

    /// The tokenizer as a `tokenizer.json` (GPT-2-style byte-level BPE, `tokenizer.ggml.model =
    /// "gpt2"`), its pre-tokenizer chosen by `tokenizer.ggml.pre` as llama.cpp chooses it.
    pub fn tokenizer_json(&self) -> Result<serde_json::Value, ModelError> {
        match self.string("tokenizer.ggml.model")? {
            Some("gpt2") => {}
            Some(other) => {
                return Err(self.bad(
                    "tokenizer.ggml.model",
                    format!("`{other}` is not supported: gpt2 (byte-level BPE)"),
                ))
            }
            None => return Err(self.bad("tokenizer.ggml.model", "missing from the metadata")),
        }
        let tokens = self.strings("tokenizer.ggml.tokens")?;
        let merges = self.strings("tokenizer.ggml.merges")?;
        let types = match self.get("tokenizer.ggml.token_type") {
            Some(_) => self.ints("tokenizer.ggml.token_type")?,
            None => vec![1; tokens.len()],
        };
        if types.len() != tokens.len() {
            return Err(self.bad(
                "tokenizer.ggml.token_type",
                format!("{} types for {} tokens", types.len(), tokens.len()),
            ));
        }
        let mut vocab = Map::new();
        for (i, t) in tokens.iter().enumerate() {
            if vocab.insert(t.clone(), i.into()).is_some() {
                return Err(self.bad(
                    "tokenizer.ggml.tokens",
                    format!("token {t:?} appears twice (again at {i})"),
                ));
            }
        }
        for (i, m) in merges.iter().enumerate() {
            let ok = m
                .split_once(' ')
                .is_some_and(|(a, b)| vocab.contains_key(a) && vocab.contains_key(b));
            if !ok {
                return Err(self.bad(
                    "tokenizer.ggml.merges",
                    format!("merge {i} ({m:?}) is not two tokens of the vocabulary"),
                ));
            }
        }
        // llama.cpp's token types: 3 control (special), 4 user-defined (added, not special)
        let added: Vec<serde_json::Value> = types
            .iter()
            .enumerate()
            .filter(|(_, &t)| t == 3 || t == 4)
            .map(|(i, &t)| {
                json!({"id": i, "content": tokens[i], "single_word": false, "lstrip": false,
                       "rstrip": false, "normalized": t == 4, "special": t == 3})
            })
            .collect();
        let byte_level = |regex: bool| json!({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": regex});
        let pre = self.string("tokenizer.ggml.pre")?.unwrap_or("default");
        let pre_tokenizer = if DIGITS_THEN_GPT2.contains(&pre) {
            json!({"type": "Sequence", "pretokenizers": [
                {"type": "Digits", "individual_digits": true}, byte_level(true)]})
        } else if matches!(pre, "default" | "gpt-2" | "gpt2") {
            byte_level(true)
        } else if matches!(pre, "llama-bpe" | "llama3" | "smaug-bpe") {
            json!({"type": "Sequence", "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": LLAMA3_SPLIT}, "behavior": "Isolated", "invert": false},
                byte_level(false)]})
        } else {
            let mut known: Vec<&str> = DIGITS_THEN_GPT2.to_vec();
            known.extend(["default", "gpt-2", "llama-bpe"]);
            return Err(self.bad(
                "tokenizer.ggml.pre",
                format!("`{pre}` is not supported: {}", known.join(", ")),
            ));
        };
        let bos = self
            .uint("tokenizer.ggml.bos_token_id")?
            .map(|i| self.token(&tokens, "tokenizer.ggml.bos_token_id", i))
            .transpose()?;
        let post_processor = match (self.bool("tokenizer.ggml.add_bos_token")?, bos) {
            (Some(true), Some(b)) => json!({"type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": b, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                "pair": [{"SpecialToken": {"id": b, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                         {"SpecialToken": {"id": b, "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
                "special_tokens": {b: {"id": b, "ids": [vocab[b]], "tokens": [b]}}}),
            _ => {
                json!({"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true})
            }
        };
        Ok(json!({
            "version": "1.0",
            "truncation": null,
            "padding": null,
            "added_tokens": added,
            "normalizer": null,
            "pre_tokenizer": pre_tokenizer,
            "post_processor": post_processor,
            "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
            "model": {"type": "BPE", "dropout": null, "unk_token": null,
                      "continuing_subword_prefix": null, "end_of_word_suffix": null,
                      "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
                      "vocab": vocab, "merges": merges}
        }))
    }

    fn token<'a>(&self, tokens: &'a [String], key: &str, i: usize) -> Result<&'a str, ModelError> {
        tokens
            .get(i)
            .map(String::as_str)
            .ok_or_else(|| self.bad(key, format!("{i} is outside the {} tokens", tokens.len())))
    }

    /// `tokenizer_config.json`: the chat template and the special tokens.
    pub fn tokenizer_config(&self) -> Result<serde_json::Value, ModelError> {
        let tokens = self.strings("tokenizer.ggml.tokens")?;
        let mut cfg = Map::new();
        for (key, name) in [
            ("tokenizer.ggml.bos_token_id", "bos_token"),
            ("tokenizer.ggml.eos_token_id", "eos_token"),
            ("tokenizer.ggml.unknown_token_id", "unk_token"),
            ("tokenizer.ggml.padding_token_id", "pad_token"),
        ] {
            if let Some(i) = self.uint(key)? {
                cfg.insert(name.into(), self.token(&tokens, key, i)?.into());
            }
        }
        cfg.insert(
            "add_bos_token".into(),
            self.bool("tokenizer.ggml.add_bos_token")?
                .unwrap_or(false)
                .into(),
        );
        cfg.insert("add_eos_token".into(), false.into());
        cfg.insert(
            "chat_template".into(),
            self.string("tokenizer.chat_template")?.into(),
        );
        cfg.insert(
            "model_max_length".into(),
            self.uint("llama.context_length")?.unwrap_or(4096).into(),
        );
        cfg.insert("clean_up_tokenization_spaces".into(), false.into());
        cfg.insert("tokenizer_class".into(), "PreTrainedTokenizerFast".into());
        Ok(serde_json::Value::Object(cfg))
    }

    /// `generation_config.json`: the special token ids.
    pub fn generation_config(&self) -> Result<serde_json::Value, ModelError> {
        let mut cfg = Map::new();
        for (key, name) in [
            ("tokenizer.ggml.bos_token_id", "bos_token_id"),
            ("tokenizer.ggml.eos_token_id", "eos_token_id"),
            ("tokenizer.ggml.padding_token_id", "pad_token_id"),
        ] {
            if let Some(i) = self.uint(key)? {
                cfg.insert(name.into(), i.into());
            }
        }
        Ok(serde_json::Value::Object(cfg))
    }
}

/// Undoes llama.cpp's reordering of q/k rows (`[heads, 2, d/2]` → `[heads, d/2, 2]`, which
/// interleaves the rotary halves) for a weight `[heads·d, in]` or a bias `[heads·d]`.
pub fn unpermute(t: &Tensor, heads: usize) -> candle_core::Result<Tensor> {
    swap_row_axes(t, heads, false)
}

/// llama.cpp's reordering of q/k rows, the inverse of [`unpermute`] (for writing GGUF files).
pub fn permute(t: &Tensor, heads: usize) -> candle_core::Result<Tensor> {
    swap_row_axes(t, heads, true)
}

/// Views the rows as `[heads, 2, d/2]` (`halves_first`) or `[heads, d/2, 2]` and swaps the
/// last two of those axes.
fn swap_row_axes(t: &Tensor, heads: usize, halves_first: bool) -> candle_core::Result<Tensor> {
    let dims = t.dims().to_vec();
    let rows = dims[0];
    if heads == 0 || !rows.is_multiple_of(heads * 2) {
        candle_core::bail!("{rows} rows are not {heads} heads of an even width");
    }
    let half = rows / heads / 2;
    let rest: usize = dims[1..].iter().product();
    let view = if halves_first {
        (heads, 2, half, rest)
    } else {
        (heads, half, 2, rest)
    };
    t.reshape(view)?
        .transpose(1, 2)?
        .contiguous()?
        .reshape(dims)
}

/// Converts a GGUF file into a checkpoint folder in Hugging Face's layout (`config.json`,
/// `model.safetensors` in `dtype`, `tokenizer.json`, `tokenizer_config.json` with the chat
/// template, `generation_config.json`), written whole or not at all.
pub fn convert(gguf: &Path, out: &Path, dtype: DType) -> Result<Converted, ModelError> {
    // a checkpoint in `out` is replaced (callers ask first); any other folder never is
    crate::weights::check_checkpoint_dest(out, true).map_err(ModelError::Other)?;
    let g = Gguf::open(gguf)?;
    let cfg = g.config()?;
    let tokenizer = g.tokenizer_json()?;
    let tok_cfg = g.tokenizer_config()?;
    let gen_cfg = g.generation_config()?;
    let (tensors, types) = g.tensors(&cfg)?;
    for (n, t) in &tensors {
        crate::weights::check_finite(n, t).map_err(|m| ModelError::invalid(gguf, "tensors", m))?;
    }
    let tensors: BTreeMap<String, Tensor> = tensors
        .into_iter()
        .map(|(n, t)| Ok((n, t.to_dtype(dtype)?)))
        .collect::<candle_core::Result<_>>()?;
    let model = Transformer::from_tensors(&cfg, &tensors, &Device::Cpu, dtype)?;
    let text = |v: &serde_json::Value| serde_json::to_string_pretty(v).expect("json");
    crate::weights::replace_dir_atomic(out, |dir| {
        std::fs::create_dir_all(dir).map_err(|e| ModelError::io(dir, e))?;
        crate::weights::save_model(&model, dir)?;
        for (name, v) in [
            ("tokenizer.json", &tokenizer),
            ("tokenizer_config.json", &tok_cfg),
            ("generation_config.json", &gen_cfg),
        ] {
            crate::weights::write_atomic(&dir.join(name), text(v).as_bytes())?;
        }
        // the folder must load before it replaces anything
        let tok = crate::tok::Tok::load(dir)?;
        if tok.vocab_size() > cfg.vocab_size {
            return Err(ModelError::invalid(
                gguf,
                "tokenizer.ggml.tokens",
                format!(
                    "{} tokens for vocab_size {}",
                    tok.vocab_size(),
                    cfg.vocab_size
                ),
            ));
        }
        Ok(())
    })?;
    let name = g.string("general.name")?.map(str::to_string);
    Ok(Converted {
        config: cfg,
        types,
        name,
    })
}
