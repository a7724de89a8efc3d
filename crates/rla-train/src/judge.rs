//! The generative reward model's side of every setting: its m answers to each prompt, their
//! `\boxed{±1}` verdicts, the judgements they become, how good they were against the oracle,
//! and the critique summary that guides a rewrite.

use crate::setting::{Generation, Group, JudgeQuality, JudgeReward, Judgement, Scored};
use anyhow::Result;
use indicatif::ProgressBar;
use rla_core::reward::StepScore;
use rla_lm::{SampleParams, Sampler};
use serde::{Deserialize, Serialize};

/// The content of the last `\boxed{…}` of an answer.
pub fn last_boxed(text: &str) -> Option<&str> {
    let start = text.rfind("\\boxed{")? + "\\boxed{".len();
    let end = text[start..].find('}')? + start;
    Some(text[start..end].trim())
}

/// The judge's verdict: `\boxed{1}` → +1, `\boxed{-1}` → −1, anything else unparsed (0).
pub fn parse_verdict(text: &str) -> StepScore {
    match last_boxed(text) {
        Some("1") | Some("+1") => StepScore::Positive,
        Some("-1") => StepScore::Negative,
        _ => StepScore::Unparsed,
    }
}

/// The reasoning part of an answer: the text before its last `\boxed{`.
pub fn reasoning(text: &str) -> &str {
    text.rfind("\\boxed{")
        .map(|i| text[..i].trim())
        .unwrap_or(text.trim())
}

/// Summarises the judge's reasoning on high-risk steps into at most two sentences: the most
/// frequent reasons, most frequent first.
pub fn summarise_critiques(reasons: &[String]) -> Option<String> {
    if reasons.is_empty() {
        return None;
    }
    let mut counts: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for r in reasons {
        let key = r.split(" which ").next().unwrap_or(r).trim().to_string();
        if !key.is_empty() {
            *counts.entry(key).or_default() += 1;
        }
    }
    let mut v: Vec<(String, usize)> = counts.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let top: Vec<String> = v
        .iter()
        .take(3)
        .map(|(k, c)| format!("{k} ({c}×)"))
        .collect();
    if top.is_empty() {
        return None;
    }
    Some(format!(
        "The failed attempts mostly {}. These steps made no progress toward the goal.",
        top.join(", ")
    ))
}

/// The m verdicts of the judge on one step.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Verdicts {
    /// The judge's prompt.
    pub prompt_ids: Vec<u32>,
    /// Its answers (token ids).
    pub responses: Vec<Vec<u32>>,
    /// `log π_old` of the answers' tokens.
    pub logprobs: Vec<Vec<f32>>,
    /// The answers' texts.
    pub texts: Vec<String>,
    /// The parsed verdicts S_ij.
    pub scores: Vec<StepScore>,
}

/// The judge's m answers to each prompt (`prompts[episode][step]`, token ids), parsed into
/// verdicts; prompts are sampled 64 at a time (each 64 with its own seed, two of them at once),
/// in episode then step order, and the m answers of a prompt share its prefill.
pub fn judge_prompts(
    reward: &dyn Sampler,
    prompts: &[Vec<Vec<u32>>],
    m: usize,
    sp: &SampleParams,
    bar: Option<&ProgressBar>,
) -> Result<Vec<Vec<Verdicts>>> {
    let flat: Vec<(usize, &Vec<u32>)> = prompts
        .iter()
        .enumerate()
        .flat_map(|(e, steps)| steps.iter().map(move |p| (e, p)))
        .collect();
    let mut out: Vec<Vec<Verdicts>> = prompts
        .iter()
        .map(|s| Vec::with_capacity(s.len()))
        .collect();
    let chunks: Vec<&[(usize, &Vec<u32>)]> = flat.chunks(64).collect();
    let gen = |c: usize| -> Result<Vec<Vec<rla_lm::Sample>>> {
        let p = SampleParams {
            seed: sp.seed.wrapping_add(c as u64 * 104_729),
            ..sp.clone()
        };
        let ids: Vec<Vec<u32>> = chunks[c].iter().map(|(_, p)| (*p).clone()).collect();
        let g = reward.generate(&ids, m, &p)?;
        if let Some(b) = bar {
            b.inc(chunks[c].len() as u64);
        }
        Ok(g)
    };
    // two chunks at a time: each has its own seed, so the verdicts are those of one at a time
    for pair in (0..chunks.len()).collect::<Vec<_>>().chunks(2) {
        let gens = match pair {
            [a, b] => std::thread::scope(|s| {
                let other = s.spawn(|| gen(*b));
                let first = gen(*a);
                let second = other
                    .join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a judging thread panicked")));
                (first, second)
            }),
            [a] => (gen(*a), Ok(vec![])),
            _ => (Ok(vec![]), Ok(vec![])),
        };
        let (first, second) = (gens.0?, gens.1?);
        for (&c, g) in pair.iter().zip([first, second]) {
            for ((e, prompt), g) in chunks[c].iter().zip(g) {
                out[*e].push(Verdicts {
                    prompt_ids: (*prompt).clone(),
                    scores: g.iter().map(|s| parse_verdict(&s.text)).collect(),
                    texts: g.iter().map(|s| s.text.clone()).collect(),
                    responses: g.iter().map(|s| s.tokens.clone()).collect(),
                    logprobs: g.into_iter().map(|s| s.logprobs).collect(),
                });
            }
        }
    }
    Ok(out)
}

