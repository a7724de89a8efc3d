//! What the model's integration tests share: the Python interpreter of the tests that call it,
//! and the largest difference of two tensors.

/// The interpreter with torch, transformers, peft and gguf: `$RLA_PEFT_PYTHON`, else the one
/// `scripts/peft.sh` installs.
#[allow(dead_code)] // not every test file calls Python
pub fn python() -> String {
    std::env::var("RLA_PEFT_PYTHON").unwrap_or_else(|_| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../target/peft-venv/bin/python"
        )
        .to_string()
    })
}

/// The largest absolute difference of two tensors of the same shape.
#[allow(dead_code)] // not every test file compares tensors
pub fn max_diff(a: &candle_core::Tensor, b: &candle_core::Tensor) -> f32 {
    (a - b)
        .unwrap()
        .abs()
        .unwrap()
        .max_all()
        .unwrap()
        .to_scalar::<f32>()
        .unwrap()
}
