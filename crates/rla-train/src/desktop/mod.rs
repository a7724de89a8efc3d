//! The GUI setting: a computer-use agent on the native spreadsheet desktop (`rla-desktop`),
//! tasks in OSWorld's format. The policy sees the instruction, its previous actions ("Step i:
//! …", the last `desktop.history`) and the desktop's compact accessibility tree, and answers
//! `Action: <action>` in the tiny action vocabulary (`rla_desktop::play::tiny`), drawn among the
//! state's candidates; each action runs as OSWorld pyautogui code. An episode ends at `done`
//! or the step limit and is scored by the task's evaluator after its postconfig (which saves).
//! The judge sees the earlier actions, the objective, the observation, the step's response and
//! the observation after it, and answers `\boxed{1}` only if the step is relevant, executable
//! and makes visible progress. Adaptation switches the task's evaluator (harder) or adds hints
//! (easier), and varies the number of objects.

pub mod config;
pub mod dagger;
pub mod play;
pub mod probe;
pub mod prompts;
pub mod real;
pub mod rewrite;
pub mod screen;
pub mod warm;

pub use play::{rollout, split_tasks};

use crate::config::{RunConfig, SettingConfig};
use crate::desktop::config::DesktopConfig;
use crate::judge::summarise_critiques;
use crate::play::Played;
use crate::pool::PoolTask;
use crate::run::RunDir;
use crate::setting::{Ctx, Group, JudgeQuality, Setting, Split};
use anyhow::{Context, Result};
use rla_core::adapt::Direction;
use rla_desktop::tasks::family::{self, Spec};
use rla_lm::Sampler;
use serde::{Deserialize, Serialize};

/// A task of the pool with its lineage: a generated task, or an OSWorld task file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DesktopTask {
    /// The task's id (its OSWorld task id).
    pub id: String,
    /// The task it was rewritten from.
    pub parent: Option<String>,
    /// Where it comes from.
    #[serde(flatten)]
    pub source: Source,
}

/// Where a task comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Source {
    /// A generated task: what generates it.
    Generated {
        /// The generator's spec.
        spec: Spec,
    },
    /// An OSWorld task file (`[desktop] train_tasks`, `eval_tasks`), its files found as
    /// `[desktop] files` says.
    File {
        /// The task file.
        file: std::path::PathBuf,
    },
}

impl DesktopTask {
    /// The pool task of a spec.
    pub fn new(spec: Spec, parent: Option<String>) -> DesktopTask {
        DesktopTask {
            id: family::generate(&spec).task.id,
            parent,
            source: Source::Generated { spec },
        }
    }

    /// The pool task of a task file (its id the file's).
    pub fn file(file: std::path::PathBuf) -> Result<DesktopTask> {
        let id = rla_desktop::osworld::task::DesktopTask::load(&file)?.id;
        Ok(DesktopTask {
            id,
            parent: None,
            source: Source::File { file },
        })
    }

    /// A generated task's spec.
    pub fn spec(&self) -> Option<&Spec> {
        match &self.source {
            Source::Generated { spec } => Some(spec),
            Source::File { .. } => None,
        }
    }
}

impl play::Opens for Source {
    fn opened(&self, cfg: &RunConfig) -> Result<rla_desktop::tasks::episode::Opened> {
        Ok(match self {
            Source::Generated { spec } => family::generate(spec).into(),
            Source::File { file } => {
                rla_desktop::tasks::local::load(file, DesktopConfig::of(cfg).files.as_deref())?
            }
        })
    }
}

/// A folder of task files, read once and its left-out tasks named once (on standard error).
fn task_folder(
    cache: &Folders,
    dir: &std::path::Path,
    files: Option<&std::path::Path>,
    key: &str,
) -> Result<Vec<std::path::PathBuf>> {
    let mut cache = cache.lock().expect("not poisoned");
    if let Some(t) = cache.get(dir) {
        return Ok(t.clone());
    }
    let f = rla_desktop::tasks::local::folder(dir, files)
        .with_context(|| format!("desktop.{key} {}", dir.display()))?;
    if let Some(line) = f.removed_line() {
        eprintln!("desktop.{key} {}: {line}", dir.display());
    }
    cache.insert(dir.to_path_buf(), f.tasks.clone());
    Ok(f.tasks)
}

