//! Evaluation of a policy outside a run: any setting's own greedy success on a split
//! ([`setting_success`], the same evaluation a run makes), and the household's views of its
//! episodes — greedy episodes kept step by step ([`household_greedy`]), ALFWorld's own game
//! folders ([`household_games`]), sampled episodes with a standard error
//! ([`household_sampled`]) and the judge's verdicts on every step ([`judge_steps`]).
//!
//! The policy is any [`Sampler`]: a checkpoint opened in process, or a model on OpenAI-compatible
//! servers ([`rla_remote::client::RemoteSampler`]); the functions return what they measured and
//! print nothing (the command line prints it).

use crate::config::{RunConfig, SettingConfig};
use crate::household::config::HouseholdConfig;
use crate::household::{Episodes, PromptStyle};
use crate::play::{Played, Trajectory};
use crate::setting::{Ctx, JudgeQuality, Split};
use anyhow::{bail, Context, Result};
use rla_env::household::stats::TakeRates;
use rla_env::household::TaskSpec;
use rla_lm::{SampleParams, Sampler};
use std::path::{Path, PathBuf};

/// The config of an evaluation named by a run folder (its `config.toml`) or a config file, and
/// the policy checkpoint it names by default: the run's last checkpoint, else the config's
/// `policy.path` (`None` when it names neither).
pub fn run_config(c: &Path) -> Result<(RunConfig, Option<PathBuf>)> {
    let (file, run) = if c.is_dir() {
        (c.join("config.toml"), Some(c))
    } else {
        (c.to_path_buf(), None)
    };
    if !file.exists() {
        bail!(
            "{}: neither a run folder (with config.toml) nor a config file",
            c.display()
        );
    }
    let cfg = match run {
        // a run folder's evaluation reads the data the run started on
        Some(r) => {
            crate::sources::check(r)?;
            crate::run::recorded_config(r, &[])?
        }
        None => RunConfig::load(&file)?,
    };
    let policy = match run {
        Some(r) if r.join("checkpoint/policy").exists() => Some(r.join("checkpoint/policy")),
        _ => cfg.policy.path.clone(),
    };
    Ok((cfg, policy))
}

/// The household's flags that override its config or a checkpoint's recorded prompt settings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HouseholdFlags {
    /// History window of the prompts.
    pub window: Option<usize>,
    /// Listing style of the admissible commands.
    pub style: Option<PromptStyle>,
    /// Step limit of each episode (at least 1).
    pub step_limit: Option<usize>,
    /// Give the policy the agent's notes.
    pub notes: bool,
    /// Draw answers only among the admissible ones.
    pub constrained: bool,
}

impl HouseholdFlags {
    /// Refuses a step limit of 0.
    pub fn check(&self) -> Result<()> {
        if self.step_limit == Some(0) {
            bail!("--step-limit 0: an episode needs at least one step");
        }
        Ok(())
    }

    /// The flags applied to a run config's household table.
    pub fn apply_to_config(&self, cfg: &mut RunConfig) -> Result<()> {
        self.check()?;
        let h = HouseholdConfig::of_mut(cfg);
        if let Some(w) = self.window {
            h.history_window = w;
        }
        if let Some(s) = self.style {
            h.prompt_style = s;
        }
        if let Some(l) = self.step_limit {
            h.eval_step_limit = l;
        }
        h.notes |= self.notes;
        h.constrain_actions |= self.constrained;
        Ok(())
    }

    /// The flags applied to the settings episodes are played with (one rollout each; the
    /// unlisted style always draws among the admissible answers).
    pub fn apply_to_episodes(&self, mut ep: Episodes) -> Result<Episodes> {
        self.check()?;
        ep.rollouts = 1;
        if let Some(s) = self.style {
            ep.style = s;
        }
        if let Some(w) = self.window {
            ep.window = w;
        }
        if let Some(l) = self.step_limit {
            ep.step_limit = l;
        }
        ep.notes |= self.notes;
        ep.constrained |= self.constrained || ep.style == PromptStyle::Unlisted;
        Ok(ep)
    }
}

