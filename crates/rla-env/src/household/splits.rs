//! Task sampling and the fixed evaluation splits.
//!
//! Mirroring ALFWorld's sizes, there are 140 in-domain and 134 out-of-distribution evaluation
//! tasks; the validation split, for choosing budgets and settings, holds 500. As ALFWorld splits
//! them, in-domain (`valid_seen`), validation and training tasks are drawn on ALFRED's training
//! floor plans, and OOD tasks (`valid_unseen`) on the floor plans no training task uses. A scene
//! is a floor plan and a seed; training never draws a scene of an evaluation or validation task:
//! the validation split's scene seeds lie in a range of their own
//! ([`VALIDATION_SCENE_SEEDS`]) that no other split and no training draw reaches, and training
//! skips the in-domain split's scenes.

use super::data::alfred;
use super::expert::{GoalSpec, SearchExpert};
use super::task::{layout, mix, placeable_objects, GoalKind, TaskSpec};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use rla_core::Split;

/// Size of the in-domain evaluation split.
pub const IN_DOMAIN_SIZE: usize = 140;
/// Size of the OOD evaluation split.
pub const OOD_SIZE: usize = 134;
/// Size of the validation split.
pub const VALIDATION_SIZE: usize = 500;
/// The scene seeds of training draws and of the in-domain and OOD splits.
pub const SCENE_SEEDS: std::ops::Range<u64> = 0..1 << 40;
/// The scene seeds of the validation split alone: no training draw and no other split's task
/// lies in one of them, so no validation task shares a scene with any of theirs.
pub const VALIDATION_SCENE_SEEDS: std::ops::Range<u64> = 1 << 40..1 << 41;
// the two ranges do not meet (checked as the crate compiles)
const _: () = assert!(SCENE_SEEDS.end <= VALIDATION_SCENE_SEEDS.start);
/// Step limit in training (the reference configuration).
pub const TRAIN_STEP_LIMIT: usize = 40;
/// Step limit in evaluation (the reference configuration).
pub const EVAL_STEP_LIMIT: usize = 60;

/// The floor plans a split draws on: ALFWorld's unseen ones for OOD, ALFRED's training ones
/// otherwise.
pub fn floor_plans(split: Split) -> &'static [u32] {
    let t = alfred();
    match split {
        Split::Ood => &t.unseen_floor_plans,
        _ => &t.train_floor_plans,
    }
}

/// The scene seeds a split draws from: [`VALIDATION_SCENE_SEEDS`] for validation, the others'
/// [`SCENE_SEEDS`].
pub fn scene_seeds(split: Split) -> std::ops::Range<u64> {
    match split {
        Split::Validation => VALIDATION_SCENE_SEEDS,
        _ => SCENE_SEEDS,
    }
}

/// An (object, receptacle, lamp) choice of a goal.
pub type Candidate = (String, Option<String>, Option<String>);

/// The (object, receptacle, lamp) choices a floor plan offers for a goal (worked out once).
pub fn candidates(floor_plan: u32, goal: GoalKind) -> &'static [Candidate] {
    type Table = std::collections::HashMap<(u32, GoalKind), Vec<Candidate>>;
    static ALL: std::sync::OnceLock<Table> = std::sync::OnceLock::new();
    ALL.get_or_init(|| {
        let mut m = Table::new();
        for &n in alfred().floor_plans.keys() {
            for g in GoalKind::ALL {
                m.insert((n, g), candidates_of(n, g));
            }
        }
        m
    })
    .get(&(floor_plan, goal))
    .map(Vec::as_slice)
    .unwrap_or(&[])
}

