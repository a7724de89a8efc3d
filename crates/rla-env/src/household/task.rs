//! Household tasks as serialisable specs, and the native generator that turns a spec into a
//! scene in ALFWorld's format (a PDDL problem over ALFWorld's domain, the task sentence in
//! ALFWorld's wording).

use super::data::{alfred, DOMAIN_PDDL, GRAMMAR_TEMPLATE};
pub use super::kinds::{GoalKind, Room};
use super::pddl::parse_problem;
use super::world::World;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// A household task: everything needed to rebuild its scene exactly.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskSpec {
    /// A unique identifier.
    pub id: String,
    /// ALFRED's floor plan (`FloorPlan<n>`): the room kind, its receptacles and locations, the object
    /// classes it holds.
    pub floor_plan: u32,
    /// Seed of the scene drawn on the floor plan: instance counts, placements, open receptacles.
    pub scene_seed: u64,
    /// Goal type.
    pub goal: GoalKind,
    /// Object class (`Apple`).
    pub object: String,
    /// Receptacle class (`CounterTop`); none for `look_at_obj_in_light`.
    #[serde(default)]
    pub receptacle: Option<String>,
    /// Lamp class (`DeskLamp`, `FloorLamp`) for `look_at_obj_in_light`.
    #[serde(default)]
    pub lamp: Option<String>,
    /// Instances of the object class in the scene (1 to ALFRED's `MAX_NUM_OF_OBJ_INSTANCES`, at
    /// least 2 for `pick_two_obj_and_place`).
    pub targets: usize,
    /// How many of the floor plan's other object classes the scene holds (each with 1 to
    /// `MAX_NUM_OF_OBJ_INSTANCES` instances, as ALFRED draws them); at most all of them.
    pub distractors: usize,
    /// A hint appended to the task sentence ("The apple is in the fridge 1.").
    #[serde(default)]
    pub hint: Option<String>,
    /// Which of the goal's two sentence templates to use (0 or 1).
    #[serde(default)]
    pub template: u8,
    /// The episode's step limit.
    pub step_limit: usize,
    /// The task this one was derived from, if it is a rewrite.
    #[serde(default)]
    pub parent: Option<String>,
    /// Where target instances stand instead of where the scene's draw puts them: the `i`-th entry
    /// places the `i`-th target instance, as an index into the floor plan's receptacle instances
    /// ([`receptacle_slots`]); instances past the list stand where drawn. A receptacle holding a
    /// placed target never starts open.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub target_places: Vec<usize>,
    /// Objects placed besides the scene's draw (the lookalikes of harder rewrites).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_objects: Vec<Placed>,
}

/// An object placed at a receptacle instance of the floor plan.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Placed {
    /// Its class (`ButterKnife`).
    pub class: String,
    /// The receptacle instance, an index into [`receptacle_slots`].
    pub at: usize,
}

/// Why a spec cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("task {id}: {field}: {message}")]
pub struct SpecError {
    /// The task id.
    pub id: String,
    /// The offending field.
    pub field: &'static str,
    /// What is wrong.
    pub message: String,
}

pub(crate) use rla_core::seed::mix;

/// The receptacle classes of a floor plan with their instance counts, in name order (empty for a
/// floor plan ALFRED does not have).
pub fn layout(floor_plan: u32) -> Vec<(String, usize)> {
    alfred()
        .floor_plan(floor_plan)
        .map(|f| f.receptacle_counts())
        .unwrap_or_default()
}

/// The receptacle instances of a floor plan's scenes by class, in the scene's order: the listed
/// ones, then the implied ones by class name (empty for a floor plan ALFRED does not have).
pub fn receptacle_slots(floor_plan: u32) -> Vec<String> {
    let Some(fp) = alfred().floor_plan(floor_plan) else {
        return Vec::new();
    };
    fp.receptacles
        .iter()
        .map(|(ty, _)| ty.clone())
        .chain(
            fp.implied
                .iter()
                .flat_map(|(ty, n)| std::iter::repeat_n(ty.clone(), *n)),
        )
        .collect()
}

/// The object classes a floor plan's scenes can place for a goal: pickupable classes with somewhere
/// to stand among the floor plan's receptacles (other than `exclude`, the goal's receptacle).
pub fn placeable_objects(floor_plan: u32, exclude: Option<&str>) -> Vec<String> {
    let t = alfred();
    let Some(fp) = t.floor_plan(floor_plan) else {
        return Vec::new();
    };
    let lay = fp.receptacle_counts();
    fp.objects
        .iter()
        .filter(|o| {
            t.has(o, "pickupable")
                && lay
                    .iter()
                    .any(|(r, _)| Some(r.as_str()) != exclude && t.can_contain(r, o))
        })
        .cloned()
        .collect()
}