/// The reference's settings, for a checkpoint that records none: numbered prompt, window 2,
/// 60 steps.
pub const DEFAULT_EPISODES: Episodes = Episodes {
    rollouts: 1,
    step_limit: 60,
    window: 2,
    style: PromptStyle::Numbered,
    constrained: false,
    notes: false,
    notes_style: crate::household::notes::NotesStyle::Full,
    end_loops: 0,
};

/// What a setting's own evaluation measured.
#[derive(Debug, Clone, PartialEq)]
pub struct SettingSuccess {
    /// The setting's name.
    pub setting: &'static str,
    /// Tasks played.
    pub n: usize,
    /// Greedy success.
    pub success: f64,
}

/// The greedy success of `policy` on the first `n` tasks of `split` (all of a finite split when
/// `n` is `None`) in the config's setting, through the setting's own evaluation.
pub fn setting_success(
    cfg: &RunConfig,
    policy: &dyn Sampler,
    split: Split,
    n: Option<usize>,
    progress: bool,
) -> Result<SettingSuccess> {
    let (mut s, n, ctx) = prepare(cfg, split, n, progress)?;
    let success = s.evaluate(ctx, policy, split, n)?;
    Ok(SettingSuccess {
        setting: s.name(),
        n,
        success,
    })
}

/// What a setting's sampled evaluation measured.
#[derive(Debug, Clone, PartialEq)]
pub struct SampledSuccess {
    /// The setting's name.
    pub setting: &'static str,
    /// Each task's mean score over its episodes, in task order.
    pub per_task: Vec<f64>,
    /// The mean over the tasks.
    pub mean: f64,
    /// Its standard error over the tasks.
    pub std_error: f64,
}

/// `policy` on the first `n` tasks of `split` (all of a finite split when `n` is `None`),
/// `sampling.samples` episodes a task at `sampling.temperature`, through the setting's own
/// sampled evaluation ([`crate::setting::Setting::evaluate_sampled`]).
pub fn setting_sampled(
    cfg: &RunConfig,
    policy: &dyn Sampler,
    split: Split,
    n: Option<usize>,
    sampling: crate::setting::Sampling,
    progress: bool,
) -> Result<SampledSuccess> {
    check_sampling(sampling.temperature, sampling.samples)?;
    let (mut s, n, ctx) = prepare(cfg, split, n, progress)?;
    let Some(scores) = s.evaluate_sampled(ctx, policy, split, n, sampling)? else {
        bail!("the {} setting cannot sample its evaluation", s.name());
    };
    let per_task: Vec<f64> = scores
        .iter()
        .map(|t| rla_core::stats::mean(t).unwrap_or(0.0))
        .collect();
    if per_task.is_empty() {
        bail!(
            "the {split:?} split of the {} setting holds no task",
            s.name()
        );
    }
    let (mean, std_error) = rla_core::stats::mean_std_error(&per_task).unwrap_or((0.0, 0.0));
    Ok(SampledSuccess {
        setting: s.name(),
        per_task,
        mean,
        std_error,
    })
}

/// Two policies on the same tasks with the same draws, and their paired difference.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// The first policy's evaluation.
    pub a: SampledSuccess,
    /// The second's.
    pub b: SampledSuccess,
    /// The per-task difference `a − b`: its mean and standard error.
    pub paired: rla_core::stats::Paired,
}

impl Comparison {
    /// The verdict in the paired difference's terms: ahead, behind, or no difference shown,
    /// by more than two paired standard errors.
    pub fn verdict(&self) -> String {
        let p = &self.paired;
        let d = format!(
            "{:+.1} ± {:.1} points over {} tasks",
            100.0 * p.mean,
            100.0 * p.std_error,
            p.n
        );
        if !p.beyond(2.0) {
            format!("no difference shown: {d}, within two paired standard errors")
        } else if p.mean > 0.0 {
            format!("the first is ahead: {d}, more than two paired standard errors")
        } else {
            format!("the first is behind: {d}, more than two paired standard errors")
        }
    }
}

