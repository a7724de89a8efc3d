//! Harder rewrites that stay harder. Fewer targets, more object classes and a hint removed run out
//! within a few rewrites (a generated scene already holds every class of its floor plan, a task
//! has one hint to lose); these change what the task asks or where its object stands, and they
//! compose:
//!
//! - [`Perturbation::Escalate`]: a plain place goal becomes clean-, heat- or cool-and-place where
//!   ALFRED's tables make the object cleanable, heatable or coolable, the room kind has the goal
//!   type (`GOALS_VALID`) and the floor plan the sink basin, microwave or fridge; or pick-two
//!   (a second instance placed where the scene has only one); or look-at-in-light where the room
//!   kind has the goal type and the floor plan a lamp that the object can be looked at under.
//! - [`Perturbation::HideTargets`]: the targets in the receptacle the searching expert first took
//!   one from moved to a receptacle it reaches late — the latest in its search order (a receptacle
//!   that must be opened comes after those seen by going there, and stays shut at the start) that
//!   still leaves the task within the step limit. Applied again, it moves the targets the expert
//!   now takes first, until they all stand as late as the limit allows.
//! - [`Perturbation::Lookalike`]: an object of a class that looks like the target's (their names
//!   share a head noun: [`lookalikes`]) placed where the searching expert first took a target,
//!   and the targets there moved on to the next receptacle of its search order that makes the task
//!   longer.
//!
//! Why lookalikes rather than more instances of the target's class: a goal names a class, not an
//! instance, so any instance completes it; another instance anywhere can only shorten the search.
//! A lookalike keeps the goal's meaning (its class is not the goal's, so it completes nothing) and
//! stands exactly where a policy that has learnt where targets usually are would look; the target
//! moved on makes the task measurably longer for the expert too. ALFRED's and ALFWorld's tables
//! name no similar classes, so a shared head noun stands in: the words the agent reads.
//!
//! Each rewrite is kept only if the searching expert — which sees only what the agent sees, the
//! generator's own smoke test — wins the child within its step limit and needs strictly more
//! steps than on the parent. Escalations start from a plain place goal only: ALFWorld's six goal
//! types have no clean-, heat- or cool-and-place of two objects, no look-at-in-light of two, and no
//! look-at of a cleaned or heated object, and its goal library's PDDL and sentences are what its
//! engine loads, so those combinations are skipped; an escalated goal still composes with hidden
//! targets, lookalikes and fewer targets.

use super::data::alfred;
use super::expert::{search_key, GoalSpec, SearchExpert};
use super::perturb::{hint_for, Perturbation};
use super::splits::candidates;
use super::task::{GoalKind, Placed, TaskSpec};
use super::world::{Action, World};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;

/// Whether two object classes look alike: one's name ends with the other's head noun (its last
/// capitalised word), case ignored. Among ALFRED's pickupable classes: `Box`/`TissueBox`,
/// `ButterKnife`/`Knife`, the bottles (`Glassbottle`, `SoapBottle`, `SprayBottle`, `WineBottle`),
/// the towels (`HandTowel`, `PaperTowel`, `Towel`), `Newspaper`/`ToiletPaper` and
/// `PepperShaker`/`SaltShaker`.
pub fn lookalikes(a: &str, b: &str) -> bool {
    fn head(c: &str) -> String {
        let b = c.as_bytes();
        let start = (1..b.len())
            .rev()
            .find(|&i| b[i].is_ascii_uppercase() && b[i - 1].is_ascii_lowercase())
            .unwrap_or(0);
        c[start..].to_ascii_lowercase()
    }
    let (la, lb) = (a.to_ascii_lowercase(), b.to_ascii_lowercase());
    la != lb && (la.ends_with(&head(b)) || lb.ends_with(&head(a)))
}

