//! The household's warm start: the searching expert's demonstrations taken in noisy states
//! (policy examples), every step labelled with its episode's outcome (judge examples: weak
//! labels, no oracle), the probe that measures a policy on held-out steps, and the SFT
//! control's fresh demonstrations.

use super::probe::{household_probe, household_train_tasks, ExpertWalk};
use super::prompts::{judge_answer, judge_prompt, policy_answer_styled};
use crate::config::RunConfig;
use crate::config::SettingConfig;
use crate::household::config::HouseholdConfig;
use crate::play::Trajectory;
use crate::pretrain::{example_corpus, Demo, Example, WarmStart, CHAT_MARKERS};
use anyhow::Result;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rla_core::Split;
use rla_env::household::splits::eval_tasks;
use rla_env::household::{HouseholdGame, HouseholdTask, TaskSpec};
use rla_lm::{SampleParams, Sampler};

/// Demonstrations of the tasks: policy steps (with each step's admissible commands and task)
/// and judge examples from noisy expert episodes, prompted as `cfg.household` plays and at
/// `cfg.pretrain.noise`, seeded by `seed`.
pub fn demonstrations<T: HouseholdTask>(
    tasks: &[T],
    cfg: &RunConfig,
    seed: u64,
) -> Result<(Vec<Demo>, Vec<Example>)> {
    let (noise, h) = (cfg.pretrain.noise, HouseholdConfig::of(cfg));
    let style = h.prompt_style;
    let judge_notes = |w: &ExpertWalk| {
        if h.judge_notes {
            w.notes()
        } else {
            String::new()
        }
    };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut pol, mut jud) = (Vec::new(), Vec::new());
    for (ti, t) in tasks.iter().enumerate() {
        // two episodes per task: one at the given noise, one noisier, so the judge sees failures
        for eps_noise in [noise, (noise * 2.0).min(0.9)] {
            let mut walk = ExpertWalk::start(t, h)?;
            // (notes the judge reads, obs, answer, action)
            let mut steps: Vec<(String, String, String, String)> = Vec::new();
            let mut won = false;
            for _ in 0..t.step_limit() {
                let Some(l) = walk.label(h)? else {
                    break;
                };
                pol.push(Demo {
                    prompt: l.prompt,
                    answer: policy_answer_styled(&l.cmd, l.idx, style),
                    choices: l.adm.clone(),
                    task: ti,
                });
                let (cmd, idx) = if rng.gen::<f64>() < eps_noise {
                    let k = rng.gen_range(0..l.adm.len());
                    (l.adm[k].clone(), k)
                } else {
                    (l.cmd, l.idx)
                };
                let known = judge_notes(&walk);
                let (obs, r) = walk.play(&cmd)?;
                steps.push((known, obs, policy_answer_styled(&cmd, idx, style), cmd));
                if r.done {
                    won = r.won;
                    break;
                }
            }
            // weak labels: every step gets its trajectory's outcome
            let mut next = steps
                .iter()
                .skip(1)
                .map(|s| s.1.clone())
                .collect::<Vec<_>>();
            next.push(walk.obs.clone());
            for ((known, o, ans, act), nx) in steps.iter().zip(next) {
                jud.push((
                    judge_prompt(&t.sentence(), known, o, ans, act, &nx),
                    judge_answer(act, won),
                ));
            }
        }
    }
    pol.shuffle(&mut rng);
    jud.shuffle(&mut rng);
    Ok((pol, jud))
}

