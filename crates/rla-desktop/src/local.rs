//! Tasks as files: generated tasks exported as OSWorld task JSON beside their workbooks, and
//! any such task opened and scored from its folder — `download` URLs and `cloud_file` paths
//! that are relative are read from the task file's folder (this setting's stand-in for
//! OSWorld's file cache), `vm_file` paths name the file the desktop saves.

use crate::app::Desktop;
use crate::compare::{evaluate, Resolved};
use crate::family::Generated;
use crate::task::{DesktopTask, Getter};
use crate::DesktopError;
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
    crate::xlsx::save(&g.start, &folder.join("start.xlsx"))?;
    for (key, book) in &g.expected {
        crate::xlsx::save(book, &folder.join(format!("{key}.xlsx")))?;
    }
    let path = dir.join(format!("{id}.json"));
    crate::xlsx::write_atomic(&path, g.task.to_json().as_bytes())?;
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

/// The files a task's `download` steps name: (path on the desktop, file here); relative URLs
/// and `file://` ones are read from the task file's folder.
pub fn downloads(
    steps: &[crate::task::SetupStep],
    task_path: &Path,
) -> Result<Vec<(String, PathBuf)>, DesktopError> {
    let base = task_path.parent().unwrap_or(Path::new("."));
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
            if url.starts_with("http://") || url.starts_with("https://") {
                return Err(DesktopError::invalid(
                    task_path,
                    format!("config[{i}]"),
                    format!("{url} must be downloaded first: this setting reads files from the task's folder"),
                ));
            }
            files.push((path.to_string(), local(base, url)));
        }
    }
    Ok(files)
}

/// A task opened from its file: the task, and its document on a desktop (in memory, under the
/// name its `open` step gives).
pub fn open(
    task_path: &Path,
    width: u32,
    height: u32,
) -> Result<(DesktopTask, Desktop), DesktopError> {
    let task = DesktopTask::load(task_path)?;
    task.check()
        .map_err(|m| DesktopError::invalid(task_path, "evaluator", m))?;
    let files = downloads(task.config.as_deref().unwrap_or(&[]), task_path)?;
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
    let mut d = Desktop::open(&src, width, height)?;
    d.path = None;
    d.name = Path::new(&opened)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or(opened.clone());
    Ok((task, d))
}

fn getter_files(g: &Getter, base: &Path) -> Vec<PathBuf> {
    g.paths()
        .unwrap_or_default()
        .into_iter()
        .map(|p| local(base, p))
        .collect()
}

/// Scores a result file for a task file: the evaluator's `vm_file` getters read `result`, its
/// `cloud_file`/`local_file` getters read `expected` when given, else the paths the task names
/// (relative ones from the task's folder).
pub fn score(task_path: &Path, result: &Path, expected: &[PathBuf]) -> Result<f64, String> {
    let task = DesktopTask::load(task_path).map_err(|e| e.to_string())?;
    task.check()?;
    let base = task_path.parent().unwrap_or(Path::new("."));
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
                None => vec![],
                Some(_) if !expected.is_empty() => expected.to_vec(),
                Some(g) => getter_files(g, base),
            })
            .collect(),
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
