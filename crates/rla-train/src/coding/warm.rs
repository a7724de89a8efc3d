//! The coding setting's warm start: the coder fitted on reference solutions and the test writer
//! on tests, both tiny models trained from scratch.

use super::eval_problems;
use crate::pretrain::{example_corpus, fit_both, Example, WarmStart, CHAT_MARKERS};
use crate::setting::Split;
use anyhow::Result;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rla_env::code::family::{generate, ArithSpec};
use rla_env::code::{coder_prompt, format_tests, tester_prompt, TestCase};

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

/// Warm starts for the coding setting: a word-level tokenizer over the family's text (every
/// integer the tests can print included), the coder fitted on reference solutions (a `noise`
/// share of them with one operation dropped) and the test writer on one test per answer (a
/// `noise` share with a wrong output).
pub fn pretrain(w: WarmStart) -> Result<Vec<String>> {
    let cfg = w.cfg;
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed.wrapping_add(31));
    let specs = generate(
        cfg.pretrain.tasks,
        cfg.coding.max_ops,
        cfg.seed.wrapping_add(17),
    );
    let noise = cfg.pretrain.noise;
    let mut coder: Vec<Example> = Vec::new();
    let mut tester: Vec<Example> = Vec::new();
    for s in &specs {
        let shown = if rng.gen::<f64>() < noise && s.ops.len() > 1 {
            ArithSpec {
                ops: s.ops[..s.ops.len() - 1].to_vec(),
                seed: s.seed,
            }
        } else {
            s.clone()
        };
        coder.push((
            coder_prompt(&s.statement()),
            format!("```python\n{}```", shown.solution()),
        ));
        for t in s.tests(2) {
            tester.push((
                tester_prompt(&s.statement()),
                format_tests(&[noisy_test(&t, noise, &mut rng)]),
            ));
        }
    }
    let mut corpus = example_corpus(coder.iter().chain(tester.iter()));
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
    fit_both(w, &corpus, (&coder, &tester))
}
