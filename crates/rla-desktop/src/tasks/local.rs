//! Tasks as files: generated tasks exported as OSWorld task JSON beside their workbooks, and
//! any such task opened and scored from its folder — `download` URLs and `cloud_file` paths
//! that are relative are read from the task file's folder, `http(s)` ones from a local folder
//! of files (`cache`, OSWorld's file cache: nothing online is reached), `vm_file` paths name
//! the file the desktop saves. A folder of task files ([`folder`]) is a pool or an evaluation
//! set; the tasks whose evaluator or setup this setting does not run are counted by what it is.

use crate::osworld::compare::{evaluate, Resolved};
use crate::osworld::task::{DesktopTask, Getter};
use crate::tasks::episode::Opened;
use crate::tasks::family::Generated;
use crate::ui::app::Desktop;
use crate::DesktopError;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Writes a generated task as `dir/<id>.json` with `dir/<id>/start.xlsx` and the expected
/// workbook of each evaluator key, `dir/<id>/<key>.xlsx`. Returns the task file.
pub fn export(g: &Generated, dir: &Path) -> Result<PathBuf, DesktopError> {
    let id = &g.task.id;
    let folder = dir.join(id);
    std::fs::create_dir_all(&folder).map_err(|e| DesktopError::Io {
        path: folder.clone(),
        source: e,
    })?;
    crate::sheet::xlsx::save(&g.start, &folder.join("start.xlsx"))?;
    for (key, book) in &g.expected {
        crate::sheet::xlsx::save(book, &folder.join(format!("{key}.xlsx")))?;
    }
    let path = dir.join(format!("{id}.json"));
    crate::sheet::xlsx::write_atomic(&path, g.task.to_json().as_bytes())?;
    Ok(path)
}

fn local(base: &Path, p: &str) -> PathBuf {
    let p = p.strip_prefix("file://").unwrap_or(p);
    let q = Path::new(p);
    if q.is_absolute() {
        q.to_path_buf()
    } else {
        base.join(q)
    }
}

fn is_online(url: &str) -> bool {
    url.starts_with("http://") || url.starts_with("https://")
}

/// The last path segment of a URL, without its query (`…/files/sales.xlsx?dl=1` → `sales.xlsx`).
fn url_file_name(url: &str) -> Option<&str> {
    let path = url.split(['?', '#']).next().unwrap_or(url);
    let path = path.split_once("://").map_or(path, |(_, rest)| rest);
    let (_, name) = path.rsplit_once('/')?;
    (!name.is_empty()).then_some(name)
}

/// Where a file a task names is read from: a relative or `file://` URL from the task's folder;
/// an `http(s)` one from `cache`, as the URL's file name, else as `name` (the name the task
/// gives the file: a `download`'s desktop path, a `cloud_file`'s `dest`).
fn locate(
    task_path: &Path,
    cache: Option<&Path>,
    url: &str,
    name: Option<&str>,
    field: &str,
) -> Result<PathBuf, DesktopError> {
    if !is_online(url) {
        return Ok(local(task_path.parent().unwrap_or(Path::new(".")), url));
    }
    let Some(cache) = cache else {
        return Err(DesktopError::invalid(
            task_path,
            field,
            format!(
                "{url} is online: give a folder of downloaded files (`[desktop] files`, \
                 `--files DIR`) holding it under its file name"
            ),
        ));
    };
    let mut tried = Vec::new();
    for n in [
        url_file_name(url),
        name.and_then(|n| Path::new(n).file_name()?.to_str()),
    ]
    .into_iter()
    .flatten()
    {
        let f = cache.join(n);
        if f.is_file() {
            return Ok(f);
        }
        tried.push(f.display().to_string());
    }
    Err(DesktopError::invalid(
        task_path,
        field,
        format!(
            "{url} is not in the files folder (looked for {})",
            tried.join(", ")
        ),
    ))
}

