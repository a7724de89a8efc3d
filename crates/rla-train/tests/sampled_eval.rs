//! Runs and the ablation evaluate sampled: the config's `[eval]` keys checked by name, a tiny
//! household run's metrics holding the sampled success and its standard error (greedy success
//! beside it when asked) with each evaluation kept task by task, and the ablation's table giving
//! each mode's paired difference from the base.

use rla_train::evals::SplitEval;
use rla_train::setting::Split;
use rla_train::RunConfig;
use std::path::Path;

static CANDLE: rla_model::Candle = rla_model::Candle;

/// A household run small enough for a test: tiny models, a few tasks, two iterations, three
/// tasks a split sampled twice each.
const TINY: &str = r#"
seed = 3
mode = "full"
iterations = 2
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
every = 2
samples = 2
"#;

#[test]
fn the_eval_keys_are_checked_by_name() {
    let dir = tempfile::tempdir().unwrap();
    for (text, needle) in [
        ("[eval]\nsamples = 0\n", "eval.samples = 0"),
        (
            "[eval]\nsamples = 99999999999\n",
            "eval.samples = 99999999999",
        ),
        ("[eval]\ntemperature = 0.0\n", "eval.temperature = 0"),
        ("[eval]\ntemperature = -0.5\n", "eval.temperature = -0.5"),
        ("[eval]\ntemperature = nan\n", "eval.temperature = NaN"),
        ("[eval]\ntemperature = inf\n", "eval.temperature = inf"),
        ("[eval]\ngreedy = 1\n", "greedy"),
        ("[eval]\nsample = 3\n", "sample"),
    ] {
        let e = RunConfig::parse_in(text, dir.path())
            .map(|_| ())
            .unwrap_err();
        let e = format!("{e:#}");
        assert!(e.contains(needle), "{text:?}: {e}");
    }
    let d = RunConfig::parse_in("", dir.path()).unwrap();
    assert_eq!(
        (d.eval.samples, d.eval.temperature, d.eval.greedy),
        (8, 0.8, false)
    );
    let c = RunConfig::parse_in(
        "[eval]\nsamples = 3\ntemperature = 1.0\ngreedy = true\n",
        dir.path(),
    )
    .unwrap();
    assert_eq!(
        (c.eval.samples, c.eval.temperature, c.eval.greedy),
        (3, 1.0, true)
    );
}

/// A split's evaluation the run kept at iteration `k`.
fn kept(run: &Path, split: Split, k: usize) -> SplitEval {
    SplitEval::read(run, split, k)
        .unwrap()
        .unwrap_or_else(|| panic!("no {} evaluation at {k}", split.name()))
}

#[test]
fn a_runs_metrics_hold_the_sampled_success_and_its_standard_error() {
    let dir = tempfile::tempdir().unwrap();
    let text = TINY.replace("\nsamples = 2\n", "\nsamples = 2\ngreedy = true\n");
    let cfg = RunConfig::parse_in(&text, dir.path()).unwrap();
    let run = dir.path().join("run");
    let ms =
        rla_train::launch::train_to_end(&CANDLE, cfg, &run, (false, false), &mut |_| {}).unwrap();
    assert_eq!(ms.len(), 3, "iteration 0 and two iterations");
    for m in [&ms[0], &ms[2]] {
        for (split, v, se, greedy) in [
            (
                Split::InDomain,
                m.eval_in_domain,
                m.eval_in_domain_se,
                m.eval_in_domain_greedy,
            ),
            (Split::Ood, m.eval_ood, m.eval_ood_se, m.eval_ood_greedy),
        ] {
            let e = kept(&run, split, m.iteration);
            // three tasks, two episodes each: a task's mean is 0, 1/2 or 1
            assert_eq!(e.scores.len(), 3);
            assert!(
                e.scores.iter().all(|s| [0.0, 0.5, 1.0].contains(s)),
                "{e:?}"
            );
            assert_eq!((e.sampling.samples, e.sampling.temperature), (2, 0.8));
            let (mean, std_error) = rla_core::stats::mean_std_error(&e.scores).unwrap();
            assert_eq!(v, Some(mean));
            assert_eq!(se, Some(std_error));
            assert_eq!((e.mean, e.std_error), (mean, std_error));
            let g = greedy.expect("greedy success beside it");
            assert!((0.0..=1.0).contains(&g));
        }
    }
    // not evaluated at iteration 1 (every 2): nothing recorded or kept
    assert_eq!(ms[1].eval_in_domain_se, None);
    assert!(SplitEval::read(&run, Split::InDomain, 1).unwrap().is_none());
    // the two evaluations drew alike: they pair task by task
    let (base, end) = (
        kept(&run, Split::InDomain, 0),
        kept(&run, Split::InDomain, 2),
    );
    assert_eq!(base.sampling, end.sampling);
    assert_eq!(end.paired(&base).unwrap().n, 3);
    // the metrics file keeps the standard error under its own name
    let text = std::fs::read_to_string(run.join("metrics.jsonl")).unwrap();
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert!(first["eval_in_domain_se"].is_number(), "{first}");
    assert!(first["eval_ood_greedy"].is_number(), "{first}");
}

