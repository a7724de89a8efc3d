//! A pretrain across invocations and machines: `pretrain --state DIR --steps N` stops on its
//! budget with exit code 0, saved in one state folder that each save replaces; copied to another
//! working folder (the output folder absent) it goes on to the models and curve of a pretrain
//! never stopped, byte for byte. Another config, or a damaged state, is refused by name.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A household base with tiny models: a policy fitted for 4 steps with a point every 2, two
/// DAgger rounds of 3 steps, a judge of 3 steps.
const CONFIG: &str = r#"
seed = 1

[household]
eval_step_limit = 3
prompt_style = "unlisted"
constrain_actions = true
notes = true

[policy]
micro_batch = 8
[policy.tiny]
hidden_size = 16
num_hidden_layers = 1
num_attention_heads = 2
num_key_value_heads = 1

[reward]
micro_batch = 8
[reward.tiny]
hidden_size = 16
num_hidden_layers = 1
num_attention_heads = 2
num_key_value_heads = 1

[pretrain]
tasks = 4
policy_steps = 4
reward_steps = 3
batch = 4
schedule = "cosine"
held_out = 1
validation = 1
eval_every = 2
dagger_rounds = 2
dagger_tasks = 2
dagger_steps = 3
"#;

/// `rlanything pretrain --config run.toml --out out` in `dir`, with `args` after.
fn pretrain(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rlanything"))
        .current_dir(dir)
        .args(["pretrain", "--config", "run.toml", "--out", "out"])
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A fresh working folder holding the config, and a copy of `state` (a clone of the repository
/// on another machine, the output folder absent).
fn working(root: &Path, name: &str, config: &str, state: Option<&Path>) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("run.toml"), config).unwrap();
    if let Some(s) = state {
        copy_dir(s, &dir.join("state"));
    }
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// Every file under `dir`, relative, sorted.
fn files(dir: &Path) -> Vec<String> {
    fn walk(dir: &Path, rel: &str, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let name = format!("{rel}{}", e.file_name().to_string_lossy());
            if e.file_type().unwrap().is_dir() {
                walk(&e.path(), &format!("{name}/"), out);
            } else {
                out.push(name);
            }
        }
    }
    let mut v = Vec::new();
    walk(dir, "", &mut v);
    v.sort();
    v
}

fn index(state: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(state.join("state.json")).unwrap()).unwrap()
}

/// The files a base is compared by: both models' weights and the policy's curve.
fn outputs(out: &Path) -> Vec<(String, Vec<u8>)> {
    [
        "policy/model.safetensors",
        "reward/model.safetensors",
        "curve-policy.jsonl",
    ]
    .iter()
    .map(|f| (f.to_string(), std::fs::read(out.join(f)).unwrap()))
    .collect()
}

