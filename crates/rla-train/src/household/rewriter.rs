//! Rewriters and summarisers behind one interface each: a language model prompted as the
//! reference implementation prompts its environment model, or the structured household rewriter
//! that maps critiques to perturbations. A harder rewrite is one of the rewrites that stay harder
//! ([`rla_env::household::harder`]) where one applies: the structured rewriter's choice, and the
//! language model's when its answer gives no valid task.

use crate::judge::summarise_critiques;
use rla_core::adapt::Direction;
use rla_env::household::harder::harder;
use rla_env::household::perturb::{apply, proposals, retarget, Perturbation};
use rla_env::household::task::{layout, placeable_objects};
use rla_env::household::TaskSpec;
use rla_lm::{SampleParams, Sampler};

/// Proposes a harder or easier variant of a task.
pub trait Rewriter {
    /// A rewrite (with a description of what changed), or `None` if none is valid.
    fn rewrite(
        &self,
        parent: &TaskSpec,
        dir: Direction,
        critique: Option<&str>,
        k: usize,
    ) -> Option<(String, TaskSpec)>;
}

/// Summarises the judge's reasoning on high-risk steps into at most two sentences.
pub trait Summariser {
    /// The summary, or `None` when there is nothing to summarise.
    fn summarise(&self, reasons: &[String]) -> Option<String>;
}

/// The household's structured rewriter (see [`structured_rewrite`]).
pub struct Structured {
    /// Seeds the choice among the harder rewrites that apply.
    pub seed: u64,
}

impl Rewriter for Structured {
    fn rewrite(
        &self,
        parent: &TaskSpec,
        dir: Direction,
        critique: Option<&str>,
        k: usize,
    ) -> Option<(String, TaskSpec)> {
        structured_rewrite(parent, dir, critique, self.seed, k).map(|(p, t)| (p.describe(), t))
    }
}

/// Counts the judge's reasons and names the most frequent.
pub struct Phrases;

impl Summariser for Phrases {
    fn summarise(&self, reasons: &[String]) -> Option<String> {
        summarise_critiques(reasons)
    }
}

/// The two goal tokens of the reference's household rewriter, `\boxed{OBJECT,RECEPTACLE}`.
pub fn parse_goal_tokens(text: &str) -> Option<(String, String)> {
    let start = text.rfind("\\boxed{")? + "\\boxed{".len();
    let end = text[start..].find('}')? + start;
    let (a, b) = text[start..end].split_once(',')?;
    let clean = |s: &str| s.trim().trim_end_matches("Type").to_string();
    let (a, b) = (clean(a), clean(b));
    (!a.is_empty() && !b.is_empty()).then_some((a, b))
}

/// A language model as rewriter and summariser.
pub struct LmRewriter<'a> {
    /// The model.
    pub lm: &'a dyn Sampler,
    /// Sampling.
    pub params: SampleParams,
}

impl LmRewriter<'_> {
    fn ask(&self, prompt: &str) -> Option<String> {
        crate::play::ask_one(self.lm, prompt, &self.params).ok()
    }
}

impl Rewriter for LmRewriter<'_> {
    /// The model's answer as a task; a harder rewrite whose answer gives none (unreadable, or
    /// a task the expert check refuses) is one of the rewrites that stay harder.
    fn rewrite(
        &self,
        parent: &TaskSpec,
        dir: Direction,
        critique: Option<&str>,
        k: usize,
    ) -> Option<(String, TaskSpec)> {
        self.answer(parent, dir, critique, k).or_else(|| {
            (dir == Direction::Harder)
                .then(|| harder(parent, self.params.seed, k))
                .flatten()
                .map(|(p, t)| (p.describe(), t))
        })
    }
}

impl LmRewriter<'_> {
    /// The model's own rewrite: two goal tokens, the task retargeted to them.
    fn answer(
        &self,
        parent: &TaskSpec,
        dir: Direction,
        critique: Option<&str>,
        k: usize,
    ) -> Option<(String, TaskSpec)> {
        let objects = placeable_objects(parent.floor_plan, None);
        let receps: Vec<String> = layout(parent.floor_plan)
            .into_iter()
            .map(|(r, _)| r)
            .collect();
        let want = if dir == Direction::Harder {
            "harder"
        } else {
            "easier"
        };
        let prompt = format!(
            "A household task is too {} for the agent: \"{}\".\nMistakes seen: {}\nPropose a {want} task of the same kind by changing its object and receptacle. Harder tasks use objects and receptacles with fewer instances; easier ones with more. Objects here: {}. Receptacles here: {}.\nAnswer with \\boxed{{OBJECT,RECEPTACLE}}.",
            if dir == Direction::Harder { "easy" } else { "hard" },
            parent.sentence(),
            critique.unwrap_or("none recorded."),
            objects.join(", "),
            receps.join(", ")
        );
        let answer = self.ask(&prompt)?;
        let (o, r) = parse_goal_tokens(&answer)?;
        let mut task = retarget(parent, &o, &r, k).ok()?;
        if dir == Direction::Easier && task.hint.is_none() {
            // the reference adds hints to easier tasks
            task = apply(&task, &Perturbation::AddHint, k).ok().map(|mut t| {
                t.id = task.id.clone();
                t.parent = task.parent.clone();
                t
            })?;
        }
        Some((format!("goal becomes {o}, {r}"), task))
    }
}

