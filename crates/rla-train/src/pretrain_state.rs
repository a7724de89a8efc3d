//! A pretrain's state folder (`rlanything pretrain --state DIR`): what a pretrain goes on from on
//! another machine, in a folder small enough to commit. At every save of the pretrain into `OUT`
//! ([`crate::resume::saved`]: a point of an SFT's curve, a DAgger round, a stop on the
//! invocation's budget) the state folder is replaced whole — written under a temporary name,
//! then renamed — by a copy of what `OUT` holds to be taken up from: the progress record
//! ([`crate::resume::FILE`]), the folders of the phases begun (the model's weights and AdamW's
//! moments in f32 safetensors, beside where its SFT stood — the step, the batch sampler's place,
//! the curve, the losses since its last point — or DAgger's rounds, labels and curve), and the
//! files beside them (curves, the recipe, the probe's mistakes); never the manifest and its plots,
//! which the finished pretrain writes, nor anything of a phase not begun. Its index,
//! [`INDEX`], written last, names the config and where the pretrain stands and fingerprints every
//! file. A pretrain given the folder again checks the index, the config and every file, copies
//! the state into `OUT` (absent, or on another machine) and goes on as if it had never stopped.
//! A finished pretrain leaves the index alone, saying so: its models are in `OUT`.

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Component, Path, PathBuf};

/// The state's index, in the state folder.
pub const INDEX: &str = "state.json";

/// The version of the index's format.
pub const FORMAT: u32 = 1;

/// A state folder's index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Index {
    /// [`FORMAT`].
    format: u32,
    /// The config the pretrain was started with (TOML, as [`crate::resume`] records it).
    config: String,
    /// Where the pretrain stands ("policy: SFT step 1000 of 4000"), or `finished`.
    at: String,
    /// The seconds its invocations spent up to this save.
    seconds: f64,
    /// The lines of a finished pretrain (its state then holds no files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    finished: Option<Vec<String>>,
    /// The files copied from `OUT`, relative to the folder, each with its size and hash.
    files: Vec<Entry>,
}

/// A file of a state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    /// Its path in the folder, `/`-separated.
    path: String,
    /// Its size.
    bytes: u64,
    /// The hash of its bytes ([`crate::sources::hash_of`]).
    hash: String,
}

/// What a state folder held when a pretrain was given it.
#[derive(Debug, Clone, PartialEq)]
pub enum Restored {
    /// No state (no folder, or an empty one): the pretrain starts, or goes on from `OUT`.
    Nothing,
    /// A state, copied into `OUT`: where the pretrain stood, and the seconds spent to get there.
    At(String, f64),
    /// A finished pretrain of this config: its lines, and the seconds it took.
    Finished(Vec<String>, f64),
}

/// Whether `name`, a file at the top of `OUT`, is the manifest's, written once the pretrain is
/// finished (`MANIFEST.md`, its plots), so never part of a state.
fn manifests(name: &str) -> bool {
    name == "MANIFEST.md" || name.ends_with(".png")
}

/// The paths under `out` that a pretrain is taken up from, `/`-separated, sorted: its top's files
/// (the manifest's aside) and every file under the folders of the phases its record names.
fn resumable(out: &Path) -> Result<Vec<String>> {
    let phases = crate::resume::phases(out)?;
    let mut files = Vec::new();
    for e in sorted(out)? {
        let Some(name) = e.file_name().to_str().map(str::to_string) else {
            continue;
        };
        // temporary files and folders of saves under way
        if name.starts_with('.') {
            continue;
        }
        let kind = e.file_type()?;
        if kind.is_file() && !manifests(&name) {
            files.push(name);
        } else if kind.is_dir() && phases.contains(&name) {
            walk(&e.path(), &name, &mut files)?;
        }
    }
    Ok(files)
}

fn sorted(dir: &Path) -> Result<Vec<std::fs::DirEntry>> {
    let mut v = std::fs::read_dir(dir)
        .with_context(|| format!("{}", dir.display()))?
        .collect::<std::io::Result<Vec<_>>>()?;
    v.sort_by_key(|e| e.file_name());
    Ok(v)
}