/// The files a task's `download` steps name: (path on the desktop, file here); relative URLs
/// and `file://` ones are read from the task file's folder.
pub fn downloads(
    steps: &[crate::osworld::task::SetupStep],
    task_path: &Path,
    cache: Option<&Path>,
) -> Result<Vec<(String, PathBuf)>, DesktopError> {
    let mut files = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        if step.kind != "download" {
            continue;
        }
        for f in step
            .parameters
            .get("files")
            .and_then(|f| f.as_array())
            .into_iter()
            .flatten()
        {
            let (Some(url), Some(path)) = (
                f.get("url").and_then(|u| u.as_str()),
                f.get("path").and_then(|u| u.as_str()),
            ) else {
                return Err(DesktopError::invalid(
                    task_path,
                    format!("config[{i}].parameters.files"),
                    "each file needs `url` and `path`",
                ));
            };
            let f = locate(task_path, cache, url, Some(path), &format!("config[{i}]"))?;
            files.push((path.to_string(), f));
        }
    }
    Ok(files)
}

/// A task opened from its file: the task, and its document on a desktop (in memory, under the
/// name its `open` step gives).
pub fn open(
    task_path: &Path,
    cache: Option<&Path>,
    width: u32,
    height: u32,
) -> Result<(DesktopTask, Desktop), DesktopError> {
    let (task, src, opened) = document(task_path, cache)?;
    let mut d = Desktop::open(&src, width, height)?;
    d.path = None;
    d.name = opened;
    Ok((task, d))
}

/// A task file read and checked: the task, the file its `open` step opens (found as its
/// `download` says) and that file's name on the desktop.
fn document(
    task_path: &Path,
    cache: Option<&Path>,
) -> Result<(DesktopTask, PathBuf, String), DesktopError> {
    let task = DesktopTask::load(task_path)?;
    task.check()
        .map_err(|m| DesktopError::invalid(task_path, "evaluator", m))?;
    let files = downloads(task.config.as_deref().unwrap_or(&[]), task_path, cache)?;
    let mut opened: Option<String> = None;
    for (i, step) in task.config.iter().flatten().enumerate() {
        let p = &step.parameters;
        match step.kind.as_str() {
            "download" => {}
            "open" => opened = p.get("path").and_then(|x| x.as_str()).map(String::from),
            "sleep" | "activate_window" | "launch" | "execute" => {}
            other => {
                return Err(DesktopError::invalid(
                    task_path,
                    format!("config[{i}].type"),
                    format!("{other:?} is not a setup step this setting runs"),
                ))
            }
        }
    }
    let opened = opened.ok_or_else(|| {
        DesktopError::invalid(task_path, "config", "no `open` step names the document")
    })?;
    let src = files
        .iter()
        .find(|(p, _)| *p == opened)
        .map(|(_, f)| f.clone())
        .ok_or_else(|| {
            DesktopError::invalid(
                task_path,
                "config",
                format!("{opened} is opened but not downloaded"),
            )
        })?;
    let name = Path::new(&opened)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or(opened.clone());
    Ok((task, src, name))
}

/// The files a getter names (`path`, one or a list; `http(s)` ones found in `cache` by their
/// file name or their `dest`).
fn getter_files(
    g: &Getter,
    task_path: &Path,
    cache: Option<&Path>,
    field: &str,
) -> Result<Vec<PathBuf>, DesktopError> {
    let dests: Vec<Option<&str>> = match g.fields.get("dest") {
        Some(serde_json::Value::String(s)) => vec![Some(s.as_str())],
        Some(serde_json::Value::Array(v)) => v.iter().map(|x| x.as_str()).collect(),
        _ => vec![],
    };
    g.paths()
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, p)| locate(task_path, cache, p, dests.get(i).copied().flatten(), field))
        .collect()
}

