//! A coder (and optionally a test writer) evaluated on a problem file: greedy pass@1, pass@k
//! with the unbiased estimator over sampled programs, the test writer's unit-test accuracy and
//! detection rate, and best-of-N selection by the test writer's tests (the paper's agentic use
//! of the trained models). `rlanything code eval` prints what this returns.

use super::{generated_passes, ground_truth, programs_of};
use crate::play::ask;
use anyhow::Result;
use rla_core::coding::{all_pass, CodingMetrics, CodingTally};
use rla_core::selection::{best_of_n, consensus_of_n, pass_at_k, report_ks};
use rla_env::code::problems::{FileProblem, UnitTest};
use rla_env::code::sandbox::Sandbox;
use rla_lm::{SampleParams, Sampler};
use serde::Serialize;

/// What to measure.
#[derive(Debug, Clone)]
pub struct EvalOptions {
    /// Most new tokens per program (and per test writer answer).
    pub max_tokens: usize,
    /// Programs sampled per problem for pass@k (0: greedy pass@1 only; best of N samples N at
    /// least).
    pub samples: usize,
    /// Sampling temperature of sampled programs and tests.
    pub temperature: f64,
    /// Seed of the sampling.
    pub seed: u64,
    /// Test writer answers per problem (with a test writer).
    pub tests_per_problem: usize,
    /// Best of N: N candidate programs (the greedy one and N − 1 sampled) and N test writer
    /// answers per problem, the candidate passing the most generated tests chosen, a tie keeping
    /// the greedy program (needs a test writer).
    pub best_of_n: Option<usize>,
}

/// One problem's figures.
#[derive(Debug, Clone, Serialize)]
pub struct ProblemResult {
    /// The problem.
    pub id: String,
    /// Whether the greedy program passed every test.
    pub greedy: bool,
    /// Of the sampled programs, how many passed every test.
    pub sampled_correct: usize,
    /// Whether the best-of-N choice passed every test.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub best_of_n: Option<bool>,
    /// Whether the choice by agreement (the largest cluster of programs passing the same
    /// generated tests) passed every test.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consensus: Option<bool>,
}

/// The evaluation's figures.
#[derive(Debug, Clone, Serialize)]
pub struct CodeEvalReport {
    /// Problems evaluated.
    pub problems: usize,
    /// Greedy pass@1.
    pub pass_at_1_greedy: f64,
    /// pass@k of the sampled programs, (k, estimate).
    pub pass_at_k: Vec<(usize, f64)>,
    /// The test writer's unit-test accuracy and detection rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test_writer: Option<CodingMetrics>,
    /// Success of the best-of-N choice.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub best_of_n: Option<f64>,
    /// Success of the choice by agreement among the same N candidates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consensus: Option<f64>,
    /// Problem by problem.
    pub per_problem: Vec<ProblemResult>,
}