/// Folders of task files read so far: the tasks each holds (read once a run, whoever asks first).
type Folders =
    std::sync::Mutex<std::collections::BTreeMap<std::path::PathBuf, Vec<std::path::PathBuf>>>;

/// `eval_tasks.SPLIT`, as the config names it.
fn split_key(split: Split) -> String {
    format!("eval_tasks.{}", split.name())
}

/// Whether the expert solves a task within the training step limit, its evaluator scoring the
/// result 1.
fn expert_solves(spec: &Spec, cfg: &RunConfig) -> Result<bool> {
    Ok(expert_solves_episode(
        play::open(spec, cfg)?,
        DesktopConfig::of(cfg).train_step_limit,
    ))
}

/// Whether the expert solves an episode from where it stands within `step_limit` steps, the
/// task's evaluator scoring the result 1.
pub(crate) fn expert_solves_episode(
    mut ep: rla_desktop::tasks::episode::DesktopEpisode,
    step_limit: usize,
) -> bool {
    let Ok(steps) = rla_desktop::tasks::expert::solve(&ep) else {
        return false;
    };
    if steps.len() > step_limit {
        return false;
    }
    for code in steps.iter().filter(|c| c.as_str() != "DONE") {
        let nodes = ep.tree(rla_desktop::ui::a11y::TreeOptions::default());
        ep.step_code(code, &nodes);
    }
    ep.score().is_ok_and(|x| x >= 1.0)
}

impl PoolTask for DesktopTask {
    fn id(&self) -> &str {
        &self.id
    }
    fn parent(&self) -> Option<&str> {
        self.parent.as_deref()
    }
}

/// The GUI setting.
#[derive(Debug, Default)]
pub struct Desktop {
    /// Its table of the run config.
    pub cfg: DesktopConfig,
    /// Folders of task files read so far.
    folders: Folders,
    /// The real desktops episodes are played on (`desktop.desktops`), and which are down.
    real: real::Desktops,
}

impl crate::setting::Registered for Desktop {
    const NAME: &'static str = "desktop";
    type Config = DesktopConfig;
    fn new(cfg: DesktopConfig) -> Desktop {
        Desktop {
            real: real::Desktops::of(&cfg),
            cfg,
            folders: Default::default(),
        }
    }
}

impl Desktop {
    /// The first `n` tasks of an evaluation split (the generated split, perturbed as the config
    /// says, or its folder of task files), each played once greedily.
    fn play_split(
        &mut self,
        ctx: Ctx,
        policy: &dyn Sampler,
        split: Split,
        n: usize,
        sampling: Option<crate::setting::Sampling>,
    ) -> Result<(Vec<Source>, Vec<crate::play::Trajectory>)> {
        let cfg = ctx.cfg;
        let tasks: Vec<Source> = match self.cfg.eval_tasks.of(split) {
            Some(dir) => {
                let key = split_key(split);
                let files = task_folder(
                    &self.folders,
                    dir,
                    DesktopConfig::of(cfg).files.as_deref(),
                    &key,
                )?;
                if n > files.len() {
                    anyhow::bail!(
                        "desktop.{key} {} holds {} tasks this setting runs; the evaluation asks for {n}",
                        dir.display(),
                        files.len()
                    );
                }
                files
                    .into_iter()
                    .take(n)
                    .map(|file| Source::File { file })
                    .collect()
            }
            None => family::perturbed(split_tasks(self.cfg.world, split, n), self.cfg.perturb)
                .into_iter()
                .map(|spec| Source::Generated { spec })
                .collect(),
        };
        if tasks.is_empty() {
            return Ok((tasks, vec![]));
        }
        // greedy, one episode a task; or sampled, several
        let (sp, rollouts) = match sampling {
            None => (rla_lm::SampleParams::greedy(cfg.policy.max_new_tokens), 1),
            Some(s) => (s.params(cfg.policy.max_new_tokens), s.samples),
        };
        let trajs = ctx.with_bar(
            (tasks.len() * rollouts * self.cfg.eval_step_limit) as u64,
            &format!("eval {split:?}"),
            |bar| {
                if !self.cfg.desktops.is_empty() {
                    return real::rollout(
                        policy,
                        cfg,
                        &mut self.real,
                        &tasks,
                        rollouts,
                        self.cfg.eval_step_limit,
                        &sp,
                        false,
                        bar,
                    );
                }
                rollout(
                    policy,
                    cfg,
                    &tasks,
                    rollouts,
                    self.cfg.eval_step_limit,
                    &sp,
                    false,
                    bar,
                )
            },
        )?;
        Ok((tasks, trajs))
    }
}

