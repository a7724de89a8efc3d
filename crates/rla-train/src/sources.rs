//! A run's data sources: the files and folders of data its config names (a setting's
//! [`SettingConfig::data_sources`](crate::config::SettingConfig::data_sources): training games,
//! problem files, task folders, evaluation splits), each recorded by its canonical path with a
//! fingerprint in `RUN/data-sources.json` when the run starts, and checked whenever the run is
//! taken up again, so that a resumed run reads the data it started on or says which source
//! changed.
//!
//! A file's fingerprint is its size and a hash of its bytes (a file past [`WHOLE_FILE`] bytes:
//! its first and last [`FILE_END`] bytes, its size and its modification time); a folder's is a
//! hash over the sorted relative paths, kinds, sizes and modification times of everything under
//! it, walked without following links (a link counts by its target's name) and leaving out the
//! run's own folder where it lies inside.

use crate::config::RunConfig;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The record's name in the run folder.
pub const FILE: &str = "data-sources.json";

/// The version of the record's format.
pub const FORMAT: u32 = 1;

/// Files up to this size are hashed whole.
pub const WHOLE_FILE: u64 = 64 << 20;

/// How much of each end of a larger file is hashed.
pub const FILE_END: u64 = 16 << 20;

/// What a source was when it was fingerprinted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Fingerprint {
    /// Nothing there (a source named but never read, as the split of a count of 0).
    Missing,
    /// A regular file.
    File {
        /// Its size.
        bytes: u64,
        /// The hash of its bytes, 16 hex digits.
        hash: String,
    },
    /// A folder.
    Folder {
        /// Regular files under it.
        files: u64,
        /// Their sizes together.
        bytes: u64,
        /// The hash over its entries, 16 hex digits.
        hash: String,
    },
}

impl std::fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fingerprint::Missing => write!(f, "nothing there"),
            Fingerprint::File { bytes, hash } => write!(f, "a file of {bytes} bytes, {hash}"),
            Fingerprint::Folder { files, bytes, hash } => {
                write!(f, "a folder of {files} files, {bytes} bytes, {hash}")
            }
        }
    }
}

/// One source of a run: the config's key, the path and its fingerprint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Source {
    /// The dotted key of the config naming it (`household.train_games`).
    pub key: String,
    /// Its path, as the recorded config names it.
    pub path: PathBuf,
    /// What it was.
    pub fingerprint: Fingerprint,
}

/// `RUN/data-sources.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// [`FORMAT`].
    pub format: u32,
    /// Every source the config names, in the setting's order.
    pub sources: Vec<Source>,
}

/// A 64-bit multiply–xorshift hash of a byte stream, eight bytes at a time (stable across
/// builds and machines: it is kept in run folders).
struct Hasher {
    h: u64,
    tail: [u8; 8],
    held: usize,
    len: u64,
}

impl Hasher {
    fn new() -> Hasher {
        Hasher {
            h: 0x243F_6A88_85A3_08D3,
            tail: [0; 8],
            held: 0,
            len: 0,
        }
    }

    fn word(&mut self, w: u64) {
        self.h = (self.h ^ w).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.h ^= self.h >> 29;
    }

    fn update(&mut self, mut b: &[u8]) {
        self.len += b.len() as u64;
        if self.held > 0 {
            let take = (8 - self.held).min(b.len());
            self.tail[self.held..self.held + take].copy_from_slice(&b[..take]);
            self.held += take;
            b = &b[take..];
            if self.held < 8 {
                return;
            }
            self.word(u64::from_le_bytes(self.tail));
            self.held = 0;
        }
        let mut words = b.chunks_exact(8);
        for w in &mut words {
            self.word(u64::from_le_bytes(w.try_into().expect("eight bytes")));
        }
        let rest = words.remainder();
        self.tail[..rest.len()].copy_from_slice(rest);
        self.held = rest.len();
    }

    fn u64(&mut self, v: u64) {
        self.update(&v.to_le_bytes());
    }

    fn finish(mut self) -> String {
        if self.held > 0 {
            self.tail[self.held..].fill(0);
            self.word(u64::from_le_bytes(self.tail));
        }
        let len = self.len;
        self.word(len);
        let mut h = self.h;
        h ^= h >> 33;
        h = h.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
        h ^= h >> 33;
        format!("{h:016x}")
    }
}