/// Evaluates `a` and `b` on the same tasks of `split` with the same sampling (seed included),
/// and compares them task by task.
pub fn compare(
    cfg: &RunConfig,
    (a, b): (&dyn Sampler, &dyn Sampler),
    split: Split,
    n: Option<usize>,
    sampling: crate::setting::Sampling,
    progress: bool,
) -> Result<Comparison> {
    let ra = setting_sampled(cfg, a, split, n, sampling, progress)?;
    let rb = setting_sampled(cfg, b, split, n, sampling, progress)?;
    let paired = rla_core::stats::paired_difference(&ra.per_task, &rb.per_task)
        .ok_or_else(|| anyhow::anyhow!("the two evaluations played different tasks"))?;
    Ok(Comparison {
        a: ra,
        b: rb,
        paired,
    })
}

/// What a setting's own evaluation starts from: the config checked, its setting, how many tasks
/// to play and the context to play them in.
fn prepare(
    cfg: &RunConfig,
    split: Split,
    n: Option<usize>,
    progress: bool,
) -> Result<(Box<dyn crate::registry::AnySetting>, usize, Ctx<'_>)> {
    cfg.validate().map_err(anyhow::Error::msg)?;
    let s = crate::registry::setting(cfg)?;
    let n = tasks_to_play(s.as_ref(), split, n)?;
    let ctx = Ctx {
        cfg,
        k: 0,
        progress,
        run: None,
    };
    Ok((s, n, ctx))
}

/// How many tasks of `split` an evaluation asked for `n` plays: all of a finite split by
/// default; more than it holds, none, or no count for an endless one is an error.
fn tasks_to_play(
    s: &dyn crate::registry::AnySetting,
    split: Split,
    n: Option<usize>,
) -> Result<usize> {
    Ok(match (n, s.split_size(split)) {
        (Some(0), _) => bail!("--n 0: evaluate at least one task"),
        (Some(n), Some(size)) if n > size => bail!(
            "--n {n}: the {split:?} split of the {} setting holds {size} tasks",
            s.name()
        ),
        (Some(n), _) => n,
        (None, Some(size)) => size,
        (None, None) => bail!("--n: the {split:?} split has no end; say how many"),
    })
}

/// A kind of evaluation task and how the policy did on it (`eval --by-kind`).
#[derive(Debug, Clone, PartialEq)]
pub struct KindSuccess {
    /// The setting's name for the kind.
    pub kind: String,
    /// Tasks of the kind played.
    pub tasks: usize,
    /// Of those, won.
    pub won: usize,
}

/// [`setting_success`] episode by episode, each with its task's kind and what it asked
/// (`eval --by-kind`, `eval --show`); an error names a setting that does not keep them.
pub fn setting_episodes(
    cfg: &RunConfig,
    policy: &dyn Sampler,
    split: Split,
    n: Option<usize>,
    progress: bool,
) -> Result<(SettingSuccess, Vec<crate::setting::EvalEpisode>)> {
    let (mut s, n, ctx) = prepare(cfg, split, n, progress)?;
    let Some(played) = s.evaluate_episodes(ctx, policy, split, n)? else {
        bail!(
            "the {} setting does not group its evaluation tasks by kind nor keep their episodes (--by-kind, --show)",
            s.name()
        );
    };
    let won = played.iter().filter(|e| e.traj.won()).count();
    Ok((
        SettingSuccess {
            setting: s.name(),
            n: played.len(),
            success: if played.is_empty() {
                0.0
            } else {
                won as f64 / played.len() as f64
            },
        },
        played,
    ))
}

/// An episode step by step as `eval --show` prints it: the task, its kind and score, then
/// each step's observation, the action and what went wrong.
pub fn show_episode(i: usize, e: &crate::setting::EvalEpisode) -> String {
    let t = &e.traj;
    let mut s = format!(
        "=== episode {i} [{}] {} (score {:.2}, {} steps)\ntask: {}\n",
        e.kind,
        if t.won() { "won" } else { "lost" },
        t.score,
        t.steps.len(),
        e.task
    );
    for (k, st) in t.steps.iter().enumerate() {
        s.push_str(&format!("  step {}: {}\n", k + 1, st.observation));
        s.push_str(&format!("    > {}", st.action));
        if let Some(err) = &st.error {
            s.push_str(&format!("  (failed: {err})"));
        }
        s.push('\n');
    }
    s
}