/// A goal's task sentence in ALFWorld's wording (`template` 0 or 1 of the goal library's two).
pub fn goal_sentence(
    goal: GoalKind,
    template: u8,
    object: &str,
    receptacle: Option<&str>,
    lamp: Option<&str>,
) -> String {
    let tpl = goal.templates()[template.min(1) as usize];
    tpl.replace("{o}", &object.to_ascii_lowercase())
        .replace("{r}", &receptacle.unwrap_or("").to_ascii_lowercase())
        .replace("{l}", &lamp.unwrap_or("").to_ascii_lowercase())
}

/// A goal as PDDL, as ALFWorld's goal library writes it.
pub fn goal_pddl(goal: GoalKind, o: &str, receptacle: Option<&str>, lamp: Option<&str>) -> String {
    let r = receptacle.unwrap_or("");
    match goal {

        GoalKind::PickAndPlaceSimple => format!(
            "(and (exists (?r - receptacle) (exists (?o - object) (and (inReceptacle ?o ?r) (objectType ?o {o}Type) (receptacleType ?r {r}Type)))))"
        ),
        GoalKind::PickCleanThenPlaceInRecep | GoalKind::PickHeatThenPlaceInRecep | GoalKind::PickCoolThenPlaceInRecep => {
            let (able, is) = match goal {
                GoalKind::PickCleanThenPlaceInRecep => ("cleanable", "isClean"),
                GoalKind::PickHeatThenPlaceInRecep => ("heatable", "isHot"),
                _ => ("coolable", "isCool"),
            };
            format!(
                "(and (exists (?r - receptacle) (exists (?o - object) (and ({able} ?o) (objectType ?o {o}Type) (receptacleType ?r {r}Type) ({is} ?o) (inReceptacle ?o ?r)))))"
            )
        }
        GoalKind::LookAtObjInLight => {
            let l = lamp.unwrap_or("");
            format!(
                "(and (exists (?ot - object ?r - receptacle ?a - agent ?l - location) (and (objectType ?ot {l}Type) (toggleable ?ot) (isToggled ?ot) (receptacleAtLocation ?r ?l) (atLocation ?a ?l) (inReceptacle ?ot ?r))) (exists (?o - object ?a - agent) (and (objectType ?o {o}Type) (holds ?a ?o))))"
            )
        }
        GoalKind::PickTwoObjAndPlace => format!(
            "(and (exists (?r - receptacle) (exists (?o1 - object) (and (objectType ?o1 {o}Type) (receptacleType ?r {r}Type) (inReceptacle ?o1 ?r) (exists (?o2 - object) (and (not (= ?o1 ?o2)) (objectType ?o2 {o}Type) (receptacleType ?r {r}Type) (inReceptacle ?o2 ?r)))))))"
        ),
    }
}

fn coord(rng: &mut ChaCha8Rng) -> String {
    let v: i32 = rng.gen_range(-499..=499);
    let sign = if v < 0 { "minus" } else { "plus" };
    let a = v.abs();
    format!("_{sign}_{:02}_dot_{:02}", a / 100, a % 100)
}

fn loc_int(v: i32) -> String {
    if v < 0 {
        format!("_minus_{}", -v)
    } else {
        v.to_string()
    }
}

fn entity_id(class: &str, rng: &mut ChaCha8Rng) -> String {
    let (prefix, suffix) = match class {
        "SinkBasin" => ("Sink", "_bar_SinkBasin"),
        "BathtubBasin" => ("Bathtub", "_bar_BathtubBasin"),
        c => (c, ""),
    };
    format!(
        "{prefix}_bar_{}_bar_{}_bar_{}{suffix}",
        coord(rng),
        coord(rng),
        coord(rng)
    )
}

fn location(pose: [i32; 4]) -> String {
    format!(
        "loc_bar_{}_bar_{}_bar_{}_bar_{}",
        loc_int(pose[0]),
        loc_int(pose[1]),
        pose[2],
        loc_int(pose[3])
    )
}

