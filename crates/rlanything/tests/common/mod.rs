//! What several of the program's tests share.

/// A household run small enough for a test: tiny models, a few tasks, three iterations.
pub const TINY_HOUSEHOLD: &str = r#"
seed = 3
mode = "full"
iterations = 3
pool_size = 6
tasks_per_iteration = 3
rollouts_per_task = 2
judge_samples = 2
update_epochs = 1

[household]
train_step_limit = 6
eval_step_limit = 6
history_window = 1

[policy]
lr = 1e-3
micro_batch = 4
max_new_tokens = 8
[policy.tiny]
hidden_size = 32
num_hidden_layers = 1
num_attention_heads = 2
num_key_value_heads = 1

[reward]
lr = 1e-3
micro_batch = 4
max_new_tokens = 8
[reward.tiny]
hidden_size = 32
num_hidden_layers = 1
num_attention_heads = 2
num_key_value_heads = 1

[pretrain]
tasks = 4
policy_steps = 3
reward_steps = 3
batch = 8

[eval]
in_domain = 3
ood = 3
every = 3
"#;