/// A pretrain's invocations, `--steps` SFT steps each, each in a working folder of its own
/// under `root` with the state of the one before: where each stopped (checking what it printed
/// and that its state folder holds one state), the first one's state, and the last folder with
/// what it printed.
fn invocations(root: &Path, config: &str, steps: &str) -> (Vec<String>, PathBuf, PathBuf, String) {
    let mut state: Option<PathBuf> = None;
    let mut first_state = None;
    let mut stops = Vec::new();
    loop {
        let n = stops.len();
        assert!(n < 8, "no end after {n} invocations: {stops:?}");
        let dir = working(root, &format!("w{n}"), config, state.as_deref());
        let o = pretrain(&dir, &["--state", "state", "--steps", steps]);
        let (stdout, stderr) = text(&o);
        assert!(o.status.success(), "invocation {n}: {stderr}");
        let s = dir.join("state");
        if !stdout.contains("stopped on the budget") {
            return (stops, first_state.unwrap(), dir, stdout);
        }
        // how far it got, and the command that goes on
        let go_on = format!(
            "to go on: rlanything pretrain --config run.toml --out out --state state --steps {steps}"
        );
        assert!(
            stdout.contains(&format!("after {steps} SFT steps")) && stdout.contains(&go_on),
            "{stdout}"
        );
        // one state: exactly the files its index names, none left of the saves before it
        let idx = index(&s);
        let mut listed: Vec<String> = idx["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["path"].as_str().unwrap().to_string())
            .collect();
        listed.push("state.json".into());
        listed.sort();
        assert_eq!(files(&s), listed, "invocation {n}");
        let at = idx["at"].as_str().unwrap().to_string();
        assert!(
            stdout.contains(&format!("saved at {at} in state")),
            "{stdout}"
        );
        assert!(!listed
            .iter()
            .any(|f| f.contains("MANIFEST") || f.ends_with(".png")));
        assert_eq!(
            std::fs::read_dir(&dir)
                .unwrap()
                .filter(|e| e
                    .as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with('.'))
                .count(),
            0,
            "a save's temporary folder left behind"
        );
        if first_state.is_none() {
            first_state = Some(s.clone());
        }
        stops.push(at);
        state = Some(s);
    }
}

/// The lines a pretrain printed, less the manifest's path.
fn lines(t: &str) -> Vec<String> {
    t.lines()
        .filter(|l| !l.starts_with("manifest:"))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_pretrain_stopped_by_its_budget_goes_on_from_its_state_elsewhere_to_the_same_base() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    // the pretrain never stopped
    let straight = working(root, "straight", CONFIG, None);
    let o = pretrain(&straight, &[]);
    assert!(o.status.success(), "{}", text(&o).1);
    let want = outputs(&straight.join("out"));
    let want_lines = text(&o).0;

    // three SFT steps an invocation
    let (stops, first, dir, stdout) = invocations(root, CONFIG, "3");
    // the first invocation saved at the curve's point at step 2 and again where it stopped, at
    // 3: its state holds the second alone
    assert_eq!(
        stops,
        [
            "policy: SFT step 3 of 4",
            "DAgger round 1 of 2: SFT step 2 of 3",
            "DAgger round 2 of 2: SFT step 2 of 3",
            "reward: SFT step 2 of 3",
        ]
    );
    let position: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(first.join("policy/sft-position.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(position["step"], 3);
    assert_eq!(position["curve"].as_array().unwrap().len(), 1);

    // the end: the same models and curve, byte for byte, and the same lines
    assert!(
        outputs(&dir.join("out")) == want,
        "the models or the curve differ from the pretrain never stopped"
    );
    assert_eq!(lines(&stdout), lines(&want_lines));
    // another config is refused, naming the key that differs
    let other = CONFIG.replace("policy_steps = 4", "policy_steps = 5");
    let dir = working(root, "other", &other, Some(&first));
    let o = pretrain(&dir, &["--state", "state"]);
    let (_, stderr) = text(&o);
    assert!(!o.status.success());
    assert!(
        stderr.contains("another config")
            && stderr.contains("pretrain.policy_steps = 4 there, 5 here"),
        "{stderr}"
    );
    assert!(!dir.join("out").exists(), "a refused state was copied out");

    // a state file cut short is refused by name
    let dir = working(root, "cut", CONFIG, Some(&first));
    let opt = dir.join("state/policy/optimizer.safetensors");
    let bytes = std::fs::read(&opt).unwrap();
    std::fs::write(&opt, &bytes[..bytes.len() / 2]).unwrap();
    let o = pretrain(&dir, &["--state", "state"]);
    let (_, stderr) = text(&o);
    assert!(!o.status.success());
    assert!(
        stderr.contains("policy/optimizer.safetensors is damaged"),
        "{stderr}"
    );
    // and so is one changed in place, and an index that does not read
    let dir = working(root, "changed", CONFIG, Some(&first));
    let model = dir.join("state/policy/model.safetensors");
    let mut bytes = std::fs::read(&model).unwrap();
    let end = bytes.len() - 1;
    bytes[end] ^= 1;
    std::fs::write(&model, &bytes).unwrap();
    let o = pretrain(&dir, &["--state", "state"]);
    assert!(
        text(&o).1.contains("policy/model.safetensors is damaged"),
        "{}",
        text(&o).1
    );
    let dir = working(root, "index", CONFIG, Some(&first));
    let idx = dir.join("state/state.json");
    let t = std::fs::read_to_string(&idx).unwrap();
    std::fs::write(&idx, &t[..t.len() - 10]).unwrap();
    let o = pretrain(&dir, &["--state", "state"]);
    assert!(!o.status.success());
    assert!(
        text(&o)
            .1
            .contains("state.json is not a pretrain state's index"),
        "{}",
        text(&o).1
    );
}

#[test]
fn a_budget_and_a_state_folder_are_checked_before_anything_runs() {
    let root = tempfile::tempdir().unwrap();
    let dir = working(root.path(), "w", CONFIG, None);
    for (args, says) in [
        (&["--steps", "0"][..], "--steps 0"),
        (&["--minutes=0"][..], "--minutes 0"),
        (
            &["--state", "out/state"][..],
            "apart from the output folder",
        ),
        (&["--state", "."][..], "apart from the output folder"),
    ] {
        let o = pretrain(&dir, args);
        assert!(!o.status.success(), "{args:?}");
        assert!(text(&o).1.contains(says), "{args:?}: {}", text(&o).1);
    }
    assert!(!dir.join("out").exists());
}

/// The desktop's base (the sheets world) stopped before DAgger's rounds, within one, and within
/// its judge's SFT: the same base.
#[test]
fn a_desktop_base_goes_on_from_its_state_to_the_same_base() {
    let config = r#"
seed = 2
setting = "desktop"

[desktop]
world = "sheets"
train_step_limit = 8
eval_step_limit = 8
history = 6
constrain_actions = true

[policy]
micro_batch = 8
[policy.tiny]
hidden_size = 16
num_hidden_layers = 1
num_attention_heads = 2
num_key_value_heads = 1

[reward]
micro_batch = 8
[reward.tiny]
hidden_size = 16
num_hidden_layers = 1
num_attention_heads = 2
num_key_value_heads = 1

[pretrain]
tasks = 4
policy_steps = 4
reward_steps = 3
batch = 4
held_out = 1
validation = 1
eval_every = 2
dagger_rounds = 2
dagger_tasks = 2
dagger_steps = 3
"#;
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let straight = working(root, "straight", config, None);
    let o = pretrain(&straight, &[]);
    assert!(o.status.success(), "{}", text(&o).1);
    // four SFT steps an invocation: the first stops before DAgger's first round, its policy
    // fitted
    let (stops, _, dir, stdout) = invocations(root, config, "4");
    assert_eq!(
        stops,
        [
            "DAgger: 0 of 2 rounds done",
            "DAgger round 2 of 2: SFT step 1 of 3",
            "reward: SFT step 2 of 3"
        ]
    );
    assert!(
        outputs(&dir.join("out")) == outputs(&straight.join("out")),
        "the models or the curve differ from the base never stopped"
    );
    assert_eq!(lines(&stdout), lines(&text(&o).0));
}