/// Tasks won and played per kind, in the order the kinds first appear: each task's kind and
/// whether it was won (of [`setting_episodes`], `e.kind` and `e.traj.won()`).
pub fn count_kinds<'a>(played: impl IntoIterator<Item = (&'a str, bool)>) -> Vec<KindSuccess> {
    let mut out: Vec<KindSuccess> = vec![];
    for (kind, won) in played {
        let i = match out.iter().position(|k| k.kind == kind) {
            Some(i) => i,
            None => {
                out.push(KindSuccess {
                    kind: kind.to_string(),
                    tasks: 0,
                    won: 0,
                });
                out.len() - 1
            }
        };
        out[i].tasks += 1;
        out[i].won += usize::from(won);
    }
    out
}

/// The steps at the end of a lost greedy episode that [`Trajectory::ends_in_loop`] reads.
pub const LOOP_STEPS: usize = 10;

/// Greedy household episodes and what they add up to.
#[derive(Debug, Clone)]
pub struct Greedy {
    /// One episode a task (a game), in order.
    pub trajs: Vec<Trajectory>,
    /// Episodes won.
    pub won: usize,
    /// Steps played in all.
    pub steps: usize,
    /// Lost episodes whose last [`LOOP_STEPS`] actions repeat one action or alternate between
    /// two.
    pub looped: usize,
}

impl Greedy {
    fn of(trajs: Vec<Trajectory>) -> Greedy {
        let won = trajs.iter().filter(|t| t.won()).count();
        let steps = trajs.iter().map(|t| t.steps.len()).sum();
        let looped = trajs
            .iter()
            .filter(|t| !t.won() && t.ends_in_loop(LOOP_STEPS))
            .count();
        Greedy {
            trajs,
            won,
            steps,
            looped,
        }
    }

    /// The share of episodes won.
    pub fn success(&self) -> f64 {
        self.won as f64 / self.trajs.len().max(1) as f64
    }

    /// Episodes lost.
    pub fn lost(&self) -> usize {
        self.trajs.len() - self.won
    }
}

/// The commands an episode played.
fn commands(t: &Trajectory) -> Vec<String> {
    t.steps.iter().map(|s| s.action.clone()).collect()
}

/// Refuses an answer of no tokens.
fn check_tokens(max_tokens: usize) -> Result<()> {
    if max_tokens == 0 {
        bail!("--max-tokens 0: an answer needs at least one token");
    }
    Ok(())
}

/// One greedy episode of each household task.
pub fn household_greedy(
    policy: &dyn Sampler,
    tasks: &[TaskSpec],
    ep: Episodes,
    max_tokens: usize,
) -> Result<Greedy> {
    check_tokens(max_tokens)?;
    if tasks.is_empty() {
        bail!("--n 0: evaluate at least one task (a success rate of no tasks is no number)");
    }
    let bar = crate::bar((tasks.len() * ep.step_limit) as u64, "eval");
    let trajs = crate::household::evaluate_episodes(policy, tasks, ep, max_tokens, Some(&bar))?;
    bar.finish_and_clear();
    Ok(Greedy::of(trajs))
}

/// The policy's take rates of objects in view over the episodes of `tasks`.
pub fn task_take_rates(trajs: &[Trajectory], tasks: &[TaskSpec]) -> Result<TakeRates> {
    let mut rates = TakeRates::default();
    for (t, task) in trajs.iter().zip(tasks) {
        let w = std::sync::Arc::new(task.build()?);
        rates.add_episode(&w, &task.object, &commands(t));
    }
    Ok(rates)
}

/// ALFWorld's game folders played greedily.
#[derive(Debug, Clone)]
pub struct Games {
    /// The game folders, in the order played.
    pub folders: Vec<PathBuf>,
    /// Their episodes.
    pub played: Greedy,
    /// The policy's take rates of objects in view over the episodes.
    pub take_rates: TakeRates,
}