/// The searching expert's run from the start: its length if it wins within `limit`, and the
/// receptacle it first took a target from.
fn search_run(w: &World, g: &GoalSpec, limit: usize) -> Option<(usize, Option<u16>)> {
    let mut s = SearchExpert::new(w);
    let mut st = w.initial.clone();
    let mut first = None;
    for n in 1..=limit {
        let a = s.next(w, &st, g)?;
        if let Action::Take(o, r) = a {
            if first.is_none() && w.objects[o as usize].otype == Some(g.object) {
                first = Some(r);
            }
        }
        w.apply(&mut st, a);
        s.observe(w, &st, a);
        if w.goal_reached(&st) {
            return Some((n, first));
        }
    }
    None
}

/// How many steps the searching expert takes to win a task, if it wins within the task's step
/// limit.
pub fn searched_steps(t: &TaskSpec) -> Result<usize, String> {
    let w = t.build().map_err(|e| e.to_string())?;
    let g = GoalSpec::from_task(&w, t)?;
    search_run(&w, &g, t.step_limit)
        .map(|(n, _)| n)
        .ok_or_else(|| {
            format!(
                "the searching expert does not win it within {} steps",
                t.step_limit
            )
        })
}

/// A task as the harder rewrites see it: its world, where its receptacles and targets stand, and
/// the searching expert's run on it.
pub struct Parent<'a> {
    spec: &'a TaskSpec,
    world: World,
    goal: GoalSpec,
    /// The floor plan's receptacle instance (index of `receptacle_slots`) of each world receptacle.
    slot_of: Vec<usize>,
    /// Each target instance's receptacle instance, in instance order.
    target_slots: Vec<usize>,
    /// The searching expert's steps.
    steps: usize,
    /// The receptacle the searching expert first took a target from.
    first_take: Option<u16>,
}

impl<'a> Parent<'a> {
    /// Reads a task; an error if it does not build or the searching expert does not win it within
    /// its step limit (a child, needing more steps, could not be won either).
    pub fn new(spec: &'a TaskSpec) -> Result<Parent<'a>, String> {
        let (world, scene) = spec.build_with_scene().map_err(|e| e.to_string())?;
        let goal = GoalSpec::from_task(&world, spec)?;
        let slot_by_id: HashMap<&str, usize> = scene
            .receptacle_ids
            .iter()
            .enumerate()
            .map(|(i, id)| (id.as_str(), i))
            .collect();
        let slot_of = world
            .receptacles
            .iter()
            .map(|r| slot_by_id.get(r.id.as_str()).copied())
            .collect::<Option<Vec<usize>>>()
            .ok_or("a receptacle of the world is not in its scene")?;
        let object_by_id: HashMap<&str, usize> = world
            .objects
            .iter()
            .enumerate()
            .map(|(i, o)| (o.id.as_str(), i))
            .collect();
        let target_slots = scene
            .target_ids
            .iter()
            .map(|id| {
                let o = *object_by_id.get(id.as_str())?;
                Some(slot_of[world.initial.obj_in[o]? as usize])
            })
            .collect::<Option<Vec<usize>>>()
            .ok_or("a target of the scene is not in a receptacle")?;
        let (steps, first_take) = search_run(&world, &goal, spec.step_limit).ok_or_else(|| {
            format!(
                "the searching expert does not win the parent within {} steps",
                spec.step_limit
            )
        })?;
        Ok(Parent {
            spec,
            world,
            goal,
            slot_of,
            target_slots,
            steps,
            first_take,
        })
    }

    /// The searching expert's steps on the task.
    pub fn steps(&self) -> usize {
        self.steps
    }

    /// The receptacle the searching expert first took a target from, as the game names it.
    pub fn first_taken_from(&self) -> Option<&str> {
        self.first_take
            .map(|r| self.world.receptacles[r as usize].name.as_str())
    }

    /// The receptacles the targets taken first may be moved to, nearest first: those that can
    /// hold a target, are not of the goal's receptacle type and come after the receptacle the
    /// searching expert first took a target from in its order (each taken as shut, as a receptacle
    /// holding a placed target starts).
    fn later_places(&self) -> Vec<u16> {
        let w = &self.world;
        let Some(found) = self.first_take else {
            return Vec::new();
        };
        let from = search_key(w, found, !w.initial.opened[found as usize]);
        let mut rs: Vec<(u16, (bool, String, u32))> = (0..w.receptacles.len() as u16)
            .filter(|&r| {
                let rt = w.receptacles[r as usize].rtype;
                w.can_contain(rt, self.goal.object) && Some(rt) != self.goal.receptacle
            })
            .map(|r| (r, search_key(w, r, true)))
            .filter(|(_, key)| *key > from)
            .collect();
        rs.sort_by(|a, b| a.1.cmp(&b.1));
        rs.into_iter().map(|(r, _)| r).collect()
    }

    /// The child's target places with the targets where the searching expert first took one
    /// moved to `to` (a receptacle instance of the floor plan).
    fn moved_to(&self, to: usize) -> Result<Vec<usize>, String> {
        let found = self
            .first_take
            .ok_or("the searching expert takes no target on the parent")?;
        let from = self.slot_of[found as usize];
        Ok(self
            .target_slots
            .iter()
            .map(|&s| if s == from { to } else { s })
            .collect())
    }
}

/// Which group of rewrites a candidate belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Escalate,
    Hide,
    Lookalike,
}