/// Builds the tokenizer and both tiny models, warm-starts them, and saves them under `out`
/// (`out/policy`, `out/reward`, and the policy's training curve `out/curve-policy.jsonl`).
/// Returns a line per model describing what was done.
pub fn warm_start(w: WarmStart) -> Result<Vec<String>> {
    let (cfg, out) = (w.cfg, w.out);
    let tasks = household_train_tasks(cfg);
    let (pol, jud) = demonstrations(&tasks, cfg, cfg.seed)?;
    // the last `held_out` tasks' steps measure the policy and are never trained on
    let cut = tasks.len() - cfg.pretrain.held_out;
    let (train, held): (Vec<Demo>, Vec<Demo>) = pol.into_iter().partition(|d| d.task < cut);
    // a sample of the held-out steps is enough to measure on (and keeps each point quick)
    let held: Vec<Demo> = held.into_iter().take(1024).collect();
    let pol: Vec<Example> = train.into_iter().map(|d| (d.prompt, d.answer)).collect();
    // The vocabulary: every text the models will read or write, plus the evaluation scenes' intros.
    let mut corpus = example_corpus(pol.iter().chain(jud.iter()));
    for d in &held {
        corpus.push_str(&d.prompt);
        corpus.push('\n');
    }
    for t in eval_tasks(Split::InDomain)
        .iter()
        .chain(eval_tasks(Split::Ood).iter())
    {
        let mut env = HouseholdGame::from_task(t)?;
        corpus.push_str(&env.reset());
        corpus.push('\n');
        corpus.push_str(&env.admissible().join("\n"));
        corpus.push('\n');
    }
    corpus.push_str(&rla_env::household::data::vocabulary());
    corpus.push_str(CHAT_MARKERS);
    let probe = (!held.is_empty() || cfg.pretrain.validation > 0).then(|| {
        (
            cfg.pretrain.eval_every,
            household_probe(
                cfg,
                &held,
                cfg.pretrain.validation,
                Some(out.join("mistakes-policy.txt")),
            ),
        )
    });
    // the policy records how it plays, for `eval`
    let files = vec![super::Episodes::evaluation(cfg).record()?];
    let mut lines = crate::dagger::fit_policy(w, &corpus, &pol, files, probe, || {
        super::dagger::dagger(w, &pol, &held)
    })?;
    // the judge learns from the policy's own episodes, or from the expert's
    let mut held_out = None;
    let jud = if cfg.pretrain.judge_tasks > 0 {
        let policy = w.backend.open(&out.join("policy"), &Default::default())?;
        let (own, tasks, trajs) = own_episodes(&*policy, cfg, w.progress)?;
        corpus.push_str(&example_corpus(own.iter()));
        held_out = Some((tasks, trajs));
        own
    } else {
        jud
    };
    lines.push(crate::dagger::fit_judge(w, &corpus, &jud)?);
    if let Some((tasks, trajs)) = held_out {
        let reward = w.backend.open(&out.join("reward"), &Default::default())?;
        let a = JudgeAccuracy::of(&trajs, judge_quality_on(&*reward, cfg, &tasks, &trajs)?);
        lines.push(format!("reward, {}", a.line("held-out")));
    }
    Ok(lines)
}

/// The judge's accuracy on the policy's own episodes, one greedy verdict a step.
#[derive(Debug, Clone)]
pub struct JudgeAccuracy {
    /// Steps judged.
    pub steps: usize,
    /// Episodes they came from.
    pub episodes: usize,
    /// The share of the steps good by the label an agent could know, by the planner's label, and
    /// on which the two labels disagree.
    pub good: (f64, f64, f64),
    /// The judge's quality on them: process accuracy against the label an agent could know
    /// (`process_acc`) and against the fully informed planner's (`process_acc_planner`), outcome
    /// accuracy, μ as the paper defines it (`outcome_calibration`) and against the labels.
    pub quality: crate::setting::JudgeQuality,
}

impl JudgeAccuracy {
    /// The judge's quality on the steps of `trajs`, with their labels' shares.
    fn of(trajs: &[Trajectory], quality: crate::setting::JudgeQuality) -> JudgeAccuracy {
        let steps: Vec<_> = trajs.iter().flat_map(|t| &t.steps).collect();
        let share = |f: &dyn Fn(&crate::play::StepRec) -> bool| {
            steps.iter().filter(|s| f(s)).count() as f64 / steps.len().max(1) as f64
        };
        JudgeAccuracy {
            steps: steps.len(),
            episodes: trajs.len(),
            good: (
                share(&|s| s.progress),
                share(&|s| s.planner_progress == Some(true)),
                share(&|s| s.planner_progress.is_some_and(|p| p != s.progress)),
            ),
            quality,
        }
    }

