//! DAgger for the desktop's policy: the fitted policy plays fresh training tasks greedily, the
//! expert (which reads the workbook as it is) labels every state it reached, and SFT goes on over
//! the demonstrations and the labels (`pretrain.dagger_rounds`; the rounds are
//! [`crate::dagger::dagger`]'s).

use super::play::{open, rollout};
use super::probe::{desktop_probe, training_specs};
use super::prompts::{policy_answer, policy_prompt, previous_actions};
use crate::config::RunConfig;
use crate::config::SettingConfig;
use crate::desktop::config::DesktopConfig;
use crate::play::Trajectory;
use crate::pretrain::{Demo, Example, WarmStart};
use anyhow::{Context, Result};
use indicatif::ProgressBar;
use rla_desktop::play::tiny;
use rla_desktop::tasks::expert;
use rla_desktop::tasks::family::Spec;
use rla_lm::{Model, SampleParams};

/// DAgger's labels: the expert's action at the states of the policy's own episodes. Each
/// episode is played again on its task's desktop, the prompt the policy saw rebuilt as the play
/// loop builds it (the instruction, the last `desktop.history` actions, the compact screen), and
/// the expert names the action it would take there. Each action the expert names is kept once an
/// episode, at the first state it names it (an agent stuck on one step would otherwise fill the
/// labels with that step).
pub fn expert_labels(tasks: &[Spec], trajs: &[Trajectory], cfg: &RunConfig) -> Result<Vec<Demo>> {
    let mut out = Vec::new();
    for tr in trajs {
        let t = tasks
            .get(tr.task)
            .with_context(|| format!("an episode of task {}, of {}", tr.task, tasks.len()))?;
        let mut ep = open(t, cfg)?;
        let instruction = ep.task.task.instruction.clone();
        let mut actions: Vec<String> = Vec::new();
        let mut named: Vec<String> = Vec::new();
        for s in &tr.steps {
            if ep.finished.is_some() {
                break;
            }
            let nodes = ep.tree(tiny::TREE);
            let cands = tiny::candidates(&ep.desktop, &nodes, &instruction);
            let code = expert::next(&ep);
            // the expert needs an action the vocabulary does not have: nothing to teach
            let Some(best) = tiny::from_code(&code, &ep.desktop, &nodes, &instruction) else {
                break;
            };
            if !named.contains(&best) {
                let obs = tiny::observation(&ep.desktop, &nodes, DesktopConfig::of(cfg).summary());
                let prev = previous_actions(&actions, DesktopConfig::of(cfg).history);
                out.push(Demo {
                    prompt: policy_prompt(&instruction, &prev, &obs),
                    answer: policy_answer(&best),
                    choices: cands.clone(),
                    task: tr.task,
                });
                named.push(best);
            }
            // the agent's step, as the play loop ran it
            if !cands.contains(&s.action) {
                ep.steps += 1;
            } else if let Some(code) = tiny::to_code(&s.action, &ep.desktop, &nodes) {
                ep.step_code(&code, &nodes);
            }
            actions.push(s.action.clone());
        }
    }
    Ok(out)
}

/// `pretrain.dagger_rounds` rounds of DAgger on the fitted desktop policy (`out/policy`), each
/// on `pretrain.dagger_tasks` fresh training tasks drawn as the base's are.
pub(super) fn dagger(w: WarmStart, demos: &[Example], held: &[Demo]) -> Result<String> {
    let cfg = w.cfg;
    let limit = DesktopConfig::of(cfg).train_step_limit;
    let tasks = |round: usize| {
        let seed = rla_core::seed::mix(cfg.seed, &format!("desktop/dagger/{round}"));
        training_specs(cfg, cfg.pretrain.dagger_tasks, seed)
    };
    let play = |lm: &dyn Model, tasks: &[Spec], sp: &SampleParams, bar: Option<&ProgressBar>| {
        rollout(lm, cfg, tasks, 1, limit, sp, false, bar)
    };
    let label = |tasks: &[Spec], trajs: &[Trajectory]| expert_labels(tasks, trajs, cfg);
    let mistakes = w.out.join("mistakes-policy.txt");
    let probe = || desktop_probe(cfg, held, cfg.pretrain.validation, Some(mistakes.clone()));
    crate::dagger::dagger(
        w,
        crate::dagger::Rounds {
            demos,
            tasks: &tasks,
            step_limit: limit,
            play: &play,
            label: &label,
            probe: &probe,
            files: vec![],
        },
    )
}