/// The harder rewrites to try on a task, by group: the goal's escalations, the hiding places
/// (latest first) and the lookalike classes of its floor plan.
pub fn harder_candidates(p: &Parent) -> Vec<Vec<Perturbation>> {
    grouped(p).into_iter().map(|(_, v)| v).collect()
}

fn grouped(p: &Parent) -> Vec<(Kind, Vec<Perturbation>)> {
    let t = alfred();
    let spec = p.spec;
    let room = spec.room();
    let mut escalate = Vec::new();
    if spec.goal == GoalKind::PickAndPlaceSimple {
        for goal in [
            GoalKind::PickCleanThenPlaceInRecep,
            GoalKind::PickHeatThenPlaceInRecep,
            GoalKind::PickCoolThenPlaceInRecep,
        ] {
            let (able, _) = goal.transform().expect("a transforming goal");
            if t.has(&spec.object, able) && t.goal_valid(goal, room) {
                escalate.push(Perturbation::Escalate { goal, lamp: None });
            }
        }
        if t.goal_valid(GoalKind::PickTwoObjAndPlace, room) {
            escalate.push(Perturbation::Escalate {
                goal: GoalKind::PickTwoObjAndPlace,
                lamp: None,
            });
        }
        for (o, _, lamp) in candidates(spec.floor_plan, GoalKind::LookAtObjInLight) {
            if *o == spec.object && lamp.is_some() {
                escalate.push(Perturbation::Escalate {
                    goal: GoalKind::LookAtObjInLight,
                    lamp: lamp.clone(),
                });
            }
        }
    }
    let hide = p
        .later_places()
        .into_iter()
        .rev()
        .map(|r| Perturbation::HideTargets {
            place: p.world.receptacles[r as usize].name.clone(),
        })
        .collect();
    let lookalike = t
        .floor_plan(spec.floor_plan)
        .map(|fp| {
            fp.objects
                .iter()
                .filter(|c| t.has(c, "pickupable") && lookalikes(c, &spec.object))
                .map(|c| Perturbation::Lookalike { class: c.clone() })
                .collect()
        })
        .unwrap_or_default();
    vec![
        (Kind::Escalate, escalate),
        (Kind::Hide, hide),
        (Kind::Lookalike, lookalike),
    ]
}