    /// One line: `which` names the episodes (`held-out`, `fresh`).
    pub fn line(&self, which: &str) -> String {
        let pct = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{:.1}%", 100.0 * x));
        let num = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.3}"));
        let q = &self.quality;
        let out = q.outcome_calibration.unwrap_or_default();
        format!(
            "greedy on the {} steps of the policy's {} {which} episodes: process accuracy {} \
             (against the labels an agent could know, the searching expert's), {} (against the \
             fully informed planner's labels), outcome accuracy {}; μ (paper: by the outcome) {} \
             (p₊ {}, p₋ {}), μ (by the agent-knowable label) {}; the steps good by the label an \
             agent could know {}, by the planner's {}, the labels disagreeing on {}",
            self.steps,
            self.episodes,
            pct(q.process_acc),
            pct(q.process_acc_planner),
            pct(q.outcome_acc),
            num(out.mu()),
            num(out.p_plus()),
            num(out.p_minus()),
            num(q.calibration.mu()),
            pct(Some(self.good.0)),
            pct(Some(self.good.1)),
            pct(Some(self.good.2)),
        )
    }
}

/// How the policy plays the episodes its judge is fitted and measured on: `rollouts_per_task`
/// episodes a task, sampled as RL samples them, with the training step limit.
fn judge_episodes(cfg: &RunConfig) -> super::Episodes {
    super::Episodes {
        rollouts: cfg.rollouts_per_task,
        step_limit: HouseholdConfig::of(cfg).train_step_limit,
        ..super::Episodes::evaluation(cfg)
    }
}

/// The seed offset of [`judge_accuracy`]'s tasks: none of the warm start's draws (its
/// demonstrations', DAgger's rounds', the judge's own tasks') uses it.
const FRESH_JUDGE_TASKS: u64 = 15_485_863;

/// The judge's accuracy measured as the warm start measures it on its held-out episodes, on
/// `episodes` fresh ones: the policy plays generated training tasks drawn with a seed of their own
/// (`rollouts_per_task` episodes a task, sampled as RL samples them, the last task's cut at
/// `episodes`), and the judge gives one greedy verdict a step, with the config's prompts.
pub fn judge_accuracy(
    policy: &dyn Sampler,
    reward: &dyn Sampler,
    cfg: &RunConfig,
    episodes: usize,
    progress: bool,
) -> Result<JudgeAccuracy> {
    anyhow::ensure!(
        episodes > 0,
        "--episodes 0: the judge's accuracy needs at least one episode"
    );
    anyhow::ensure!(
        cfg.rollouts_per_task > 0,
        "rollouts_per_task is 0: no episode to judge"
    );
    let mut c = cfg.clone();
    c.seed = cfg.seed.wrapping_add(FRESH_JUDGE_TASKS);
    c.pretrain.tasks = episodes.div_ceil(cfg.rollouts_per_task);
    let tasks = household_train_tasks(&c);
    let ep = judge_episodes(cfg);
    let bar = progress.then(|| {
        crate::bar(
            (tasks.len() * ep.rollouts * ep.step_limit) as u64,
            "the policy's episodes",
        )
    });
    let mut trajs = super::rollout(
        policy,
        &tasks,
        ep,
        &cfg.policy.sampling(c.seed),
        bar.as_ref(),
    )?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    trajs.truncate(episodes);
    let quality = judge_quality_on(reward, cfg, &tasks, &trajs)?;
    Ok(JudgeAccuracy::of(&trajs, quality))
}