/// The hash of a whole byte string, as [`fingerprint`] hashes a file of that size up to
/// [`WHOLE_FILE`] bytes (16 hex digits), at any size.
pub fn hash_of(bytes: &[u8]) -> String {
    let mut h = Hasher::new();
    h.update(bytes);
    h.u64(bytes.len() as u64);
    h.finish()
}

/// Feeds `n` bytes of `f` from where it stands.
fn hash_bytes(f: &mut std::fs::File, n: u64, h: &mut Hasher) -> std::io::Result<()> {
    let mut buf = vec![0u8; 1 << 20];
    let mut left = n;
    while left > 0 {
        let want = left.min(buf.len() as u64) as usize;
        let got = f.read(&mut buf[..want])?;
        if got == 0 {
            break;
        }
        h.update(&buf[..got]);
        left -= got as u64;
    }
    Ok(())
}

fn file_print(path: &Path, meta: &std::fs::Metadata) -> std::io::Result<Fingerprint> {
    let mut f = rla_core::file::open(path)?;
    let bytes = meta.len();
    let mut h = Hasher::new();
    if bytes <= WHOLE_FILE {
        hash_bytes(&mut f, bytes, &mut h)?;
    } else {
        hash_bytes(&mut f, FILE_END, &mut h)?;
        f.seek(SeekFrom::Start(bytes - FILE_END))?;
        hash_bytes(&mut f, FILE_END, &mut h)?;
        h.u64(meta.mtime() as u64);
        h.u64(meta.mtime_nsec() as u64);
    }
    h.u64(bytes);
    Ok(Fingerprint::File {
        bytes,
        hash: h.finish(),
    })
}

/// One entry under a folder: its relative path's bytes, its kind, size and modification time
/// (a link: its target's name in place of the size).
struct Entry {
    rel: Vec<u8>,
    kind: u8,
    size: u64,
    mtime: (i64, i64),
    target: Vec<u8>,
}

fn walk(root: &Path, dir: &Path, skip: Option<&Path>, out: &mut Vec<Entry>) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let p = e.path();
        if Some(p.as_path()) == skip {
            continue;
        }
        let m = std::fs::symlink_metadata(&p)?;
        let t = m.file_type();
        let rel = p
            .strip_prefix(root)
            .unwrap_or(&p)
            .as_os_str()
            .as_bytes()
            .to_vec();
        let (kind, target) = if t.is_symlink() {
            (
                b'l',
                std::fs::read_link(&p)?.as_os_str().as_bytes().to_vec(),
            )
        } else if t.is_dir() {
            (b'd', Vec::new())
        } else if t.is_file() {
            (b'f', Vec::new())
        } else {
            (b'o', Vec::new())
        };
        out.push(Entry {
            rel,
            kind,
            size: if kind == b'f' { m.len() } else { 0 },
            mtime: if kind == b'd' {
                (0, 0)
            } else {
                (m.mtime(), m.mtime_nsec())
            },
            target,
        });
        if kind == b'd' {
            walk(root, &p, skip, out)?;
        }
    }
    Ok(())
}

fn folder_print(root: &Path, skip: Option<&Path>) -> std::io::Result<Fingerprint> {
    let mut entries = Vec::new();
    walk(root, root, skip, &mut entries)?;
    entries.sort_by(|a, b| a.rel.cmp(&b.rel));
    let mut h = Hasher::new();
    let (mut files, mut bytes) = (0, 0);
    for e in &entries {
        h.u64(e.rel.len() as u64);
        h.update(&e.rel);
        h.update(&[e.kind]);
        h.u64(e.size);
        h.u64(e.mtime.0 as u64);
        h.u64(e.mtime.1 as u64);
        h.u64(e.target.len() as u64);
        h.update(&e.target);
        if e.kind == b'f' {
            files += 1;
            bytes += e.size;
        }
    }
    Ok(Fingerprint::Folder {
        files,
        bytes,
        hash: h.finish(),
    })
}

/// The fingerprint of `path` as it is now; `skip` (a run's own folder) is left out of a folder's
/// walk.
pub fn fingerprint(path: &Path, skip: Option<&Path>) -> std::io::Result<Fingerprint> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Fingerprint::Missing),
        Err(e) => return Err(e),
    };
    if meta.is_dir() {
        folder_print(path, skip)
    } else if meta.is_file() {
        file_print(path, &meta)
    } else {
        Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "is neither a file nor a folder",
        ))
    }
}