impl Summariser for LmRewriter<'_> {
    fn summarise(&self, reasons: &[String]) -> Option<String> {
        if reasons.is_empty() {
            return None;
        }
        let prompt = format!(
            "Summarise in at most two sentences what went wrong in these judged steps:\n{}",
            reasons.join("\n")
        );
        let text = self.ask(&prompt)?;
        let two: Vec<&str> = text.split_inclusive(". ").take(2).collect();
        Some(two.concat().trim().to_string())
    }
}

/// The structured rewriter. Harder: one of the rewrites that stay harder (the goal escalated, the
/// targets hidden late, a lookalike where the target was), chosen with `seed` among those that
/// apply, the child's id `parent~k`; where none applies, as easier rewrites are chosen. Easier:
/// the perturbation the critique points to. Failures that the judge blames on wandering ("went
/// to", "only looked") get a hint first when making a task easier; otherwise targets, distractors
/// and receptacle types move the difficulty.
pub fn structured_rewrite(
    parent: &TaskSpec,
    dir: Direction,
    critique: Option<&str>,
    seed: u64,
    k: usize,
) -> Option<(Perturbation, TaskSpec)> {
    if dir == Direction::Harder {
        if let Some(r) = harder(parent, seed, k) {
            return Some(r);
        }
    }
    let mut cands = proposals(parent, dir);
    let wandering = critique.is_some_and(|c| c.contains("went to") || c.contains("only looked"));
    let rank = |p: &Perturbation| -> usize {
        match (dir, p) {
            (Direction::Easier, Perturbation::AddHint) if wandering => 0,
            (Direction::Easier, Perturbation::SwapReceptacle { .. }) => 1,
            (Direction::Easier, Perturbation::MoreTargets) => 2,
            (Direction::Easier, Perturbation::AddHint) => 3,
            (Direction::Harder, Perturbation::SwapReceptacle { .. }) => 0,
            (Direction::Harder, Perturbation::RemoveHint) => 1,
            (Direction::Harder, Perturbation::FewerTargets) => 2,
            (Direction::Harder, Perturbation::AddDistractors { .. }) => 3,
            _ => 4,
        }
    };
    cands.sort_by_key(|(p, _)| rank(p));
    cands.into_iter().next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goal_tokens_parse() {
        assert_eq!(
            parse_goal_tokens("I pick \\boxed{CreditCard, ArmChair}"),
            Some(("CreditCard".into(), "ArmChair".into()))
        );
        assert_eq!(
            parse_goal_tokens("\\boxed{CreditCardType,ArmChairType}"),
            Some(("CreditCard".into(), "ArmChair".into()))
        );
        assert_eq!(parse_goal_tokens("\\boxed{Apple}"), None);
        assert_eq!(parse_goal_tokens("no answer"), None);
    }

    #[test]
    fn structured_rewrites_move_toward_the_band_and_record_parents() {
        let parent = rla_env::household::splits::eval_tasks(rla_core::Split::InDomain).remove(0);
        for dir in [Direction::Harder, Direction::Easier] {
            if let Some((desc, t)) = (Structured { seed: 1 }).rewrite(
                &parent,
                dir,
                Some("The failed attempts mostly went to cabinet (3×)."),
                1,
            ) {
                assert_eq!(t.parent.as_deref(), Some(parent.id.as_str()));
                assert!(!desc.is_empty());
            }
        }
        // a wandering critique makes the easier rewrite a hint
        let (desc, t) = Structured { seed: 1 }
            .rewrite(
                &parent,
                Direction::Easier,
                Some("The failed attempts mostly went to cabinet (3×)."),
                1,
            )
            .unwrap();
        assert_eq!(desc, "hint added");
        assert!(t.hint.is_some());
    }
}
