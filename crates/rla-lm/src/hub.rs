//! Models named by their Hugging Face hub id (`owner/name`, optionally `@revision`), found in the
//! local cache as `huggingface_hub` lays it out: `$HF_HUB_CACHE`, else `$HF_HOME/hub`, else
//! `~/.cache/huggingface/hub`, holding `models--owner--name/snapshots/<commit>/` and
//! `models--owner--name/refs/<branch or tag>` (a file naming the commit). Nothing is downloaded:
//! a model missing from the cache is an error that names the folder searched and the command that
//! fetches it.

use std::path::{Path, PathBuf};

/// The hub cache folder this process would search.
pub fn cache_dir() -> PathBuf {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(p) = var("HF_HUB_CACHE") {
        return p;
    }
    if let Some(p) = var("HF_HOME") {
        return p.join("hub");
    }
    let home = var("HOME").unwrap_or_else(|| PathBuf::from("."));
    home.join(".cache/huggingface/hub")
}

/// A hub id read from a model reference: `owner/name` or `owner/name@revision`, each part made of
/// letters, digits, `-`, `_` and `.` (not starting with `.`). Anything else — an absolute or
/// relative path with more parts, `./x/y` — is not an id.
pub fn parse_id(s: &str) -> Option<(&str, &str, Option<&str>)> {
    let (id, rev) = match s.split_once('@') {
        Some((id, rev)) => (id, Some(rev)),
        None => (s, None),
    };
    let (owner, name) = id.split_once('/')?;
    let part = |p: &str| {
        !p.is_empty()
            && !p.starts_with('.')
            && p.len() <= 96
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    };
    let rev_ok = rev.is_none_or(|r| {
        !r.is_empty()
            && !r.starts_with('.')
            && r.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
            && !r.split('/').any(|x| x == ".." || x.is_empty())
    });
    (part(owner) && part(name) && rev_ok).then_some((owner, name, rev))
}

/// The folder a model reference names: `reference` itself where it exists (resolved against
/// `base` when relative), else the cached snapshot of the hub id it reads as.
pub fn resolve(reference: &Path, base: &Path) -> Result<PathBuf, String> {
    let local = if reference.is_absolute() {
        reference.to_path_buf()
    } else {
        base.join(reference)
    };
    if local.exists() {
        return Ok(local);
    }
    let Some(s) = reference.to_str() else {
        return Err(format!("{} does not exist", local.display()));
    };
    let Some((owner, name, rev)) = parse_id(s) else {
        return Err(format!("{} does not exist", local.display()));
    };
    resolve_in(&cache_dir(), owner, name, rev).map_err(|e| {
        format!(
            "{} is not a folder here, and as a Hugging Face model id: {e}",
            local.display()
        )
    })
}

/// The cached snapshot of `owner/name` at `rev` (default `main`) under `cache`.
pub fn resolve_in(
    cache: &Path,
    owner: &str,
    name: &str,
    rev: Option<&str>,
) -> Result<PathBuf, String> {
    let repo = cache.join(format!("models--{owner}--{name}"));
    let fetch = format!(
        "huggingface-cli download {owner}/{name}{}",
        rev.map(|r| format!(" --revision {r}")).unwrap_or_default()
    );
    if !repo.is_dir() {
        return Err(format!(
            "{owner}/{name} is not in the cache {} (fetch it with `{fetch}`, or set HF_HUB_CACHE \
             or HF_HOME to the cache that holds it)",
            cache.display()
        ));
    }
    let rev = rev.unwrap_or("main");
    let snapshots = repo.join("snapshots");
    let commit = if snapshots.join(rev).is_dir() {
        rev.to_string()
    } else {
        let refp = repo.join("refs").join(rev);
        let text = rla_core::file::read_to_string(&refp).map_err(|e| {
            format!(
                "{owner}/{name}: revision {rev} is neither a snapshot in {} nor a ref ({}: {e}); \
                 fetch it with `{fetch}`",
                snapshots.display(),
                refp.display()
            )
        })?;
        let c = text.trim().to_string();
        if c.is_empty() || !c.chars().all(|ch| ch.is_ascii_alphanumeric()) {
            return Err(format!("{}: not a commit hash: {c:?}", refp.display()));
        }
        c
    };
    let dir = snapshots.join(&commit);
    if !dir.is_dir() {
        return Err(format!(
            "{owner}/{name}@{rev}: the snapshot {} is missing; fetch it with `{fetch}`",
            dir.display()
        ));
    }
    check_snapshot(&dir).map_err(|e| format!("{owner}/{name}@{rev}: {e}"))?;
    Ok(dir)
}

