//! Tokenizers and chat templates in Hugging Face's formats: `tokenizer.json` through the
//! `tokenizers` crate, the chat template from `tokenizer_config.json` rendered with minijinja
//! configured as transformers configures jinja2 (trim_blocks, lstrip_blocks, loop controls,
//! Python string methods). Also builds word-level tokenizers for tiny models from a corpus.

use crate::ModelError;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::str::FromStr;
use tokenizers::{OffsetReferential, OffsetType, PreTokenizedString, PreTokenizer, Tokenizer};

pub use rla_lm::Message;

/// ChatML, the format of Qwen's templates (without Qwen's default system prompt).
pub const CHATML_TEMPLATE: &str = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/// A tokenizer with its chat template and end-of-sequence tokens.
#[derive(Clone)]
pub struct Tok {
    /// The `tokenizers` tokenizer.
    pub inner: Tokenizer,
    /// The chat template, if any.
    pub chat_template: Option<String>,
    /// Token ids that end a generation.
    pub eos_ids: Vec<u32>,
    /// The padding id.
    pub pad_id: u32,
    eos_token: Option<String>,
    bos_token: Option<String>,
}

impl std::fmt::Debug for Tok {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Tok(vocab={}, eos={:?})",
            self.inner.get_vocab_size(true),
            self.eos_ids
        )
    }
}

fn token_str(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Object(o) => o
            .get("content")
            .and_then(|c| c.as_str())
            .map(str::to_string),
        _ => None,
    }
}

impl Tok {
    /// Loads `tokenizer.json`, and `tokenizer_config.json` / `generation_config.json` when present.
    pub fn load(dir: &Path) -> Result<Tok, ModelError> {
        let path = dir.join("tokenizer.json");
        if !path.exists() {
            return Err(ModelError::io(
                &path,
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
            ));
        }
        let bytes = rla_core::file::read(&path).map_err(|e| ModelError::io(&path, e))?;
        let inner = Tokenizer::from_bytes(bytes)
            .map_err(|e| ModelError::invalid(&path, "tokenizer.json", e.to_string()))?;
        let mut tok = Tok {
            inner,
            chat_template: None,
            eos_ids: vec![],
            pad_id: 0,
            eos_token: None,
            bos_token: None,
        };
        let cfg_path = dir.join("tokenizer_config.json");
        if cfg_path.exists() {
            let text = rla_core::file::read_to_string(&cfg_path)
                .map_err(|e| ModelError::io(&cfg_path, e))?;
            let v: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| ModelError::invalid(&cfg_path, "json", e.to_string()))?;
            tok.chat_template = match v.get("chat_template") {
                Some(serde_json::Value::String(s)) => Some(s.clone()),
                Some(serde_json::Value::Array(a)) => a
                    .iter()
                    .find(|t| t.get("name").and_then(|n| n.as_str()) == Some("default"))
                    .or(a.first())
                    .and_then(|t| t.get("template"))
                    .and_then(|t| t.as_str())
                    .map(str::to_string),
                _ => None,
            };
            tok.eos_token = v.get("eos_token").and_then(token_str);
            tok.bos_token = v.get("bos_token").and_then(token_str);
            if let Some(p) = v.get("pad_token").and_then(token_str) {
                tok.pad_id = tok.inner.token_to_id(&p).unwrap_or(0);
            }
        }
        // Current transformers saves the template beside the config, and reads it from there
        // in preference to the config's.
        let jinja = dir.join("chat_template.jinja");
        let json = dir.join("chat_template.json");
        if jinja.exists() {
            let t =
                rla_core::file::read_to_string(&jinja).map_err(|e| ModelError::io(&jinja, e))?;
            tok.chat_template = Some(t);
        } else if json.exists() {
            let text =
                rla_core::file::read_to_string(&json).map_err(|e| ModelError::io(&json, e))?;
            let v: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| ModelError::invalid(&json, "json", e.to_string()))?;
            match v.get("chat_template") {
                Some(serde_json::Value::String(t)) => tok.chat_template = Some(t.clone()),
                _ => {
                    return Err(ModelError::invalid(
                        &json,
                        "chat_template",
                        "missing or not a string",
                    ))
                }
            }
        }
        if let Some(e) = &tok.eos_token {
            if let Some(id) = tok.inner.token_to_id(e) {
                tok.eos_ids.push(id);
            }
        }
        let gen_path = dir.join("generation_config.json");
        if gen_path.exists() {
            let text = rla_core::file::read_to_string(&gen_path)
                .map_err(|e| ModelError::io(&gen_path, e))?;
            let v: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| ModelError::invalid(&gen_path, "json", e.to_string()))?;
            match v.get("eos_token_id") {
                Some(serde_json::Value::Number(n)) => {
                    tok.eos_ids.extend(n.as_u64().map(|x| x as u32))
                }
                Some(serde_json::Value::Array(a)) => tok
                    .eos_ids
                    .extend(a.iter().filter_map(|x| x.as_u64()).map(|x| x as u32)),
                _ => {}
            }
        }
        tok.eos_ids.sort();
        tok.eos_ids.dedup();
        Ok(tok)
    }

    /// Saves `tokenizer.json` and `tokenizer_config.json` into a folder.
    pub fn save(&self, dir: &Path) -> Result<(), ModelError> {
        std::fs::create_dir_all(dir).map_err(|e| ModelError::io(dir, e))?;
        let json = self
            .inner
            .to_string(true)
            .map_err(|e| ModelError::Other(e.to_string()))?;
        crate::weights::write_atomic(&dir.join("tokenizer.json"), json.as_bytes())?;
        let cfg = serde_json::json!({
            "chat_template": self.chat_template,
            "eos_token": self.eos_token,
            "bos_token": self.bos_token,
            "pad_token": self.inner.id_to_token(self.pad_id),
            "model_max_length": 32768,
            "tokenizer_class": "PreTrainedTokenizerFast",
        });
        crate::weights::write_atomic(
            &dir.join("tokenizer_config.json"),
            serde_json::to_string_pretty(&cfg).expect("json").as_bytes(),
        )
    }

    /// Token ids of a text (special tokens written in the text are recognised).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, ModelError> {
        self.inner
            .encode(text, false)
            .map(|e| e.get_ids().to_vec())
            .map_err(|e| ModelError::Other(format!("tokenizer: {e}")))
    }

    /// The text of token ids (special tokens included).
    pub fn decode(&self, ids: &[u32]) -> Result<String, ModelError> {
        self.inner
            .decode(ids, false)
            .map_err(|e| ModelError::Other(format!("tokenizer: {e}")))
    }

    /// Renders the chat template (transformers' `apply_chat_template(…, tokenize=False)`).
    pub fn apply_chat_template(
        &self,
        messages: &[Message],
        add_generation_prompt: bool,
    ) -> Result<String, ModelError> {
        let tpl = self
            .chat_template
            .as_deref()
            .ok_or_else(|| ModelError::Other("the tokenizer has no chat template".into()))?;
        render_chat_template(
            tpl,
            messages,
            add_generation_prompt,
            self.bos_token.as_deref(),
            self.eos_token.as_deref(),
        )
    }

    /// Vocabulary size including added tokens.
    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }
}