fn candidates_of(floor_plan: u32, goal: GoalKind) -> Vec<Candidate> {
    let t = alfred();
    let Some(fp) = t.floor_plan(floor_plan) else {
        return Vec::new();
    };
    if !t.goal_valid(goal, fp.room) {
        return Vec::new();
    }
    let lay = layout(floor_plan);
    let mut out = Vec::new();
    for o in placeable_objects(floor_plan, None) {
        let mut push = |r: Option<&String>, l: Option<&String>| {
            let spec = TaskSpec {
                id: String::new(),
                floor_plan,
                scene_seed: 0,
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
                target_places: Vec::new(),
                extra_objects: Vec::new(),
            };
            if spec.validate().is_ok() {
                out.push((o.clone(), r.cloned(), l.cloned()));
            }
        };
        if goal.needs_receptacle() {
            for (r, _) in &lay {
                push(Some(r), None);
            }
        } else {
            for l in fp.objects.iter().filter(|l| t.has(l, "toggleable")) {
                push(None, Some(l));
            }
        }
    }
    out
}

/// Samples one task of a goal type for a split: a floor plan of the split whose room kind ALFRED
/// generates the goal in, one of its (object, receptacle or lamp) choices, the target's count drawn
/// as any class's (at least two for pick-two), and every other object class of the floor plan;
/// its scene seed from the split's range ([`scene_seeds`]).
pub fn sample_task(rng: &mut ChaCha8Rng, split: Split, goal: GoalKind, id: String) -> TaskSpec {
    let plans: Vec<u32> = floor_plans(split)
        .iter()
        .copied()
        .filter(|&n| !candidates(n, goal).is_empty())
        .collect();
    let min_targets = if goal == GoalKind::PickTwoObjAndPlace {
        2
    } else {
        1
    };
    loop {
        let floor_plan = *plans
            .choose(rng)
            .expect("every goal has a floor plan in every split");
        let (object, receptacle, lamp) = candidates(floor_plan, goal)
            .choose(rng)
            .cloned()
            .expect("non-empty");
        let mut t = TaskSpec {
            id: id.clone(),
            floor_plan,
            scene_seed: rng.gen_range(scene_seeds(split)),
            goal,
            object,
            receptacle,
            lamp,
            targets: rng.gen_range(min_targets..=alfred().max_instances),
            distractors: 0,
            hint: None,
            template: rng.gen_range(0..2),
            step_limit: if split == Split::Train {
                TRAIN_STEP_LIMIT
            } else {
                EVAL_STEP_LIMIT
            },
            parent: None,
            target_places: Vec::new(),
            extra_objects: Vec::new(),
        };
        t.distractors = placeable_objects(floor_plan, None)
            .iter()
            .filter(|o| **o != t.object)
            .count();
        if searcher_wins(&t) {
            return t;
        }
    }
}

/// The generator's smoke test, as ALFWorld keeps only games its expert wins: the searching expert,
/// which sees only what the agent sees, wins the task within its step limit (in kitchens with
/// twenty-odd cabinets a lone target in the last one searched can be out of reach).
fn searcher_wins(t: &TaskSpec) -> bool {
    let Ok(w) = t.build() else {
        return false;
    };
    GoalSpec::from_task(&w, t)
        .is_ok_and(|g| SearchExpert::solves_within(&w, &g, t.step_limit).is_some())
}

/// The scenes (floor plan, scene seed) of the fixed in-domain and OOD splits, which training
/// tasks never use (the validation split's seeds are out of training's range).
fn evaluation_scenes() -> &'static std::collections::HashSet<(u32, u64)> {
    static SCENES: std::sync::OnceLock<std::collections::HashSet<(u32, u64)>> =
        std::sync::OnceLock::new();
    SCENES.get_or_init(|| {
        [Split::InDomain, Split::Ood]
            .into_iter()
            .flat_map(eval_tasks)
            .map(|t| (t.floor_plan, t.scene_seed))
            .collect()
    })
}

/// `n` training tasks, goal types in turn, from a seed. None shares its scene (floor plan and seed)
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
            if !held.contains(&(t.floor_plan, t.scene_seed)) {
                break t;
            }
        })
        .collect()
}

