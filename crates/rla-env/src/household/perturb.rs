//! Task perturbations for environment adaptation, in ALFWorld's style: swap the goal's object or
//! receptacle type for one with fewer (harder) or more (easier) instances, add or remove
//! other object classes of the floor plan, add or remove a hint naming where the object is; and
//! the harder rewrites that stay harder ([`super::harder`]: the goal escalated, the targets hidden
//! late, a lookalike where the target was). Every rewrite records its parent and is checked by the
//! expert (the reference implementation's smoke test).

use super::data::alfred;
use super::expert::{plan, GoalSpec};
use super::task::{layout, placeable_objects, GoalKind, TaskSpec};
use rla_core::adapt::Direction;
use serde::{Deserialize, Serialize};

/// One rewrite of a task.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Perturbation {
    /// Fewer instances of the target object in the scene.
    FewerTargets,
    /// More instances of the target object.
    MoreTargets,
    /// Another object type for the goal.
    SwapObject {
        /// The new object class.
        object: String,
    },
    /// Another receptacle type for the goal.
    SwapReceptacle {
        /// The new receptacle class.
        receptacle: String,
    },
    /// More of the floor plan's other object classes.
    AddDistractors {
        /// How many.
        n: usize,
    },
    /// Fewer of the floor plan's other object classes.
    RemoveDistractors {
        /// How many.
        n: usize,
    },
    /// A sentence saying where a target object is.
    AddHint,
    /// Drop the hint.
    RemoveHint,
    /// A plain place goal escalated to one with more to do ([`super::harder`]).
    Escalate {
        /// The new goal type.
        goal: GoalKind,
        /// The lamp class, for `look_at_obj_in_light`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lamp: Option<String>,
    },
    /// The targets where the searching expert first takes one moved to a receptacle it reaches
    /// late ([`super::harder`]).
    HideTargets {
        /// The receptacle, as the game names it (`cabinet 12`).
        place: String,
    },
    /// An object of a lookalike class where the searching expert first took a target, the
    /// targets there moved on ([`super::harder`]).
    Lookalike {
        /// The lookalike's class.
        class: String,
    },
}

impl Perturbation {
    /// Which way the rewrite moves difficulty.
    pub fn direction(&self, parent: &TaskSpec) -> Direction {
        let count = |r: &str| {
            layout(parent.floor_plan)
                .into_iter()
                .find(|(t, _)| t == r)
                .map(|(_, n)| n)
                .unwrap_or(0)
        };
        match self {
            Perturbation::FewerTargets
            | Perturbation::AddDistractors { .. }
            | Perturbation::RemoveHint
            | Perturbation::Escalate { .. }
            | Perturbation::HideTargets { .. }
            | Perturbation::Lookalike { .. } => Direction::Harder,
            Perturbation::MoreTargets
            | Perturbation::RemoveDistractors { .. }
            | Perturbation::AddHint => Direction::Easier,
            Perturbation::SwapObject { .. } => Direction::Keep,
            Perturbation::SwapReceptacle { receptacle } => {
                let old = parent.receptacle.as_deref().map(count).unwrap_or(0);
                match count(receptacle).cmp(&old) {
                    std::cmp::Ordering::Less => Direction::Harder,
                    std::cmp::Ordering::Greater => Direction::Easier,
                    std::cmp::Ordering::Equal => Direction::Keep,
                }
            }
        }
    }

    /// A short description for logs and lineage.
    pub fn describe(&self) -> String {
        match self {
            Perturbation::FewerTargets => "fewer target objects".into(),
            Perturbation::MoreTargets => "more target objects".into(),
            Perturbation::SwapObject { object } => format!("object becomes {object}"),
            Perturbation::SwapReceptacle { receptacle } => {
                format!("receptacle becomes {receptacle}")
            }
            Perturbation::AddDistractors { n } => format!("{n} more object classes"),
            Perturbation::RemoveDistractors { n } => format!("{n} fewer object classes"),
            Perturbation::AddHint => "hint added".into(),
            Perturbation::RemoveHint => "hint removed".into(),
            Perturbation::Escalate { goal, lamp } => match lamp {
                Some(l) => format!(
                    "escalate: {} under the {}",
                    goal.as_str(),
                    l.to_ascii_lowercase()
                ),
                None => format!("escalate: {}", goal.as_str()),
            },
            Perturbation::HideTargets { place } => format!("hide targets: {place}"),
            Perturbation::Lookalike { class } => format!(
                "lookalike: {} where the target was",
                class.to_ascii_lowercase()
            ),
        }
    }
}

/// The hint sentence for a task: where its first target object is ("The apple is in the fridge 1.").
pub fn hint_for(spec: &TaskSpec) -> Result<String, String> {
    let mut plain = spec.clone();
    plain.hint = None;
    let w = plain.build().map_err(|e| e.to_string())?;
    let t = w
        .type_index(&format!("{}Type", spec.object))
        .ok_or("no target type in scene")?;
    let o = *w
        .objects_of_type(t)
        .first()
        .ok_or("no target object in scene")?;
    let r = w.initial.obj_in[o as usize].ok_or("target object is not in a receptacle")?;
    Ok(format!(
        "The {} is in the {}.",
        spec.object.to_ascii_lowercase(),
        w.receptacles[r as usize].name
    ))
}

