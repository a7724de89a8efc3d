//! Rewrites of OSWorld task files (`[desktop] train_tasks`): the structured rewriter edits the
//! task's start file — easier: half of the cells the answer changes filled in from the
//! reference; harder: a distractor table beside the data, in the start file and the reference
//! alike —, the reward model as rewriter edits its instruction from the judge's critique (the
//! paper's example adds "use the function wizard; make sure the result is a number"). A rewrite
//! is written into the run as an OSWorld task file with its files (`RUN/desktop-tasks/proposed/`,
//! copied to `accepted/` once the loop accepts it), and is valid only if it is still unsolved at
//! its start and, where the expert has a reference workbook to work towards, the expert solves
//! it within the training step limit with the evaluator scoring 1.

use super::config::DesktopConfig;
use crate::config::RewriterKind;
use crate::judge::last_boxed;
use anyhow::{Context, Result};
use rla_core::adapt::Direction;
use rla_desktop::sheet::addr::Addr;
use rla_desktop::sheet::workbook::{Content, Workbook};
use rla_desktop::tasks::episode::{DesktopEpisode, Opened};
use rla_lm::{SampleParams, Sampler};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// Where proposed rewrites are written, under the run's folder.
pub const PROPOSED: &str = "desktop-tasks/proposed";
/// Where accepted rewrites are kept, under the run's folder.
pub const ACCEPTED: &str = "desktop-tasks/accepted";

/// The cells of the sheets both workbooks hold whose content differs (the start's value, the
/// reference's), in sheet, row and column order.
fn changed_cells(start: &Workbook, target: &Workbook) -> Vec<(usize, Addr, Option<Content>)> {
    let mut out = Vec::new();
    for (i, s) in start.sheets.iter().enumerate() {
        let Some(t) = target.sheet(&s.name) else {
            continue;
        };
        let mut addrs: Vec<Addr> = s.cells.keys().chain(t.cells.keys()).copied().collect();
        addrs.sort();
        addrs.dedup();
        for a in addrs {
            let want = t.cells.get(&a);
            if s.cells.get(&a) != want {
                out.push((i, a, want.cloned()));
            }
        }
    }
    out
}

/// The structured rewrite of a task's start file (and, harder, of its reference): what was
/// done, the new start and the new reference; `None` where it has nothing to change. Easier
/// fills in the first half of the cells the answer changes (a sheet the answer adds is added);
/// harder puts the same small table two columns right of the data in both.
pub fn structured(
    start: &Workbook,
    target: &Workbook,
    direction: Direction,
    seed: u64,
) -> Option<(String, Workbook, Workbook)> {
    match direction {
        Direction::Easier => {
            // a sheet the answer adds is added, holding its share of the cells
            let mut s = start.clone();
            for t in &target.sheets {
                if s.index(&t.name).is_none() {
                    s.insert_sheet(s.sheets.len(), &t.name).ok()?;
                }
            }
            let changed = changed_cells(&s, target);
            let n = changed.len() / 2;
            if n == 0 {
                return None;
            }
            for (i, a, c) in changed.into_iter().take(n) {
                match c {
                    Some(c) => s.sheets[i].cells.insert(a, c),
                    None => s.sheets[i].cells.remove(&a),
                };
            }
            Some((
                format!("filled in {n} of the cells the answer changes"),
                s,
                target.clone(),
            ))
        }
        Direction::Harder => {
            // beside the data of the first sheet, two columns right of what either file fills
            let name = &start.sheets.first()?.name;
            let right = [start.sheet(name)?, target.sheet(name)?]
                .iter()
                .filter_map(|s| s.extent())
                .map(|e| e.col)
                .max()
                .unwrap_or(0);
            let col = right + 3;
            let rows = 3 + (seed % 4) as u32;
            let mut cells = vec![(Addr::new(0, col), Content::Text("Notes".into()))];
            for r in 1..=rows {
                let v = ((seed / 7 + 13 * u64::from(r)) % 90 + 10) as f64;
                cells.push((Addr::new(r, col), Content::Number(v)));
            }
            let (mut s, mut t) = (start.clone(), target.clone());
            for b in [&mut s, &mut t] {
                let i = b.index(name)?;
                if !b.sheets[i].has_room_for(Addr::new(rows, col)) {
                    return None;
                }
                for (a, c) in &cells {
                    b.sheets[i].cells.insert(*a, c.clone());
                }
            }
            Some((
                format!("added a distractor table of {rows} values beside the data"),
                s,
                t,
            ))
        }
        Direction::Keep => None,
    }
}