/// A task file opened for an episode on the native desktop: its start workbook, its reference
/// files (each evaluator function's expected getters) and, for a `compare_table` against one
/// workbook, that workbook (what the expert works towards).
pub fn load(task_path: &Path, cache: Option<&Path>) -> Result<Opened, DesktopError> {
    let (task, src, file) = document(task_path, cache)?;
    let csv = |p: &Path| p.extension().is_some_and(|e| e.eq_ignore_ascii_case("csv"));
    let read = |p: &Path| {
        if csv(p) {
            crate::sheet::xlsx::open_csv(p)
        } else {
            crate::sheet::xlsx::open(p)
        }
    };
    let start = read(&src)?;
    let ev = &task.evaluator;
    let expected: Vec<Getter> = ev
        .expected
        .as_ref()
        .map(|r| r.as_slice().to_vec())
        .unwrap_or_default();
    let reference = expected
        .iter()
        .enumerate()
        .map(|(i, g)| getter_files(g, task_path, cache, &format!("evaluator.expected[{i}]")))
        .collect::<Result<Vec<_>, _>>()?;
    for f in reference.iter().flatten() {
        if !f.is_file() {
            return Err(DesktopError::invalid(
                task_path,
                "evaluator.expected",
                format!("{} does not exist", f.display()),
            ));
        }
    }
    let target = match (ev.func.as_slice(), reference.as_slice()) {
        ([f], [files]) if f == "compare_table" && files.len() == 1 => Some(read(&files[0])?),
        _ => None,
    };
    Ok(Opened {
        task,
        file,
        start,
        target,
        reference: Some(reference),
    })
}

/// A folder of OSWorld task files (`*.json`, in sub-folders too, in name order): the tasks this
/// setting runs, and how many of the others each unsupported part removed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Folder {
    /// The task files that load, their files found.
    pub tasks: Vec<PathBuf>,
    /// What removed the others (`function check_data_validations`, `setup step chrome_open_tabs`,
    /// `document report.docx`) → how many tasks.
    pub removed: BTreeMap<String, usize>,
}

impl Folder {
    /// One line naming what was removed, or `None` when nothing was.
    pub fn removed_line(&self) -> Option<String> {
        if self.removed.is_empty() {
            return None;
        }
        let parts: Vec<String> = self
            .removed
            .iter()
            .map(|(what, n)| format!("{what} ({n})"))
            .collect();
        Some(format!(
            "{} task files not run here, by what this setting does not implement: {}",
            self.removed.values().sum::<usize>(),
            parts.join(", ")
        ))
    }
}

/// How deep [`folder`] looks under its folder (OSWorld's examples are one level deep).
pub const MAX_TASK_DEPTH: usize = 16;

