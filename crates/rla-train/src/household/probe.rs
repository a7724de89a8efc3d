//! What the household's warm start and DAgger share: the expert walking beside an episode, the
//! probe that measures a policy as it learns, and the generated training tasks.

use super::notes::Notes;
use super::prompts::{parse_choice, policy_prompt_styled};
use crate::config::RunConfig;
use crate::config::SettingConfig;
use crate::household::config::HouseholdConfig;
use crate::pretrain::{encode_pairs, greedy_accuracy, CurvePoint, Demo, Example, Probe};
use anyhow::{Context, Result};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rla_core::Split;
use rla_env::household::expert::{GoalSpec, SearchExpert};
use rla_env::household::splits::{eval_tasks_first, train_tasks_sparse};
use rla_env::household::{HouseholdGame, HouseholdTask, TaskSpec};
use rla_lm::Model;

/// One household episode walked with the searching expert beside the agent: the game, the
/// prompt's state as the play loop keeps it (history, notes) and the expert following every
/// command played, seeing only what the agent sees. The demonstrations and DAgger's labels both
/// walk their episodes with it.
pub(super) struct ExpertWalk {
    env: HouseholdGame,
    goal: GoalSpec,
    pub(super) obs: String,
    memo: Option<Notes>,
    hist: Vec<(String, String)>,
    searcher: SearchExpert,
}

/// What the expert would do at a state, and the policy's prompt there.
pub(super) struct Labelled {
    /// The admissible commands.
    pub(super) adm: Vec<String>,
    /// The expert's command and its index among them.
    pub(super) cmd: String,
    pub(super) idx: usize,
    /// The policy's prompt.
    pub(super) prompt: String,
}

impl ExpertWalk {
    pub(super) fn start(t: &impl HouseholdTask, h: &HouseholdConfig) -> Result<ExpertWalk> {
        let (mut env, goal) = t.open().map_err(anyhow::Error::msg)?;
        let obs = env.reset();
        let searcher = SearchExpert::new(env.world());
        Ok(ExpertWalk {
            memo: h.notes.then(|| Notes::from_intro(&obs, h.notes_style)),
            env,
            goal,
            obs,
            hist: Vec::new(),
            searcher,
        })
    }

    /// The expert's command at this state with the policy's prompt (as `h` prompts it), or
    /// `None` when the expert has nothing to do (an agent that has spoilt its task).
    pub(super) fn label(&mut self, h: &super::config::HouseholdConfig) -> Result<Option<Labelled>> {
        let adm = self.env.admissible().to_vec();
        let Some(a) = self
            .searcher
            .next(self.env.world(), self.env.state(), &self.goal)
        else {
            return Ok(None);
        };
        let cmd = self
            .env
            .world()
            .command(self.env.state(), a)
            .context("the expert's action is admissible")?;
        let idx = adm
            .iter()
            .position(|c| *c == cmd)
            .context("the expert's command is listed")?;
        let prompt = policy_prompt_styled(
            &self.env.world().task,
            &self.hist,
            h.history_window,
            &self.obs,
            &adm,
            h.prompt_style,
            &self.notes(),
        );
        Ok(Some(Labelled {
            adm,
            cmd,
            idx,
            prompt,
        }))
    }

    /// The notes as the prompt shows them (empty without notes).
    pub(super) fn notes(&self) -> String {
        self.memo.as_ref().map(Notes::render).unwrap_or_default()
    }

    /// Plays `cmd`: the game, the expert, the notes and the history follow it. Returns the
    /// observation it was played in and the game's reply.
    pub(super) fn play(&mut self, cmd: &str) -> Result<(String, rla_env::household::StepResult)> {
        let act = self
            .env
            .parse(cmd)
            .with_context(|| format!("the command played, {cmd:?}"))?;
        let r = self.env.step(cmd);
        self.searcher
            .observe(self.env.world(), self.env.state(), act);
        if let Some(n) = &mut self.memo {
            n.played(cmd);
            n.observe(&r.feedback);
        }
        let before = std::mem::replace(&mut self.obs, r.feedback.clone());
        self.hist.push((before.clone(), cmd.to_string()));
        Ok((before, r))
    }
}

/// Words of a household command that name no object and no place: what is left of an answer's
/// tokens names the object or the receptacle (with its number).
const COMMAND_WORDS: &[&str] = &[
    "\\boxed{",
    "}",
    "go",
    "to",
    "take",
    "from",
    "put",
    "in/on",
    "in",
    "on",
    "open",
    "close",
    "use",
    "heat",
    "cool",
    "clean",
    "with",
    "slice",
    "examine",
    "look",
    "inventory",
];