/// Games won by the policy in `policy_dir` of the game folders under `games` (ALFWorld's layout),
/// played greedily as the household config `cfg` evaluates (its step limit, prompt and answer
/// length; `ablate` refuses `--games` for another setting before anything runs):
/// `(won, played)`. The result is kept in `record` (a JSON file) and read back from it while it
/// names the same policy and folder, so a finished evaluation is not played again.
pub fn games_won(
    backend: &dyn rla_lm::Backend,
    cfg: &RunConfig,
    policy_dir: &Path,
    games: &Path,
    record: &Path,
) -> Result<(usize, usize)> {
    let key = serde_json::json!({
        "policy": policy_dir.display().to_string(),
        "games": games.display().to_string(),
    });
    if let Ok(text) = std::fs::read_to_string(record) {
        let v: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("{}: not the JSON this program writes", record.display()))?;
        if v.get("key") == Some(&key) {
            let n = |k: &str| v.get(k).and_then(|x| x.as_u64()).map(|x| x as usize);
            if let (Some(won), Some(played)) = (n("won"), n("played")) {
                return Ok((won, played));
            }
        }
    }
    let model = backend
        .open(policy_dir, &rla_lm::OpenOptions::default())
        .with_context(|| format!("opening {}", policy_dir.display()))?;
    let g = household_games(
        model.as_ref(),
        games,
        None,
        Episodes::evaluation(cfg),
        cfg.policy.max_new_tokens,
    )?;
    let (won, played) = (g.played.won, g.folders.len());
    let v = serde_json::json!({"key": key, "won": won, "played": played});
    crate::run::write_atomic(record, &format!("{v:#}\n"))?;
    Ok((won, played))
}

/// Every game folder under `dir` (a folder holding a `game.tw-pddl` and its `traj_data.json`,
/// as in ALFWorld's `valid_seen`), the first `n` when given, played greedily.
pub fn household_games(
    policy: &dyn Sampler,
    dir: &Path,
    n: Option<usize>,
    ep: Episodes,
    max_tokens: usize,
) -> Result<Games> {
    check_tokens(max_tokens)?;
    let loaded = load_games(dir, n, ep)?;
    let bar = crate::bar((loaded.games.len() * ep.step_limit) as u64, "eval");
    let sp = SampleParams::greedy(max_tokens);
    let trajs = crate::household::rollout_games(policy, loaded.games, ep, &sp, Some(&bar))?;
    bar.finish_and_clear();
    let mut take_rates = TakeRates::default();
    for (t, (w, target)) in trajs.iter().zip(&loaded.targets) {
        take_rates.add_episode(w, target, &commands(t));
    }
    Ok(Games {
        folders: loaded.folders,
        played: Greedy::of(trajs),
        take_rates,
    })
}

/// Game folders opened to be played.
struct LoadedGames {
    /// The folders, in path order.
    folders: Vec<PathBuf>,
    /// Each one's household and goal.
    games: Vec<(
        rla_env::household::HouseholdGame,
        rla_env::household::expert::GoalSpec,
    )>,
    /// Each one's world and the name of its goal's target (for the take rates).
    targets: Vec<(std::sync::Arc<rla_env::household::World>, String)>,
}

/// The game folders under `dir` (the first `n`), each opened with its goal at `ep`'s step limit.
fn load_games(dir: &Path, n: Option<usize>, ep: Episodes) -> Result<LoadedGames> {
    use rla_env::household::HouseholdGame;
    let mut folders = rla_env::household::game::game_folders(dir)?;
    if folders.is_empty() {
        bail!(
            "{} holds no game folder (a folder with game.tw-pddl)",
            dir.display()
        );
    }
    if let Some(n) = n {
        if n == 0 {
            bail!("--n 0: play at least one game");
        }
        if n > folders.len() {
            bail!("--n {n}: {} holds {} games", dir.display(), folders.len());
        }
        folders.truncate(n);
    }
    let mut games = Vec::with_capacity(folders.len());
    let mut targets = Vec::with_capacity(folders.len());
    for f in &folders {
        // the check training makes: the game loads and its traj_data.json agrees with it
        let (g, goal) = rla_env::household::source::load_checked(f).map_err(anyhow::Error::msg)?;
        let traj = g
            .traj
            .as_ref()
            .expect("a checked game has its traj_data.json");
        targets.push((g.world.clone(), traj.pddl_params.object_target.clone()));
        games.push((
            HouseholdGame::new(g.world.clone()).with_step_limit(ep.step_limit),
            goal,
        ));
    }
    Ok(LoadedGames {
        folders,
        games,
        targets,
    })
}