/// What an evaluation task asks (`eval --show`): a generated task's instruction, a task
/// file's path.
fn task_text(t: &Source) -> String {
    match t {
        Source::Generated { spec } => family::generate(spec).task.instruction,
        Source::File { file } => file.display().to_string(),
    }
}

/// An evaluation task's kind (`eval --by-kind`): a generated task's family and how many columns
/// it works on; a task file is one kind.
fn task_kind(t: &Source) -> String {
    match t {
        Source::Generated { spec } => format!(
            "{} × {} column{}",
            spec.family.name(),
            spec.objects,
            if spec.objects == 1 { "" } else { "s" }
        ),
        Source::File { .. } => "task file".into(),
    }
}

impl Setting for Desktop {
    type Task = DesktopTask;
    type Record = Played;

    fn name(&self) -> &'static str {
        "desktop"
    }

    fn initial_pool(&self, cfg: &RunConfig) -> Result<Vec<DesktopTask>> {
        if let Some(dir) = &self.cfg.train_tasks {
            use rand::seq::SliceRandom;
            use rand::SeedableRng;
            let mut files = task_folder(
                &Default::default(),
                dir,
                DesktopConfig::of(cfg).files.as_deref(),
                "train_tasks",
            )?;
            files.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(
                rla_core::seed::mix(cfg.seed, "desktop/pool"),
            ));
            files.truncate(cfg.pool_size);
            return files.into_iter().map(DesktopTask::file).collect();
        }
        // training tasks drawn as the in-domain split's (1-3 objects, either evaluator; a share
        // with hints), with the run's seed, from tables the fixed splits never use
        let seed = rla_core::seed::mix(cfg.seed, "desktop/pool");
        Ok(probe::training_specs(cfg, cfg.pool_size, seed)
            .into_iter()
            .map(|s| DesktopTask::new(s, None))
            .collect())
    }

    fn play(
        &mut self,
        ctx: Ctx,
        policy: &dyn Sampler,
        tasks: &[DesktopTask],
    ) -> Result<(Vec<Group>, Played)> {
        let cfg = ctx.cfg;
        let specs: Vec<Source> = tasks.iter().map(|t| t.source.clone()).collect();
        let sp = cfg.policy.sampling(ctx.seed(2));
        let trajs = ctx.with_bar(
            (tasks.len() * cfg.rollouts_per_task * self.cfg.train_step_limit) as u64,
            &format!("iter {} rollout", ctx.k),
            |bar| {
                if !self.cfg.desktops.is_empty() {
                    return real::rollout(
                        policy,
                        cfg,
                        &mut self.real,
                        &specs,
                        cfg.rollouts_per_task,
                        self.cfg.train_step_limit,
                        &sp,
                        true,
                        bar,
                    );
                }
                rollout(
                    policy,
                    cfg,
                    &specs,
                    cfg.rollouts_per_task,
                    self.cfg.train_step_limit,
                    &sp,
                    true,
                    bar,
                )
            },
        )?;
        Ok(Played::of(trajs, tasks.len()))
    }

    fn judge(
        &mut self,
        ctx: Ctx,
        reward: &dyn Sampler,
        tasks: &[DesktopTask],
        groups: &mut [Group],
        played: &mut Played,
    ) -> Result<()> {
        let instructions: Vec<String> = tasks
            .iter()
            .map(|t| match &t.source {
                Source::Generated { spec } => Ok(family::generate(spec).task.instruction),
                Source::File { file } => {
                    Ok(rla_desktop::osworld::task::DesktopTask::load(file)?.instruction)
                }
            })
            .collect::<Result<_>>()?;
        played.judge(ctx, reward, groups, |t, s| {
            prompts::judge_prompt(
                &instructions[t.task],
                &s.previous,
                &s.observation,
                &s.answer,
                &s.next_observation,
            )
        })
    }

    fn judge_quality(&self, _groups: &[Group], played: &Played) -> JudgeQuality {
        let failed = played
            .trajs
            .iter()
            .flat_map(|t| &t.steps)
            .filter(|s| s.error.is_some())
            .count();
        let steps: usize = played.trajs.iter().map(|t| t.steps.len()).sum();
        let mut extra = serde_json::json!({
            "failed_actions": failed,
            "steps": steps,
            "mean_score": played.trajs.iter().map(|t| t.score).sum::<f64>() / played.trajs.len().max(1) as f64,
        });
        // on real desktops: the episodes each has played so far
        if !self.real.played.is_empty() {
            extra["desktop_episodes"] = serde_json::json!(self.real.played);
        }
        JudgeQuality {
            extra: Some(extra),
            ..played.quality()
        }
    }

    fn critique(
        &self,
        _ctx: Ctx,
        _reward: &dyn Sampler,
        i: usize,
        _groups: &[Group],
        played: &Played,
    ) -> Option<String> {
        summarise_critiques(&played.high_risk_reasons(i))
    }

    fn rewrite(
        &mut self,
        ctx: Ctx,
        reward: &dyn Sampler,
        task: &DesktopTask,
        direction: Direction,
        critique: Option<&str>,
        i: usize,
    ) -> Result<Option<(String, DesktopTask)>> {
        let spec = match &task.source {
            Source::Generated { spec } => spec,
            Source::File { file } => {
                let id = format!("rewrite-{:04}-{i:03}", ctx.k);
                let params = rla_lm::SampleParams {
                    temperature: 0.7,
                    max_new_tokens: 128,
                    seed: ctx.item_seed(4, i),
                    ..Default::default()
                };
                let r = rewrite::rewrite_file(
                    &self.cfg,
                    self.cfg.train_step_limit,
                    reward,
                    &params,
                    file,
                    direction,
                    critique,
                    ctx.run,
                    &id,
                    ctx.item_seed(5, i),
                )?;
                return Ok(r.map(|(what, file)| {
                    (
                        what,
                        DesktopTask {
                            id,
                            parent: Some(task.id.clone()),
                            source: Source::File { file },
                        },
                    )
                }));
            }
        };
        let r = match direction {
            Direction::Harder => family::harder(spec),
            Direction::Easier => family::easier(spec),
            Direction::Keep => None,
        };
        let Some((what, spec)) = r else {
            return Ok(None);
        };
        // valid only if the expert solves it within the training step limit and the task's
        // evaluator then scores it 1
        if !expert_solves(&spec, ctx.cfg)? {
            return Ok(None);
        }
        Ok(Some((what, DesktopTask::new(spec, Some(task.id.clone())))))
    }

    fn rewrite_check(&self) -> Option<&'static str> {
        Some("the expert solves it through the GUI within the training step limit and the task's evaluator scores the result 1 (a task file's rewrite without a reference workbook: unsolved at its start, its evaluator and files unchanged)")
    }

    fn accepted(&mut self, ctx: Ctx, task: &mut DesktopTask) -> Result<()> {
        if let (Source::File { file }, Some(run)) = (&mut task.source, ctx.run) {
            *file = rewrite::accept(run, file)?;
        }
        Ok(())
    }

    fn split_size(&self, split: Split) -> Option<usize> {
        if let Some(dir) = self.cfg.eval_tasks.of(split) {
            // a folder that cannot be read is named when the split is first evaluated
            return task_folder(
                &self.folders,
                dir,
                self.cfg.files.as_deref(),
                &split_key(split),
            )
            .ok()
            .map(|f| f.len());
        }
        match split {
            Split::Train => None,
            s => Some(family::split_size(s)),
        }
    }

    fn evaluate(&mut self, ctx: Ctx, policy: &dyn Sampler, split: Split, n: usize) -> Result<f64> {
        let (_, trajs) = self.play_split(ctx, policy, split, n, None)?;
        Ok(crate::play::success(&trajs))
    }

    fn evaluate_episodes(
        &mut self,
        ctx: Ctx,
        policy: &dyn Sampler,
        split: Split,
        n: usize,
    ) -> Result<Option<Vec<crate::setting::EvalEpisode>>> {
        let (tasks, trajs) = self.play_split(ctx, policy, split, n, None)?;
        Ok(Some(crate::play::with_kinds(
            tasks.iter().map(|t| (task_kind(t), task_text(t))),
            trajs,
        )))
    }

    fn evaluate_sampled(
        &mut self,
        ctx: Ctx,
        policy: &dyn Sampler,
        split: Split,
        n: usize,
        sampling: crate::setting::Sampling,
    ) -> Result<Option<Vec<Vec<f64>>>> {
        let (tasks, trajs) = self.play_split(ctx, policy, split, n, Some(sampling))?;
        Ok(Some(crate::setting::scores_by_task(tasks.len(), &trajs)))
    }

    fn save_samples(
        &self,
        dir: &RunDir,
        k: usize,
        tasks: &[DesktopTask],
        played: &Played,
    ) -> Result<()> {
        played.save_samples(
            dir,
            k,
            |t| serde_json::json!({ "task_id": tasks[t.task].id, "score": t.score }),
            |s| {
                serde_json::json!({
                    "action": s.action, "code": s.code, "error": s.error,
                    "screen_after": s.next_observation, "oracle_progress": s.progress,
                })
            },
        )
    }

    fn warm_start(&self, w: crate::setting::WarmStart) -> Result<Vec<String>> {
        warm::warm_start(w)
    }

    fn demonstrations(&self, cfg: &RunConfig, chunk: u64) -> Result<Vec<crate::pretrain::Example>> {
        warm::control_demonstrations(cfg, chunk)
    }

    fn own_state_labels(
        &self,
        cfg: &RunConfig,
        policy: &dyn Sampler,
        chunk: u64,
        tasks: usize,
    ) -> Result<Vec<crate::pretrain::Example>> {
        dagger::control_labels(cfg, policy, chunk, tasks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SettingConfig;
    use crate::desktop::config::DesktopObservation;

    #[test]
    fn desktop_settings_are_checked() {
        let mut c = RunConfig::with_table("desktop", DesktopConfig::default());
        c.validate().unwrap();
        DesktopConfig::of_mut(&mut c).train_step_limit = 31;
        assert!(c
            .validate()
            .unwrap_err()
            .contains("desktop.train_step_limit"));
        DesktopConfig::of_mut(&mut c).train_step_limit = 12;
        DesktopConfig::of_mut(&mut c).screen_width = 100;
        assert!(c.validate().unwrap_err().contains("screen_width"));
        DesktopConfig::of_mut(&mut c).screen_width = 1280;
        DesktopConfig::of_mut(&mut c).constrain_actions = false;
        assert!(c.validate().unwrap_err().contains("constrain_actions"));
        DesktopConfig::of_mut(&mut c).constrain_actions = true;
        DesktopConfig::of_mut(&mut c).observation = DesktopObservation::A11yTree;
        assert!(c.validate().unwrap_err().contains("a11y_tree"));
        c.policy.path = Some("ckpt".into());
        c.validate().unwrap();
        DesktopConfig::of_mut(&mut c).tree_tokens = 10;
        assert!(c.validate().unwrap_err().contains("tree_tokens"));
        DesktopConfig::of_mut(&mut c).tree_tokens = 10_000;
        // the empty columns' letters are the compact summary's
        DesktopConfig::of_mut(&mut c).empty_columns = true;
        assert!(c.validate().unwrap_err().contains("desktop.empty_columns"));
        DesktopConfig::of_mut(&mut c).empty_columns = false;
        // screenshots are for evaluating a served vision-language model, not for training
        DesktopConfig::of_mut(&mut c).observation = DesktopObservation::Screenshot;
        assert!(c.validate().unwrap_err().contains("desktop eval"));
        DesktopConfig::of_mut(&mut c).observation = DesktopObservation::Compact;
        // real desktops: URLs, the tiny policy's summary and constraint, a revert command
        DesktopConfig::of_mut(&mut c).desktops = vec!["127.0.0.1:5000".into()];
        assert!(c.validate().unwrap_err().contains("not an http(s) URL"));
        DesktopConfig::of_mut(&mut c).desktops = vec!["http://127.0.0.1:5000".into()];
        c.validate().unwrap();
        DesktopConfig::of_mut(&mut c).observation = DesktopObservation::A11yTree;
        assert!(c.validate().unwrap_err().contains("desktop.desktops"));
        DesktopConfig::of_mut(&mut c).observation = DesktopObservation::Compact;
        DesktopConfig::of_mut(&mut c).revert = Some(vec![]);
        assert!(c.validate().unwrap_err().contains("desktop.revert"));
        DesktopConfig::of_mut(&mut c).revert = None;
        DesktopConfig::of_mut(&mut c).desktop_timeout = 0.0;
        assert!(c.validate().unwrap_err().contains("desktop_timeout"));
    }

    #[test]
    fn the_pool_is_drawn_as_the_in_domain_split_from_tables_it_never_uses() {
        let mut cfg = RunConfig::with_table("desktop", DesktopConfig::default());
        cfg.pool_size = 48;
        let pool = Desktop::default().initial_pool(&cfg).unwrap();
        assert_eq!(pool.len(), 48);
        let held = probe::evaluation_seeds(family::World::Plain);
        assert!(pool.iter().all(|t| !held.contains(&t.spec().unwrap().seed)));
        for o in 1..=3 {
            assert!(pool.iter().any(|t| t.spec().unwrap().objects == o));
        }
        assert!(pool.iter().any(|t| t.spec().unwrap().variant == 2));
        // another seed, another pool
        cfg.seed = 1;
        assert_ne!(Desktop::default().initial_pool(&cfg).unwrap(), pool);
        // the sheets world draws its own families and keeps off its own splits' tables
        DesktopConfig::of_mut(&mut cfg).world = family::World::Sheets;
        let pool = Desktop::default().initial_pool(&cfg).unwrap();
        let held = probe::evaluation_seeds(family::World::Sheets);
        assert!(pool
            .iter()
            .all(|t| t.spec().unwrap().world == family::World::Sheets
                && !held.contains(&t.spec().unwrap().seed)));
        assert!(pool
            .iter()
            .any(|t| t.spec().unwrap().family == family::Family::CountIf));
    }

    #[test]
    fn rewrites_switch_evaluators_and_add_hints_with_lineage() {
        let t = DesktopTask::new(family::split(rla_core::Split::Train, 1).remove(0), None);
        let mut g = Desktop::default();
        let mut cfg = RunConfig::default();
        cfg.set_table("desktop", DesktopConfig::default());
        let ctx = Ctx {
            cfg: &cfg,
            k: 1,
            progress: false,
            run: None,
        };
        let no_model = crate::play::testing::Scripted {
            answers: vec![],
            prompts: Default::default(),
        };
        let (what, h) = g
            .rewrite(ctx, &no_model, &t, Direction::Harder, None, 0)
            .unwrap()
            .unwrap();
        assert_eq!(what, "switched to evaluator2");
        assert_eq!(h.spec().unwrap().variant, 2);
        assert_eq!(h.parent.as_deref(), Some(t.id.as_str()));
        assert_ne!(h.id, t.id);
        let (what, e) = g
            .rewrite(ctx, &no_model, &t, Direction::Easier, None, 0)
            .unwrap()
            .unwrap();
        assert_eq!(what, "added a hint");
        assert!(family::generate(e.spec().unwrap())
            .task
            .instruction
            .contains("Hint:"));
    }

    #[test]
    fn task_files_are_the_pool_and_the_evaluation_sets() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("tasks");
        let specs = family::split(rla_core::Split::InDomain, 3);
        let mut ids = Vec::new();
        for s in &specs {
            let g = family::generate(s);
            rla_desktop::tasks::local::export(&g, &dir).unwrap();
            ids.push(g.task.id);
        }
        // one task this setting does not run is left out
        let first = dir.join(format!("{}.json", ids[0]));
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&first).unwrap()).unwrap();
        v["id"] = "pivot".into();
        v["evaluator"]["func"] = "check_pivot_table".into();
        std::fs::write(dir.join("pivot.json"), v.to_string()).unwrap();
        // the config names the folder relative to its own
        let text = "setting = \"desktop\"\npool_size = 2\ntasks_per_iteration = 2\nrollouts_per_task = 2\n[policy]\npath = \"ckpt\"\n[desktop]\ntrain_tasks = \"tasks\"\neval_tasks = { in_domain = \"tasks\" }\nconstrain_actions = false\ntrain_step_limit = 30\n";
        std::fs::create_dir_all(tmp.path().join("ckpt")).unwrap();
        let cfg = RunConfig::parse_in(text, tmp.path()).unwrap();
        assert_eq!(
            DesktopConfig::of(&cfg).train_tasks.as_deref(),
            Some(dir.as_path())
        );
        let missing = RunConfig::parse_in(
            &text.replace("\"tasks\"\neval", "\"nowhere\"\neval"),
            tmp.path(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            missing.contains("desktop.train_tasks") && missing.contains("nowhere"),
            "{missing}"
        );
        let mut g = <Desktop as crate::setting::Registered>::new(DesktopConfig::of(&cfg).clone());
        let pool = g.initial_pool(&cfg).unwrap();
        assert_eq!(pool.len(), 2);
        for t in &pool {
            assert!(t.spec().is_none() && ids.contains(&t.id), "{t:?}");
            // a pool task is saved and read back as it was
            let back: DesktopTask =
                serde_json::from_str(&serde_json::to_string(t).unwrap()).unwrap();
            assert_eq!(&back, t);
        }
        // a generated task's record keeps the shape it had
        let gen = DesktopTask::new(specs[0].clone(), None);
        let json = serde_json::to_value(&gen).unwrap();
        assert!(json.get("spec").is_some() && json.get("file").is_none());
        assert_eq!(serde_json::from_value::<DesktopTask>(json).unwrap(), gen);
        // the in-domain split is the folder's three tasks, played from their files
        assert_eq!(g.split_size(Split::InDomain), Some(3));
        assert_eq!(
            g.split_size(Split::Ood),
            Some(family::split_size(Split::Ood))
        );
        let ctx = Ctx {
            cfg: &cfg,
            k: 0,
            progress: false,
            run: None,
        };
        let done = crate::play::testing::Scripted {
            answers: vec!["done"],
            prompts: Default::default(),
        };
        assert_eq!(g.evaluate(ctx, &done, Split::InDomain, 3).unwrap(), 0.0);
        // the episodes step together: the first prompt is the first task's in path order
        let mut by_path: Vec<(String, String)> = specs
            .iter()
            .map(|s| {
                let t = family::generate(s).task;
                (t.id, t.instruction)
            })
            .collect();
        by_path.sort();
        assert!(done.prompts.lock().unwrap()[0].contains(&by_path[0].1));
        let e = g
            .evaluate(ctx, &done, Split::InDomain, 5)
            .unwrap_err()
            .to_string();
        assert!(e.contains("holds 3 tasks"), "{e}");
        // played in training too; rewritten into the run's folder, and kept there once accepted
        let (_, played) = g.play(ctx, &done, &pool).unwrap();
        assert_eq!(played.trajs.len(), 2 * cfg.rollouts_per_task);
        let run = tmp.path().join("run");
        let in_run = Ctx {
            run: Some(&run),
            k: 3,
            ..ctx
        };
        let (what, mut child) = g
            .rewrite(in_run, &done, &pool[0], Direction::Harder, None, 1)
            .unwrap()
            .unwrap();
        assert!(what.starts_with("added a distractor"), "{what}");
        assert_eq!(child.id, "rewrite-0003-001");
        assert_eq!(child.parent.as_deref(), Some(pool[0].id.as_str()));
        g.accepted(in_run, &mut child).unwrap();
        let Source::File { file } = &child.source else {
            panic!("{child:?}")
        };
        assert!(
            file.starts_with(run.join(rewrite::ACCEPTED)),
            "{}",
            file.display()
        );
        let (_, played) = g.play(ctx, &done, &[child.clone()]).unwrap();
        assert_eq!(played.trajs.len(), cfg.rollouts_per_task);
        // the robustness check perturbs generated tasks only
        let both = RunConfig::parse_in(&format!("{text}perturb = \"wide\"\n"), tmp.path())
            .unwrap_err()
            .to_string();
        assert!(both.contains("desktop.perturb"), "{both}");
    }
}