/// A snapshot's entries are links into the cache's blobs: each must lead to a regular file (or
/// a folder), never to a device or a FIFO, which a reader of weights would read without end or
/// wait on.
fn check_snapshot(dir: &Path) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for e in entries {
        let p = e.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        if p.is_dir() {
            continue;
        }
        if let Err(e) = rla_core::file::check_regular(&p) {
            if e.kind() != std::io::ErrorKind::NotFound {
                return Err(format!("{}: {e}", p.display()));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_told_from_paths() {
        assert_eq!(
            parse_id("Qwen/Qwen2.5-7B-Instruct"),
            Some(("Qwen", "Qwen2.5-7B-Instruct", None))
        );
        assert_eq!(parse_id("a/b@v1.0"), Some(("a", "b", Some("v1.0"))));
        for not in [
            "models/household/policy",
            "/abs/x",
            "./a/b",
            "../a",
            "a",
            "a/",
            "/a",
            "a/b@",
            "a/b@../x",
            "a b/c",
        ] {
            assert_eq!(parse_id(not), None, "{not}");
        }
    }

    #[test]
    fn snapshots_resolve_by_ref_and_by_commit_and_a_miss_names_the_cache() {
        let dir = std::env::temp_dir().join(format!("rla-hub-{}", std::process::id()));
        let repo = dir.join("models--owner--tiny");
        std::fs::create_dir_all(repo.join("snapshots/abc123")).unwrap();
        std::fs::create_dir_all(repo.join("refs")).unwrap();
        std::fs::write(repo.join("refs/main"), "abc123\n").unwrap();
        let snap = repo.join("snapshots/abc123");
        assert_eq!(resolve_in(&dir, "owner", "tiny", None).unwrap(), snap);
        assert_eq!(
            resolve_in(&dir, "owner", "tiny", Some("abc123")).unwrap(),
            snap
        );
        let e = resolve_in(&dir, "owner", "tiny", Some("v2")).unwrap_err();
        assert!(e.contains("v2") && e.contains("--revision v2"), "{e}");
        let e = resolve_in(&dir, "owner", "other", None).unwrap_err();
        assert!(
            e.contains(&dir.display().to_string())
                && e.contains("huggingface-cli download owner/other"),
            "{e}"
        );
        std::fs::write(repo.join("refs/main"), "../../etc\n").unwrap();
        assert!(resolve_in(&dir, "owner", "tiny", None)
            .unwrap_err()
            .contains("not a commit"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_snapshot_linking_weights_to_a_device_is_refused() {
        let dir = std::env::temp_dir().join(format!("rla-hub-zero-{}", std::process::id()));
        let snap = dir.join("models--owner--zero/snapshots/abc123");
        std::fs::create_dir_all(&snap).unwrap();
        std::fs::write(snap.join("config.json"), "{}").unwrap();
        assert_eq!(
            resolve_in(&dir, "owner", "zero", Some("abc123")).unwrap(),
            snap
        );
        std::os::unix::fs::symlink("/dev/zero", snap.join("model.safetensors")).unwrap();
        let e = resolve_in(&dir, "owner", "zero", Some("abc123")).unwrap_err();
        assert!(
            e.contains("model.safetensors") && e.contains("a device, not a regular file"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