/// The reward model's rewrite of an instruction: the new instruction, or `None` where its
/// answer holds none (empty, unchanged or over 2,000 characters).
pub fn ask_instruction(
    lm: &dyn Sampler,
    params: &SampleParams,
    instruction: &str,
    direction: Direction,
    critique: Option<&str>,
) -> Option<String> {
    let (want, was, how) = if direction == Direction::Harder {
        ("harder", "easy", "says less of how to do it")
    } else {
        (
            "easier",
            "hard",
            "says more of how to do it (for example: use the function wizard; make sure the result is a number)",
        )
    };
    let prompt = format!(
        "A spreadsheet task is too {was} for the agent: \"{instruction}\"\nMistakes seen: {}\nRewrite the instruction to make the task {want} without changing what the finished sheet must hold: a {want} instruction {how}.\nAnswer with the new instruction in \\boxed{{}}.",
        critique.unwrap_or("none recorded.")
    );
    let answer = crate::play::ask_one(lm, &prompt, params).ok()?;
    let new = last_boxed(&answer)?.trim().to_string();
    (!new.is_empty() && new != instruction.trim() && new.chars().count() <= 2000).then_some(new)
}

/// A task file's rewrite, written to `run/PROPOSED/<id>.json` with its files in
/// `run/PROPOSED/<id>/`; `None` where the rewriter has nothing to propose or the rewrite is not
/// valid. Returns what was done and the new task file.
#[allow(clippy::too_many_arguments)]
pub fn rewrite_file(
    cfg: &DesktopConfig,
    step_limit: usize,
    reward: &dyn Sampler,
    params: &SampleParams,
    file: &Path,
    direction: Direction,
    critique: Option<&str>,
    run: Option<&Path>,
    id: &str,
    seed: u64,
) -> Result<Option<(String, PathBuf)>> {
    let run =
        run.context("a task file's rewrite is written into its run's folder, and there is none")?;
    let cache = cfg.files.as_deref();
    let opened = rla_desktop::tasks::local::load(file, cache)?;
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let mut task: Value =
        serde_json::from_str(&text).with_context(|| format!("{}", file.display()))?;
    let (what, start, target, instruction) = match cfg.rewriter {
        RewriterKind::Structured => {
            let Some(t) = &opened.target else {
                return Ok(None);
            };
            let Some((what, s, t)) = structured(&opened.start, t, direction, seed) else {
                return Ok(None);
            };
            (what, s, Some(t), None)
        }
        RewriterKind::RewardModel => {
            let Some(new) = ask_instruction(
                reward,
                params,
                &opened.task.instruction,
                direction,
                critique,
            ) else {
                return Ok(None);
            };
            (
                "rewrote the instruction".to_string(),
                opened.start.clone(),
                None,
                Some(new),
            )
        }
    };
    let dir = run.join(PROPOSED);
    let folder = dir.join(id);
    std::fs::create_dir_all(&folder).with_context(|| format!("creating {}", folder.display()))?;
    // the files: the document the task opens written anew, every other file copied beside it
    let downloads = rla_desktop::tasks::local::downloads(
        opened.task.config.as_deref().unwrap_or(&[]),
        file,
        cache,
    )?;
    for step in task["config"].as_array_mut().into_iter().flatten() {
        if step["type"] != "download" {
            continue;
        }
        for f in step["parameters"]["files"]
            .as_array_mut()
            .into_iter()
            .flatten()
        {
            let path = f["path"].as_str().unwrap_or_default().to_string();
            let name = file_name(&path);
            let to = folder.join(&name);
            if name == opened.file {
                save(&start, &to)?;
            } else if let Some((_, from)) = downloads.iter().find(|(p, _)| *p == path) {
                copy(from, &to)?;
            }
            f["url"] = json!(format!("{id}/{name}"));
        }
    }
    let reference = opened.reference.clone().unwrap_or_default();
    let expected = &mut task["evaluator"]["expected"];
    let getters: Vec<&mut Value> = match expected {
        Value::Array(v) => v.iter_mut().collect(),
        Value::Object(_) => vec![expected],
        _ => vec![],
    };
    for (i, g) in getters.into_iter().enumerate() {
        let files = reference.get(i).cloned().unwrap_or_default();
        let mut paths = Vec::new();
        for (j, from) in files.iter().enumerate() {
            let name = format!(
                "expected-{i}-{j}-{}",
                file_name(&from.display().to_string())
            );
            let to = folder.join(&name);
            match &target {
                Some(t) => save(t, &to)?,
                None => copy(from, &to)?,
            }
            paths.push(json!(format!("{id}/{name}")));
        }
        g["path"] = if paths.len() == 1 {
            paths.remove(0)
        } else {
            Value::Array(paths)
        };
    }
    let parent = task["id"].clone();
    let old_instruction = task["instruction"].clone();
    task["id"] = json!(id);
    if let Some(new) = instruction {
        task["instruction"] = json!(new);
    }
    // the rewrite fixes the active evaluator; the earlier versions go to `history`
    if let Some(o) = task.as_object_mut() {
        for k in ["evaluator_list", "task_template", "current_task"] {
            o.remove(k);
        }
        let mut history = match o.remove("history") {
            Some(Value::Array(v)) => v,
            Some(v) => vec![v],
            None => vec![],
        };
        history.push(json!({"id": parent, "instruction": old_instruction, "rewrite": what}));
        o.insert("history".into(), Value::Array(history));
    }
    let path = dir.join(format!("{id}.json"));
    rla_core::file::write_atomic(&path, serde_json::to_string_pretty(&task)?.as_bytes())?;
    if !valid(&path, cfg, step_limit)? {
        return Ok(None);
    }
    Ok(Some((what, path)))
}