fn walk(dir: &Path, rel: &str, files: &mut Vec<String>) -> Result<()> {
    for e in sorted(dir)? {
        let Some(name) = e.file_name().to_str().map(str::to_string) else {
            bail!("{}: a name that is not UTF-8", e.path().display());
        };
        let kind = e.file_type()?;
        if kind.is_file() {
            files.push(format!("{rel}/{name}"));
        } else if kind.is_dir() {
            walk(&e.path(), &format!("{rel}/{name}"), files)?;
        }
    }
    Ok(())
}

/// Replaces the state folder `state` by a copy of what `out` holds to be taken up from, the
/// pretrain of `config` standing at `at` after `seconds`; the index is written last.
pub fn write(out: &Path, state: &Path, config: &str, at: &str, seconds: f64) -> Result<()> {
    let files = resumable(out)?;
    rla_lm::replace_dir_atomic(state, |tmp| -> Result<()> {
        let mut entries = Vec::new();
        for rel in files {
            let bytes = std::fs::read(out.join(&rel))
                .with_context(|| format!("{}", out.join(&rel).display()))?;
            let to = tmp.join(&rel);
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&to, &bytes).with_context(|| format!("{}", to.display()))?;
            entries.push(Entry {
                hash: crate::sources::hash_of(&bytes),
                bytes: bytes.len() as u64,
                path: rel,
            });
        }
        write_index(
            tmp,
            &Index {
                format: FORMAT,
                config: config.to_string(),
                at: at.to_string(),
                seconds,
                finished: None,
                files: entries,
            },
        )
    })
    .with_context(|| format!("writing the state {}", state.display()))
}

/// Replaces the state folder by its index alone, saying the pretrain of `config` is finished
/// with `lines` after `seconds` (its models are in `OUT`).
pub fn finish(state: &Path, config: &str, lines: &[String], seconds: f64) -> Result<()> {
    rla_lm::replace_dir_atomic(state, |tmp| -> Result<()> {
        write_index(
            tmp,
            &Index {
                format: FORMAT,
                config: config.to_string(),
                at: "finished".into(),
                seconds,
                finished: Some(lines.to_vec()),
                files: Vec::new(),
            },
        )
    })
    .with_context(|| format!("writing the state {}", state.display()))
}

fn write_index(dir: &Path, index: &Index) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    crate::run::write_atomic(&dir.join(INDEX), &serde_json::to_string_pretty(index)?)
}

/// Reads the state folder `state` for a pretrain of `config` into `out`: checks its index, that
/// it is a pretrain of this config (naming the keys that differ) and that every file is whole,
/// then copies it into `out`, each of its folders replacing `out`'s of that name whole. A
/// finished state of another config holds nothing to go on from: [`Restored::Nothing`].
pub fn restore(state: &Path, out: &Path, config: &str) -> Result<Restored> {
    let index_path = state.join(INDEX);
    if !index_path.exists() {
        let parent = state.parent().unwrap_or(Path::new("."));
        let name = state.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let old = parent.join(format!(".{name}.old"));
        if old.exists() {
            bail!(
                "{}: a save of the state was cut off between its two renames; the last whole \
                 state is {} (rename it to {} to go on from it)",
                state.display(),
                old.display(),
                state.display()
            );
        }
        let empty = !state.exists() || std::fs::read_dir(state)?.next().is_none();
        if empty {
            return Ok(Restored::Nothing);
        }
        bail!(
            "{} holds no {INDEX}: not a pretrain's state folder (give an empty or absent folder \
             to start one)",
            state.display()
        );
    }
    let text = rla_core::file::read_to_string(&index_path)
        .with_context(|| format!("{}", index_path.display()))?;
    let index: Index = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not a pretrain state's index (damaged or cut short?)",
            index_path.display()
        )
    })?;
    if index.format != FORMAT {
        bail!(
            "{}: format {}, this program reads format {FORMAT}",
            index_path.display(),
            index.format
        );
    }
    if index.config != config {
        if index.finished.is_some() {
            // a finished pretrain of another config: nothing to go on from, a new one starts
            return Ok(Restored::Nothing);
        }
        bail!(
            "{} holds an unfinished pretrain of another config ({}): run it with that config to \
             finish it, or give another --state",
            state.display(),
            config_difference(&index.config, config)
        );
    }
    if let Some(lines) = index.finished {
        return Ok(Restored::Finished(lines, index.seconds));
    }
    for e in &index.files {
        check_file(state, e)?;
    }
    copy_into(state, out, &index.files)?;
    Ok(Restored::At(index.at, index.seconds))
}