/// A built scene: the PDDL problem and the task sentence.
#[derive(Debug, Clone)]
pub struct Scene {
    /// The PDDL problem text over ALFWorld's domain.
    pub pddl: String,
    /// The task sentence (without `Your task is to: ` and the final period).
    pub sentence: String,
    /// The receptacles' PDDL identifiers, in the order of [`receptacle_slots`].
    pub receptacle_ids: Vec<String>,
    /// The target instances' PDDL identifiers, in instance order (that of
    /// [`TaskSpec::target_places`]).
    pub target_ids: Vec<String>,
}

impl TaskSpec {
    fn err(&self, field: &'static str, message: impl Into<String>) -> SpecError {
        SpecError {
            id: self.id.clone(),
            field,
            message: message.into(),
        }
    }

    /// The room kind of the task's floor plan.
    pub fn room(&self) -> Room {
        alfred()
            .floor_plan(self.floor_plan)
            .map(|f| f.room)
            .unwrap_or(Room::Kitchen)
    }

    /// The floor plan's other object classes the scene may hold, in the scene's own order: the
    /// first `distractors` of them are placed.
    fn distractor_classes(&self) -> Vec<String> {
        let mut others: Vec<String> = placeable_objects(self.floor_plan, None)
            .into_iter()
            .filter(|o| *o != self.object)
            .collect();
        let mut rng = ChaCha8Rng::seed_from_u64(mix(self.scene_seed, "classes"));
        others.shuffle(&mut rng);
        others
    }

    /// Checks the spec against ALFRED's tables and its floor plan.
    pub fn validate(&self) -> Result<(), SpecError> {
        let t = alfred();
        let Some(fp) = t.floor_plan(self.floor_plan) else {
            return Err(self.err(
                "floor_plan",
                format!("ALFRED has no FloorPlan{}", self.floor_plan),
            ));
        };
        let lay = fp.receptacle_counts();
        let has_recep = |r: &str| lay.iter().any(|(x, _)| x == r);
        if !fp.objects.contains(&self.object) || !t.has(&self.object, "pickupable") {
            return Err(self.err(
                "object",
                format!(
                    "{} is not a pickupable object of FloorPlan{}",
                    self.object, self.floor_plan
                ),
            ));
        }
        if self.template > 1 {
            return Err(self.err("template", "must be 0 or 1"));
        }
        let min = if self.goal == GoalKind::PickTwoObjAndPlace {
            2
        } else {
            1
        };
        if self.targets < min || self.targets > t.max_instances {
            return Err(self.err(
                "targets",
                format!(
                    "{} for {}: must be {min} to {} (ALFRED's most instances of a class)",
                    self.targets,
                    self.goal.as_str(),
                    t.max_instances
                ),
            ));
        }
        let others = self.distractor_classes().len();
        if self.distractors > others {
            return Err(self.err(
                "distractors",
                format!(
                    "{} classes asked, FloorPlan{} has {others} other object classes to place",
                    self.distractors, self.floor_plan
                ),
            ));
        }
        if self.step_limit == 0 {
            return Err(self.err("step_limit", "must be at least 1"));
        }
        if let Some((p, appliance)) = self.goal.transform() {
            if !t.has(&self.object, p) {
                return Err(self.err("object", format!("{} is not {p}", self.object)));
            }
            if !has_recep(appliance) {
                return Err(self.err(
                    "floor_plan",
                    format!("FloorPlan{} has no {appliance}", self.floor_plan),
                ));
            }
        }
        if self.goal.needs_receptacle() {
            let r = self
                .receptacle
                .as_deref()
                .ok_or_else(|| self.err("receptacle", "missing"))?;
            if !has_recep(r) {
                return Err(self.err(
                    "receptacle",
                    format!("FloorPlan{} has no {r}", self.floor_plan),
                ));
            }
            if !t.can_contain(r, &self.object) {
                return Err(self.err(
                    "receptacle",
                    format!("a {r} cannot contain a {}", self.object),
                ));
            }
            if self.lamp.is_some() {
                return Err(self.err("lamp", format!("{} takes no lamp", self.goal.as_str())));
            }
        } else {
            let l = self
                .lamp
                .as_deref()
                .ok_or_else(|| self.err("lamp", "missing"))?;
            if !t.has(l, "toggleable") || !fp.objects.iter().any(|o| o == l) {
                return Err(self.err(
                    "lamp",
                    format!("{l} is not a lamp of FloorPlan{}", self.floor_plan),
                ));
            }
            if !t.lamp_holders.iter().any(|h| has_recep(h)) {
                return Err(self.err(
                    "floor_plan",
                    format!("FloorPlan{} has nowhere to stand a lamp", self.floor_plan),
                ));
            }
            if self.receptacle.is_some() {
                return Err(self.err("receptacle", "look_at_obj_in_light takes no receptacle"));
            }
        }
        self.validate_places()?;
        // Somewhere to put the targets that does not already satisfy the goal.
        if placeable_objects(self.floor_plan, self.receptacle.as_deref())
            .iter()
            .all(|o| *o != self.object)
        {
            return Err(self.err(
                "object",
                format!(
                    "nowhere in FloorPlan{} to place a {}",
                    self.floor_plan, self.object
                ),
            ));
        }
        Ok(())
    }

