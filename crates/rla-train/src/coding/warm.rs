//! The coding setting's warm start: the coder fitted on reference solutions and the test writer
//! on tests, both tiny models trained from scratch on generated training problems that share no
//! operation chain with the fixed splits, the coder measured as it learns.

use super::{eval_problems, greedy_passes};
use crate::coding::config::CodingConfig;
use crate::config::RunConfig;
use crate::config::SettingConfig;
use crate::pretrain::{
    encode_pairs, example_corpus, fit_tiny, CurvePoint, Example, Fit, Probe, WarmStart,
    CHAT_MARKERS,
};
use crate::setting::Split;
use anyhow::Result;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rla_env::code::family::{generate, ArithSpec, Op};
use rla_env::code::sandbox::Sandbox;
use rla_env::code::{coder_prompt, format_tests, parse_tests, tester_prompt, TestCase};
use rla_lm::{Model, SampleParams};
use std::collections::HashSet;

/// The test writer's target for one test: its input, and (with probability `noise`) a wrong
/// output, so the warm-started writer is imperfect.
fn noisy_test(t: &TestCase, noise: f64, rng: &mut ChaCha8Rng) -> TestCase {
    if rng.gen::<f64>() < noise {
        let v: i64 = t.output.trim().parse().unwrap_or(0);
        TestCase {
            input: t.input.clone(),
            output: format!("{}\n", v + rng.gen_range(1..=3)),
        }
    } else {
        t.clone()
    }
}

/// The operation chains of the problems the config evaluates (the first `eval.in_domain`,
/// `eval.ood` and `eval.validation` of the fixed splits, and the validation problems the
/// training curve plays): no training problem of a warm start has one of them.
pub fn evaluation_chains(cfg: &RunConfig) -> HashSet<Vec<Op>> {
    [
        (Split::InDomain, cfg.eval.in_domain),
        (Split::Ood, cfg.eval.ood),
        (
            Split::Validation,
            cfg.eval.validation.max(cfg.pretrain.validation),
        ),
    ]
    .into_iter()
    .flat_map(|(split, n)| eval_problems(cfg, split, n))
    .map(|s| s.ops)
    .collect()
}

/// `n` generated training problems (1 to `coding.max_ops` operations, seeded by `seed`), none
/// sharing its chain of operations with a problem the config evaluates. Most one-operation
/// chains are among those, so training problems are mostly longer ones.
pub fn training_problems(cfg: &RunConfig, n: usize, seed: u64) -> Result<Vec<ArithSpec>> {
    let held = evaluation_chains(cfg);
    let mut out = Vec::with_capacity(n);
    for round in 0..64u64 {
        let batch = generate(
            n.max(64),
            CodingConfig::of(cfg).max_ops,
            seed.wrapping_add(round << 32),
        );
        out.extend(
            batch
                .into_iter()
                .filter(|s| !held.contains(&s.ops))
                .take(n - out.len()),
        );
        if out.len() == n {
            return Ok(out);
        }
    }
    anyhow::bail!(
        "coding.max_ops = {}: too few operation chains are left outside the {} the evaluation \
         splits use to draw {n} training problems",
        CodingConfig::of(cfg).max_ops,
        held.len()
    )
}

/// Whether a generated test's output is what the problem's reference computes for its input.
fn test_right(spec: &ArithSpec, t: &TestCase) -> bool {
    let x: Option<i64> = t.input.trim().parse().ok();
    let y: Option<i64> = t.output.trim().parse().ok();
    matches!((x.and_then(|x| spec.eval(x)), y), (Some(a), Some(b)) if a == b)
}

/// The test writer's greedy test for each problem, and whether it is right (its output is what
/// the reference computes for its input; an unparseable test is wrong).
pub fn tester_accuracy(lm: &dyn Model, specs: &[ArithSpec], max_new_tokens: usize) -> Result<f64> {
    if specs.is_empty() {
        return Ok(0.0);
    }
    let prompts: Vec<Vec<u32>> = specs
        .iter()
        .map(|s| crate::play::encode_prompt(lm, &tester_prompt(&s.statement())))
        .collect::<Result<_>>()?;
    let out = lm.generate(&prompts, 1, &SampleParams::greedy(max_new_tokens))?;
    let right = specs
        .iter()
        .zip(&out)
        .filter(|(s, o)| {
            o.first()
                .and_then(|x| parse_tests(&x.text).into_iter().next().flatten())
                .is_some_and(|t| test_right(s, &t))
        })
        .count();
    Ok(right as f64 / specs.len() as f64)
}

/// Measures the coder on the held-out problems' reference solutions (mean SFT loss) and, with
/// `validation > 0`, its greedy code accuracy on that many validation problems (every
/// ground-truth test passed in the sandbox), as the runs evaluate it.
fn coder_probe<'a>(cfg: &'a RunConfig, held_out: &'a [Example], validation: usize) -> Probe<'a> {
    Box::new(move |lm: &dyn Model| {
        let mut point = CurvePoint::new();
        if !held_out.is_empty() {
            let pairs = encode_pairs(lm, held_out)?;
            point.insert("held_out_loss".into(), lm.sft_loss(&pairs)?.into());
        }
        if validation > 0 {
            let sb = Sandbox::with_limits(CodingConfig::of(cfg).limits.clone())?;
            let problems = super::eval_set(cfg, Split::Validation, validation)?;
            let ok = greedy_passes(lm, &sb, &problems, cfg.policy.max_new_tokens)?;
            let rate = ok.iter().filter(|&&o| o).count() as f64 / ok.len().max(1) as f64;
            point.insert("validation_success".into(), rate.into());
        }
        Ok(point)
    })
}

