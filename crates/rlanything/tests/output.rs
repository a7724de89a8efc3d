//! What the program writes: no colour codes in redirected output, each cause of an error said once,
//! the quickstart's stated duration.

use std::process::{Command, Output};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rlanything"));
    c.env_remove("NO_COLOR").env_remove("RUST_LOG");
    c
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Tiny models and a few SFT steps: `pretrain` logs a line per step.
const CONFIG: &str = r#"
[policy.tiny]
hidden_size = 32
num_hidden_layers = 1
num_attention_heads = 2
num_key_value_heads = 1

[reward.tiny]
hidden_size = 32
num_hidden_layers = 1
num_attention_heads = 2
num_key_value_heads = 1

[pretrain]
tasks = 2
policy_steps = 2
reward_steps = 2
batch = 4
"#;

#[test]
fn redirected_logs_have_no_colour_codes() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("run.toml");
    std::fs::write(&cfg, CONFIG).unwrap();
    let out = bin()
        .args(["pretrain", "--config"])
        .arg(&cfg)
        .arg("--out")
        .arg(dir.path().join("pre"))
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("SFT"), "no log line: {stderr}");
    assert!(
        !stderr.contains("\x1b["),
        "colour codes in stderr: {stderr:?}"
    );
    assert!(
        !stdout.contains("\x1b["),
        "colour codes in stdout: {stdout:?}"
    );
}

/// Whether `s` holds an SGR (colour or style) escape sequence, `ESC [ digits;… m`; the progress
/// bars' cursor controls (`ESC [2K`) are not colour.
fn has_sgr(s: &str) -> bool {
    s.split("\x1b[").skip(1).any(|rest| {
        let code: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == ';')
            .collect();
        rest[code.len()..].starts_with('m')
    })
}

/// On a terminal (a pseudo-terminal from util-linux's `script`) the logs are coloured, and with
/// `NO_COLOR` set they are not.
#[cfg(target_os = "linux")]
#[test]
fn no_color_turns_colour_off_on_a_terminal() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: no `script` to give the program a terminal");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("run.toml");
    std::fs::write(&cfg, CONFIG).unwrap();
    let on_terminal = |no_color: Option<&str>, out: &str| {
        let cmd = format!(
            "'{}' pretrain --config '{}' --out '{}'",
            env!("CARGO_BIN_EXE_rlanything"),
            cfg.display(),
            dir.path().join(out).display()
        );
        let mut c = Command::new("script");
        c.args(["-qec", &cmd, "/dev/null"])
            .env_remove("NO_COLOR")
            .env_remove("RUST_LOG")
            .stdin(std::process::Stdio::null());
        if let Some(v) = no_color {
            c.env("NO_COLOR", v);
        }
        let o = c.output().unwrap();
        let (stdout, stderr) = text(&o);
        assert!(o.status.success(), "{stdout}{stderr}");
        assert!(stdout.contains("SFT"), "no log line: {stdout}");
        stdout
    };
    let coloured = on_terminal(None, "a");
    assert!(has_sgr(&coloured), "no colour on a terminal: {coloured:?}");
    let plain = on_terminal(Some("1"), "b");
    assert!(!has_sgr(&plain), "colour with NO_COLOR=1: {plain:?}");
    let empty = on_terminal(Some(""), "c");
    assert!(has_sgr(&empty), "an empty NO_COLOR is unset: {empty:?}");
}

#[test]
fn has_sgr_tells_colour_from_cursor_control() {
    assert!(has_sgr("a \x1b[2mb\x1b[0m"));
    assert!(has_sgr("\x1b[1;32mx"));
    assert!(!has_sgr("\r\x1b[2K   bar [===>  ] 1/2"));
    assert!(!has_sgr("plain"));
}

/// Each cause appears once: `ENOENT`'s message is not repeated by a context that includes it.
#[test]
fn an_error_says_each_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nonexistent");
    let cases: [&[&str]; 2] = [
        &["eval", "--split", "ood", "--model"],
        &["train", "--quiet", "--config"],
    ];
    for args in cases {
        let out = bin().args(args).arg(&missing).output().unwrap();
        let (_, stderr) = text(&out);
        assert!(!out.status.success(), "{args:?}: {stderr}");
        // the cause, however it is worded ("No such file or directory" from the system, or "does
        // not exist" where a model path may also be a hub id), once
        let n = stderr.matches("No such file or directory").count()
            + stderr.matches("does not exist").count();
        assert_eq!(n, 1, "{args:?}: {stderr}");
        assert!(
            stderr.contains("nonexistent"),
            "{args:?}: the path is named: {stderr}"
        );
    }
}

/// The "about N minutes" a text names (the first).
fn minutes(text: &str) -> Option<u32> {
    let lower = text.to_lowercase();
    let i = lower.find("about ")?;
    let rest = &lower[i + "about ".len()..];
    let (n, tail) = rest.split_once(' ')?;
    tail.starts_with("minutes").then(|| n.parse().ok())?
}

