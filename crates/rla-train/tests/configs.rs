//! The shipped configurations parse and validate.

use rla_train::RunConfig;
use std::path::PathBuf;

#[test]
fn shipped_configs_are_valid() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../configs");
    for name in [
        "quickstart.toml",
        "household-base.toml",
        "coding-base.toml",
        "desktop-base.toml",
        "alfworld-qwen2.5-7b.toml",
        "alfworld-qwen2.5-7b-vllm.toml",
        "coding-tiny.toml",
        "desktop-tiny.toml",
        "smollm2-household.toml",
    ] {
        let c = RunConfig::load(&dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e:#}"));
        assert!(c.iterations > 0);
    }
}