/// Warm starts for the coding setting: a word-level tokenizer over the family's text (every
/// integer the tests can print included), the coder fitted on reference solutions (a `noise`
/// share of them with one operation dropped) and the test writer on one test per answer (a
/// `noise` share with a wrong output), on training problems that share no chain of operations
/// with the evaluated ones. The last `pretrain.held_out` problems measure the coder (with
/// `pretrain.validation` validation problems, every `pretrain.eval_every` steps); the test
/// writer is measured by its greedy tests' accuracy on the validation problems.
pub fn warm_start(w: WarmStart) -> Result<Vec<String>> {
    let cfg = w.cfg;
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed.wrapping_add(31));
    let specs = training_problems(cfg, cfg.pretrain.tasks, cfg.seed.wrapping_add(17))?;
    let noise = cfg.pretrain.noise;
    let cut = specs.len() - cfg.pretrain.held_out.min(specs.len());
    let (mut coder, mut held): (Vec<Example>, Vec<Example>) = (Vec::new(), Vec::new());
    let mut tester: Vec<Example> = Vec::new();
    for (i, s) in specs.iter().enumerate() {
        let reference = (
            coder_prompt(&s.statement()),
            format!("```python\n{}```", s.solution()),
        );
        if i >= cut {
            held.push(reference);
            continue;
        }
        let shown = if rng.gen::<f64>() < noise && s.ops.len() > 1 {
            ArithSpec {
                ops: s.ops[..s.ops.len() - 1].to_vec(),
                seed: s.seed,
            }
        } else {
            s.clone()
        };
        coder.push((reference.0, format!("```python\n{}```", shown.solution())));
        for t in s.tests(2) {
            tester.push((
                tester_prompt(&s.statement()),
                format_tests(&[noisy_test(&t, noise, &mut rng)]),
            ));
        }
    }
    let mut corpus = example_corpus(coder.iter().chain(tester.iter()).chain(held.iter()));
    // Every statement the evaluation and rewrites can produce is built from the same words; the
    // numbers are listed so that any test output has a token.
    for split in [Split::InDomain, Split::Ood] {
        for s in eval_problems(cfg, split, 64) {
            corpus.push_str(&coder_prompt(&s.statement()));
            corpus.push('\n');
            corpus.push_str(&s.solution());
        }
    }
    for v in -1100..=1100 {
        corpus.push_str(&format!("{v}\n {v}\n"));
    }
    corpus.push_str(CHAT_MARKERS);
    let validation = cfg.pretrain.validation;
    let probe = (!held.is_empty() || validation > 0)
        .then(|| (cfg.pretrain.eval_every, coder_probe(cfg, &held, validation)));
    let mut lines = vec![fit_tiny(
        w,
        Fit {
            name: "policy",
            spec: &cfg.policy,
            corpus: &corpus,
            data: &coder,
            steps: cfg.pretrain.policy_steps,
            files: vec![],
            probe,
        },
    )?];
    lines.push(fit_tiny(
        w,
        Fit {
            name: "reward",
            spec: &cfg.reward,
            corpus: &corpus,
            data: &tester,
            steps: cfg.pretrain.reward_steps,
            files: vec![],
            probe: None,
        },
    )?);
    if validation > 0 {
        let reward = w.backend.open(&w.out.join("reward"), &Default::default())?;
        let specs = eval_problems(cfg, Split::Validation, validation);
        let acc = tester_accuracy(&*reward, &specs, cfg.reward.max_new_tokens)?;
        lines.push(format!(
            "reward, one greedy test for each of the first {validation} validation problems: \
             {:.1}% right (the output the reference computes for its input)",
            100.0 * acc
        ));
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn training_problems_share_no_chain_with_the_evaluated_ones() {
        let mut cfg = RunConfig::with_table("coding", CodingConfig::default());
        CodingConfig::of_mut(&mut cfg).max_ops = 3;
        cfg.eval.in_domain = 200;
        cfg.eval.ood = 100;
        cfg.pretrain.validation = 60;
        let held = evaluation_chains(&cfg);
        let train = training_problems(&cfg, 3000, 17).unwrap();
        assert_eq!(train.len(), 3000);
        assert!(train.iter().all(|s| !held.contains(&s.ops)));
        // the filter is what keeps them apart: the same draw unfiltered meets the splits
        let raw = generate(3000, 3, 17);
        assert!(raw.iter().any(|s| held.contains(&s.ops)));
        // every validation problem the curve plays is among the held chains
        for s in eval_problems(&cfg, Split::Validation, 60) {
            assert!(held.contains(&s.ops));
        }
        // a family too small to leave anything outside the splits is refused, by name
        CodingConfig::of_mut(&mut cfg).max_ops = 1;
        let e = training_problems(&cfg, 10, 17).unwrap_err().to_string();
        assert!(e.contains("coding.max_ops = 1"), "{e}");
    }

    #[test]
    fn a_test_is_right_when_its_output_is_the_references() {
        let s = ArithSpec {
            ops: vec![Op::Add(3), Op::Mul(2)],
            seed: 1,
        };
        let t = |i: &str, o: &str| TestCase {
            input: i.into(),
            output: o.into(),
        };
        assert!(test_right(&s, &t("1\n", "8\n")));
        assert!(!test_right(&s, &t("1\n", "7\n")));
        assert!(!test_right(&s, &t("x\n", "8\n")));
    }
}
