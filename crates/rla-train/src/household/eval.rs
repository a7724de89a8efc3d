//! The household's views of a policy's episodes outside a run: greedy episodes kept step by step
//! with their loops and take rates ([`household_greedy`]), ALFWorld's own game folders
//! ([`household_games`], and [`games_won`], the ablation's extra evaluation of them), sampled
//! episodes with a standard error ([`sampled`], the one sampled path of the household, which its
//! runs' evaluation plays too) and the judge's verdicts on every step ([`judge_steps`]); the flags
//! of `eval` that override how it plays ([`HouseholdFlags`]). They return what they measured
//! and print nothing.

use super::config::HouseholdConfig;
use super::{evaluate_episodes, rollout, rollout_games, Episodes, PromptStyle};
use crate::config::{RunConfig, SettingConfig};
use crate::play::{Played, Trajectory};
use crate::setting::{JudgeQuality, Sampling};
use anyhow::{bail, Context, Result};
use rla_env::household::expert::GoalSpec;
use rla_env::household::source::HouseholdTask;
use rla_env::household::stats::TakeRates;
use rla_env::household::{HouseholdGame, TaskSpec};
use rla_lm::{SampleParams, Sampler};
use std::path::{Path, PathBuf};

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
    let trajs = evaluate_episodes(policy, tasks, ep, max_tokens, Some(&bar))?;
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
/// length):
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

/// The household's extra evaluation for the ablation ([`crate::setting::ExtraEvaluation`]):
/// ALFWorld's game folders under a folder won, played greedily ([`games_won`]).
pub struct GamesWon {
    /// The run's config (how the household plays).
    cfg: RunConfig,
    /// The folder of game folders.
    games: PathBuf,
}

impl GamesWon {
    /// The game folders under `games`, played as `cfg` evaluates; an error when it holds none.
    pub fn new(cfg: &RunConfig, games: &Path) -> Result<GamesWon> {
        let found = rla_env::household::game::game_folders(games)
            .with_context(|| format!("--games {}", games.display()))?;
        if found.is_empty() {
            bail!(
                "--games {}: holds no game folder (a folder with game.tw-pddl)",
                games.display()
            );
        }
        Ok(GamesWon {
            cfg: cfg.clone(),
            games: games.to_path_buf(),
        })
    }
}

