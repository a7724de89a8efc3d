//! ALFRED's tables used to generate scenes, from ALFWorld's own data (`data/alfred.json`, written by
//! `scripts/extract-alfred.py` from the `alfworld` wheel): ALFRED's 120 floor plans — each with its
//! room kind, the object classes it holds and its receptacle instances with the pose the agent takes
//! to reach them (receptacles that share a pose share a location) —, which receptacle classes can
//! contain which object classes (`VAL_RECEPTACLE_OBJECTS`), object properties (`VAL_ACTION_OBJECTS`),
//! the receptacles that open, `MAX_NUM_OF_OBJ_INSTANCES`, the goal types each room kind allows
//! (`GOALS_VALID`), and ALFRED's training and unseen floor plans.

use super::kinds::{GoalKind, Room};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The tables.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Alfred {
    /// Where the tables come from.
    pub source: String,
    /// The most instances of one object class in a scene (`MAX_NUM_OF_OBJ_INSTANCES`).
    pub max_instances: usize,
    /// ALFRED's training floor plans (`TRAIN_SCENE_NUMBERS`, less the unseen ones).
    pub train_floor_plans: Vec<u32>,
    /// The floor plans of ALFWorld's `valid_unseen` split.
    pub unseen_floor_plans: Vec<u32>,
    /// Every ALFRED object and receptacle class name.
    pub classes: Vec<String>,
    /// Receptacle type → object types it can contain.
    pub can_contain: BTreeMap<String, Vec<String>>,
    /// Object type → its properties (`pickupable`, `cleanable`, …).
    pub props: BTreeMap<String, Vec<String>>,
    /// Receptacle types that open and close.
    pub openable: Vec<String>,
    /// Receptacle types a lamp can stand on.
    pub lamp_holders: Vec<String>,
    /// Goal type (ALFWorld's name) → the room kinds it is generated in.
    pub goals_valid: BTreeMap<String, Vec<Room>>,
    /// Floor plan number → the floor plan.
    pub floor_plans: BTreeMap<u32, FloorPlan>,
}

/// One of ALFRED's floor plans.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FloorPlan {
    /// Its room kind.
    pub room: Room,
    /// The object classes it holds that a scene places (pickupable objects and lamps).
    pub objects: Vec<String>,
    /// Its receptacle instances: class and the pose `[x, z, rotation, horizon]` (grid units, quarter
    /// turns, degrees) from which the agent reaches it.
    pub receptacles: Vec<(String, [i32; 4])>,
    /// Receptacle classes the floor plan holds without listing their instances, with their count.
    pub implied: BTreeMap<String, usize>,
}

impl Alfred {
    /// Whether receptacle type `r` can contain object type `o`.
    pub fn can_contain(&self, r: &str, o: &str) -> bool {
        self.can_contain
            .get(r)
            .is_some_and(|v| v.iter().any(|x| x == o))
    }

    /// Whether object type `o` has property `p`.
    pub fn has(&self, o: &str, p: &str) -> bool {
        self.props.get(o).is_some_and(|v| v.iter().any(|x| x == p))
    }

    /// Whether receptacle type `r` opens.
    pub fn is_openable(&self, r: &str) -> bool {
        self.openable.iter().any(|x| x == r)
    }

    /// Whether a goal type is generated in a room kind.
    pub fn goal_valid(&self, goal: GoalKind, room: Room) -> bool {
        self.goals_valid
            .get(goal.as_str())
            .is_some_and(|v| v.contains(&room))
    }

    /// A floor plan by number.
    pub fn floor_plan(&self, n: u32) -> Option<&FloorPlan> {
        self.floor_plans.get(&n)
    }
}

impl FloorPlan {
    /// The receptacle classes of the floor plan with their instance counts, in name order.
    pub fn receptacle_counts(&self) -> Vec<(String, usize)> {
        let mut m: BTreeMap<String, usize> = self.implied.clone();
        for (c, _) in &self.receptacles {
            *m.entry(c.clone()).or_default() += 1;
        }
        m.into_iter().collect()
    }
}

/// Words every household text may hold, one a line, for a tiny model's vocabulary: every ALFRED
/// object and receptacle class as ALFWorld writes it (lower case, after a space), every instance
/// number up to the largest count of one class in a floor plan, and a line of every printable ASCII
/// character (so a word-piece vocabulary can spell any word of ALFWorld's text).
pub fn vocabulary() -> String {
    let t = alfred();
    let most = t
        .floor_plans
        .values()
        .flat_map(|f| f.receptacle_counts())
        .map(|(_, n)| n)
        .chain([t.max_instances])
        .max()
        .unwrap_or(1);
    let mut out = String::new();
    for c in &t.classes {
        out.push_str(&format!(" {}\n", c.to_ascii_lowercase()));
    }
    for n in 1..=most {
        out.push_str(&format!(" {n}\n"));
    }
    out.extend((0x21u8..0x7f).map(char::from));
    out.push('\n');
    out
}

/// The tables, parsed once.
pub fn alfred() -> &'static Alfred {
    static T: OnceLock<Alfred> = OnceLock::new();
    T.get_or_init(|| {
        serde_json::from_str(include_str!("../../data/alfred.json"))
            .expect("bundled alfred.json is valid")
    })
}

/// ALFWorld's PDDL domain (`alfred.pddl`), verbatim.
pub const DOMAIN_PDDL: &str = include_str!("../../data/alfred.pddl");
/// ALFWorld's grammar (`alfred.twl2`), with `{TASK}` where the task sentence goes.
pub const GRAMMAR_TEMPLATE: &str = include_str!("../../data/alfred.twl2");
