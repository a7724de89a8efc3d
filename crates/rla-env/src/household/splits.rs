//! Task sampling and the fixed evaluation splits.
//!
//! Mirroring ALFWorld's sizes, there are 140 in-domain and 134 out-of-distribution evaluation
//! tasks. In-domain tasks come from the same distribution as training tasks. OOD tasks use room
//! layouts from a seed range training never draws from, and (goal, object, receptacle or lamp)
//! combinations that are held out of training altogether.

use super::data::alfred;
use super::task::{layout, mix, GoalKind, Room, TaskSpec};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Which distribution a task comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Split {
    /// Training tasks.
    Train,
    /// Evaluation, same distribution as training.
    InDomain,
    /// Evaluation, unseen layouts and unseen combinations.
    Ood,
    /// Validation: the in-domain distribution drawn with a seed of its own, for tuning
    /// settings; the fixed splits above are the ones reported.
    Validation,
}

/// Layout seeds of training and in-domain tasks.
pub const SEEN_LAYOUTS: std::ops::Range<u64> = 0..100_000;
/// Layout seeds of OOD tasks.
pub const UNSEEN_LAYOUTS: std::ops::Range<u64> = 1_000_000..1_100_000;
/// Size of the in-domain evaluation split.
pub const IN_DOMAIN_SIZE: usize = 140;
/// Size of the OOD evaluation split.
pub const OOD_SIZE: usize = 134;
/// Size of the validation split.
pub const VALIDATION_SIZE: usize = 140;
/// Step limit in training (the reference configuration).
pub const TRAIN_STEP_LIMIT: usize = 40;
/// Step limit in evaluation (the reference configuration).
pub const EVAL_STEP_LIMIT: usize = 60;

/// Whether a (goal, object, receptacle-or-lamp) combination is held out for OOD evaluation
/// (about one in four).
pub fn is_held_out(goal: GoalKind, object: &str, target: &str) -> bool {
    mix(0, &format!("combo/{}/{object}/{target}", goal.as_str())).is_multiple_of(4)
}

/// The (object, receptacle, lamp) choices a layout offers for a goal, filtered for a split.
pub fn candidates(
    room: Room,
    layout_seed: u64,
    goal: GoalKind,
    split: Split,
) -> Vec<(String, Option<String>, Option<String>)> {
    let t = alfred();
    let lay = layout(room, layout_seed);
    let room_objects = &t.rooms[room.as_str()].objects;
    let mut out = Vec::new();
    for o in room_objects.iter().filter(|o| t.has(o, "pickupable")) {
        let mut push = |r: Option<&String>, l: Option<&String>| {
            let spec = TaskSpec {
                id: String::new(),
                room,
                layout_seed,
                goal,
                object: o.clone(),
                receptacle: r.cloned(),
                lamp: l.cloned(),
                targets: if goal == GoalKind::PickTwoObjAndPlace {
                    2
                } else {
                    1
                },
                distractors: 0,
                hint: None,
                template: 0,
                step_limit: 1,
                parent: None,
            };
            let target = r.or(l).map(String::as_str).unwrap_or("");
            let held = is_held_out(goal, o, target);
            let wanted = match split {
                Split::Ood => held,
                _ => !held,
            };
            if wanted && spec.validate().is_ok() {
                out.push((o.clone(), r.cloned(), l.cloned()));
            }
        };
        if goal.needs_receptacle() {
            for (r, _) in &lay {
                push(Some(r), None);
            }
        } else {
            for l in room_objects.iter().filter(|l| t.has(l, "toggleable")) {
                push(None, Some(l));
            }
        }
    }
    out
}

/// Samples one task of a goal type for a split.
pub fn sample_task(rng: &mut ChaCha8Rng, split: Split, goal: GoalKind, id: String) -> TaskSpec {
    let layouts = match split {
        Split::Ood => UNSEEN_LAYOUTS,
        _ => SEEN_LAYOUTS,
    };
    loop {
        let room = *Room::ALL.choose(rng).expect("non-empty");
        let layout_seed = rng.gen_range(layouts.clone());
        let cands = candidates(room, layout_seed, goal, split);
        let Some((object, receptacle, lamp)) = cands.choose(rng).cloned() else {
            continue;
        };
        let min_targets = if goal == GoalKind::PickTwoObjAndPlace {
            2
        } else {
            1
        };
        return TaskSpec {
            id,
            room,
            layout_seed,
            goal,
            object,
            receptacle,
            lamp,
            targets: rng.gen_range(min_targets..=3),
            distractors: rng.gen_range(4..=12),
            hint: None,
            template: rng.gen_range(0..2),
            step_limit: if split == Split::Train {
                TRAIN_STEP_LIMIT
            } else {
                EVAL_STEP_LIMIT
            },
            parent: None,
        };
    }
}

/// The scenes (room, layout seed) of the fixed evaluation splits and the validation split, which
/// training tasks never use.
fn evaluation_scenes() -> &'static std::collections::HashSet<(Room, u64)> {
    static SCENES: std::sync::OnceLock<std::collections::HashSet<(Room, u64)>> =
        std::sync::OnceLock::new();
    SCENES.get_or_init(|| {
        [Split::InDomain, Split::Ood, Split::Validation]
            .into_iter()
            .flat_map(eval_tasks)
            .map(|t| (t.room, t.layout_seed))
            .collect()
    })
}

/// `n` training tasks, goal types in turn, from a seed. None shares its scene (room and layout)
/// with a task of the evaluation or validation splits.
pub fn train_tasks(n: usize, seed: u64) -> Vec<TaskSpec> {
    let mut rng = ChaCha8Rng::seed_from_u64(mix(seed, "train"));
    let held = evaluation_scenes();
    (0..n)
        .map(|i| loop {
            let t = sample_task(
                &mut rng,
                Split::Train,
                GoalKind::ALL[i % 6],
                format!("train-{seed}-{i}"),
            );
            if !held.contains(&(t.room, t.layout_seed)) {
                break t;
            }
        })
        .collect()
}

/// The fixed evaluation split: 140 in-domain or 134 OOD tasks (or 140 validation tasks), the
/// same on every machine.
pub fn eval_tasks(split: Split) -> Vec<TaskSpec> {
    let (n, tag) = match split {
        Split::InDomain => (IN_DOMAIN_SIZE, "in_domain"),
        Split::Ood => (OOD_SIZE, "ood"),
        Split::Train => (IN_DOMAIN_SIZE, "train_eval"),
        Split::Validation => (VALIDATION_SIZE, "validation"),
    };
    let mut rng = ChaCha8Rng::seed_from_u64(mix(2602_02488, tag));
    (0..n)
        .map(|i| {
            sample_task(
                &mut rng,
                split,
                GoalKind::ALL[i % 6],
                format!("{tag}-{i:03}"),
            )
        })
        .collect()
}