/// Applies a perturbation; the child records its parent and gets the id `parent~k`.
pub fn apply(parent: &TaskSpec, p: &Perturbation, k: usize) -> Result<TaskSpec, String> {
    let mut c = parent.clone();
    c.id = format!("{}~{k}", parent.id);
    c.parent = Some(parent.id.clone());
    match p {
        Perturbation::FewerTargets => {
            let min = if c.goal == GoalKind::PickTwoObjAndPlace {
                2
            } else {
                1
            };
            if c.targets <= min {
                return Err(format!("already at {min} target(s)"));
            }
            c.targets -= 1;
            c.target_places.truncate(c.targets);
        }
        Perturbation::MoreTargets => {
            let max = super::data::alfred().max_instances;
            if c.targets >= max {
                return Err(format!("already at {max} targets"));
            }
            c.targets += 1;
        }
        Perturbation::SwapObject { object } => {
            if *object == c.object {
                return Err("same object".into());
            }
            c.object = object.clone();
            c.drop_placements();
        }
        Perturbation::SwapReceptacle { receptacle } => {
            if c.receptacle.as_deref() == Some(receptacle.as_str()) {
                return Err("same receptacle".into());
            }
            if c.receptacle.is_none() {
                return Err("this goal has no receptacle".into());
            }
            c.receptacle = Some(receptacle.clone());
        }
        Perturbation::AddDistractors { n } => {
            let max = placeable_objects(c.floor_plan, None)
                .iter()
                .filter(|o| **o != c.object)
                .count();
            if c.distractors >= max {
                return Err("every object class of the floor plan is already there".into());
            }
            c.distractors = (c.distractors + n).min(max);
        }
        Perturbation::RemoveDistractors { n } => {
            if c.distractors == 0 {
                return Err("no distractors to remove".into());
            }
            c.distractors = c.distractors.saturating_sub(*n);
        }
        Perturbation::AddHint => {
            if c.hint.is_some() {
                return Err("already has a hint".into());
            }
            c.hint = Some(hint_for(&c)?);
        }
        Perturbation::RemoveHint => {
            if c.hint.take().is_none() {
                return Err("has no hint".into());
            }
        }
        Perturbation::Escalate { .. }
        | Perturbation::HideTargets { .. }
        | Perturbation::Lookalike { .. } => {
            return super::harder::apply(&super::harder::Parent::new(parent)?, p, k);
        }
    }
    if c.hint.is_some() && !matches!(p, Perturbation::AddHint) {
        // keep the hint true to the new scene
        c.hint = Some(hint_for(&c)?);
    }
    check(&c)?;
    Ok(c)
}

/// The smoke test: the task builds and the expert solves it within its step limit.
pub fn check(t: &TaskSpec) -> Result<(), String> {
    let w = t.build().map_err(|e| e.to_string())?;
    let g = GoalSpec::from_task(&w, t)?;
    match plan(&w, &w.initial, &g) {
        Some(p) if p.is_empty() => Err("goal already holds at the start".into()),
        Some(p) if p.len() <= t.step_limit => Ok(()),
        Some(p) => Err(format!(
            "expert needs {} steps, limit {}",
            p.len(),
            t.step_limit
        )),
        None => Err("the expert cannot solve it".into()),
    }
}

/// Every valid rewrite of a task in one direction, each checked by the expert.
pub fn proposals(parent: &TaskSpec, dir: Direction) -> Vec<(Perturbation, TaskSpec)> {
    let mut cands: Vec<Perturbation> = match dir {
        Direction::Harder => vec![
            Perturbation::FewerTargets,
            Perturbation::AddDistractors { n: 4 },
            Perturbation::RemoveHint,
        ],
        Direction::Easier => vec![
            Perturbation::MoreTargets,
            Perturbation::RemoveDistractors { n: 4 },
            Perturbation::AddHint,
        ],
        Direction::Keep => vec![],
    };
    if dir != Direction::Keep && parent.receptacle.is_some() {
        let t = alfred();
        for (r, _) in layout(parent.floor_plan) {
            if t.can_contain(&r, &parent.object) {
                let p = Perturbation::SwapReceptacle { receptacle: r };
                if p.direction(parent) == dir {
                    cands.push(p);
                }
            }
        }
    }
    cands
        .into_iter()
        .enumerate()
        .filter_map(|(k, p)| apply(parent, &p, k + 1).ok().map(|c| (p, c)))
        .collect()
}

/// The reference rewriter's output for the household is two goal tokens,
/// `\boxed{OBJECT,RECEPTACLE}`: the task with those classes, if valid.
pub fn retarget(
    parent: &TaskSpec,
    object: &str,
    receptacle: &str,
    k: usize,
) -> Result<TaskSpec, String> {
    let mut c = parent.clone();
    c.id = format!("{}~{k}", parent.id);
    c.parent = Some(parent.id.clone());
    if c.object != object {
        c.object = object.to_string();
        c.drop_placements();
    }
    if c.goal.needs_receptacle() {
        c.receptacle = Some(receptacle.to_string());
    } else {
        c.lamp = Some(receptacle.to_string());
    }
    if c.hint.is_some() {
        c.hint = Some(hint_for(&c)?);
    }
    check(&c)?;
    Ok(c)
}