    /// Forgets where targets were placed and the extra objects (for a rewrite that changes the
    /// target's class: the places were chosen for the old one).
    pub fn drop_placements(&mut self) {
        self.target_places.clear();
        self.extra_objects.clear();
    }

    /// Checks the placed targets and the extra objects: receptacle instances of the floor plan
    /// that can hold them, targets never where the goal wants them, no more placed targets than
    /// targets and at most `MAX_NUM_OF_OBJ_INSTANCES` extra objects of a class.
    fn validate_places(&self) -> Result<(), SpecError> {
        let t = alfred();
        let slots = receptacle_slots(self.floor_plan);
        let slot = |field: &'static str, at: usize| {
            slots.get(at).ok_or_else(|| {
                self.err(
                    field,
                    format!(
                        "receptacle instance {at}: FloorPlan{} has {} (0 to {})",
                        self.floor_plan,
                        slots.len(),
                        slots.len().saturating_sub(1)
                    ),
                )
            })
        };
        if self.target_places.len() > self.targets {
            return Err(self.err(
                "target_places",
                format!(
                    "{} places for {} targets",
                    self.target_places.len(),
                    self.targets
                ),
            ));
        }
        for &at in &self.target_places {
            let r = slot("target_places", at)?;
            if !t.can_contain(r, &self.object) {
                return Err(self.err(
                    "target_places",
                    format!("a {r} (instance {at}) cannot contain a {}", self.object),
                ));
            }
            if self.receptacle.as_deref() == Some(r.as_str()) {
                return Err(self.err(
                    "target_places",
                    format!("instance {at} is a {r}, where the goal wants the target"),
                ));
            }
        }
        let fp = t.floor_plan(self.floor_plan).expect("validated");
        for (i, x) in self.extra_objects.iter().enumerate() {
            if x.class == self.object
                || !t.has(&x.class, "pickupable")
                || !fp.objects.contains(&x.class)
            {
                return Err(self.err(
                    "extra_objects",
                    format!(
                        "{} is not a pickupable object of FloorPlan{} other than the target",
                        x.class, self.floor_plan
                    ),
                ));
            }
            let r = slot("extra_objects", x.at)?;
            if !t.can_contain(r, &x.class) {
                return Err(self.err(
                    "extra_objects",
                    format!("a {r} (instance {}) cannot contain a {}", x.at, x.class),
                ));
            }
            let same = self.extra_objects[..=i]
                .iter()
                .filter(|y| y.class == x.class)
                .count();
            if same > t.max_instances {
                return Err(self.err(
                    "extra_objects",
                    format!(
                        "more than {} extra {} (ALFRED's most instances of a class)",
                        t.max_instances, x.class
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The task sentence in ALFWorld's wording.
    pub fn sentence(&self) -> String {
        goal_sentence(
            self.goal,
            self.template,
            &self.object,
            self.receptacle.as_deref(),
            self.lamp.as_deref(),
        )
    }

    /// The goal as PDDL, as ALFWorld's goal library writes it.
    pub fn goal_pddl(&self) -> String {
        goal_pddl(
            self.goal,
            &self.object,
            self.receptacle.as_deref(),
            self.lamp.as_deref(),
        )
    }

    /// Builds the scene on its floor plan: the floor plan's receptacles at their poses (receptacles
    /// that share a pose share a location), the target class and the first `distractors` of the
    /// other object classes, each with its own seeded count and placements (so a change to one
    /// class moves no other), every lamp the floor plan holds on a lamp holder, the targets with
    /// places of their own moved there, the extra objects, and now and then one openable
    /// receptacle left open (never one holding a placed target).
    pub fn scene(&self) -> Result<Scene, SpecError> {
        self.validate()?;
        let t = alfred();
        let fp = t.floor_plan(self.floor_plan).expect("validated");
        let mut rng = ChaCha8Rng::seed_from_u64(mix(self.scene_seed, "ids"));
        let mut used = std::collections::HashSet::new();
        let mut fresh_id = |class: &str, rng: &mut ChaCha8Rng| loop {
            let id = entity_id(class, rng);
            if used.insert(id.clone()) {
                break id;
            }
        };
        // Receptacles: the listed ones at their poses, then the implied ones each at a spot of its own.
        let mut receps: Vec<(String, String, String)> = Vec::new(); // (type, id, loc)
        let mut locs: std::collections::HashSet<String> = std::collections::HashSet::new();
        for (ty, pose) in &fp.receptacles {
            let loc = location(*pose);
            locs.insert(loc.clone());
            receps.push((ty.clone(), fresh_id(ty, &mut rng), loc));
        }
        let mut free_loc = |rng: &mut ChaCha8Rng, horizon: i32| loop {
            let l = location([
                rng.gen_range(-15..=15),
                rng.gen_range(-15..=15),
                rng.gen_range(0..4),
                horizon,
            ]);
            if locs.insert(l.clone()) {
                break l;
            }
        };
        for (ty, n) in &fp.implied {
            for _ in 0..*n {
                let id = fresh_id(ty, &mut rng);
                let loc = free_loc(&mut rng, 30);
                receps.push((ty.clone(), id, loc));
            }
        }
        let start = free_loc(&mut rng, 30);
        let holders_for = |obj: &str, exclude: Option<&str>| -> Vec<usize> {
            (0..receps.len())
                .filter(|&i| {
                    t.can_contain(&receps[i].0, obj) && Some(receps[i].0.as_str()) != exclude
                })
                .collect()
        };
        let mut objects: Vec<(String, String, usize)> = Vec::new(); // (type, id, receptacle index)
        let mut place = |ty: &str, count: usize, holders: &[usize], objects: &mut Vec<_>| {
            let mut crng = ChaCha8Rng::seed_from_u64(mix(self.scene_seed, &format!("place/{ty}")));
            for _ in 0..count {
                let r = *holders.choose(&mut crng).expect("checked non-empty");
                let id = fresh_id(ty, &mut crng);
                objects.push((ty.to_string(), id, r));
            }
        };
        // Targets, never already where the goal wants them; those with a place of their own
        // moved there after the draw (so the draw of every other object stays as it was).
        let holders = holders_for(&self.object, self.receptacle.as_deref());
        place(&self.object, self.targets, &holders, &mut objects);
        for (o, &at) in objects.iter_mut().zip(&self.target_places) {
            o.2 = at;
        }
        let target_ids: Vec<String> = objects.iter().map(|o| o.1.clone()).collect();
        // Every lamp of the floor plan, on a lamp holder.
        let lamp_holders: Vec<usize> = (0..receps.len())
            .filter(|&i| t.lamp_holders.contains(&receps[i].0))
            .collect();
        for l in fp.objects.iter().filter(|o| t.has(o, "toggleable")) {
            if !lamp_holders.is_empty() {
                place(l, 1, &lamp_holders, &mut objects);
            }
        }
        // The other classes, each with 1 to MAX_NUM_OF_OBJ_INSTANCES instances.
        for ty in self.distractor_classes().into_iter().take(self.distractors) {
            let mut nrng = ChaCha8Rng::seed_from_u64(mix(self.scene_seed, &format!("count/{ty}")));
            let n = nrng.gen_range(1..=t.max_instances);
            place(&ty, n, &holders_for(&ty, None), &mut objects);
        }
        // The extra objects, each at its receptacle.
        let mut xrng = ChaCha8Rng::seed_from_u64(mix(self.scene_seed, "extra"));
        for x in &self.extra_objects {
            let id = fresh_id(&x.class, &mut xrng);
            objects.push((x.class.clone(), id, x.at));
        }
        // One openable receptacle in four scenes starts open.
        let mut orng = ChaCha8Rng::seed_from_u64(mix(self.scene_seed, "open"));
        let openable: Vec<usize> = (0..receps.len())
            .filter(|&i| t.is_openable(&receps[i].0))
            .collect();
        let open_at_start = (orng.gen_range(0..4) == 0)
            .then(|| openable.choose(&mut orng).copied())
            .flatten()
            .filter(|i| !self.target_places.contains(i));
        // The problem text.
        let mut otypes: Vec<&str> = objects.iter().map(|o| o.0.as_str()).collect();
        otypes.push(&self.object);
        otypes.sort();
        otypes.dedup();
        let mut rtypes: Vec<&str> = receps.iter().map(|r| r.0.as_str()).collect();
        rtypes.sort();
        rtypes.dedup();
        let mut p = String::new();
        let _ = writeln!(
            p,
            "(define (problem gen_{})\n(:domain alfred)\n(:objects\n        agent1 - agent",
            self.id.replace(|c: char| !c.is_ascii_alphanumeric(), "_")
        );
        for o in &otypes {
            let _ = writeln!(p, "        {o}Type - otype");
        }
        for r in &rtypes {
            let _ = writeln!(p, "        {r}Type - rtype");
        }
        for (_, id, _) in &objects {
            let _ = writeln!(p, "        {id} - object");
        }
        for (_, id, _) in &receps {
            let _ = writeln!(p, "        {id} - receptacle");
        }
        let _ = writeln!(p, "        {start} - location");
        let mut declared = std::collections::HashSet::new();
        for (_, _, loc) in &receps {
            if declared.insert(loc.as_str()) {
                let _ = writeln!(p, "        {loc} - location");
            }
        }
        let _ = writeln!(p, "        )\n(:init");
        for r in &rtypes {
            for o in &otypes {
                if t.can_contain(r, o) {
                    let _ = writeln!(p, "        (canContain {r}Type {o}Type)");
                }
            }
        }
        for (i, (ty, id, loc)) in receps.iter().enumerate() {
            let _ = writeln!(
                p,
                "        (receptacleType {id} {ty}Type)\n        (receptacleAtLocation {id} {loc})"
            );
            if t.is_openable(ty) {
                let _ = writeln!(p, "        (openable {id})");
            }
            if open_at_start == Some(i) {
                let _ = writeln!(p, "        (opened {id})");
            }
        }
        let _ = writeln!(p, "        (atLocation agent1 {start})");
        for (ty, id, r) in &objects {
            let _ = writeln!(p, "        (objectType {id} {ty}Type)");
            for prop in [
                "pickupable",
                "isReceptacleObject",
                "cleanable",
                "heatable",
                "coolable",
                "sliceable",
                "toggleable",
            ] {
                if t.has(ty, prop) {
                    let _ = writeln!(p, "        ({prop} {id})");
                }
            }
            let _ = writeln!(
                p,
                "        (inReceptacle {id} {})\n        (objectAtLocation {id} {})",
                receps[*r].1, receps[*r].2
            );
        }
        let _ = writeln!(
            p,
            "        )\n        (:goal\n            {}\n        )\n    )",
            self.goal_pddl()
        );
        Ok(Scene {
            pddl: p,
            sentence: self.sentence(),
            receptacle_ids: receps.into_iter().map(|r| r.1).collect(),
            target_ids,
        })
    }

    /// Builds the world.
    pub fn build(&self) -> Result<World, SpecError> {
        self.build_with_scene().map(|(w, _)| w)
    }

    /// Builds the world, with the scene it was built from.
    pub fn build_with_scene(&self) -> Result<(World, Scene), SpecError> {
        let scene = self.scene()?;
        let problem = parse_problem(&scene.pddl).map_err(|e| self.err("goal", e))?;
        let mut w =
            World::from_problem(&problem, &scene.sentence).map_err(|e| self.err("goal", e))?;
        w.hint = self.hint.clone();
        Ok((w, scene))
    }

    /// The scene as a `game.tw-pddl` file (JSON with `pddl_domain`, `grammar`, `pddl_problem`),
    /// loadable by ALFWorld's engine.
    pub fn game_json(&self) -> Result<String, SpecError> {
        let scene = self.scene()?;
        let v = serde_json::json!({
            "pddl_domain": DOMAIN_PDDL,
            "grammar": GRAMMAR_TEMPLATE.replace("{TASK}", &scene.sentence),
            "pddl_problem": scene.pddl,
            "solvable": true,
        });
        Ok(serde_json::to_string(&v).expect("serialisable"))
    }

    /// `traj_data.json` for the scene.
    pub fn traj_json(&self) -> String {
        serde_json::to_string_pretty(&serde_json::json!({
            "task_type": self.goal.as_str(),
            "pddl_params": {
                "object_target": self.object,
                "parent_target": self.receptacle.clone().unwrap_or_default(),
                "toggle_target": self.lamp.clone().unwrap_or_default(),
                "mrecep_target": "",
                "object_sliced": false,
            }
        }))
        .expect("serialisable")
    }
}