/// Whether a rewritten task is unsolved at its start and, where the expert has a reference
/// workbook, solved by the expert within the step limit with the evaluator scoring 1.
fn valid(path: &Path, cfg: &DesktopConfig, step_limit: usize) -> Result<bool> {
    let opened: Opened = match rla_desktop::tasks::local::load(path, cfg.files.as_deref()) {
        Ok(o) => o,
        Err(_) => return Ok(false),
    };
    let has_target = opened.target.is_some();
    let ep = DesktopEpisode::new(opened, cfg.screen_width, cfg.screen_height)
        .map_err(anyhow::Error::msg)?;
    if ep.score() != Ok(0.0) {
        return Ok(false);
    }
    Ok(!has_target || super::expert_solves_episode(ep, step_limit))
}

/// Copies an accepted rewrite from `proposed/` to `accepted/` (its task file last, each file
/// through a temporary name) and returns the task file there; a task file outside `proposed/`
/// is returned as it is.
pub fn accept(run: &Path, file: &Path) -> Result<PathBuf> {
    // both made absolute: a state written before runs kept absolute paths names the file from
    // the working folder
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let (proposed, from) = (abs(&run.join(PROPOSED)), abs(file));
    let Ok(name) = from.strip_prefix(&proposed) else {
        return Ok(file.to_path_buf());
    };
    let accepted = run.join(ACCEPTED);
    let from_dir = file.with_extension("");
    let to_dir = accepted.join(name).with_extension("");
    if from_dir.is_dir() {
        std::fs::create_dir_all(&to_dir)?;
        for f in std::fs::read_dir(&from_dir)? {
            let f = f?.path();
            copy(&f, &to_dir.join(f.file_name().unwrap_or_default()))?;
        }
    }
    let to = accepted.join(name);
    copy(file, &to)?;
    Ok(to)
}

fn file_name(path: &str) -> String {
    Path::new(path.split(['?', '#']).next().unwrap_or(path))
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into())
}

fn save(book: &Workbook, to: &Path) -> Result<()> {
    if to
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
    {
        rla_core::file::write_atomic(to, rla_desktop::sheet::xlsx::to_csv(book, 0).as_bytes())?;
    } else {
        rla_desktop::sheet::xlsx::save(book, to)?;
    }
    Ok(())
}