/// The judge's examples from the policy's own episodes: `pretrain.judge_tasks` fresh training
/// tasks (other than the demonstrations'), each played `rollouts_per_task` times as RL plays
/// them, every step labelled with its episode's outcome (weak labels: neither the oracle nor
/// the expert), and as many steps of won episodes as of lost ones (a seeded sample of the larger
/// side). The last tenth of the tasks, with their episodes, are held out to measure the judge.
fn own_episodes(
    policy: &dyn Sampler,
    cfg: &RunConfig,
    progress: bool,
) -> Result<(Vec<Example>, Vec<TaskSpec>, Vec<Trajectory>)> {
    let mut c = cfg.clone();
    c.seed = cfg.seed.wrapping_add(7_919);
    c.pretrain.tasks = cfg.pretrain.judge_tasks;
    let tasks = household_train_tasks(&c);
    let ep = judge_episodes(cfg);
    let bar = progress.then(|| {
        let steps = tasks.len() * ep.rollouts * ep.step_limit;
        crate::bar(steps as u64, "the policy's episodes for the judge")
    });
    let sp = cfg.policy.sampling(c.seed);
    let trajs = super::rollout(policy, &tasks, ep, &sp, bar.as_ref())?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let cut = tasks.len() - tasks.len() / 10;
    let (mut won, mut lost, mut held) = (vec![], vec![], vec![]);
    for mut t in trajs {
        if t.task >= cut {
            t.task -= cut;
            held.push(t);
            continue;
        }
        for s in &t.steps {
            let prompt = super::play::step_judge_prompt(
                &tasks[t.task],
                s,
                HouseholdConfig::of(cfg).judge_notes,
            );
            let ex = (prompt, judge_answer(&s.action, t.won()));
            if t.won() {
                won.push(ex);
            } else {
                lost.push(ex);
            }
        }
    }
    anyhow::ensure!(
        !won.is_empty() && !lost.is_empty(),
        "pretrain.judge_tasks: the policy's episodes on {cut} tasks gave {} steps of won \
         episodes and {} of lost ones; the judge needs both",
        won.len(),
        lost.len()
    );
    Ok((balanced(won, lost, c.seed), tasks[cut..].to_vec(), held))
}

/// As many examples of each side as the smaller side has (a seeded sample of the larger), in a
/// seeded order.
fn balanced(mut won: Vec<Example>, mut lost: Vec<Example>, seed: u64) -> Vec<Example> {
    let n = won.len().min(lost.len());
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    won.shuffle(&mut rng);
    lost.shuffle(&mut rng);
    won.truncate(n);
    lost.truncate(n);
    won.append(&mut lost);
    won.shuffle(&mut rng);
    won
}

/// The judge's quality, one greedy verdict per step, on the steps of the episodes.
fn judge_quality_on(
    reward: &dyn Sampler,
    cfg: &RunConfig,
    tasks: &[TaskSpec],
    trajs: &[Trajectory],
) -> Result<crate::setting::JudgeQuality> {
    let sp = SampleParams::greedy(cfg.reward.max_new_tokens);
    let notes = HouseholdConfig::of(cfg).judge_notes;
    let v = super::play::judge(reward, (tasks, notes), trajs, 1, &sp, None)?;
    let steps = trajs.iter().zip(&v).flat_map(|(t, vs)| {
        t.steps
            .iter()
            .zip(vs)
            .map(move |(s, v)| (t.won(), s.progress, s.planner_progress, v))
    });
    Ok(crate::judge::step_judge_quality(steps))
}

/// Tasks of the SFT control's demonstrations per chunk.
const CONTROL_CHUNK: usize = 100;