/// Checks that a state's file is a plain relative path inside the folder, there, and whole.
fn check_file(state: &Path, e: &Entry) -> Result<()> {
    let rel = Path::new(&e.path);
    if e.path.is_empty() || !rel.components().all(|c| matches!(c, Component::Normal(_))) {
        bail!(
            "{}: names {:?}, not a path inside the state",
            state.join(INDEX).display(),
            e.path
        );
    }
    let path = state.join(rel);
    let damaged = |what: String| {
        anyhow::anyhow!(
            "{} is damaged: {what}, where the state's index ({INDEX}) records {} bytes with hash \
             {}",
            path.display(),
            e.bytes,
            e.hash
        )
    };
    let len = match std::fs::metadata(&path) {
        Ok(m) if m.is_file() => m.len(),
        Ok(_) => return Err(damaged("not a file".into())),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Err(damaged("missing".into()))
        }
        Err(err) => return Err(anyhow::anyhow!("{}: {err}", path.display())),
    };
    if len != e.bytes {
        return Err(damaged(format!("{len} bytes")));
    }
    let bytes = rla_core::file::read_sized(&path, e.bytes)
        .with_context(|| format!("{}", path.display()))?;
    let hash = crate::sources::hash_of(&bytes);
    if hash != e.hash {
        return Err(damaged(format!("hash {hash}")));
    }
    Ok(())
}

