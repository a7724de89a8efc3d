//! The ablation's two SFT controls beside `full`, from a base made with DAgger's rounds: `sft`
//! goes on with the base's recipe (its labels' share of each batch, read from the base's
//! `recipe.json`), `sft-demos` on demonstrations alone; each is checkpointed and evaluated at
//! full's evaluation after equal minutes, recorded in its own folder and a row of the table.

use rla_train::ablate::{ablate, Ablation};
use rla_train::config::{Mode, RunConfig};
use rla_train::control::{ControlKind, ControlResult};

const CONFIG: &str = r#"
seed = 3
mode = "full"
iterations = 2
pool_size = 4
tasks_per_iteration = 2
rollouts_per_task = 2
judge_samples = 2
update_epochs = 1

[household]
train_step_limit = 4
eval_step_limit = 4
history_window = 1
prompt_style = "unlisted"
constrain_actions = true

[policy]
lr = 1e-3
micro_batch = 4
max_new_tokens = 8
[policy.tiny]
hidden_size = 16
num_hidden_layers = 1
num_attention_heads = 2
num_key_value_heads = 1

[reward]
lr = 1e-3
micro_batch = 4
max_new_tokens = 8
[reward.tiny]
hidden_size = 16
num_hidden_layers = 1
num_attention_heads = 2
num_key_value_heads = 1

[pretrain]
tasks = 4
held_out = 1
policy_steps = 2
reward_steps = 2
batch = 4
dagger_rounds = 1
dagger_tasks = 2
dagger_steps = 2
dagger_label_share = 0.5

[eval]
in_domain = 2
ood = 2
validation = 2
every = 1
"#;

#[test]
fn both_sft_controls_are_rows_of_the_ablation_with_evaluated_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = RunConfig::parse_in(CONFIG, dir.path()).unwrap();
    let out = dir.path().join("abl");
    let a = Ablation {
        seeds: 1,
        modes: vec![Mode::Full],
        controls: ControlKind::ALL.to_vec(),
        progress: false,
        extra: None,
    };
    let done = ablate(&rla_model::Candle, &cfg, &out, &a, &mut |_| {}).unwrap();
    // the base's recipe, written by its DAgger round
    let recipe: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("pretrained/recipe.json")).unwrap())
            .unwrap();
    assert_eq!(recipe["label_share"], 0.5, "{recipe}");
    assert_eq!(recipe["optimizer_state"], false, "{recipe}");
    let read = |name: &str| -> ControlResult {
        serde_json::from_str(&std::fs::read_to_string(out.join(name).join("control.json")).unwrap())
            .unwrap()
    };
    let (sft, demos) = (read("sft"), read("sft-demos"));
    assert_eq!(
        (sft.kind, demos.kind),
        (ControlKind::Recipe, ControlKind::Demos)
    );
    // `sft`: half of each batch of four the expert's labels of the policy's own states
    assert!(sft.labels > 0 && sft.steps > 0, "{sft:?}");
    assert_eq!(sft.rows, (4 * sft.steps, 2 * sft.steps), "{sft:?}");
    assert_eq!(sft.lr, recipe["last_lr"].as_f64().unwrap());
    assert_eq!(sft.optimizer, "fresh: the base ships no optimiser state");
    // `sft-demos`: demonstrations alone
    assert_eq!((demos.labels, demos.rows.1, demos.label_share), (0, 0, 0.0));
    assert!(
        demos.steps > 0 && demos.rows.0 == 4 * demos.steps,
        "{demos:?}"
    );
    // both given full's minutes, evaluated at its first evaluation and checkpointed there
    let full: Vec<serde_json::Value> = std::fs::read_to_string(out.join("full/metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(full.len(), 3);
    for (name, c) in [("sft", &sft), ("sft-demos", &demos)] {
        assert_eq!(sft.budget_seconds, c.budget_seconds, "{name}");
        assert!(c.seconds >= c.budget_seconds, "{name}: {c:?}");
        assert_eq!(
            c.curve.iter().map(|p| p.iteration).collect::<Vec<_>>(),
            vec![1],
            "{name}: {c:?}"
        );
        assert!(c.curve[0].validation.is_some() && c.validation.is_some());
        for f in [
            "checkpoint/model.safetensors",
            "checkpoint/control-progress.json",
        ] {
            assert!(out.join(name).join(f).is_file(), "{name}/{f}");
        }
        assert!(out.join(name).join("policy/model.safetensors").is_file());
        // a row of the table, and its side of the table at equal minutes
        let row = format!("| {name} (control) |");
        assert!(done.table.contains(&row), "{row}: {}", done.table);
        assert!(
            done.table
                .contains(&format!("| full in-domain | {name} in-domain |")),
            "{}",
            done.table
        );
    }
    // run again: the finished controls are read back, not run again
    let again = ablate(&rla_model::Candle, &cfg, &out, &a, &mut |_| {}).unwrap();
    assert_eq!(again.table, done.table);
}
