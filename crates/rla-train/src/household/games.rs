//! ALFWorld's own data in the loop: game folders as the training pool and the evaluation splits
//! (`[household] train_games`, `eval_games`), and rewrites of a game written as game folders in
//! the run (`RUN/games/proposed/ID/` when proposed, copied to `RUN/games/accepted/ID/` when the
//! loop accepts them), which ALFWorld's own engine loads.

use super::config::{HouseholdConfig, RewriterKind};
use super::rewriter::parse_goal_tokens;
use anyhow::{bail, Context, Result};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rla_core::adapt::Direction;
use rla_env::household::regame::{game_proposals, retarget_game, scene_classes, GameFiles};
use rla_env::household::source::{game_ids, read_games, GameTask};
use rla_lm::{SampleParams, Sampler};
use std::path::{Path, PathBuf};

/// Where a run keeps the games it proposes and those it accepts.
pub const PROPOSED: &str = "games/proposed";
/// See [`PROPOSED`].
pub const ACCEPTED: &str = "games/accepted";

/// Reads `folders` as tasks, skipping (and saying so) or refusing bad ones as `h` asks.
fn read_all(
    folders: &[(String, PathBuf)],
    step_limit: usize,
    h: &HouseholdConfig,
    what: &str,
) -> Result<Vec<GameTask>> {
    let (games, skipped, first) =
        read_games(folders, step_limit, h.skip_bad_games).map_err(|e| {
            anyhow::anyhow!("{e} (household.skip_bad_games = true leaves such games out)")
        })?;
    if skipped > 0 {
        tracing::warn!(
            "{what}: {skipped} of {} game folders left out (household.skip_bad_games); the first: {}",
            folders.len(),
            first.unwrap_or_default()
        );
    }
    if games.is_empty() {
        bail!("{what}: none of its {} game folders loads", folders.len());
    }
    Ok(games)
}

/// The training pool from `root`: `n` games drawn with `seed` (all of them when it holds fewer).
pub fn train_pool(root: &Path, n: usize, seed: u64, h: &HouseholdConfig) -> Result<Vec<GameTask>> {
    let mut ids = game_ids(root).map_err(anyhow::Error::msg)?;
    ids.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
    ids.truncate(n);
    read_all(
        &ids,
        h.train_step_limit,
        h,
        &format!("household.train_games {}", root.display()),
    )
}

/// How many game folders `root` holds.
pub fn count(root: &Path) -> Result<usize> {
    Ok(game_ids(root).map_err(anyhow::Error::msg)?.len())
}

/// The first `n` games of an evaluation folder (in path order), with the evaluation step limit.
pub fn eval_games(root: &Path, n: usize, h: &HouseholdConfig) -> Result<Vec<GameTask>> {
    let mut ids = game_ids(root).map_err(anyhow::Error::msg)?;
    if n > ids.len() {
        bail!(
            "{} holds {} game folders; the evaluation asks for {n}",
            root.display(),
            ids.len()
        );
    }
    ids.truncate(n);
    read_all(&ids, h.eval_step_limit, h, &root.display().to_string())
}

/// A harder or easier rewrite of a game: the structured rewriter draws one of the game's
/// rewrites in that direction (another object or receptacle class of the scene with fewer or
/// more instances, [`game_proposals`]); the reward model as rewriter answers
/// `\boxed{OBJECT,RECEPTACLE}` as the reference's household rewrite does. The rewrite is written
/// to `run/games/proposed/ID/` and returned as a task there.
#[allow(clippy::too_many_arguments)]
pub fn rewrite_game(
    h: &HouseholdConfig,
    reward: &dyn Sampler,
    params: &SampleParams,
    game: &GameTask,
    direction: Direction,
    critique: Option<&str>,
    run: Option<&Path>,
    id: String,
    seed: u64,
) -> Result<Option<(String, GameTask)>> {
    let run =
        run.context("a game's rewrite is written into its run's folder, and there is none")?;
    let files = GameFiles::read(&game.game_dir)?;
    let chosen = match h.rewriter {
        RewriterKind::Structured => {
            let mut props = game_proposals(&files, direction);
            if props.is_empty() {
                return Ok(None);
            }
            props.swap_remove(seed as usize % props.len())
        }
        RewriterKind::RewardModel => {
            let Some(answer) = ask(reward, params, &files, game, direction, critique) else {
                return Ok(None);
            };
            let Some((o, r)) = parse_goal_tokens(&answer) else {
                return Ok(None);
            };
            match retarget_game(&files, &o, &r) {
                Ok(g) => (format!("goal becomes {o}, {r}"), g),
                Err(_) => return Ok(None),
            }
        }
    };
    let (what, new) = chosen;
    let dir = run.join(PROPOSED).join(&id);
    new.write(&dir)?;
    let task = GameTask::read(&dir, id, game.step_limit).map_err(anyhow::Error::msg)?;
    Ok(Some((
        what,
        GameTask {
            parent: Some(game.id.clone()),
            ..task
        },
    )))
}