/// Renders a chat template as transformers does.
pub fn render_chat_template(
    tpl: &str,
    messages: &[Message],
    add_generation_prompt: bool,
    bos: Option<&str>,
    eos: Option<&str>,
) -> Result<String, ModelError> {
    let mut env = minijinja::Environment::new();
    env.set_syntax(
        minijinja::syntax::SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .build()
            .map_err(|e| ModelError::Other(format!("chat template: {e}")))?,
    );
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    env.add_function(
        "raise_exception",
        |msg: String| -> Result<String, minijinja::Error> {
            Err(minijinja::Error::new(
                minijinja::ErrorKind::InvalidOperation,
                msg,
            ))
        },
    );
    env.add_template("chat", tpl)
        .map_err(|e| ModelError::Other(format!("chat template: {e}")))?;
    let t = env.get_template("chat").expect("just added");
    t.render(minijinja::context! {
        messages => minijinja::Value::from(minijinja::value::Serde(messages)),
        add_generation_prompt => add_generation_prompt,
        bos_token => bos.unwrap_or(""),
        eos_token => eos.unwrap_or(""),
    })
    .map_err(|e| ModelError::Other(format!("chat template: {e}")))
}

/// Special tokens of the word-level tokenizers built here.
pub const SPECIAL_TOKENS: [&str; 4] = ["<|endoftext|>", "<unk>", "<|im_start|>", "<|im_end|>"];

/// The pre-tokenizer of word-level tokenizers: a word with its leading space, a punctuation mark
/// with its leading space, or a run of other whitespace — so decoding is plain concatenation.
pub const WORD_PATTERN: &str = r" ?\w+| ?[^\w\s]|\s+";

fn word_level_json(vocab: &BTreeMap<String, u32>) -> String {
    tokenizer_json(serde_json::json!({"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"}))
}

/// A word-piece model over `vocab` with no continuation mark: a piece the vocabulary lacks is cut
/// greedily into the longest pieces it holds, down to single characters, and decoding stays plain
/// concatenation.
fn word_piece_json(vocab: &BTreeMap<String, u32>) -> String {
    tokenizer_json(
        serde_json::json!({"type": "WordPiece", "vocab": vocab, "unk_token": "<unk>",
            "continuing_subword_prefix": "", "max_input_chars_per_word": 200}),
    )
}