/// Measures a household policy on held-out demonstration steps: the mean SFT loss, the share of
/// steps whose greedy answer (constrained to the admissible commands, as the policy plays) is the
/// expert's, and the share of the tokens naming an object or a receptacle that the model ranks
/// first given the expert's answer so far; and, with `validation > 0`, greedy success on that
/// many validation tasks.
pub fn household_probe<'a>(
    cfg: &'a RunConfig,
    held_out: &'a [Demo],
    validation: usize,
    mistakes: Option<std::path::PathBuf>,
) -> Probe<'a> {
    Box::new(move |lm: &dyn Model| {
        let mut point = CurvePoint::new();
        let style = HouseholdConfig::of(cfg).prompt_style;
        if !held_out.is_empty() {
            let examples: Vec<Example> = held_out
                .iter()
                .map(|d| (d.prompt.clone(), d.answer.clone()))
                .collect();
            let pairs = encode_pairs(lm, &examples)?;
            let loss = lm.sft_loss(&pairs)?;
            point.insert("held_out_loss".into(), loss.into());
            // greedy answers among the admissible commands
            let prompts: Vec<Vec<u32>> = pairs.iter().map(|p| p.0.clone()).collect();
            let allowed: Vec<Vec<Vec<u32>>> = held_out
                .iter()
                .map(|d| super::play::answer_tokens(lm, &d.choices, style))
                .collect::<Result<_>>()?;
            let constrained = HouseholdConfig::of(cfg)
                .constrain_actions
                .then_some(&allowed[..]);
            let (acc, wrong) = greedy_accuracy(
                lm,
                &prompts,
                constrained,
                cfg.policy.max_new_tokens,
                |i, text| {
                    let d = &held_out[i];
                    let (idx, _) = parse_choice(text, &d.choices);
                    let want = parse_choice(&d.answer, &d.choices).0;
                    (idx != want).then(|| {
                        format!(
                            "{}\nexpert: {}\nmodel:  {}\n",
                            d.prompt, d.choices[want], d.choices[idx]
                        )
                    })
                },
            )?;
            point.insert("held_out_action_acc".into(), acc.into());
            if let Some(p) = &mistakes {
                crate::run::write_atomic(p, &wrong.join("\n"))?;
            }
            // the tokens that name things, ranked first given the expert's answer so far
            let top = lm.top_logprobs(&pairs, 1)?;
            let (mut named, mut first) = (0usize, 0usize);
            for ((_, resp), alts) in pairs.iter().zip(&top) {
                for (t, alt) in resp.iter().zip(alts) {
                    let word = lm.decode(&[*t]).unwrap_or_default();
                    let word = word.trim();
                    if word.is_empty() || lm.eos_ids().contains(t) || COMMAND_WORDS.contains(&word)
                    {
                        continue;
                    }
                    named += 1;
                    first += usize::from(alt.first().map(|a| a.0) == Some(*t));
                }
            }
            point.insert(
                "held_out_name_acc".into(),
                (first as f64 / named.max(1) as f64).into(),
            );
        }
        if validation > 0 {
            let tasks: Vec<TaskSpec> = eval_tasks_first(Split::Validation, validation);
            let ep = super::Episodes::evaluation(cfg);
            let v = super::evaluate(lm, &tasks, ep, cfg.policy.max_new_tokens, None)?;
            point.insert("validation_success".into(), v.into());
        }
        Ok(point)
    })
}

/// The generated training tasks a household warm start learns from (a share given a hint):
/// drawn from the training distribution with the run's seed, never from the fixed splits.
pub fn household_train_tasks(cfg: &RunConfig) -> Vec<TaskSpec> {
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed.wrapping_add(29));
    train_tasks_sparse(
        cfg.pretrain.tasks,
        cfg.seed.wrapping_add(17),
        HouseholdConfig::of(cfg).train_object_share,
    )
    .into_iter()
    .map(|t| {
        if rng.gen::<f64>() < cfg.pretrain.hint_fraction {
            rla_env::household::perturb::apply(
                &t,
                &rla_env::household::perturb::Perturbation::AddHint,
                0,
            )
            .unwrap_or(t)
        } else {
            t
        }
    })
    .collect()
}