/// Evaluates `coder` (and `tester`, when given) on `problems`; `progress` is told after each
/// problem.
pub fn evaluate(
    coder: &dyn Sampler,
    tester: Option<&dyn Sampler>,
    sb: &Sandbox,
    problems: &[FileProblem],
    o: &EvalOptions,
    mut progress: impl FnMut(&ProblemResult),
) -> Result<CodeEvalReport> {
    if o.best_of_n.is_some() && tester.is_none() {
        anyhow::bail!("best-of-N chooses by the test writer's tests: name the test writer");
    }
    let sampled = o
        .samples
        .max(o.best_of_n.map_or(0, |n| n.saturating_sub(1)));
    let params = |tag: u64| SampleParams {
        temperature: o.temperature,
        seed: rla_core::seed::mix(o.seed, &format!("code-eval/{tag}")),
        ..SampleParams::greedy(o.max_tokens)
    };
    let mut tally = CodingTally::default();
    let mut results = Vec::with_capacity(problems.len());
    // a few problems per generation call keeps memory bounded for real models
    for (c, chunk) in problems.chunks(8).enumerate() {
        let texts: Vec<String> = chunk.iter().map(FileProblem::prompt).collect();
        let (_, greedy) = ask(coder, &texts, 1, &SampleParams::greedy(o.max_tokens))?;
        let samples = if sampled > 0 {
            ask(coder, &texts, sampled, &params(2 * c as u64))?.1
        } else {
            vec![vec![]; chunk.len()]
        };
        let tests = match tester {
            Some(t) if o.tests_per_problem.max(o.best_of_n.unwrap_or(0)) > 0 => {
                let texts: Vec<String> = chunk.iter().map(FileProblem::tester_prompt).collect();
                let m = o.tests_per_problem.max(o.best_of_n.unwrap_or(0));
                Some(ask(t, &texts, m, &params(2 * c as u64 + 1))?.1)
            }
            _ => None,
        };
        for (i, p) in chunk.iter().enumerate() {
            let greedy_ok = all_pass(&ground_truth(sb, p, &programs_of(p, &greedy[i]))?)[0];
            let programs = programs_of(p, &samples[i]);
            let correct = all_pass(&ground_truth(sb, p, &programs)?);
            let mut best = None;
            let mut agreed = None;
            if let Some(tests) = &tests {
                let answers = &tests[i];
                // the test writer's accuracy: one test per answer, over the sampled programs and
                // the reference solution when the problem carries one
                let m = o.tests_per_problem.min(answers.len());
                let mut judged = programs.clone();
                let mut judged_correct = correct.clone();
                if let Some(sol) = &p.solution {
                    judged.push(reference_program(p, sol));
                    judged_correct.push(true);
                }
                if m > 0 && !judged.is_empty() {
                    let firsts = super::tests_of(p, &answers[..m]);
                    let gen = generated_passes(sb, p, &judged, &firsts)?;
                    tally.add(&judged_correct, &gen);
                }
                if let Some(n) = o.best_of_n {
                    // N candidates: the greedy program, then N − 1 sampled ones; every test of
                    // N test writer answers judges them, and a tie keeps the greedy program
                    let all: Vec<Option<UnitTest>> = answers[..n.min(answers.len())]
                        .iter()
                        .flat_map(|a| p.parse_generated(&a.text))
                        .collect();
                    let mut cands = programs_of(p, &greedy[i]);
                    cands.extend(programs[..(n - 1).min(programs.len())].iter().cloned());
                    let mut cand_correct = vec![greedy_ok];
                    cand_correct.extend(&correct[..cands.len() - 1]);
                    let passes = generated_passes(sb, p, &cands, &all)?;
                    best = best_of_n(cands.len(), &passes).map(|b| cand_correct[b]);
                    agreed = consensus_of_n(cands.len(), &passes).map(|b| cand_correct[b]);
                }
            }
            let r = ProblemResult {
                id: p.id.clone(),
                greedy: greedy_ok,
                sampled_correct: correct.iter().filter(|&&c| c).count(),
                best_of_n: best,
                consensus: agreed,
            };
            progress(&r);
            results.push(r);
        }
    }
    let n = results.len().max(1) as f64;
    let pass_at_k = if sampled > 0 {
        report_ks(sampled)
            .into_iter()
            .map(|k| {
                let mean = results
                    .iter()
                    .map(|r| pass_at_k(sampled, r.sampled_correct, k).unwrap_or(0.0))
                    .sum::<f64>()
                    / n;
                (k, mean)
            })
            .collect()
    } else {
        vec![]
    };
    Ok(CodeEvalReport {
        problems: results.len(),
        pass_at_1_greedy: results.iter().filter(|r| r.greedy).count() as f64 / n,
        pass_at_k,
        test_writer: (tester.is_some() && o.tests_per_problem > 0).then(|| tally.metrics()),
        best_of_n: o
            .best_of_n
            .map(|_| results.iter().filter(|r| r.best_of_n == Some(true)).count() as f64 / n),
        consensus: o
            .best_of_n
            .map(|_| results.iter().filter(|r| r.consensus == Some(true)).count() as f64 / n),
        per_problem: results,
    })
}