/// [`train_tasks`] in scenes that hold a share of the floor plan's other object classes, drawn
/// for each task uniformly between `min_share` and 1 (ALFWorld's own games hold about half the
/// objects of ALFRED's full scenes: 16.4 a scene against 34.0). The goal, the floor plan, the
/// target's placements and the receptacles are those of the full scene; a scene the searching
/// expert could not win within its limit keeps every class. `min_share = 1` is [`train_tasks`].
pub fn train_tasks_sparse(n: usize, seed: u64, min_share: f64) -> Vec<TaskSpec> {
    let mut tasks = train_tasks(n, seed);
    if min_share < 1.0 {
        for t in &mut tasks {
            let mut r = ChaCha8Rng::seed_from_u64(mix(t.scene_seed, "object-share"));
            let share = r.gen_range(min_share.max(0.0)..=1.0);
            let full = t.distractors;
            t.distractors = (share * full as f64).round() as usize;
            if !searcher_wins(t) {
                t.distractors = full;
            }
        }
    }
    tasks
}

/// How many tasks [`eval_tasks`] gives for a split (140 in-domain, 134 OOD, 500 validation;
/// 140 of the training distribution for `Split::Train`).
pub fn split_size(split: Split) -> usize {
    match split {
        Split::InDomain | Split::Train => IN_DOMAIN_SIZE,
        Split::Ood => OOD_SIZE,
        Split::Validation => VALIDATION_SIZE,
    }
}

/// The fixed evaluation split: 140 in-domain or 134 OOD tasks (or 500 validation tasks), the
/// same on every machine; worked out once in a process.
pub fn eval_tasks(split: Split) -> Vec<TaskSpec> {
    eval_tasks_first(split, split_size(split))
}

/// The first `n` tasks of [`eval_tasks`] (all of them when `n` is larger). The validation split's
/// tasks are drawn each from a stream of its own, so its first `n` are generated alone, in
/// parallel (and kept once all are asked for); the other splits are drawn one after another
/// from one stream, worked out whole once in a process.
pub fn eval_tasks_first(split: Split, n: usize) -> Vec<TaskSpec> {
    use std::sync::OnceLock;
    static WHOLE: [OnceLock<Vec<TaskSpec>>; 4] = [
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
    ];
    let n = n.min(split_size(split));
    let (slot, tag) = match split {
        Split::InDomain => (&WHOLE[0], "in_domain"),
        Split::Ood => (&WHOLE[1], "ood"),
        Split::Train => (&WHOLE[2], "train_eval"),
        Split::Validation => {
            if let Some(all) = WHOLE[3].get() {
                return all[..n].to_vec();
            }
            let tasks = validation_tasks(n);
            if n == VALIDATION_SIZE {
                let _ = WHOLE[3].set(tasks.clone());
            }
            return tasks;
        }
    };
    slot.get_or_init(|| {
        let mut rng = ChaCha8Rng::seed_from_u64(mix(2602_02488, tag));
        (0..split_size(split))
            .map(|i| {
                sample_task(
                    &mut rng,
                    split,
                    GoalKind::ALL[i % 6],
                    format!("{tag}-{i:03}"),
                )
            })
            .collect()
    })[..n]
        .to_vec()
}

/// Validation task `i`, from a stream of its own (goal types in turn), its scene seed in
/// [`VALIDATION_SCENE_SEEDS`].
fn validation_task(i: usize) -> TaskSpec {
    let mut rng = ChaCha8Rng::seed_from_u64(mix(2602_02488, &format!("validation/{i}")));
    sample_task(
        &mut rng,
        Split::Validation,
        GoalKind::ALL[i % 6],
        format!("validation-{i:03}"),
    )
}

/// The first `n` validation tasks, generated in parallel.
fn validation_tasks(n: usize) -> Vec<TaskSpec> {
    use rayon::prelude::*;
    (0..n).into_par_iter().map(validation_task).collect()
}