#[test]
fn quickstart_help_config_and_readme_name_the_same_duration() {
    let out = bin().args(["quickstart", "--help"]).output().unwrap();
    let (stdout, _) = text(&out);
    assert!(out.status.success());
    let read = |p: &str| {
        std::fs::read_to_string(format!("{}/../../{p}", env!("CARGO_MANIFEST_DIR"))).unwrap()
    };
    let help = minutes(&stdout).unwrap_or_else(|| panic!("no duration in: {stdout}"));
    let cfg = read("configs/quickstart.toml");
    assert_eq!(minutes(&cfg), Some(help), "{cfg}");
    let readme = read("README.md");
    let setup = readme
        .split("## Set-up")
        .nth(1)
        .unwrap()
        .split("\n## ")
        .next()
        .unwrap();
    assert_eq!(minutes(setup), Some(help), "{setup}");
    assert!(
        stdout.contains(&format!("about {help} minutes on 2 cores")),
        "{stdout}"
    );
    assert_eq!(minutes("takes About 7 minutes"), Some(7));
    assert_eq!(minutes("about 7 steps"), None);
}

/// The repository's root.
fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A shell block of the README or a `docs/` page: where it is, its marker (the HTML comment on
/// the line before its fence) and its lines.
struct Block {
    at: String,
    marker: Option<String>,
    code: String,
}

/// The shell blocks (```sh, ```bash, ```console, ```shell) of a Markdown text.
fn shell_blocks(name: &str, text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let fence = lines[i].trim_end();
        if let Some(lang) = fence.strip_prefix("```") {
            let end = (i + 1..lines.len())
                .find(|&j| lines[j].starts_with("```"))
                .unwrap_or_else(|| panic!("{name}:{}: a code block without its end", i + 1));
            if matches!(lang, "sh" | "bash" | "console" | "shell") {
                let prev = if i > 0 { lines[i - 1].trim() } else { "" };
                let marker = prev
                    .strip_prefix("<!--")
                    .and_then(|m| m.strip_suffix("-->"))
                    .map(|m| m.trim().to_string());
                out.push(Block {
                    at: format!("{name}:{}", i + 1),
                    marker,
                    code: lines[i + 1..end].join("\n"),
                });
            }
            i = end;
        }
        i += 1;
    }
    out
}

/// The README's and every `docs/` page's shell blocks.
fn doc_blocks() -> Vec<Block> {
    let mut pages = vec![root().join("README.md")];
    let mut docs: Vec<_> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
        .iter()
        .flat_map(|p| {
            let name = p.strip_prefix(root()).unwrap_or(p).display().to_string();
            shell_blocks(&name, &std::fs::read_to_string(p).unwrap())
        })
        .collect()
}

#[test]
fn every_shell_block_of_the_docs_is_runnable_or_says_why_not() {
    let blocks = doc_blocks();
    assert!(blocks.len() >= 30, "{} blocks", blocks.len());
    let mut bad = Vec::new();
    for b in &blocks {
        match b.marker.as_deref() {
            Some("runnable") => {}
            Some(m) if m.starts_with("not run:") && m.len() > "not run: ".len() + 10 => {}
            m => bad.push(format!("{}: {m:?}", b.at)),
        }
        // one way of writing the program's commands: `rlanything …`, as installed
        assert!(!b.code.contains("cargo run"), "{}: {}", b.at, b.code);
    }
    assert!(
        bad.is_empty(),
        "blocks without `<!-- runnable -->` or `<!-- not run: why -->` on the line before: {bad:#?}"
    );
    assert!(
        blocks
            .iter()
            .filter(|b| b.marker.as_deref() == Some("runnable"))
            .count()
            >= 5
    );
    // the parser sees a marker, and a block without one
    let t = "x\n<!-- runnable -->\n```sh\nrlanything theory\n```\n```sh\nls\n```\n";
    let got = shell_blocks("t.md", t);
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].marker.as_deref(), Some("runnable"));
    assert_eq!(
        (got[0].at.as_str(), got[0].code.as_str()),
        ("t.md:3", "rlanything theory")
    );
    assert_eq!(got[1].marker, None);
}

/// Runs every block marked runnable, as written, with `rlanything` on the `PATH` (this build's
/// program), in a scratch folder that holds the checkout's folders: what a block writes (`runs/`)
/// stays there.
#[test]
fn the_runnable_shell_blocks_of_the_docs_run() {
    let scratch = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(root()).unwrap().flatten() {
        let name = e.file_name();
        if [".git", "target", "runs"].iter().any(|n| name == *n) {
            continue;
        }
        std::os::unix::fs::symlink(e.path().canonicalize().unwrap(), scratch.path().join(&name))
            .unwrap();
    }
    let bin_dir = scratch.path().join(".bin");
    std::fs::create_dir(&bin_dir).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_rlanything"), bin_dir.join("rlanything"))
        .unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut ran = 0;
    for b in doc_blocks() {
        if b.marker.as_deref() != Some("runnable") {
            continue;
        }
        let out = Command::new("timeout")
            .args(["300", "bash", "-euo", "pipefail", "-c", &b.code])
            .current_dir(scratch.path())
            .env("PATH", &path)
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let (stdout, stderr) = text(&out);
        assert!(
            out.status.success(),
            "{} failed ({}):\n{}\nstdout:\n{stdout}\nstderr:\n{stderr}",
            b.at,
            out.status,
            b.code
        );
        ran += 1;
    }
    assert!(ran >= 5, "{ran} runnable blocks");
}