impl crate::setting::ExtraEvaluation for GamesWon {
    fn name(&self) -> String {
        "games won".into()
    }
    fn key(&self) -> String {
        "games".into()
    }
    fn evaluate(
        &self,
        backend: &dyn rla_lm::Backend,
        policy: &Path,
        record: &Path,
    ) -> Result<(usize, usize)> {
        games_won(backend, &self.cfg, policy, &self.games, record)
    }
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
    let trajs = rollout_games(policy, loaded.games, ep, &sp, Some(&bar))?;
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
    games: Vec<(HouseholdGame, GoalSpec)>,
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

/// Sampled household episodes: each task's scores, their mean over the tasks and its standard
/// error.
#[derive(Debug, Clone)]
pub struct Sampled {
    /// Every episode (`task` says whose).
    pub trajs: Vec<Trajectory>,
    /// Each task's episode scores (1 won, 0 lost), in task order
    /// ([`crate::setting::scores_by_task`]).
    pub scores: Vec<Vec<f64>>,
    /// Mean over the tasks of each task's share of won episodes.
    pub mean: f64,
    /// Its standard error.
    pub std_error: f64,
}

impl Sampled {
    /// The episodes of `n` tasks counted task by task.
    fn of(n: usize, trajs: Vec<Trajectory>) -> Result<Sampled> {
        let scores = crate::setting::scores_by_task(n, &trajs);
        let means = crate::evals::task_means(&scores)?;
        let (mean, std_error) = rla_core::stats::mean_std_error(&means)
            .ok_or_else(|| anyhow::anyhow!("a sampled evaluation of no task"))?;
        Ok(Sampled {
            trajs,
            scores,
            mean,
            std_error,
        })
    }
}

/// `sampling.samples` episodes of each household task at `sampling.temperature`, each drawing
/// from its own stream of `sampling.seed` ([`crate::play::episode_seed`]), answers of at most
/// `max_tokens` tokens: the household's one sampled evaluation, which runs
/// ([`crate::setting::Setting::evaluate_sampled`]) and `eval --temperature` both play.
pub fn sampled<T: HouseholdTask>(
    policy: &dyn Sampler,
    tasks: &[T],
    ep: Episodes,
    (sampling, max_tokens): (Sampling, usize),
    bar: Option<&indicatif::ProgressBar>,
) -> Result<Sampled> {
    let (ep, sp) = sampled_play(ep, sampling, max_tokens);
    Sampled::of(tasks.len(), rollout(policy, tasks, ep, &sp, bar)?)
}

/// [`sampled`] on games already opened (ALFWorld's game folders).
fn sampled_games(
    policy: &dyn Sampler,
    games: Vec<(HouseholdGame, GoalSpec)>,
    ep: Episodes,
    (sampling, max_tokens): (Sampling, usize),
    bar: Option<&indicatif::ProgressBar>,
) -> Result<Sampled> {
    let (ep, sp) = sampled_play(ep, sampling, max_tokens);
    let n = games.len();
    Sampled::of(n, rollout_games(policy, games, ep, &sp, bar)?)
}

/// How a sampled evaluation plays: `sampling.samples` episodes a task, drawn as it says.
fn sampled_play(
    mut ep: Episodes,
    sampling: Sampling,
    max_tokens: usize,
) -> (Episodes, SampleParams) {
    ep.rollouts = sampling.samples;
    (ep, sampling.params(max_tokens))
}

/// [`sampled`] on `tasks` with a progress bar, as `eval --temperature T --samples K` plays
/// them (the draws' seed 0).
pub fn household_sampled(
    policy: &dyn Sampler,
    tasks: &[TaskSpec],
    ep: Episodes,
    sampling: Sampling,
    max_tokens: usize,
) -> Result<Sampled> {
    check_sampled(tasks.len(), sampling, max_tokens)?;
    let bar = crate::bar(
        (tasks.len() * sampling.samples * ep.step_limit) as u64,
        "eval",
    );
    let r = sampled(policy, tasks, ep, (sampling, max_tokens), Some(&bar));
    bar.finish_and_clear();
    r
}

/// [`household_sampled`] on every game folder under `dir` (the first `n`): ALFWorld's own games.
pub fn household_games_sampled(
    policy: &dyn Sampler,
    dir: &Path,
    n: Option<usize>,
    ep: Episodes,
    sampling: Sampling,
    max_tokens: usize,
) -> Result<(Vec<PathBuf>, Sampled)> {
    let loaded = load_games(dir, n, ep)?;
    let count = loaded.games.len();
    check_sampled(count, sampling, max_tokens)?;
    let bar = crate::bar((count * sampling.samples * ep.step_limit) as u64, "eval");
    let r = sampled_games(policy, loaded.games, ep, (sampling, max_tokens), Some(&bar));
    bar.finish_and_clear();
    Ok((loaded.folders, r?))
}

/// Refuses a sampled evaluation of nothing.
fn check_sampled(n: usize, sampling: Sampling, max_tokens: usize) -> Result<()> {
    crate::eval::check_sampling(sampling.temperature, sampling.samples)?;
    if n == 0 {
        bail!("--n 0: evaluate at least one task");
    }
    check_tokens(max_tokens)
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
    /// Its quality against the steps' labels (the ones an agent could know and the planner's)
    /// and the episodes' outcomes.
    pub quality: JudgeQuality,
    /// The first verdict's text.
    pub first: Option<String>,
}

/// Judges every step of the household episodes `trajs` of `tasks` `m` times with the judge's
/// prompt (sampled at temperature 1, at most `tokens` tokens a verdict; the agent's notes above
/// each step with `notes`), and measures the judge against the steps' labels (the ones an agent
/// could know and the fully informed planner's) and the episodes' outcomes.
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
    let verdicts = super::play::judge(judge, (tasks, notes), trajs, m, &sp, Some(&bar))?;
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