/// Adds the judge's verdicts on each episode's steps to the groups, as consistency-rewarded
/// judgements: `episodes` gives each episode's task index and its steps' verdicts, in play order.
pub fn push_step_judgements<'a>(
    groups: &mut [Group],
    episodes: impl Iterator<Item = (usize, &'a [Verdicts])>,
) {
    let mut seen = vec![0usize; groups.len()];
    for (task, vs) in episodes {
        let e = seen[task];
        seen[task] += 1;
        for (i, v) in vs.iter().enumerate() {
            groups[task].judgements.push(Judgement {
                step: Some((e, i)),
                samples: v
                    .responses
                    .iter()
                    .zip(&v.logprobs)
                    .zip(&v.scores)
                    .map(|((r, l), &score)| Scored {
                        sample: Generation {
                            prompt: v.prompt_ids.clone(),
                            response: r.clone(),
                            logprobs: l.clone(),
                            choices: None,
                        },
                        score,
                    })
                    .collect(),
                reward: JudgeReward::Consistency,
            });
        }
    }
}

/// The judge's quality over judged steps, each given as (its episode won, the step's label, its
/// second label where it has one, its verdicts): μ and process accuracy against the labels,
/// process accuracy against the second labels (over the steps that have one), μ as the paper
/// defines it and outcome accuracy against the episodes' outcomes, precision A from the mean
/// verdicts of steps of won and lost episodes.
pub fn step_judge_quality<'a>(
    steps: impl Iterator<Item = (bool, bool, Option<bool>, &'a Verdicts)>,
) -> JudgeQuality {
    use rla_core::metrics::judge_accuracy;
    use rla_core::theory::{empirical_precision, Calibration};
    let mut cal = Calibration::default();
    let mut by_outcome = Calibration::default();
    let (mut pos_means, mut neg_means) = (vec![], vec![]);
    let (mut proc_pairs, mut planner_pairs, mut out_pairs) = (vec![], vec![], vec![]);
    for (won, progress, planner, v) in steps {
        for &sc in &v.scores {
            cal.observe(progress, sc);
            by_outcome.observe(won, sc);
            proc_pairs.push((sc, progress));
            if let Some(p) = planner {
                planner_pairs.push((sc, p));
            }
            out_pairs.push((sc, won));
        }
        let mean = v.scores.iter().map(|x| x.value()).sum::<f64>() / v.scores.len() as f64;
        if won {
            pos_means.push(mean)
        } else {
            neg_means.push(mean)
        }
    }
    JudgeQuality {
        calibration: cal,
        outcome_calibration: Some(by_outcome),
        precision: empirical_precision(&pos_means, &neg_means).map(|p| p.precision),
        process_acc: judge_accuracy(&proc_pairs),
        process_acc_planner: judge_accuracy(&planner_pairs),
        outcome_acc: judge_accuracy(&out_pairs),
        extra: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mu_is_measured_against_the_label_and_against_the_outcome() {
        let v = |scores: Vec<StepScore>| Verdicts {
            prompt_ids: vec![],
            responses: vec![],
            logprobs: vec![],
            texts: vec![],
            scores,
        };
        use StepScore::{Negative as N, Positive as P};
        // (won, the step's label, the planner's label, verdicts)
        let steps = [
            (true, false, Some(true), v(vec![P, P])),
            (true, true, Some(true), v(vec![P, N])),
            (false, true, Some(false), v(vec![N, P])),
            (false, false, None, v(vec![N, N])),
        ];
        let q = step_judge_quality(steps.iter().map(|(w, l, p, v)| (*w, *l, *p, v)));
        // by the outcome: +1 on 3 of the 4 verdicts on won steps, −1 on 3 of 4 on lost ones
        let by_outcome = q.outcome_calibration.unwrap();
        assert!((by_outcome.mu().unwrap() - 1.5).abs() < 1e-12);
        assert!((by_outcome.p_plus().unwrap() - 0.75).abs() < 1e-12);
        assert!((by_outcome.p_minus().unwrap() - 0.75).abs() < 1e-12);
        // by the label: +1 on 2 of the 4 verdicts on good steps, −1 on 2 of 4 on bad ones
        assert!((q.calibration.mu().unwrap() - 1.0).abs() < 1e-12);
        assert!((q.process_acc.unwrap() - 0.5).abs() < 1e-12);
        // by the planner's label, on the three steps that have one: 4 of 6 verdicts agree
        assert!((q.process_acc_planner.unwrap() - 4.0 / 6.0).abs() < 1e-12);
        // without a second label anywhere, no accuracy against it
        let q = step_judge_quality(steps.iter().map(|(w, l, _, v)| (*w, *l, None, v)));
        assert_eq!(q.process_acc_planner, None);
    }

    #[test]
    fn verdicts_parse_and_anything_else_is_zero() {
        assert_eq!(parse_verdict("good \\boxed{1}"), StepScore::Positive);
        assert_eq!(parse_verdict("bad \\boxed{-1}"), StepScore::Negative);
        assert_eq!(
            parse_verdict("\\boxed{-1} hmm \\boxed{1}"),
            StepScore::Positive
        );
        assert_eq!(parse_verdict("\\boxed{2}"), StepScore::Unparsed);
        assert_eq!(parse_verdict("maybe"), StepScore::Unparsed);
        assert_eq!(parse_verdict("\\boxed{1"), StepScore::Unparsed);
        assert_eq!(
            reasoning("went to shelf 1 which helps \\boxed{1}"),
            "went to shelf 1 which helps"
        );
    }

    #[test]
    fn critiques_summarise_in_two_sentences() {
        let r: Vec<String> = [
            "went to cabinet which does not help",
            "went to cabinet which does not help",
            "only looked which does not help",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let s = summarise_critiques(&r).unwrap();
        assert!(s.starts_with("The failed attempts mostly went to cabinet (2×), only looked (1×)."));
        assert_eq!(s.matches(". ").count() + 1, 2);
        assert!(summarise_critiques(&[]).is_none());
    }
}