#[test]
fn the_ablation_gives_each_modes_paired_difference_from_the_base() {
    let dir = tempfile::tempdir().unwrap();
    // a learning rate far below a weight's last bit: the policy ends as it started, so its
    // evaluation at the end meets the base's draws with the base's weights
    let text = TINY.replace("[policy]\nlr = 1e-3\n", "[policy]\nlr = 1e-30\n");
    let cfg = RunConfig::parse_in(&text, dir.path()).unwrap();
    let out = dir.path().join("abl");
    let a = rla_train::ablate::Ablation {
        seeds: 1,
        modes: vec![rla_train::Mode::Outcome],
        controls: vec![],
        progress: false,
        extra: None,
    };
    let r = rla_train::ablate::ablate(&CANDLE, &cfg, &out, &a, &mut |_| {}).unwrap();
    let t = &r.table;
    assert!(
        t.starts_with(
            "| mode | in-domain | Δ in-domain from the base | OOD | Δ OOD from the base |"
        ),
        "{t}"
    );
    let row = |name: &str| -> Vec<String> {
        t.lines()
            .find(|l| l.starts_with(&format!("| {name} |")))
            .unwrap_or_else(|| panic!("{name}: {t}"))
            .split('|')
            .map(|c| c.trim().to_string())
            .collect()
    };
    let (base, outcome) = (row("base (warm start)"), row("outcome"));
    // the same policy on the same tasks and draws: no difference, and no error
    assert_eq!(outcome[3], "+0.0 ± 0.0", "{t}");
    assert_eq!(outcome[5], "+0.0 ± 0.0", "{t}");
    // the sampled success itself with its standard error, the base's as the run's
    let kept = |k: usize| SplitEval::read(&out.join("outcome"), Split::InDomain, k).unwrap();
    let e = kept(0).unwrap();
    assert_eq!(kept(2).unwrap().scores, e.scores);
    let cell = format!("{:.1} ± {:.1}", 100.0 * e.mean, 100.0 * e.std_error);
    assert_eq!(base[2], cell, "{t}");
    assert_eq!(outcome[2], cell, "{t}");
    assert!(
        t.contains("2 episodes a task sampled at temperature 0.8"),
        "{t}"
    );
    // a setting with no extra evaluation refuses data for one, before anything runs
    let coding = RunConfig::parse_in("setting = \"coding\"\n", dir.path()).unwrap();
    let a = rla_train::ablate::Ablation {
        extra: Some(dir.path().to_path_buf()),
        ..a
    };
    let e = rla_train::ablate::ablate(&CANDLE, &coding, &dir.path().join("c"), &a, &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("the coding setting has no evaluation of its own"),
        "{e}"
    );
    assert!(!dir.path().join("c").exists(), "nothing ran");
}

#[test]
fn an_episodes_draws_do_not_depend_on_the_other_episodes() {
    use rla_lm::Backend;
    use rla_train::household::eval::sampled;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let cfg = RunConfig::load(&root.join("configs/quickstart.toml")).unwrap();
    let policy = CANDLE
        .open(&root.join("models/household/policy"), &Default::default())
        .unwrap();
    let ep = rla_train::household::Episodes::evaluation(&cfg);
    // hot enough that the base's episodes of a task differ
    let sampling = rla_train::setting::Sampling {
        temperature: 2.5,
        samples: 3,
        seed: 11,
    };
    let tasks = rla_env::household::splits::eval_tasks_first(Split::InDomain, 6);
    let actions = |tasks: &[rla_env::household::TaskSpec]| -> Vec<Vec<Vec<String>>> {
        let played = sampled(&*policy, tasks, ep, (sampling, 12), None).unwrap();
        (0..tasks.len())
            .map(|t| {
                played
                    .trajs
                    .iter()
                    .filter(|e| e.task == t)
                    .map(|e| e.steps.iter().map(|s| s.action.clone()).collect())
                    .collect()
            })
            .collect()
    };
    // the first task's episodes, played alone and beside five others that end at other steps:
    // the same actions, step for step
    let alone = actions(&tasks[..1]);
    let beside = actions(&tasks);
    assert_eq!(beside[0], alone[0]);
    // its three episodes are three draws
    assert!(
        alone[0][0] != alone[0][1] || alone[0][1] != alone[0][2],
        "{alone:?}"
    );
}