/// Sampled household episodes: the mean success over the tasks and its standard error.
#[derive(Debug, Clone)]
pub struct Sampled {
    /// Every episode (`task` says whose).
    pub trajs: Vec<Trajectory>,
    /// Mean over the tasks of each task's share of won episodes.
    pub mean: f64,
    /// Its standard error.
    pub std_error: f64,
}

/// `samples` episodes of every task sampled at `temperature`.
pub fn household_sampled(
    policy: &dyn Sampler,
    tasks: &[TaskSpec],
    ep: Episodes,
    sampling: (f64, usize),
    max_tokens: usize,
) -> Result<Sampled> {
    sample_each(tasks.len(), ep, sampling, max_tokens, |ep, sp, bar| {
        crate::household::rollout(policy, tasks, ep, sp, Some(bar))
    })
}

/// `samples` episodes of each of `n` tasks (or games), played by `play` with the episodes and
/// sampling settings given (seed 0), counted into the mean success and its standard error.
fn sample_each(
    n: usize,
    mut ep: Episodes,
    (temperature, samples): (f64, usize),
    max_tokens: usize,
    play: impl FnOnce(Episodes, &SampleParams, &indicatif::ProgressBar) -> Result<Vec<Trajectory>>,
) -> Result<Sampled> {
    check_sampling(temperature, samples)?;
    if n == 0 {
        bail!("--n 0: evaluate at least one task");
    }
    check_tokens(max_tokens)?;
    ep.rollouts = samples;
    let sp = SampleParams {
        temperature,
        max_new_tokens: max_tokens,
        seed: 0,
        ..Default::default()
    };
    let bar = crate::bar((n * samples * ep.step_limit) as u64, "eval");
    let trajs = play(ep, &sp, &bar)?;
    bar.finish_and_clear();
    Ok(Sampled::of(trajs, n, samples))
}

/// `samples` episodes of every game folder under `dir` (the first `n`) sampled at
/// `temperature`: `household_sampled` on ALFWorld's own games.
pub fn household_games_sampled(
    policy: &dyn Sampler,
    dir: &Path,
    n: Option<usize>,
    ep: Episodes,
    sampling: (f64, usize),
    max_tokens: usize,
) -> Result<(Vec<PathBuf>, Sampled)> {
    let loaded = load_games(dir, n, ep)?;
    let r = sample_each(
        loaded.games.len(),
        ep,
        sampling,
        max_tokens,
        |ep, sp, bar| crate::household::rollout_games(policy, loaded.games, ep, sp, Some(bar)),
    )?;
    Ok((loaded.folders, r))
}

/// A temperature and a count of episodes a task that sample something.
fn check_sampling(temperature: f64, samples: usize) -> Result<()> {
    if !(temperature.is_finite() && temperature > 0.0) {
        bail!("--temperature {temperature}: use a positive temperature (greedy is the default)");
    }
    if samples == 0 {
        bail!("--samples 0: sample at least one episode a task");
    }
    Ok(())
}

impl Sampled {
    /// The mean over `n` tasks of their `samples` episodes' wins.
    fn of(trajs: Vec<Trajectory>, n: usize, samples: usize) -> Sampled {
        let mut won = vec![0usize; n];
        for t in &trajs {
            won[t.task] += t.won() as usize;
        }
        let per: Vec<f64> = won.iter().map(|&w| w as f64 / samples as f64).collect();
        let (mean, std_error) = rla_core::stats::mean_std_error(&per).unwrap_or((0.0, 0.0));
        Sampled {
            trajs,
            mean,
            std_error,
        }
    }
}

/// The judge's verdicts on the steps of some episodes.
#[derive(Debug, Clone)]
pub struct JudgeView {
    /// Steps judged.
    pub steps: usize,
    /// Verdicts given.
    pub verdicts: usize,
    /// Verdicts with a `\boxed{±1}`.
    pub parsed: usize,
    /// Its quality against the expert's labels.
    pub quality: JudgeQuality,
    /// The first verdict's text.
    pub first: Option<String>,
}