/// Copies the state's files into `out`: a top folder replaces `out`'s of that name whole, a top
/// file replaces `out`'s.
fn copy_into(state: &Path, out: &Path, files: &[Entry]) -> Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("{}", out.display()))?;
    let mut tops: Vec<&str> = files
        .iter()
        .map(|e| e.path.split('/').next().unwrap_or(""))
        .collect();
    tops.dedup();
    for top in tops {
        let under: Vec<&Entry> = files
            .iter()
            .filter(|e| e.path.strip_prefix(top).is_some_and(|r| r.starts_with('/')))
            .collect();
        if under.is_empty() {
            let bytes = std::fs::read(state.join(top))?;
            rla_lm::write_atomic(&out.join(top), &bytes)
                .with_context(|| format!("{}", out.join(top).display()))?;
            continue;
        }
        rla_lm::replace_dir_atomic(&out.join(top), |tmp| -> Result<()> {
            for e in under {
                let rel = &e.path[top.len() + 1..];
                let to = tmp.join(rel);
                if let Some(parent) = to.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                std::fs::copy(state.join(&e.path), &to)
                    .with_context(|| format!("{}", to.display()))?;
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// The keys two configs (TOML) set differently, as `key: there → here`, `;`-separated.
pub fn config_difference(there: &str, here: &str) -> String {
    let parse = |t: &str| t.parse::<toml::Table>().ok();
    let (Some(a), Some(b)) = (parse(there), parse(here)) else {
        return "a config that does not read as TOML".into();
    };
    let mut diffs = Vec::new();
    differ(
        "",
        &toml::Value::Table(a),
        &toml::Value::Table(b),
        &mut diffs,
    );
    if diffs.is_empty() {
        return "the same keys written differently".into();
    }
    diffs.join("; ")
}

fn differ(key: &str, a: &toml::Value, b: &toml::Value, out: &mut Vec<String>) {
    let join = |k: &str| {
        if key.is_empty() {
            k.to_string()
        } else {
            format!("{key}.{k}")
        }
    };
    match (a, b) {
        (toml::Value::Table(a), toml::Value::Table(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => differ(&join(k), x, y, out),
                    (Some(x), None) => out.push(format!("{} = {x} there, unset here", join(k))),
                    (None, Some(y)) => out.push(format!("{} unset there, {y} here", join(k))),
                    (None, None) => {}
                }
            }
        }
        _ if a != b => out.push(format!("{key} = {a} there, {b} here")),
        _ => {}
    }
}

/// Refuses a state folder that is the output folder or lies inside it, or holds it: each save
/// replaces the state whole, so neither may hold the other.
pub fn check_apart(state: &Path, out: &Path) -> Result<()> {
    let abs = |p: &Path| -> Result<PathBuf> {
        let a = std::path::absolute(p).with_context(|| format!("{}", p.display()))?;
        // `..` resolved by the folders' names, as far as they exist
        Ok(a.canonicalize().unwrap_or_else(|_| {
            a.components().fold(PathBuf::new(), |mut acc, c| {
                match c {
                    Component::ParentDir => {
                        acc.pop();
                    }
                    Component::CurDir => {}
                    c => acc.push(c),
                }
                acc
            })
        }))
    };
    let (s, o) = (abs(state)?, abs(out)?);
    if s.starts_with(&o) || o.starts_with(&s) {
        bail!(
            "--state {} and --out {}: the state folder is replaced whole at every save, so it \
             must lie apart from the output folder (neither inside the other)",
            state.display(),
            out.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_difference_names_each_key() {
        let a = "seed = 0\n[pretrain]\npolicy_steps = 4\nlr = 0.003\n";
        let b = "seed = 0\n[pretrain]\npolicy_steps = 5\nlr = 0.003\nwarmup = 2\n";
        assert_eq!(
            config_difference(a, b),
            "pretrain.policy_steps = 4 there, 5 here; pretrain.warmup unset there, 2 here"
        );
    }

    #[test]
    fn a_state_apart_from_the_output_folder_only() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("out");
        check_apart(&d.path().join("state"), &out).unwrap();
        for bad in [out.clone(), out.join("state"), d.path().to_path_buf()] {
            let e = check_apart(&bad, &out).unwrap_err().to_string();
            assert!(e.contains("apart"), "{e}");
        }
        check_apart(&out.join("../state"), &out).unwrap();
        assert!(check_apart(&out.join("x/.."), &out).is_err());
    }

    #[test]
    fn a_folder_that_is_no_state_is_named() {
        let d = tempfile::tempdir().unwrap();
        let (state, out) = (d.path().join("state"), d.path().join("out"));
        // absent, or empty: nothing to go on from
        assert_eq!(restore(&state, &out, "").unwrap(), Restored::Nothing);
        std::fs::create_dir(&state).unwrap();
        assert_eq!(restore(&state, &out, "").unwrap(), Restored::Nothing);
        std::fs::write(state.join("notes.txt"), "x").unwrap();
        let e = restore(&state, &out, "").unwrap_err().to_string();
        assert!(e.contains("holds no state.json"), "{e}");
        // a save cut off between its renames says where the last state is
        std::fs::rename(&state, d.path().join(".state.old")).unwrap();
        let e = restore(&state, &out, "").unwrap_err().to_string();
        assert!(e.contains(".state.old"), "{e}");
    }

    #[test]
    fn a_state_is_written_whole_checked_and_copied_back() {
        let d = tempfile::tempdir().unwrap();
        let (state, out, again) = (
            d.path().join("state"),
            d.path().join("out"),
            d.path().join("again"),
        );
        let cfg = crate::pretrain::tiny_test_config();
        let config = crate::resume::config_text(&cfg).unwrap();
        crate::resume::begin(&cfg, &out).unwrap();
        crate::resume::start(&out, "policy").unwrap();
        std::fs::create_dir_all(out.join("policy")).unwrap();
        std::fs::write(out.join("policy/model.safetensors"), [7u8; 100]).unwrap();
        std::fs::write(out.join("curve-policy.jsonl"), "{}\n").unwrap();
        // the manifest's, a phase not begun, a save under way: none of them part of a state
        std::fs::write(out.join("MANIFEST.md"), "old").unwrap();
        std::fs::write(out.join("curve-policy.png"), "old").unwrap();
        std::fs::create_dir_all(out.join("reward")).unwrap();
        std::fs::write(out.join("reward/model.safetensors"), "old").unwrap();
        std::fs::create_dir_all(out.join(".policy.partial")).unwrap();
        write(&out, &state, &config, "policy: SFT step 2 of 4", 1.0).unwrap();
        let mut names: Vec<String> = std::fs::read_dir(&state)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "curve-policy.jsonl",
                "policy",
                crate::resume::FILE,
                "state.json"
            ]
        );
        // written again: replaced, not added to
        std::fs::write(out.join("policy/model.safetensors"), [8u8; 100]).unwrap();
        write(&out, &state, &config, "policy: SFT step 4 of 4", 2.5).unwrap();
        assert_eq!(
            std::fs::read(state.join("policy/model.safetensors")).unwrap(),
            [8u8; 100]
        );
        assert!(!d.path().join(".state.partial").exists());
        assert!(!d.path().join(".state.old").exists());
        // restored elsewhere: the same files, and where it stood
        assert_eq!(
            restore(&state, &again, &config).unwrap(),
            Restored::At("policy: SFT step 4 of 4".into(), 2.5)
        );
        for f in ["policy/model.safetensors", "curve-policy.jsonl"] {
            assert_eq!(
                std::fs::read(again.join(f)).unwrap(),
                std::fs::read(out.join(f)).unwrap()
            );
        }
        assert!(!again.join("reward").exists() && !again.join("MANIFEST.md").exists());
        // another config: refused, naming the key
        let mut other = cfg.clone();
        other.pretrain.policy_steps += 1;
        let other = crate::resume::config_text(&other).unwrap();
        let e = format!("{:#}", restore(&state, &again, &other).unwrap_err());
        assert!(
            e.contains("another config") && e.contains("pretrain.policy_steps"),
            "{e}"
        );
        // a file cut short, or changed at its size
        let model = state.join("policy/model.safetensors");
        std::fs::write(&model, [8u8; 60]).unwrap();
        let e = format!("{:#}", restore(&state, &again, &config).unwrap_err());
        assert!(
            e.contains("policy/model.safetensors is damaged") && e.contains("60 bytes"),
            "{e}"
        );
        std::fs::write(&model, [9u8; 100]).unwrap();
        let e = format!("{:#}", restore(&state, &again, &config).unwrap_err());
        assert!(
            e.contains("policy/model.safetensors is damaged") && e.contains("hash"),
            "{e}"
        );
        std::fs::remove_file(&model).unwrap();
        let e = format!("{:#}", restore(&state, &again, &config).unwrap_err());
        assert!(e.contains("missing"), "{e}");
        // an index cut short
        let index = std::fs::read_to_string(state.join(INDEX)).unwrap();
        std::fs::write(state.join(INDEX), &index[..index.len() / 2]).unwrap();
        let e = format!("{:#}", restore(&state, &again, &config).unwrap_err());
        assert!(
            e.contains("state.json is not a pretrain state's index"),
            "{e}"
        );
        // finished: the index alone; the same config reads its lines, another starts afresh
        finish(&state, &config, &["policy: done".into()], 3.0).unwrap();
        let names: Vec<_> = std::fs::read_dir(&state).unwrap().collect();
        assert_eq!(names.len(), 1);
        assert_eq!(
            restore(&state, &again, &config).unwrap(),
            Restored::Finished(vec!["policy: done".into()], 3.0)
        );
        assert_eq!(restore(&state, &again, &other).unwrap(), Restored::Nothing);
    }
}