/// The SFT control's demonstrations: chunk `chunk` of generated training tasks (a share given a
/// hint, as the warm start's), drawn with other seeds than the warm start's own tasks; with
/// `[household] train_games`, games of that folder.
pub fn control_demonstrations(cfg: &RunConfig, chunk: u64) -> Result<Vec<Example>> {
    let seed = 1_000_003u64
        .wrapping_mul(cfg.seed.wrapping_add(1))
        .wrapping_add(chunk);
    let h = HouseholdConfig::of(cfg);
    if let Some(root) = &h.train_games {
        let games = super::games::train_pool(root, CONTROL_CHUNK, seed, h)?;
        let (pol, _) = demonstrations(&games, cfg, seed)?;
        return Ok(pol.into_iter().map(|d| (d.prompt, d.answer)).collect());
    }
    let mut c = cfg.clone();
    c.seed = seed;
    c.pretrain.tasks = CONTROL_CHUNK;
    let tasks = household_train_tasks(&c);
    let (pol, _) = demonstrations(&tasks, cfg, seed)?;
    Ok(pol.into_iter().map(|d| (d.prompt, d.answer)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pretrain::tiny_test_config;

    #[test]
    fn the_judges_examples_balance_won_and_lost_steps() {
        let ex = |tag: &str, n: usize| -> Vec<Example> {
            (0..n)
                .map(|i| (format!("{tag} {i}"), tag.to_string()))
                .collect()
        };
        let b = balanced(ex("won", 3), ex("lost", 10), 1);
        assert_eq!(b.len(), 6);
        assert_eq!(b.iter().filter(|e| e.1 == "won").count(), 3);
        assert_eq!(b, balanced(ex("won", 3), ex("lost", 10), 1), "seeded");
        assert_ne!(b, balanced(ex("won", 3), ex("lost", 10), 2));
        assert!(balanced(ex("won", 0), ex("lost", 4), 1).is_empty());
    }

    #[test]
    fn a_judge_from_the_policys_own_episodes_needs_won_and_lost_ones() {
        let mut cfg = tiny_test_config();
        HouseholdConfig::of_mut(&mut cfg).judge_notes = true;
        cfg.pretrain.judge_tasks = 4;
        cfg.rollouts_per_task = 2;
        // two steps win no task: every one needs at least a walk and a take and a put
        HouseholdConfig::of_mut(&mut cfg).train_step_limit = 2;
        cfg.validate().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let e = warm_start(crate::pretrain::candle_warm_start(&cfg, dir.path())).unwrap_err();
        let e = format!("{e:#}");
        assert!(
            e.contains("pretrain.judge_tasks") && e.contains("gave 0 steps of won episodes"),
            "{e}"
        );
    }

    #[test]
    fn a_warm_start_writes_its_curve_held_out_mistakes_and_model() {
        let mut cfg = tiny_test_config();
        cfg.pretrain = crate::config::PretrainConfig {
            held_out: 1,
            validation: 2,
            eval_every: 2,
            policy_steps: 4,
            ..cfg.pretrain
        };
        cfg.validate().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let lines = warm_start(crate::pretrain::candle_warm_start(&cfg, dir.path())).unwrap();
        assert!(lines[0].contains("last curve point"), "{lines:?}");
        let curve = std::fs::read_to_string(dir.path().join("curve-policy.jsonl")).unwrap();
        let points: Vec<serde_json::Value> = curve
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(points.len(), 2, "{curve}");
        for (p, step) in points.iter().zip([2, 4]) {
            assert_eq!(p["step"], step);
            for k in [
                "held_out_loss",
                "held_out_action_acc",
                "held_out_name_acc",
                "validation_success",
                "train_loss",
                "lr",
            ] {
                assert!(p[k].as_f64().is_some_and(f64::is_finite), "{k}: {p}");
            }
            let acc = p["held_out_action_acc"].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&acc));
        }
        // an untrained model gets held-out steps wrong, and they are written down
        assert!(dir.path().join("mistakes-policy.txt").exists());
        assert!(rla_model::weights::is_checkpoint(
            &dir.path().join("policy")
        ));
        // the held-out task's steps were never trained on: too many held out is refused
        cfg.pretrain.held_out = 4;
        assert!(cfg.validate().unwrap_err().contains("held_out"));
        // a curve's spacing with nothing to measure is refused, not ignored
        cfg.pretrain.held_out = 0;
        cfg.pretrain.validation = 0;
        assert!(cfg.validate().unwrap_err().contains("eval_every"));
    }
}