/// The SFT control's DAgger labels ([`crate::setting::Setting::own_state_labels`]): the policy
/// plays `n` fresh training tasks greedily, drawn as DAgger's rounds draw theirs from a seed of
/// the chunk's own, and the expert labels the states it reached ([`expert_labels`]).
pub fn control_labels(
    cfg: &RunConfig,
    policy: &dyn rla_lm::Sampler,
    chunk: u64,
    n: usize,
) -> Result<Vec<Example>> {
    let limit = DesktopConfig::of(cfg).train_step_limit;
    let seed = rla_core::seed::mix(cfg.seed, &format!("desktop/sft-control/labels/{chunk}"));
    let tasks = training_specs(cfg, n, seed);
    let sp = SampleParams::greedy(cfg.policy.max_new_tokens);
    let trajs = rollout(policy, cfg, &tasks, 1, limit, &sp, false, None)?;
    Ok(expert_labels(&tasks, &trajs, cfg)?
        .into_iter()
        .map(|d| (d.prompt, d.answer))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pretrain::{candle_warm_start, tiny_test_config};

    fn desktop_config() -> RunConfig {
        let mut cfg = tiny_test_config();
        cfg.set_table("desktop", DesktopConfig::default());
        DesktopConfig::of_mut(&mut cfg).train_step_limit = 6;
        cfg.pretrain.tasks = 4;
        cfg.pretrain.held_out = 1;
        cfg
    }

    #[test]
    fn dagger_labels_the_states_the_policy_reached_with_the_experts_actions() {
        let cfg = desktop_config();
        let dir = tempfile::tempdir().unwrap();
        super::super::warm::warm_start(candle_warm_start(&cfg, dir.path())).unwrap();
        let lm = rla_lm::Backend::open(
            &rla_model::Candle,
            &dir.path().join("policy"),
            &Default::default(),
        )
        .unwrap();
        let tasks = training_specs(&cfg, 3, 11);
        let sp = SampleParams::greedy(cfg.policy.max_new_tokens);
        let trajs = rollout(&*lm, &cfg, &tasks, 1, 6, &sp, false, None).unwrap();
        let labels = expert_labels(&tasks, &trajs, &cfg).unwrap();
        crate::dagger::check_labels(&*lm, &labels, &trajs, |d| {
            let act = d.answer.trim_start_matches("Action: ").to_string();
            assert!(d.choices.contains(&act), "{act} among {:?}", d.choices);
            act
        });
        // an episode of another task list is refused by name
        let e = expert_labels(&tasks[..1], &trajs, &cfg).unwrap_err();
        assert!(format!("{e:#}").contains("an episode of task"), "{e:#}");
    }

    #[test]
    fn dagger_goes_on_from_a_base_and_extends_its_curve() {
        let mut cfg = desktop_config();
        cfg.pretrain.validation = 1;
        DesktopConfig::of_mut(&mut cfg).eval_step_limit = 2;
        let base = tempfile::tempdir().unwrap();
        super::super::warm::warm_start(candle_warm_start(&cfg, base.path())).unwrap();
        cfg.policy.path = Some(base.path().join("policy"));
        cfg.reward.path = Some(base.path().join("reward"));
        cfg.pretrain.dagger_rounds = 1;
        cfg.pretrain.dagger_tasks = 2;
        cfg.pretrain.dagger_steps = 2;
        cfg.validate().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let lines = super::super::warm::warm_start(candle_warm_start(&cfg, dir.path())).unwrap();
        assert!(lines[0].ends_with("(not fitted again)"), "{lines:?}");
        assert!(
            lines[1].starts_with("policy, DAgger: 1 rounds of 2 tasks"),
            "{lines:?}"
        );
        let read = |d: &std::path::Path, f: &str| std::fs::read(d.join(f)).unwrap();
        // the judge is the base's, byte for byte; the policy learnt from the labels
        let f = "reward/model.safetensors";
        assert_eq!(read(base.path(), f), read(dir.path(), f));
        let f = "policy/model.safetensors";
        assert_ne!(read(base.path(), f), read(dir.path(), f));
        // the base's curve goes on with the round, measured as the base was
        let curve = String::from_utf8(read(dir.path(), "curve-policy.jsonl")).unwrap();
        let points: Vec<serde_json::Value> = curve
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        // (the base's one point, at its last step, and the round's)
        assert_eq!(points.len(), 2, "{curve}");
        assert_eq!(points[0]["step"], cfg.pretrain.policy_steps, "{curve}");
        let last = points.last().unwrap();
        assert_eq!(last["dagger_round"], 1, "{last}");
        assert_eq!(last["step"], cfg.pretrain.policy_steps + 2, "{last}");
        assert!(last["held_out_action_acc"].as_f64().is_some(), "{last}");
        assert!(last["validation_success"].as_f64().is_some(), "{last}");
        // a config that gives the desktop's DAgger another screen than the compact one is refused
        DesktopConfig::of_mut(&mut cfg).observation =
            crate::desktop::config::DesktopObservation::A11yTree;
        assert!(cfg.validate().unwrap_err().contains("compact"));
    }
}