/// The reward model's answer to the reference's rewrite prompt on a game.
fn ask(
    lm: &dyn Sampler,
    params: &SampleParams,
    files: &GameFiles,
    game: &GameTask,
    direction: Direction,
    critique: Option<&str>,
) -> Option<String> {
    let classes = scene_classes(&files.world().ok()?);
    let (want, was) = if direction == Direction::Harder {
        ("harder", "easy")
    } else {
        ("easier", "hard")
    };
    let prompt = format!(
        "A household task is too {was} for the agent: \"{}\".\nMistakes seen: {}\nPropose a {want} task of the same kind by changing its object and receptacle. Harder tasks use objects and receptacles with fewer instances; easier ones with more. Classes here: {}.\nAnswer with \\boxed{{OBJECT,RECEPTACLE}}.",
        game.sentence,
        critique.unwrap_or("none recorded."),
        classes.join(", ")
    );
    crate::play::ask_one(lm, &prompt, params).ok()
}

/// Copies an accepted rewrite from `proposed/` to `accepted/` (each file through a temporary
/// name; a copy a killed run left there is replaced) and points the task at it. The proposed
/// folder stays, so an iteration redone after a kill finds it again.
pub fn accept(run: &Path, game: &mut GameTask) -> Result<()> {
    // both made absolute: a state written before runs kept absolute paths names the folder from
    // the working folder
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let (proposed, from) = (abs(&run.join(PROPOSED)), abs(&game.game_dir));
    let Ok(name) = from.strip_prefix(&proposed) else {
        return Ok(());
    };
    let to = run.join(ACCEPTED).join(name);
    GameFiles::read(&game.game_dir)?.write(&to)?;
    game.game_dir = to;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rla_env::household::HouseholdTask;

    #[test]
    fn a_games_rewrite_is_written_into_the_run_and_kept_where_accepted_games_go() {
        let root =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/alfworld-traces");
        let h = HouseholdConfig::default();
        let pool = train_pool(&root, 3, 7, &h).unwrap();
        assert_eq!(pool.len(), 3);
        // another seed draws other games
        let other = train_pool(&root, 3, 8, &h).unwrap();
        assert_ne!(
            pool.iter().map(|g| &g.id).collect::<Vec<_>>(),
            other.iter().map(|g| &g.id).collect::<Vec<_>>()
        );
        let run = tempfile::tempdir().unwrap();
        let no_model = crate::play::testing::Scripted {
            answers: vec!["-"],
            prompts: Default::default(),
        };
        let params = SampleParams::default();
        let parent = &pool[0];
        let (what, child) = rewrite_game(
            &h,
            &no_model,
            &params,
            parent,
            Direction::Easier,
            None,
            Some(run.path()),
            "rewrite-0001-000".into(),
            3,
        )
        .unwrap()
        .expect("a rewrite");
        assert_eq!(child.parent.as_deref(), Some(parent.id.as_str()));
        assert_eq!(
            child.game_dir,
            run.path().join(PROPOSED).join("rewrite-0001-000")
        );
        assert_ne!(child.sentence, parent.sentence, "{what}");
        let (_, goal) = child.open().unwrap();
        let (env, _) = child.open().unwrap();
        assert!(
            !rla_env::household::plan(env.world(), &env.world().initial, &goal)
                .unwrap()
                .is_empty()
        );
        // without a run folder there is nowhere to write it
        let e = rewrite_game(
            &h,
            &no_model,
            &params,
            parent,
            Direction::Easier,
            None,
            None,
            "x".into(),
            3,
        )
        .unwrap_err();
        assert!(e.to_string().contains("run's folder"), "{e}");

        // the reward model as rewriter: its `\boxed{OBJECT,RECEPTACLE}` names the new goal
        let t = GameFiles::read(&child.game_dir)
            .unwrap()
            .traj_data()
            .unwrap()
            .pddl_params;
        let answer: &'static str = Box::leak(
            format!(
                "fewer mugs. \\boxed{{{},{}}}",
                t.object_target, t.parent_target
            )
            .into_boxed_str(),
        );
        let lm = crate::play::testing::Scripted {
            answers: vec![answer],
            prompts: Default::default(),
        };
        let by_lm = HouseholdConfig {
            rewriter: RewriterKind::RewardModel,
            ..HouseholdConfig::default()
        };
        let (what_lm, child_lm) = rewrite_game(
            &by_lm,
            &lm,
            &params,
            parent,
            Direction::Easier,
            Some("went to the fridge"),
            Some(run.path()),
            "rewrite-0001-001".into(),
            3,
        )
        .unwrap()
        .expect("the model's rewrite");
        assert_eq!(child_lm.sentence, child.sentence, "{what_lm}");
        let asked = lm.prompts.lock().unwrap().join("\n");
        assert!(
            asked.contains("went to the fridge") && asked.contains(&parent.sentence),
            "{asked}"
        );

        let mut accepted = child.clone();
        accept(run.path(), &mut accepted).unwrap();
        assert_eq!(
            accepted.game_dir,
            run.path().join(ACCEPTED).join("rewrite-0001-000")
        );
        assert_eq!(
            accepted.open().unwrap().0.world().task,
            child.open().unwrap().0.world().task
        );
        // the proposed folder stays (an iteration redone after a kill reads it again), and
        // accepting again replaces the copy
        assert!(child.game_dir.join("game.tw-pddl").exists());
        let mut again = child.clone();
        accept(run.path(), &mut again).unwrap();
        assert_eq!(again, accepted);
        // a game of the training folder is left where it is
        let mut original = parent.clone();
        accept(run.path(), &mut original).unwrap();
        assert_eq!(&original, parent);
    }
}