/// Judges every step of the household episodes `trajs` of `tasks` `m` times with the judge's
/// prompt (sampled at temperature 1, at most `tokens` tokens a verdict; the agent's notes above
/// each step with `notes`), and measures the judge against the expert's step labels.
pub fn judge_steps(
    judge: &dyn Sampler,
    (tasks, notes): (&[TaskSpec], bool),
    trajs: &[Trajectory],
    m: usize,
    tokens: usize,
) -> Result<JudgeView> {
    let steps: usize = trajs.iter().map(|t| t.steps.len()).sum();
    let bar = crate::bar(steps as u64, "judge");
    let sp = SampleParams {
        temperature: 1.0,
        max_new_tokens: tokens,
        ..Default::default()
    };
    let verdicts = crate::household::play::judge(judge, (tasks, notes), trajs, m, &sp, Some(&bar))?;
    bar.finish_and_clear();
    let played = Played {
        trajs: trajs.to_vec(),
        verdicts,
    };
    let quality = played.quality();
    let all: Vec<&rla_core::reward::StepScore> = played
        .verdicts
        .iter()
        .flatten()
        .flat_map(|v| &v.scores)
        .collect();
    let parsed = all
        .iter()
        .filter(|s| **s != &rla_core::reward::StepScore::Unparsed)
        .count();
    Ok(JudgeView {
        steps,
        verdicts: all.len(),
        parsed,
        quality,
        first: played
            .verdicts
            .iter()
            .flatten()
            .next()
            .map(|v| v.texts[0].clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::{count_kinds, KindSuccess};

    #[test]
    fn kinds_are_counted_in_the_order_they_first_appear() {
        let played: Vec<(String, bool)> = [("b", true), ("a", false), ("b", false), ("a", true)]
            .iter()
            .chain(&[("b", true)])
            .map(|(k, w)| (k.to_string(), *w))
            .collect();
        let k = |kind: &str, tasks, won| KindSuccess {
            kind: kind.into(),
            tasks,
            won,
        };
        assert_eq!(
            count_kinds(played.iter().map(|(k, w)| (k.as_str(), *w))),
            vec![k("b", 3, 2), k("a", 2, 1)]
        );
        assert!(count_kinds(std::iter::empty()).is_empty());
    }

    #[test]
    fn eval_games_refuses_the_traj_data_training_refuses() {
        use rla_env::household::expert::GoalSpec;
        use rla_env::household::game::GameFile;
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/alfworld-traces/00-pick_and_place_simple-kitchen");
        let d = tempfile::tempdir().unwrap();
        let game = d.path().join("task/trial_1");
        std::fs::create_dir_all(&game).unwrap();
        for f in ["game.tw-pddl", "traj_data.json"] {
            std::fs::copy(fixture.join(f), game.join(f)).unwrap();
        }
        let load = || super::load_games(d.path(), None, super::DEFAULT_EPISODES);
        assert_eq!(load().unwrap().games.len(), 1);
        // a target the scene holds and a goal can be made of, which the game's task does not
        // name: training refuses the folder, and so does the evaluation
        let text = std::fs::read_to_string(game.join("traj_data.json")).unwrap();
        let mut traj: serde_json::Value = serde_json::from_str(&text).unwrap();
        let world = GameFile::load(&game).unwrap().world;
        let disagrees = world
            .types
            .iter()
            .map(|t| t.trim_end_matches("Type").to_string())
            .any(|class| {
                traj["pddl_params"]["object_target"] = class.into();
                std::fs::write(game.join("traj_data.json"), traj.to_string()).unwrap();
                let g = GameFile::load(&game).unwrap();
                GoalSpec::from_traj(&g.world, g.traj.as_ref().unwrap()).is_ok()
                    && rla_env::household::source::load_checked(&game).is_err()
            });
        assert!(disagrees, "no class makes a disagreeing traj_data.json");
        let e = load().err().unwrap().to_string();
        assert!(e.contains("traj_data.json disagrees with the game"), "{e}");
    }
}