/// The task files (`*.json`) under `dir`, in path order. Links to folders are not followed (a
/// link to `.` or to `/` would walk for ever or count a task twice), the walk stops
/// [`MAX_TASK_DEPTH`] levels down, and a file reached twice (a link to a task file beside it) is
/// counted once, at its first path.
pub fn task_files(dir: &Path) -> Result<Vec<PathBuf>, DesktopError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| DesktopError::Io { path, source }
    };
    let mut files = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), 0usize)];
    while let Some((d, depth)) = stack.pop() {
        for e in std::fs::read_dir(&d).map_err(io(&d))? {
            let e = e.map_err(io(&d))?;
            let p = e.path();
            // the entry's own kind: a link is a link, whatever it points at
            let kind = e.file_type().map_err(io(&p))?;
            if kind.is_dir() {
                if depth < MAX_TASK_DEPTH {
                    stack.push((p, depth + 1));
                }
            } else if p.extension().is_some_and(|x| x == "json") && !p.is_dir() {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut seen = std::collections::HashSet::new();
    files.retain(|f| seen.insert(std::fs::canonicalize(f).unwrap_or_else(|_| f.clone())));
    Ok(files)
}

/// Reads a folder of OSWorld task files ([`task_files`]). A file that is not a task, or a task
/// whose files are missing, is an error naming it; a task whose evaluator or setup this setting
/// does not run is left out and counted ([`Folder::removed`]).
pub fn folder(dir: &Path, cache: Option<&Path>) -> Result<Folder, DesktopError> {
    let files = task_files(dir)?;
    let mut out = Folder::default();
    for f in files {
        let task = DesktopTask::load(&f)?;
        if let Some(what) = unsupported(&task) {
            *out.removed.entry(what).or_default() += 1;
            continue;
        }
        load(&f, cache)?;
        out.tasks.push(f);
    }
    if out.tasks.is_empty() {
        return Err(DesktopError::invalid(
            dir,
            "task files",
            match out.removed_line() {
                Some(l) => format!("no task this setting runs: {l}"),
                None => "no task file (*.json) in it".into(),
            },
        ));
    }
    Ok(out)
}

/// What of a task this setting does not run, named for the count of [`Folder::removed`]: an
/// evaluator function, getter or `compare_table` rule it does not implement, a setup step it
/// does not run, a document that is not a spreadsheet.
pub fn unsupported(task: &DesktopTask) -> Option<String> {
    use crate::osworld::task::{FUNCS, GETTERS, RULES};
    let ev = &task.evaluator;
    if let Some(f) = ev
        .func
        .as_slice()
        .iter()
        .find(|f| !FUNCS.contains(&f.as_str()))
    {
        return Some(format!("function {f}"));
    }
    for g in [&ev.result, &ev.expected].into_iter().flatten() {
        if let Some(g) = g
            .as_slice()
            .iter()
            .find(|g| !GETTERS.contains(&g.kind.as_str()))
        {
            return Some(format!("getter {}", g.kind));
        }
    }
    if ev.expected.is_none() {
        return Some("an evaluator without expected files".into());
    }
    for o in ev.options.iter().flat_map(|o| o.as_slice()) {
        if let Some(r) = o
            .rules
            .iter()
            .flatten()
            .find(|r| !RULES.contains(&r.kind.as_str()))
        {
            return Some(format!("rule {}", r.kind));
        }
    }
    const STEPS: [&str; 6] = [
        "download",
        "open",
        "sleep",
        "activate_window",
        "launch",
        "execute",
    ];
    for s in task.config.iter().flatten() {
        if !STEPS.contains(&s.kind.as_str()) {
            return Some(format!("setup step {}", s.kind));
        }
        if s.kind == "open" {
            let path = s
                .parameters
                .get("path")
                .and_then(|x| x.as_str())
                .unwrap_or("");
            let lower = path.to_ascii_lowercase();
            if !(lower.ends_with(".xlsx") || lower.ends_with(".csv")) {
                let name = Path::new(path)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned());
                return Some(format!("document {}", name.unwrap_or_default()));
            }
        }
    }
    None
}

/// Scores a result file for a task file: the evaluator's `vm_file` getters read `result`, its
/// `cloud_file`/`local_file` getters read `expected` when given, else the paths the task names
/// (relative ones from the task's folder).
pub fn score(
    task_path: &Path,
    cache: Option<&Path>,
    result: &Path,
    expected: &[PathBuf],
) -> Result<f64, String> {
    let task = DesktopTask::load(task_path).map_err(|e| e.to_string())?;
    task.check()?;
    let ev = &task.evaluator;
    let n = ev.func.as_slice().len();
    let results = ev
        .result
        .as_ref()
        .map(|r| r.as_slice().to_vec())
        .unwrap_or_default();
    let expecteds = ev
        .expected
        .as_ref()
        .map(|r| r.as_slice().to_vec())
        .unwrap_or_default();
    let files = Resolved {
        result: (0..n)
            .map(|i| results.get(i).map(|_| result.to_path_buf()))
            .collect(),
        expected: (0..n)
            .map(|i| match expecteds.get(i) {
                None => Ok(vec![]),
                Some(_) if !expected.is_empty() => Ok(expected.to_vec()),
                Some(g) => getter_files(g, task_path, cache, &format!("evaluator.expected[{i}]")),
            })
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?,
    };
    for f in files.expected.iter().flatten() {
        if !f.exists() {
            return Err(format!(
                "the expected file {} does not exist (pass --expected)",
                f.display()
            ));
        }
    }
    evaluate(ev, &files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_folder_walks_no_link_to_a_folder_and_counts_a_file_once() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("a.json"), "{}").unwrap();
        std::fs::write(root.join("sub/b.json"), "{}").unwrap();
        std::fs::write(root.join("notes.txt"), "").unwrap();
        let link = |to: &Path, name: &str| std::os::unix::fs::symlink(to, root.join(name)).unwrap();
        // the whole file system, the folder itself, a sub-folder again, a task file again
        link(Path::new("/"), "everything");
        link(root, "loop");
        link(&root.join("sub"), "sub-again");
        link(&root.join("a.json"), "z-again.json");
        let files = task_files(root).unwrap();
        assert_eq!(files, [root.join("a.json"), root.join("sub/b.json")]);
        // a link to a task file elsewhere is read, once
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join("c.json"), "{}").unwrap();
        link(&other.path().join("c.json"), "c.json");
        assert_eq!(task_files(root).unwrap().len(), 3);
    }
}