fn tokenizer_json(model: serde_json::Value) -> String {
    let added: Vec<serde_json::Value> = SPECIAL_TOKENS
        .iter()
        .enumerate()
        .map(|(i, t)| serde_json::json!({"id": i, "content": t, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}))
        .collect();
    serde_json::json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": null,
        "pre_tokenizer": {"type": "Split", "pattern": {"Regex": WORD_PATTERN}, "behavior": "Isolated", "invert": false},
        "post_processor": null,
        "decoder": {"type": "Fuse"},
        "model": model
    })
    .to_string()
}

/// Builds a word-level tokenizer from a corpus: the pieces that occur at least `min_count` times,
/// most frequent first, after the special tokens. Saved, it is an ordinary `tokenizer.json`.
/// A piece outside the vocabulary becomes `<unk>`; [`build_pieces`] cuts it into pieces instead.
pub fn build_word_level(corpus: &str, min_count: usize) -> Result<Tok, ModelError> {
    let vocab = corpus_vocab(corpus, min_count, &[])?;
    tok_from_json(&word_level_json(&vocab))
}

/// The characters of a corpus, each alone and after a space (a space itself once), in order of
/// first appearance: the pieces a [`build_pieces`] tokenizer can always fall back to.
fn alphabet(corpus: &str) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for c in corpus.chars() {
        if seen.insert(c) {
            out.push(c.to_string());
            if !c.is_whitespace() {
                out.push(format!(" {c}"));
            }
        }
    }
    out
}

/// Builds the tokenizer of tiny models from a corpus: the words of [`build_word_level`], then
/// every `required` word (so a vocabulary covers a setting's names whether or not its corpus shows
/// them), then every character of the corpus and of the required words alone and after a space. A
/// word outside the vocabulary is cut into the longest pieces it holds, down to characters, never
/// mapped to one `<unk>` (only a character the corpus never shows is); a word the vocabulary holds
/// is one token, as in [`build_word_level`].
pub fn build_pieces(
    corpus: &str,
    min_count: usize,
    required: &[String],
) -> Result<Tok, ModelError> {
    let mut extra: Vec<String> = required.to_vec();
    extra.extend(alphabet(&format!("{corpus}{}", required.concat())));
    let vocab = corpus_vocab(corpus, min_count, &extra)?;
    tok_from_json(&word_piece_json(&vocab))
}

/// The special tokens, the corpus's pieces seen at least `min_count` times (most frequent
/// first), then `extra` pieces not yet in it, in order.
fn corpus_vocab(
    corpus: &str,
    min_count: usize,
    extra: &[String],
) -> Result<BTreeMap<String, u32>, ModelError> {
    let mut vocab: BTreeMap<String, u32> = SPECIAL_TOKENS
        .iter()
        .enumerate()
        .map(|(i, t)| (t.to_string(), i as u32))
        .collect();
    let probe = Tokenizer::from_str(&word_level_json(&vocab))
        .map_err(|e| ModelError::Other(format!("tokenizer: {e}")))?;
    let pre = probe.get_pre_tokenizer().expect("set above");
    let mut counts: HashMap<String, usize> = HashMap::new();
    for line in corpus.split_inclusive('\n') {
        let mut pts = PreTokenizedString::from(line);
        pre.pre_tokenize(&mut pts)
            .map_err(|e| ModelError::Other(format!("tokenizer: {e}")))?;
        for (piece, _, _) in pts.get_splits(OffsetReferential::Original, OffsetType::Byte) {
            *counts.entry(piece.to_string()).or_default() += 1;
        }
    }
    let mut pieces: Vec<(String, usize)> = counts
        .into_iter()
        .filter(|(p, c)| *c >= min_count && !vocab.contains_key(p))
        .collect();
    pieces.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    for (p, _) in pieces {
        let id = vocab.len() as u32;
        vocab.insert(p, id);
    }
    for p in extra {
        if !vocab.contains_key(p) {
            let id = vocab.len() as u32;
            vocab.insert(p.clone(), id);
        }
    }
    Ok(vocab)
}

fn tok_from_json(json: &str) -> Result<Tok, ModelError> {
    let inner =
        Tokenizer::from_str(json).map_err(|e| ModelError::Other(format!("tokenizer: {e}")))?;
    Ok(Tok {
        inner,
        chat_template: Some(CHATML_TEMPLATE.to_string()),
        eos_ids: vec![3],
        pad_id: 0,
        eos_token: Some("<|im_end|>".into()),
        bos_token: None,
    })
}
