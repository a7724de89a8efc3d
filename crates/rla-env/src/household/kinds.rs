//! The kinds a household task is made of: ALFRED's four room kinds and ALFWorld's six goal types.

use serde::{Deserialize, Serialize};

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
    pub(crate) fn templates(self) -> [&'static str; 2] {
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