/// The run folder, canonical, to leave out of the sources' walks.
fn own(run: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(run).ok()
}

/// The sources `cfg` names with their fingerprints now.
pub fn take(run: &Path, cfg: &RunConfig) -> Result<Record> {
    let skip = own(run);
    let sources = cfg
        .table
        .data_sources()
        .into_iter()
        .map(|(key, path)| {
            let fingerprint = fingerprint(&path, skip.as_deref())
                .with_context(|| format!("{key} {}", path.display()))?;
            Ok(Source {
                key,
                path,
                fingerprint,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Record {
        format: FORMAT,
        sources,
    })
}

/// Records the sources `cfg` names in `run/data-sources.json` (atomically), as a run starts.
pub fn record(run: &Path, cfg: &RunConfig) -> Result<()> {
    let r = take(run, cfg)?;
    let p = run.join(FILE);
    rla_core::file::write_atomic(&p, serde_json::to_string_pretty(&r)?.as_bytes())
        .with_context(|| format!("writing {}", p.display()))
}

/// Whether `run` records its data sources (a run started before they were recorded does not).
pub fn recorded(run: &Path) -> bool {
    run.join(FILE).exists()
}

/// Checks every source `run` recorded against what is there now; an error names each source
/// that changed or went missing by its key and path. A run that records none (started before
/// sources were recorded) passes.
pub fn check(run: &Path) -> Result<()> {
    let p = run.join(FILE);
    if !p.exists() {
        return Ok(());
    }
    let text = rla_core::file::read_to_string(&p)
        .with_context(|| format!("cannot read {}", p.display()))?;
    let r: Record = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a record of data sources", p.display()))?;
    if r.format != FORMAT {
        anyhow::bail!(
            "{} is in format {} and this is rlanything {} (format {FORMAT})",
            p.display(),
            r.format,
            env!("CARGO_PKG_VERSION")
        );
    }
    let skip = own(run);
    let mut changed = Vec::new();
    for s in &r.sources {
        let now = fingerprint(&s.path, skip.as_deref());
        let what = match (&s.fingerprint, now) {
            (was, Ok(now)) if *was == now => continue,
            (Fingerprint::Missing, Ok(now)) => {
                format!("appeared since the run started (now {now})")
            }
            (_, Ok(Fingerprint::Missing)) => "no longer exists".to_string(),
            (was, Ok(now)) => {
                format!("changed since the run started (fingerprint: {was} then, {now} now)")
            }
            (_, Err(e)) => format!("cannot be read ({e})"),
        };
        changed.push(format!("{} {}: {what}", s.key, s.path.display()));
    }
    if !changed.is_empty() {
        anyhow::bail!(
            "{}\nthe run in {} reads the data it started on: restore it, or start a new run",
            changed.join("\n"),
            run.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_the_same_however_the_bytes_arrive() {
        let bytes: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 251) as u8).collect();
        let whole = {
            let mut h = Hasher::new();
            h.update(&bytes);
            h.finish()
        };
        for cut in [1, 3, 7, 8, 9, 500] {
            let mut h = Hasher::new();
            for c in bytes.chunks(cut) {
                h.update(c);
            }
            assert_eq!(h.finish(), whole, "{cut}");
        }
        // one byte more, one byte changed, or a zero appended: another hash
        let mut h = Hasher::new();
        h.update(&bytes[..999]);
        assert_ne!(h.finish(), whole);
        let mut other = bytes.clone();
        other[500] ^= 1;
        let mut h = Hasher::new();
        h.update(&other);
        assert_ne!(h.finish(), whole);
        let mut h = Hasher::new();
        h.update(&bytes);
        h.update(&[0]);
        assert_ne!(h.finish(), whole);
    }

    #[test]
    fn a_folders_fingerprint_follows_its_files_not_its_links_nor_the_run_inside() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path().join("games");
        std::fs::create_dir_all(d.join("a")).unwrap();
        std::fs::write(d.join("a/game.tw-pddl"), "one").unwrap();
        std::fs::write(d.join("b.json"), "{}").unwrap();
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("x"), "x").unwrap();
        std::os::unix::fs::symlink(&elsewhere, d.join("link")).unwrap();
        let run = d.join("run");
        std::fs::create_dir_all(&run).unwrap();
        let skip = std::fs::canonicalize(&run).unwrap();
        let first = fingerprint(&d, Some(&skip)).unwrap();
        assert!(
            matches!(
                &first,
                Fingerprint::Folder {
                    files: 2,
                    bytes: 5,
                    ..
                }
            ),
            "{first:?}"
        );
        // what the run writes into its own folder, and what lies behind a link, do not count
        std::fs::write(run.join("metrics.jsonl"), "{}").unwrap();
        std::fs::write(elsewhere.join("x"), "xyz").unwrap();
        assert_eq!(fingerprint(&d, Some(&skip)).unwrap(), first);
        // a file rewritten with the same size (another modification time), a file added
        let t = std::time::SystemTime::now() - std::time::Duration::from_secs(100);
        std::fs::File::options()
            .write(true)
            .open(d.join("a/game.tw-pddl"))
            .unwrap()
            .set_modified(t)
            .unwrap();
        let touched = fingerprint(&d, Some(&skip)).unwrap();
        assert_ne!(touched, first);
        std::fs::write(d.join("c"), "").unwrap();
        assert_ne!(fingerprint(&d, Some(&skip)).unwrap(), touched);
        // a file's follows its bytes, not its time
        let f = d.join("b.json");
        let before = fingerprint(&f, None).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&f)
            .unwrap()
            .set_modified(t)
            .unwrap();
        assert_eq!(fingerprint(&f, None).unwrap(), before);
        std::fs::write(&f, "[]").unwrap();
        assert_ne!(fingerprint(&f, None).unwrap(), before);
        assert_eq!(
            fingerprint(&tmp.path().join("none"), None).unwrap(),
            Fingerprint::Missing
        );
    }

    #[test]
    fn a_run_records_its_sources_and_a_resume_on_changed_ones_is_refused() {
        use crate::run::RunDir;
        let tmp = tempfile::tempdir().unwrap();
        let games = tmp.path().join("data/games");
        std::fs::create_dir_all(games.join("g")).unwrap();
        std::fs::write(games.join("g/game.tw-pddl"), "{}").unwrap();
        // named through `..`, from the config's folder; the validation split is never there
        let text = "[household]\ntrain_games = \"../data/games\"\n\
                    eval_games = { validation = \"none\" }\n";
        let folder = tmp.path().join("configs");
        std::fs::create_dir_all(&folder).unwrap();
        let cfg = RunConfig::parse_in(text, &folder).unwrap();
        let games = std::fs::canonicalize(&games).unwrap();
        let h = crate::household::config::HouseholdConfig::of(&cfg);
        use crate::config::SettingConfig;
        assert_eq!(h.train_games.as_deref(), Some(games.as_path()));
        assert_eq!(
            h.eval_games.validation.as_deref(),
            Some(folder.join("none").as_path())
        );
        let run = tmp.path().join("run");
        RunDir::create(&run, &cfg, false).unwrap();
        let r: Record =
            serde_json::from_str(&std::fs::read_to_string(run.join(FILE)).unwrap()).unwrap();
        let keys: Vec<&str> = r.sources.iter().map(|s| s.key.as_str()).collect();
        assert_eq!(
            keys,
            ["household.train_games", "household.eval_games.validation"]
        );
        assert_eq!(r.sources[1].fingerprint, Fingerprint::Missing);
        // unchanged: the resume goes on, and the recorded config reads the same from anywhere
        RunDir::create(&run, &cfg, true).unwrap();
        assert_eq!(crate::run::recorded_config(&run, &[]).unwrap(), cfg);
        std::fs::write(games.join("g/traj_data.json"), "{}").unwrap();
        let e = format!("{:#}", RunDir::create(&run, &cfg, true).unwrap_err());
        assert!(
            e.contains(&format!(
                "household.train_games {}: changed since the run started",
                games.display()
            )),
            "{e}"
        );
        std::fs::create_dir_all(folder.join("none")).unwrap();
        let e = format!("{:#}", check(&run).unwrap_err());
        assert!(
            e.contains("household.eval_games.validation") && e.contains("appeared"),
            "{e}"
        );
        std::fs::remove_dir_all(tmp.path().join("data")).unwrap();
        let e = format!("{:#}", check(&run).unwrap_err());
        assert!(e.contains("no longer exists"), "{e}");
        // a run that records no sources resumes as before
        std::fs::remove_file(run.join(FILE)).unwrap();
        check(&run).unwrap();
        RunDir::create(&run, &cfg, true).unwrap();
    }
}
