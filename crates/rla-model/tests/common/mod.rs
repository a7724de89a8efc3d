//! What the tests that call Python share.

/// The interpreter with torch, transformers, peft and gguf: `$RLA_PEFT_PYTHON`, else the one
/// `scripts/peft.sh` installs.
pub fn python() -> String {
    std::env::var("RLA_PEFT_PYTHON").unwrap_or_else(|_| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../target/peft-venv/bin/python"
        )
        .to_string()
    })
}
