//! Household tasks as serialisable specs, and the native generator that turns a spec into a
//! scene in ALFWorld's format (a PDDL problem over ALFWorld's domain, the task sentence in
//! ALFWorld's wording).

use super::data::{alfred, DOMAIN_PDDL, GRAMMAR_TEMPLATE};
use super::pddl::parse_problem;
use super::world::World;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// The four room kinds of ALFRED scenes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Room {
    /// kitchen
    Kitchen,
    /// bedroom
    Bedroom,
    /// bathroom
    Bathroom,
    /// living room
    Livingroom,
}

impl Room {
    /// All room kinds.
    pub const ALL: [Room; 4] = [
        Room::Kitchen,
        Room::Bedroom,
        Room::Bathroom,
        Room::Livingroom,
    ];

    /// The key in the tables (`kitchen` …).
    pub fn as_str(self) -> &'static str {
        match self {
            Room::Kitchen => "kitchen",
            Room::Bedroom => "bedroom",
            Room::Bathroom => "bathroom",
            Room::Livingroom => "livingroom",
        }
    }
}

/// The six ALFWorld task types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GoalKind {
    /// put an object in a receptacle
    PickAndPlaceSimple,
    /// hold an object where a lamp is switched on
    LookAtObjInLight,
    /// clean an object, then put it in a receptacle
    PickCleanThenPlaceInRecep,
    /// heat an object, then put it in a receptacle
    PickHeatThenPlaceInRecep,
    /// cool an object, then put it in a receptacle
    PickCoolThenPlaceInRecep,
    /// put two objects of one type in one receptacle
    PickTwoObjAndPlace,
}

impl GoalKind {
    /// All six.
    pub const ALL: [GoalKind; 6] = [
        GoalKind::PickAndPlaceSimple,
        GoalKind::LookAtObjInLight,
        GoalKind::PickCleanThenPlaceInRecep,
        GoalKind::PickHeatThenPlaceInRecep,
        GoalKind::PickCoolThenPlaceInRecep,
        GoalKind::PickTwoObjAndPlace,
    ];

    /// ALFWorld's `task_type` name.
    pub fn as_str(self) -> &'static str {
        match self {
            GoalKind::PickAndPlaceSimple => "pick_and_place_simple",
            GoalKind::LookAtObjInLight => "look_at_obj_in_light",
            GoalKind::PickCleanThenPlaceInRecep => "pick_clean_then_place_in_recep",
            GoalKind::PickHeatThenPlaceInRecep => "pick_heat_then_place_in_recep",
            GoalKind::PickCoolThenPlaceInRecep => "pick_cool_then_place_in_recep",
            GoalKind::PickTwoObjAndPlace => "pick_two_obj_and_place",
        }
    }

    /// Parses ALFWorld's `task_type` name.
    pub fn parse(s: &str) -> Option<GoalKind> {
        GoalKind::ALL.into_iter().find(|g| g.as_str() == s)
    }

    /// The object property the goal needs (`cleanable` …) and the appliance type that gives it.
    pub fn transform(self) -> Option<(&'static str, &'static str)> {
        match self {
            GoalKind::PickCleanThenPlaceInRecep => Some(("cleanable", "SinkBasin")),
            GoalKind::PickHeatThenPlaceInRecep => Some(("heatable", "Microwave")),
            GoalKind::PickCoolThenPlaceInRecep => Some(("coolable", "Fridge")),
            _ => None,
        }
    }

    /// Whether the goal names a receptacle.
    pub fn needs_receptacle(self) -> bool {
        self != GoalKind::LookAtObjInLight
    }

    /// The two sentence templates of ALFWorld's goal library.
    fn templates(self) -> [&'static str; 2] {
        match self {
            GoalKind::PickAndPlaceSimple => ["put a {o} in {r}", "put some {o} on {r}"],
            GoalKind::LookAtObjInLight => {
                ["look at {o} under the {l}", "examine the {o} with the {l}"]
            }
            GoalKind::PickCleanThenPlaceInRecep => {
                ["put a clean {o} in {r}", "clean some {o} and put it in {r}"]
            }
            GoalKind::PickHeatThenPlaceInRecep => {
                ["put a hot {o} in {r}", "heat some {o} and put it in {r}"]
            }
            GoalKind::PickCoolThenPlaceInRecep => {
                ["put a cool {o} in {r}", "cool some {o} and put it in {r}"]
            }
            GoalKind::PickTwoObjAndPlace => {
                ["put two {o} in {r}", "find two {o} and put them in {r}"]
            }
        }
    }
}