fn copy(from: &Path, to: &Path) -> Result<()> {
    let bytes = std::fs::read(from).with_context(|| format!("reading {}", from.display()))?;
    rla_core::file::write_atomic(to, &bytes)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rla_desktop::tasks::family;

    /// A generated task exported as a task file under `dir`, and a run folder.
    fn task_file(dir: &Path) -> PathBuf {
        let spec = family::split(rla_core::Split::Train, 1).remove(0);
        rla_desktop::tasks::local::export(&family::generate(&spec), &dir.join("tasks")).unwrap()
    }

    fn rewrite(
        cfg: &DesktopConfig,
        lm: &dyn Sampler,
        file: &Path,
        direction: Direction,
        run: &Path,
        id: &str,
    ) -> Option<(String, PathBuf)> {
        let params = SampleParams::default();
        rewrite_file(
            cfg,
            30,
            lm,
            &params,
            file,
            direction,
            Some("typed SUM"),
            Some(run),
            id,
            3,
        )
        .unwrap()
    }

    #[test]
    fn the_structured_rewrite_edits_the_start_file_and_is_kept_where_accepted_tasks_go() {
        let tmp = tempfile::tempdir().unwrap();
        let file = task_file(tmp.path());
        let run = tmp.path().join("run");
        let cfg = DesktopConfig::default();
        let no_model = crate::play::testing::Scripted {
            answers: vec!["-"],
            prompts: Default::default(),
        };
        let before = rla_desktop::tasks::local::load(&file, None).unwrap();
        // the cells the answer changes, a sheet it adds counted as empty at the start
        let changes = |o: &Opened| {
            let (mut s, t) = (o.start.clone(), o.target.as_ref().unwrap());
            for sheet in &t.sheets {
                if s.index(&sheet.name).is_none() {
                    s.insert_sheet(s.sheets.len(), &sheet.name).unwrap();
                }
            }
            changed_cells(&s, t).len()
        };
        let changed = changes(&before);
        assert!(changed >= 2, "{changed}");
        // easier: half of the cells the answer changes are filled in already
        let (what, easier) = rewrite(
            &cfg,
            &no_model,
            &file,
            Direction::Easier,
            &run,
            "rewrite-0001-000",
        )
        .unwrap();
        assert_eq!(easier, run.join(PROPOSED).join("rewrite-0001-000.json"));
        assert_eq!(
            what,
            format!("filled in {} of the cells the answer changes", changed / 2)
        );
        let e = rla_desktop::tasks::local::load(&easier, None).unwrap();
        assert_eq!(e.task.id, "rewrite-0001-000");
        assert_eq!(e.task.instruction, before.task.instruction);
        assert_eq!(changes(&e), changed - changed / 2);
        // the earlier version is the last of the history (the generated task's spec before it)
        let history = e.task.history.clone().unwrap();
        let last = history.as_array().unwrap().last().unwrap().clone();
        assert_eq!(last["id"], json!(before.task.id), "{history}");
        assert_eq!(last["rewrite"], json!(what));
        // harder: a distractor table in both files; the expert still solves it
        let (what, harder) = rewrite(
            &cfg,
            &no_model,
            &file,
            Direction::Harder,
            &run,
            "rewrite-0001-001",
        )
        .unwrap();
        assert!(what.starts_with("added a distractor table"), "{what}");
        let h = rla_desktop::tasks::local::load(&harder, None).unwrap();
        assert!(h.start.sheets[0].cells.len() > before.start.sheets[0].cells.len());
        assert_eq!(
            changes(&h),
            changed,
            "the distractor is the same in both files"
        );
        assert!(rewrite(&cfg, &no_model, &file, Direction::Keep, &run, "k").is_none());
        // accepted: copied with its files to accepted/, readable once proposed/ is gone
        let kept = accept(&run, &harder).unwrap();
        assert_eq!(kept, run.join(ACCEPTED).join("rewrite-0001-001.json"));
        std::fs::remove_dir_all(run.join(PROPOSED)).unwrap();
        let k = rla_desktop::tasks::local::load(&kept, None).unwrap();
        assert_eq!(k.start, h.start);
        // a rewrite of a rewrite keeps the lineage
        let (_, again) = rewrite(
            &cfg,
            &no_model,
            &kept,
            Direction::Easier,
            &run,
            "rewrite-0002-000",
        )
        .unwrap();
        let a = rla_desktop::tasks::local::load(&again, None).unwrap();
        assert_eq!(a.task.history.unwrap().as_array().unwrap().len(), 3);
    }

    #[test]
    fn the_reward_model_rewrites_the_instruction_from_the_critique() {
        let tmp = tempfile::tempdir().unwrap();
        let file = task_file(tmp.path());
        let run = tmp.path().join("run");
        let cfg = DesktopConfig {
            rewriter: RewriterKind::RewardModel,
            ..Default::default()
        };
        let lm = crate::play::testing::Scripted {
            answers: vec![
                "Think. \\boxed{Do it with the function wizard; make sure the result is a number.}",
            ],
            prompts: Default::default(),
        };
        let (what, f) = rewrite(
            &cfg,
            &lm,
            &file,
            Direction::Easier,
            &run,
            "rewrite-0001-000",
        )
        .unwrap();
        assert_eq!(what, "rewrote the instruction");
        let t = rla_desktop::tasks::local::load(&f, None).unwrap();
        assert_eq!(
            t.task.instruction,
            "Do it with the function wizard; make sure the result is a number."
        );
        let prompt = &lm.prompts.lock().unwrap()[0];
        assert!(
            prompt.contains("typed SUM") && prompt.contains("easier"),
            "{prompt}"
        );
        // the files are unchanged and the expert still solves it
        let before = rla_desktop::tasks::local::load(&file, None).unwrap();
        assert_eq!(t.start, before.start);
        assert_eq!(t.target, before.target);
        // an answer without a new instruction is no rewrite
        for answer in ["no box", "\\boxed{}"] {
            let lm = crate::play::testing::Scripted {
                answers: vec![answer],
                prompts: Default::default(),
            };
            assert!(
                rewrite(&cfg, &lm, &file, Direction::Harder, &run, "x").is_none(),
                "{answer}"
            );
        }
    }
}