/// A problem's reference solution as a program (a completion problem's follows its prompt).
fn reference_program(p: &FileProblem, solution: &str) -> String {
    match &p.checks {
        rla_env::code::problems::Checks::Completion { prompt, .. } => format!("{prompt}{solution}"),
        _ => solution.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rla_env::code::problems::Checks;
    use rla_env::code::TestCase;

    /// Answers by prompt: the first entry whose marker the prompt holds; sample j of a call is
    /// its answer j (cycling).
    struct Table(Vec<(&'static str, Vec<&'static str>)>);

    impl rla_lm::Codec for Table {
        fn encode(&self, t: &str) -> rla_lm::Result<Vec<u32>> {
            Ok(t.chars().map(u32::from).collect())
        }
        fn decode(&self, ids: &[u32]) -> rla_lm::Result<String> {
            Ok(ids.iter().filter_map(|&c| char::from_u32(c)).collect())
        }
        fn eos_ids(&self) -> &[u32] {
            &[0]
        }
        fn chat_template(&self, _: &[rla_lm::Message], _: bool) -> rla_lm::Result<Option<String>> {
            Ok(None)
        }
    }

    impl Sampler for Table {
        fn sample(&self, r: &rla_lm::Request) -> rla_lm::Result<Vec<Vec<rla_lm::Sample>>> {
            r.prompts
                .iter()
                .map(|p| {
                    let text = rla_lm::Codec::decode(self, p)?;
                    let (_, answers) = self
                        .0
                        .iter()
                        .find(|(m, _)| text.contains(m))
                        .expect("a scripted prompt");
                    Ok((0..r.n)
                        .map(|j| {
                            let a = answers[j % answers.len()];
                            rla_lm::Sample {
                                tokens: a.chars().map(u32::from).collect(),
                                logprobs: vec![-1.0; a.chars().count()],
                                text: a.to_string(),
                                finish: rla_lm::Finish::Eos,
                            }
                        })
                        .collect())
                })
                .collect()
        }
        fn score(&self, _: &[(Vec<u32>, Vec<u32>)]) -> rla_lm::Result<Vec<Vec<f32>>> {
            Err(rla_lm::LmError::Unsupported("scripted".into()))
        }
    }

    fn doubling(id: &str) -> FileProblem {
        let t = |i: &str, o: &str| TestCase {
            input: i.into(),
            output: o.into(),
        };
        FileProblem {
            id: id.into(),
            statement: format!("[{id}] Print twice the number read."),
            checks: Checks::Stdio {
                tests: vec![t("2", "4"), t("5", "10"), t("7", "14")],
            },
            time_limit: None,
            solution: Some("print(int(input()) * 2)".into()),
        }
    }

    const PROGRAMS: [&str; 4] = [
        "```python\nprint(0)\n```",
        "```python\nprint(int(input()) * 2)\n```",
        "```python\nprint(int(input()) + 2)\n```",
        "```python\nprint(4)\n```",
    ];

    fn test_of(i: &str, o: &str) -> String {
        format!("**Test Input:**\n```\n{i}\n```\n**Test Output:**\n```\n{o}\n```\n")
    }

    #[test]
    fn best_of_n_picks_the_program_the_generated_tests_favour() {
        let sb = Sandbox::with_limits(Default::default()).unwrap();
        // on problem a the test writer's tests are right (3 → 6, 2 → 4): the doubling program
        // passes both and is chosen; on problem b they are wrong (3 → 5, 1 → 3): the adding
        // program passes both and is chosen, and fails the problem's own tests
        let right: &'static str =
            Box::leak((test_of("3", "6") + &test_of("2", "4")).into_boxed_str());
        let wrong: &'static str =
            Box::leak((test_of("3", "5") + &test_of("1", "3")).into_boxed_str());
        let tester = Table(vec![
            (
                "[a] Print twice the number read.\n\nWrite unit tests",
                vec![right],
            ),
            (
                "[b] Print twice the number read.\n\nWrite unit tests",
                vec![wrong],
            ),
        ]);
        let coder = Table(vec![("Print twice", PROGRAMS.to_vec())]);
        let problems = vec![doubling("a"), doubling("b")];
        let o = EvalOptions {
            max_tokens: 64,
            samples: 4,
            temperature: 1.0,
            seed: 0,
            tests_per_problem: 1,
            best_of_n: Some(4),
        };
        let mut seen = vec![];
        let r = evaluate(&coder, Some(&tester), &sb, &problems, &o, |p| {
            seen.push(p.id.clone())
        })
        .unwrap();
        assert_eq!(seen, ["a", "b"]);
        // the greedy answer (the first) prints 0
        assert_eq!(r.pass_at_1_greedy, 0.0);
        // one of four sampled programs is right on each problem
        assert_eq!(r.pass_at_k[0], (1, 0.25));
        assert_eq!(r.pass_at_k.last().unwrap(), &(4, 1.0));
        assert_eq!(r.per_problem[0].best_of_n, Some(true));
        assert_eq!(r.per_problem[1].best_of_n, Some(false));
        assert_eq!(r.best_of_n, Some(0.5));
        // by agreement: the greedy program and the first sample both print 0, so they behave
        // alike on every generated test and form the largest cluster, wrong on both problems
        assert_eq!(r.per_problem[0].consensus, Some(false));
        assert_eq!(r.consensus, Some(0.0));
        // the test writer: problem a's test (3 → 6) is correct, b's (3 → 5) is not; the
        // reference solution joins the judged programs
        let m = r.test_writer.unwrap();
        assert_eq!(m.tests, 2);
        assert!((m.test_accuracy - 0.5).abs() < 1e-9, "{m:?}");
        // without a test writer best-of-N is refused
        assert!(evaluate(&coder, None, &sb, &problems, &o, |_| {}).is_err());
    }
}