/// A household task: everything needed to rebuild its scene exactly.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskSpec {
    /// A unique identifier.
    pub id: String,
    /// Room kind.
    pub room: Room,
    /// Seed of the room's layout (its receptacles).
    pub layout_seed: u64,
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
    /// Instances of the object class in the scene.
    pub targets: usize,
    /// Other objects in the scene.
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

/// The receptacle types of a room layout, with counts, in a fixed order.
pub fn layout(room: Room, layout_seed: u64) -> Vec<(String, usize)> {
    let table = &alfred().rooms[room.as_str()];
    let mut rng = ChaCha8Rng::seed_from_u64(mix(layout_seed, room.as_str()));
    table
        .receptacles
        .iter()
        .map(|(t, [lo, hi])| (t.clone(), rng.gen_range(*lo..=*hi)))
        .filter(|(_, n)| *n > 0)
        .collect()
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

/// A built scene: the PDDL problem and the task sentence.
#[derive(Debug, Clone)]
pub struct Scene {
    /// The PDDL problem text over ALFWorld's domain.
    pub pddl: String,
    /// The task sentence (without `Your task is to: ` and the final period).
    pub sentence: String,
}

impl TaskSpec {
    fn err(&self, field: &'static str, message: impl Into<String>) -> SpecError {
        SpecError {
            id: self.id.clone(),
            field,
            message: message.into(),
        }
    }

    /// Checks the spec against ALFRED's tables and its layout.
    pub fn validate(&self) -> Result<(), SpecError> {
        let t = alfred();
        let room = &t.rooms[self.room.as_str()];
        let lay = layout(self.room, self.layout_seed);
        let has_recep = |r: &str| lay.iter().any(|(x, _)| x == r);
        if !room.objects.contains(&self.object) || !t.has(&self.object, "pickupable") {
            return Err(self.err(
                "object",
                format!(
                    "{} is not a pickupable object of a {}",
                    self.object,
                    self.room.as_str()
                ),
            ));
        }
        if self.template > 1 {
            return Err(self.err("template", "must be 0 or 1"));
        }
        if self.targets == 0 || (self.goal == GoalKind::PickTwoObjAndPlace && self.targets < 2) {
            return Err(self.err(
                "targets",
                format!("{} is too few for {}", self.targets, self.goal.as_str()),
            ));
        }
        if self.targets + self.distractors > 60 {
            return Err(self.err("distractors", "at most 60 objects in a scene"));
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
                    "layout_seed",
                    format!("this {} layout has no {appliance}", self.room.as_str()),
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
                    format!("this {} layout has no {r}", self.room.as_str()),
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
            if !t.has(l, "toggleable") || !room.objects.iter().any(|o| o == l) {
                return Err(self.err(
                    "lamp",
                    format!("{l} is not a lamp of a {}", self.room.as_str()),
                ));
            }
            if !t.lamp_holders.iter().any(|h| has_recep(h)) {
                return Err(self.err("layout_seed", "this layout has nowhere to stand a lamp"));
            }
            if self.receptacle.is_some() {
                return Err(self.err("receptacle", "look_at_obj_in_light takes no receptacle"));
            }
        }
        // Somewhere to put the targets that does not already satisfy the goal.
        if !lay.iter().any(|(r, _)| {
            Some(r.as_str()) != self.receptacle.as_deref() && t.can_contain(r, &self.object)
        }) {
            return Err(self.err(
                "object",
                format!("nowhere in this layout to place a {}", self.object),
            ));
        }
        Ok(())
    }

    /// The task sentence in ALFWorld's wording.
    pub fn sentence(&self) -> String {
        let tpl = self.goal.templates()[self.template.min(1) as usize];
        tpl.replace("{o}", &self.object.to_ascii_lowercase())
            .replace(
                "{r}",
                &self
                    .receptacle
                    .as_deref()
                    .unwrap_or("")
                    .to_ascii_lowercase(),
            )
            .replace(
                "{l}",
                &self.lamp.as_deref().unwrap_or("").to_ascii_lowercase(),
            )
    }

    /// The goal as PDDL, as ALFWorld's goal library writes it.
    pub fn goal_pddl(&self) -> String {
        let o = &self.object;
        let r = self.receptacle.as_deref().unwrap_or("");
        match self.goal {
            GoalKind::PickAndPlaceSimple => format!(
                "(and (exists (?r - receptacle) (exists (?o - object) (and (inReceptacle ?o ?r) (objectType ?o {o}Type) (receptacleType ?r {r}Type)))))"
            ),
            GoalKind::PickCleanThenPlaceInRecep | GoalKind::PickHeatThenPlaceInRecep | GoalKind::PickCoolThenPlaceInRecep => {
                let (able, is) = match self.goal {
                    GoalKind::PickCleanThenPlaceInRecep => ("cleanable", "isClean"),
                    GoalKind::PickHeatThenPlaceInRecep => ("heatable", "isHot"),
                    _ => ("coolable", "isCool"),
                };
                format!(
                    "(and (exists (?r - receptacle) (exists (?o - object) (and ({able} ?o) (objectType ?o {o}Type) (receptacleType ?r {r}Type) ({is} ?o) (inReceptacle ?o ?r)))))"
                )
            }
            GoalKind::LookAtObjInLight => {
                let l = self.lamp.as_deref().unwrap_or("");
                format!(
                    "(and (exists (?ot - object ?r - receptacle ?a - agent ?l - location) (and (objectType ?ot {l}Type) (toggleable ?ot) (isToggled ?ot) (receptacleAtLocation ?r ?l) (atLocation ?a ?l) (inReceptacle ?ot ?r))) (exists (?o - object ?a - agent) (and (objectType ?o {o}Type) (holds ?a ?o))))"
                )
            }
            GoalKind::PickTwoObjAndPlace => format!(
                "(and (exists (?r - receptacle) (exists (?o1 - object) (and (objectType ?o1 {o}Type) (receptacleType ?r {r}Type) (inReceptacle ?o1 ?r) (exists (?o2 - object) (and (not (= ?o1 ?o2)) (objectType ?o2 {o}Type) (receptacleType ?r {r}Type) (inReceptacle ?o2 ?r)))))))"
            ),
        }
    }

    /// Builds the scene: receptacles from the layout seed, targets, lamp and distractors each
    /// from their own seeded stream (so adding a distractor moves nothing else).
    pub fn scene(&self) -> Result<Scene, SpecError> {
        self.validate()?;
        let t = alfred();
        let lay = layout(self.room, self.layout_seed);
        let mut rng = ChaCha8Rng::seed_from_u64(mix(self.layout_seed, "ids"));
        // Receptacles, each at its own location.
        let mut receps: Vec<(String, String, String)> = Vec::new(); // (type, id, loc)
        let mut used = std::collections::HashSet::new();
        for (ty, n) in &lay {
            for _ in 0..*n {
                let id = loop {
                    let id = entity_id(ty, &mut rng);
                    if used.insert(id.clone()) {
                        break id;
                    }
                };
                let loc = loop {
                    let l = format!(
                        "loc_bar_{}_bar_{}_bar_{}_bar_{}",
                        loc_int(rng.gen_range(-15..=15)),
                        loc_int(rng.gen_range(-15..=15)),
                        rng.gen_range(0..4),
                        [0, 15, 30, 45, 60][rng.gen_range(0..5)]
                    );
                    if used.insert(l.clone()) {
                        break l;
                    }
                };
                receps.push((ty.clone(), id, loc));
            }
        }
        let start = loop {
            let l = format!(
                "loc_bar_{}_bar_{}_bar_{}_bar_30",
                loc_int(rng.gen_range(-15..=15)),
                loc_int(rng.gen_range(-15..=15)),
                rng.gen_range(0..4)
            );
            if used.insert(l.clone()) {
                break l;
            }
        };
        let holders_for = |obj: &str, exclude: Option<&str>| -> Vec<usize> {
            (0..receps.len())
                .filter(|&i| {
                    t.can_contain(&receps[i].0, obj) && Some(receps[i].0.as_str()) != exclude
                })
                .collect()
        };
        let mut objects: Vec<(String, String, usize)> = Vec::new(); // (type, id, receptacle index)
        let mut place = |ty: &str,
                         r: usize,
                         rng: &mut ChaCha8Rng,
                         objects: &mut Vec<(String, String, usize)>| {
            let id = loop {
                let id = entity_id(ty, rng);
                if used.insert(id.clone()) {
                    break id;
                }
            };
            objects.push((ty.to_string(), id, r));
        };
        // Targets, never already where the goal wants them.
        let mut trng =
            ChaCha8Rng::seed_from_u64(mix(self.layout_seed, &format!("targets/{}", self.object)));
        let holders = holders_for(&self.object, self.receptacle.as_deref());
        for _ in 0..self.targets {
            let r = *holders.choose(&mut trng).expect("validated");
            place(&self.object, r, &mut trng, &mut objects);
        }
        if let Some(l) = &self.lamp {
            let mut lrng = ChaCha8Rng::seed_from_u64(mix(self.layout_seed, &format!("lamp/{l}")));
            let hs: Vec<usize> = (0..receps.len())
                .filter(|&i| t.lamp_holders.contains(&receps[i].0))
                .collect();
            let r = *hs.choose(&mut lrng).expect("validated");
            place(l, r, &mut lrng, &mut objects);
        }
        // Distractors: a fixed stream of (type, receptacle) draws, of which the first n are used.
        let room = &t.rooms[self.room.as_str()];
        let kinds: Vec<&String> = room
            .objects
            .iter()
            .filter(|o| {
                **o != self.object && t.has(o, "pickupable") && !holders_for(o, None).is_empty()
            })
            .collect();
        let mut drng = ChaCha8Rng::seed_from_u64(mix(self.layout_seed, "distractors"));
        for _ in 0..self.distractors {
            let Some(ty) = kinds.choose(&mut drng) else {
                break;
            };
            let hs = holders_for(ty, None);
            let r = *hs.choose(&mut drng).expect("non-empty");
            place(ty, r, &mut drng, &mut objects);
        }
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
        for (_, _, loc) in &receps {
            let _ = writeln!(p, "        {loc} - location");
        }
        let _ = writeln!(p, "        )\n(:init");
        for r in &rtypes {
            for o in &otypes {
                if t.can_contain(r, o) {
                    let _ = writeln!(p, "        (canContain {r}Type {o}Type)");
                }
            }
        }
        for (ty, id, loc) in &receps {
            let _ = writeln!(
                p,
                "        (receptacleType {id} {ty}Type)\n        (receptacleAtLocation {id} {loc})"
            );
            if t.is_openable(ty) {
                let _ = writeln!(p, "        (openable {id})");
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
        })
    }

    /// Builds the world.
    pub fn build(&self) -> Result<World, SpecError> {
        let scene = self.scene()?;
        let problem = parse_problem(&scene.pddl).map_err(|e| self.err("goal", e))?;
        let mut w =
            World::from_problem(&problem, &scene.sentence).map_err(|e| self.err("goal", e))?;
        w.hint = self.hint.clone();
        Ok(w)
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