/// The child with its id and parent, its hint kept true, checked: the searching expert wins it
/// within its step limit in strictly more steps than the parent.
fn finish(p: &Parent, mut c: TaskSpec) -> Result<TaskSpec, String> {
    if c.hint.is_some() {
        c.hint = Some(hint_for(&c)?);
    }
    let n = searched_steps(&c)?;
    if n <= p.steps {
        return Err(format!(
            "the searching expert needs {n} steps, {} on the parent: not harder",
            p.steps
        ));
    }
    Ok(c)
}

/// Applies one of the harder rewrites of this module to a task read by [`Parent::new`]; the child
/// gets the id `parent~k`.
pub fn apply(p: &Parent, pert: &Perturbation, k: usize) -> Result<TaskSpec, String> {
    let mut c = p.spec.clone();
    c.id = format!("{}~{k}", p.spec.id);
    c.parent = Some(p.spec.id.clone());
    match pert {
        Perturbation::Escalate { goal, lamp } => {
            if p.spec.goal != GoalKind::PickAndPlaceSimple {
                return Err(format!(
                    "{} does not escalate: ALFWorld's goal types combine nothing more with it",
                    p.spec.goal.as_str()
                ));
            }
            if *goal == GoalKind::PickAndPlaceSimple {
                return Err("the goal is a plain place already".into());
            }
            if (*goal == GoalKind::LookAtObjInLight) != lamp.is_some() {
                return Err("a lamp is named for look_at_obj_in_light and for nothing else".into());
            }
            c.goal = *goal;
            match goal {
                GoalKind::PickTwoObjAndPlace => c.targets = c.targets.max(2),
                GoalKind::LookAtObjInLight => {
                    c.receptacle = None;
                    c.lamp = lamp.clone();
                }
                _ => {}
            }
            c.validate().map_err(|e| e.to_string())?;
            finish(p, c)
        }
        Perturbation::HideTargets { place } => {
            let r = p
                .world
                .receptacles
                .iter()
                .position(|r| r.name == *place)
                .ok_or_else(|| format!("the scene has no {place}"))?;
            c.target_places = p.moved_to(p.slot_of[r])?;
            if c.target_places == p.target_slots {
                return Err(format!("the targets are in the {place} already"));
            }
            finish(p, c)
        }
        Perturbation::Lookalike { class } => {
            if !lookalikes(class, &p.spec.object) {
                return Err(format!("a {class} does not look like a {}", p.spec.object));
            }
            let found = p
                .first_take
                .ok_or("the searching expert takes no target on the parent")?;
            let found_slot = p.slot_of[found as usize];
            c.extra_objects.push(Placed {
                class: class.clone(),
                at: found_slot,
            });
            c.validate().map_err(|e| e.to_string())?;
            let mut why = format!(
                "no receptacle after the {} takes the target",
                p.world.receptacles[found as usize].name
            );
            for r in p.later_places() {
                let mut d = c.clone();
                d.target_places = p.moved_to(p.slot_of[r as usize])?;
                match finish(p, d) {
                    Ok(d) => return Ok(d),
                    Err(e) => why = e,
                }
            }
            Err(why)
        }
        other => Err(format!(
            "{} is not one of the harder rewrites that stay harder",
            other.describe()
        )),
    }
}

/// A harder rewrite of a task that stays harder, chosen with the seed among those that apply: the
/// groups (escalations, hidden targets, lookalikes) in a seeded order, each group's candidates
/// in a seeded order (hiding places latest first), the first that passes [`apply`]'s check.
/// `None` when none applies (or the searching expert does not win the task itself).
pub fn harder(parent: &TaskSpec, seed: u64, k: usize) -> Option<(Perturbation, TaskSpec)> {
    let p = Parent::new(parent).ok()?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut groups = grouped(&p);
    groups.shuffle(&mut rng);
    for (kind, mut cands) in groups {
        if kind != Kind::Hide {
            cands.shuffle(&mut rng);
        }
        for pert in cands {
            if let Ok(c) = apply(&p, &pert, k) {
                return Some((pert, c));
            }
        }
    }
    None
}
