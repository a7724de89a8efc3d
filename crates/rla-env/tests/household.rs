//! Generated tasks, perturbations, batch stepping, and bad input.

use proptest::prelude::*;
use rla_core::adapt::Direction;
use rla_core::Split;
use rla_env::household::data::alfred;
use rla_env::household::expert::{plan, GoalSpec};
use rla_env::household::perturb::{apply, check, proposals, retarget, Perturbation};
use rla_env::household::splits::{
    eval_tasks, eval_tasks_first, split_size, train_tasks, SCENE_SEEDS, VALIDATION_SCENE_SEEDS,
};
use rla_env::household::world::NOTHING_HAPPENS;
use rla_env::household::{batch::Batch, GameFile, HouseholdGame, TaskSpec};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/alfworld-traces")
        .join(name)
}

#[test]
fn evaluation_splits_have_alfworld_sizes_and_ood_is_unseen() {
    let ind = eval_tasks(Split::InDomain);
    let ood = eval_tasks(Split::Ood);
    assert_eq!((ind.len(), ood.len()), (140, 134));
    assert_eq!(eval_tasks(Split::Ood), ood, "splits are fixed");
    // As ALFWorld splits them: in-domain and training tasks on ALFRED's training floor plans, OOD
    // tasks on the floor plans of `valid_unseen` (FloorPlan10, 219, 308, 424), which training never uses.
    let unseen = &alfred().unseen_floor_plans;
    assert_eq!(unseen, &[10, 219, 308, 424]);
    for t in train_tasks(2000, 0).iter().chain(&ind) {
        assert!(!unseen.contains(&t.floor_plan), "{t:?}");
        assert!(alfred().train_floor_plans.contains(&t.floor_plan), "{t:?}");
    }
    for t in &ood {
        assert!(unseen.contains(&t.floor_plan), "{t:?}");
    }
    // all six goal types and all four rooms appear
    for split in [&ind, &ood] {
        let goals: std::collections::HashSet<_> = split.iter().map(|t| t.goal).collect();
        let rooms: std::collections::HashSet<_> = split.iter().map(|t| t.room()).collect();
        assert_eq!((goals.len(), rooms.len()), (6, 4));
    }
}

/// The validation split: 500 tasks on ALFRED's training floor plans, every goal type and room,
/// its first tasks generated alone the same as the whole split's first.
#[test]
fn the_validation_split_holds_500_tasks_on_the_training_floor_plans() {
    let first = eval_tasks_first(Split::Validation, 9);
    let val = eval_tasks(Split::Validation);
    assert_eq!((val.len(), split_size(Split::Validation)), (500, 500));
    let ids: std::collections::HashSet<_> = val.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids.len(), 500, "ids are distinct");
    for t in &val {
        assert!(alfred().train_floor_plans.contains(&t.floor_plan), "{t:?}");
        assert_eq!(t.step_limit, 60, "{t:?}");
    }
    let goals: std::collections::HashSet<_> = val.iter().map(|t| t.goal).collect();
    let rooms: std::collections::HashSet<_> = val.iter().map(|t| t.room()).collect();
    assert_eq!((goals.len(), rooms.len()), (6, 4));
    assert_eq!(first, val[..9]);
    assert_eq!(
        eval_tasks_first(Split::Validation, 900),
        val,
        "at most the split"
    );
    assert_eq!(
        eval_tasks_first(Split::InDomain, 5),
        eval_tasks(Split::InDomain)[..5]
    );
}

#[test]
fn generation_is_deterministic_and_alfworld_shaped() {
    let t = &eval_tasks(Split::InDomain)[0];
    assert_eq!(t.scene().unwrap().pddl, t.scene().unwrap().pddl);
    let w = t.build().unwrap();
    let mut env = HouseholdGame::new(Arc::new(w));
    let intro = env.reset();
    assert!(intro.starts_with("-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. Looking quickly around you, you see a "));
    assert!(intro.ends_with(&format!("Your task is to: {}.", t.sentence())));
    // The exported game file loads back into the same world.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("game.tw-pddl"), t.game_json().unwrap()).unwrap();
    std::fs::write(dir.path().join("traj_data.json"), t.traj_json()).unwrap();
    let g = GameFile::load(dir.path()).unwrap();
    let mut env2 = HouseholdGame::new(g.world.clone());
    assert_eq!(env2.reset(), intro);
    assert_eq!(env2.admissible(), env.admissible());
    let spec = GoalSpec::from_game(&g).unwrap();
    assert!(!plan(&g.world, &g.world.initial, &spec).unwrap().is_empty());
}

#[test]
fn perturbations_move_difficulty_and_record_parents() {
    let mut seen_kinds = std::collections::HashSet::new();
    // the fixed split's scenes hold every class of their floor plan: their children with fewer
    // classes can be given more again
    let tasks: Vec<TaskSpec> = eval_tasks(Split::InDomain)
        .into_iter()
        .take(30)
        .flat_map(|t| {
            let fewer = apply(&t, &Perturbation::RemoveDistractors { n: 4 }, 9).ok();
            std::iter::once(t).chain(fewer)
        })
        .collect();
    for t in &tasks {
        for dir in [Direction::Harder, Direction::Easier] {
            for (p, c) in proposals(t, dir) {
                assert_eq!(c.parent.as_deref(), Some(t.id.as_str()));
                assert_eq!(p.direction(t), dir, "{p:?}");
                assert!(check(&c).is_ok());
                seen_kinds.insert(std::mem::discriminant(&p));
            }
        }
    }
    assert!(seen_kinds.len() >= 6, "{}", seen_kinds.len());
    assert!(
        seen_kinds.contains(&std::mem::discriminant(&Perturbation::AddDistractors {
            n: 0
        }))
    );
}

#[test]
fn object_classes_are_removed_without_moving_anything() {
    let t = &eval_tasks(Split::InDomain)[3];
    let c = apply(t, &Perturbation::RemoveDistractors { n: 4 }, 1).unwrap();
    assert_eq!(c.distractors + 4, t.distractors);
    assert!(
        apply(t, &Perturbation::AddDistractors { n: 4 }, 1).is_err(),
        "the scene holds every class already"
    );
    let back = apply(&c, &Perturbation::AddDistractors { n: 4 }, 1).unwrap();
    assert_eq!(
        back.build().unwrap().objects.len(),
        t.build().unwrap().objects.len()
    );
    let (a, b) = (c.build().unwrap(), t.build().unwrap());
    let place = |w: &rla_env::household::World| -> HashMap<String, String> {
        w.objects
            .iter()
            .enumerate()
            .filter_map(|(i, o)| {
                w.initial.obj_in[i].map(|r| (o.id.clone(), w.receptacles[r as usize].id.clone()))
            })
            .collect()
    };
    let (pa, pb) = (place(&a), place(&b));
    assert!(
        pb.len() >= pa.len() + 4,
        "{} against {}",
        pb.len(),
        pa.len()
    );
    for (o, r) in &pa {
        assert_eq!(pb.get(o), Some(r));
    }
}

#[test]
fn hints_name_where_the_object_is() {
    let t = eval_tasks(Split::InDomain)
        .into_iter()
        .find(|t| t.hint.is_none())
        .unwrap();
    let c = apply(&t, &Perturbation::AddHint, 1).unwrap();
    let hint = c.hint.clone().unwrap();
    assert!(hint.starts_with(&format!("The {} is in the ", t.object.to_ascii_lowercase())));
    let mut env = HouseholdGame::new(Arc::new(c.build().unwrap()));
    assert!(env.reset().ends_with(&hint));
    // the named receptacle holds a target
    let recep = hint
        .trim_end_matches('.')
        .rsplit("in the ")
        .next()
        .unwrap()
        .to_string();
    env.step(&format!("go to {recep}"));
    env.step(&format!("open {recep}"));
    let seen = env.step(&format!("examine {recep}")).feedback;
    assert!(seen.contains(&t.object.to_ascii_lowercase()), "{seen}");
}

#[test]
fn retarget_checks_the_goal_tokens() {
    let t = eval_tasks(Split::InDomain)
        .into_iter()
        .find(|t| t.goal == rla_env::household::GoalKind::PickAndPlaceSimple)
        .unwrap();
    let e = retarget(&t, "Nonsense", "CounterTop", 1).unwrap_err();
    assert!(e.contains("object"), "{e}");
    assert!(retarget(&t, &t.object, "Toaster_Nope", 1).is_err());
}

#[test]
fn batch_stepping_equals_sequential_stepping() {
    let tasks = train_tasks(8, 1);
    let envs: Vec<HouseholdGame> = tasks
        .iter()
        .map(|t| HouseholdGame::new(Arc::new(t.build().unwrap())))
        .collect();
    let mut seq = envs.clone();
    let mut batch = Batch::new(envs);
    let obs = batch.reset();
    for (e, o) in seq.iter_mut().zip(&obs) {
        assert_eq!(&e.reset(), o);
    }
    for step in 0..10 {
        let adm = batch.admissible();
        let cmds: Vec<Option<String>> = adm
            .iter()
            .map(|a| Some(a[(step * 7) % a.len()].clone()))
            .collect();
        let out = batch.step(&cmds);
        for ((e, c), o) in seq.iter_mut().zip(&cmds).zip(out) {
            assert_eq!(Some(e.step(c.as_ref().unwrap())), o);
        }
    }
}

#[test]
fn malformed_game_files_name_the_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("game.tw-pddl");
    std::fs::write(&path, "{not json").unwrap();
    let e = GameFile::load(&path).unwrap_err().to_string();
    assert!(e.contains("game.tw-pddl") && e.contains("json"), "{e}");

    let good =
        std::fs::read_to_string(fixture("00-pick_and_place_simple-kitchen/game.tw-pddl")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&good).unwrap();
    v["pddl_problem"] = serde_json::Value::String(
        v["pddl_problem"]
            .as_str()
            .unwrap()
            .replace("(canContain", "(canHold"),
    );
    std::fs::write(&path, v.to_string()).unwrap();
    let e = GameFile::load(&path).unwrap_err().to_string();
    assert!(e.contains("pddl_problem") && e.contains("canHold"), "{e}");

    // the domain is stated and is ALFWorld's: empty, missing, another or a partial one is refused
    for (domain, says) in [
        (serde_json::json!(""), "no (define"),
        (serde_json::Value::Null, "missing"),
        (
            serde_json::json!("(define (domain blocks) (:action look))"),
            "\"blocks\"",
        ),
        (
            serde_json::json!("(define (domain alfred) (:action look))"),
            "lacks the actions inventory",
        ),
        (
            serde_json::json!("(".repeat(50_000) + &")".repeat(50_000)),
            "nested more than",
        ),
    ] {
        let mut v: serde_json::Value = serde_json::from_str(&good).unwrap();
        if domain.is_null() {
            v.as_object_mut().unwrap().remove("pddl_domain");
        } else {
            v["pddl_domain"] = domain;
        }
        std::fs::write(&path, v.to_string()).unwrap();
        let e = GameFile::load(&path).unwrap_err().to_string();
        assert!(e.contains("pddl_domain") && e.contains(says), "{e}");
    }

    let mut v: serde_json::Value = serde_json::from_str(&good).unwrap();
    v["grammar"] = serde_json::Value::String("nothing here".into());
    std::fs::write(&path, v.to_string()).unwrap();
    let e = GameFile::load(&path).unwrap_err().to_string();
    assert!(e.contains("grammar"), "{e}");

    std::fs::write(&path, &good).unwrap();
    std::fs::write(dir.path().join("traj_data.json"), "{\"task_type\": 3}").unwrap();
    let e = GameFile::load(&path).unwrap_err().to_string();
    assert!(e.contains("traj_data.json"), "{e}");

    let e = GameFile::load(dir.path().join("missing.tw-pddl"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing.tw-pddl"), "{e}");
}

#[test]
fn malformed_task_specs_name_the_field() {
    let e = serde_json::from_str::<TaskSpec>(r#"{"id":"x","floor_plan":1,"scene_seed":1,"goal":"pick_and_place_simple","object":"Apple","targets":1,"distractors":0,"step_limit":40,"colour":"red"}"#).unwrap_err();
    assert!(e.to_string().contains("colour"));
    let e = serde_json::from_str::<TaskSpec>(r#"{"id":"x","floor_plan":1,"scene_seed":1,"goal":"pick_and_dance","object":"Apple","targets":1,"distractors":0,"step_limit":40}"#).unwrap_err();
    assert!(e.to_string().contains("pick_and_dance"));
    let mut t = eval_tasks(Split::InDomain)[0].clone();
    t.floor_plan = 99;
    let e = t.build().unwrap_err();
    assert_eq!(e.field, "floor_plan");
    assert!(e.message.contains("FloorPlan99"), "{e}");
    let mut t = eval_tasks(Split::InDomain)[0].clone();
    t.object = "Spaceship".into();
    assert_eq!(t.build().unwrap_err().field, "object");
    let mut t = eval_tasks(Split::InDomain)[0].clone();
    t.targets = 0;
    assert_eq!(t.build().unwrap_err().field, "targets");
    t.targets = alfred().max_instances + 1;
    assert_eq!(t.build().unwrap_err().field, "targets");
    let mut t = eval_tasks(Split::InDomain)[0].clone();
    t.distractors = 200;
    assert_eq!(t.build().unwrap_err().field, "distractors");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn any_command_gets_an_answer_and_only_admissible_ones_change_anything(cmds in prop::collection::vec(".{0,80}", 1..20), pick in prop::collection::vec(0usize..1000, 1..20)) {
        let g = GameFile::load(fixture("03-pick_heat_then_place_in_recep-kitchen")).unwrap();
        let mut env = HouseholdGame::new(g.world.clone());
        env.reset();
        for (c, k) in cmds.iter().zip(pick.iter().cycle()) {
            // a random string…
            let adm: Vec<String> = env.admissible().to_vec();
            let before = env.state().clone();
            let s = env.step(c);
            if !adm.iter().any(|a| a == c.trim()) {
                prop_assert_eq!(s.feedback, NOTHING_HAPPENS);
                prop_assert_eq!(env.state(), &before);
            }
            // …then a random admissible command, with padding
            let adm: Vec<String> = env.admissible().to_vec();
            let a = &adm[k % adm.len()];
            let s = env.step(&format!("  {a} "));
            prop_assert!(s.feedback != NOTHING_HAPPENS || a.starts_with("go to") || a == "look" || a == "help");
            // invariants: a held object is in no receptacle and at no location
            if let Some(h) = env.state().held {
                prop_assert!(env.state().obj_in[h as usize].is_none());
                prop_assert!(env.state().obj_at[h as usize].is_none());
            }
        }
    }
}

/// Training tasks (what warm starts and runs learn from) never share a scene with the fixed
/// evaluation splits or the validation split, nor a game of the recorded ALFWorld fixtures; the
/// validation split's scenes are its own by construction: their seeds lie in a range that no
/// training draw and no other split's task reaches.
#[test]
fn training_tasks_and_the_evaluation_splits_are_disjoint() {
    let scenes = |split| -> std::collections::HashSet<(u32, u64)> {
        eval_tasks(split)
            .into_iter()
            .map(|t| (t.floor_plan, t.scene_seed))
            .collect()
    };
    let validation = scenes(Split::Validation);
    let held: std::collections::HashSet<_> = [Split::InDomain, Split::Ood]
        .into_iter()
        .flat_map(scenes)
        .collect();
    assert_eq!(
        (held.len(), validation.len()),
        (140 + 134, 500),
        "the splits' scenes are distinct"
    );
    for (fp, seed) in &validation {
        assert!(VALIDATION_SCENE_SEEDS.contains(seed), "{fp} {seed}");
    }
    for (fp, seed) in &held {
        assert!(SCENE_SEEDS.contains(seed), "{fp} {seed}");
        assert!(!validation.contains(&(*fp, *seed)));
    }
    let mut intros = std::collections::HashSet::new();
    for seed in [0u64, 17] {
        for t in train_tasks(1500, seed) {
            let scene = (t.floor_plan, t.scene_seed);
            assert!(
                !held.contains(&scene) && !validation.contains(&scene),
                "{} shares its scene with an evaluation task",
                t.id
            );
            assert!(SCENE_SEEDS.contains(&t.scene_seed), "{}", t.id);
            if intros.len() < 2000 {
                let mut env = HouseholdGame::from_task(&t).unwrap();
                intros.insert(env.reset());
            }
        }
    }
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/alfworld-traces");
    for e in std::fs::read_dir(fixtures).unwrap().flatten() {
        if e.path().join("game.tw-pddl").exists() {
            let g = GameFile::load(e.path()).unwrap();
            let intro = HouseholdGame::new(g.world.clone()).reset();
            assert!(!intros.contains(&intro), "{}", e.path().display());
        }
    }
}

/// The number an object is shown with carries no information about the target: over thousands
/// of generated scenes the chance that an object shown as `X k` is a target is the same for k = 1,
/// 2 and 3 (within 5 points), and the scenes are as dense as ALFRED's floor plans make them (no
/// sparser than the 20 fixture games' ~16 objects).
#[test]
fn the_shown_number_carries_no_information_about_the_target() {
    use rla_env::household::stats::{scene_stats, SplitStats};
    let mut tasks = train_tasks(2000, 4);
    tasks.extend(eval_tasks(Split::InDomain));
    let mut all = SplitStats::default();
    for t in &tasks {
        all.add(
            &scene_stats(&t.build().unwrap(), &t.object),
            Some(t.room().as_str()),
        );
    }
    let chance: Vec<f64> = (1..=3).map(|k| all.target_chance(k).unwrap()).collect();
    let (lo, hi) = chance
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), &c| (lo.min(c), hi.max(c)));
    assert!(
        hi - lo <= 0.05,
        "target chance by shown number: {chance:?}\n{all}"
    );
    assert!(
        all.target_chance(4).is_none(),
        "no class has more than 3 instances"
    );
    assert!(all.objects_per_scene() >= 16.0, "{all}");
    assert_eq!(all.rooms.len(), 4);
}

/// `TakeRates` counts, at every empty-handed state, each object a `take` may name, and which was
/// taken: the expert's plan takes only targets.
#[test]
fn take_rates_count_the_objects_in_view_and_the_one_taken() {
    use rla_env::household::expert::plan_commands;
    use rla_env::household::stats::TakeRates;
    let mut rates = TakeRates::default();
    let mut takes = 0;
    for t in eval_tasks(Split::InDomain).iter().take(20) {
        let w = Arc::new(t.build().unwrap());
        let g = GoalSpec::from_task(&w, t).unwrap();
        let cmds = plan_commands(&w, &w.initial, &g).unwrap();
        takes += cmds.iter().filter(|c| c.starts_with("take ")).count();
        rates.add_episode(&w, &t.object, &cmds);
    }
    let taken = |target: bool| -> usize {
        rates
            .counts
            .iter()
            .filter(|((t, _), _)| *t == target)
            .map(|(_, (_, k))| k)
            .sum()
    };
    assert_eq!(taken(true), takes, "every take of the plans is of a target");
    assert_eq!(taken(false), 0);
    let chances: usize = rates.counts.values().map(|(n, _)| n).sum();
    assert!(
        chances > takes,
        "objects in view that were not taken count as chances"
    );
    assert!(rates.rate(false, 1) == Some(0.0));
    assert!(format!("{rates}").contains("X 1"));
}

#[test]
fn sparse_training_scenes_hold_a_share_of_the_object_classes_and_stay_winnable() {
    use rla_env::household::expert::SearchExpert;
    use rla_env::household::splits::train_tasks_sparse;
    use rla_env::household::stats::scene_stats;
    let full = train_tasks(60, 7);
    assert_eq!(
        train_tasks_sparse(60, 7, 1.0),
        full,
        "a share of 1 is every class"
    );
    let sparse = train_tasks_sparse(60, 7, 0.2);
    assert_eq!(sparse, train_tasks_sparse(60, 7, 0.2), "seeded");
    let objects = |ts: &[TaskSpec]| -> f64 {
        ts.iter()
            .map(|t| {
                let w = t.build().unwrap();
                scene_stats(&w, &t.object).objects as f64
            })
            .sum::<f64>()
            / ts.len() as f64
    };
    let mut fewer = 0;
    for (s, f) in sparse.iter().zip(&full) {
        // the same task, floor plan and scene, fewer of the other classes
        assert_eq!(
            (
                &s.id,
                s.floor_plan,
                s.scene_seed,
                s.goal,
                &s.object,
                &s.receptacle
            ),
            (
                &f.id,
                f.floor_plan,
                f.scene_seed,
                f.goal,
                &f.object,
                &f.receptacle
            )
        );
        assert!(s.distractors <= f.distractors, "{s:?}");
        fewer += (s.distractors < f.distractors) as usize;
        let w = Arc::new(s.build().unwrap());
        let g = GoalSpec::from_task(&w, s).unwrap();
        assert!(
            SearchExpert::solves_within(&w, &g, s.step_limit).is_some(),
            "{s:?}"
        );
    }
    assert!(fewer > 40, "{fewer} of 60 scenes thinned");
    let (o_full, o_sparse) = (objects(&full), objects(&sparse));
    assert!(o_sparse < 0.8 * o_full, "{o_sparse} against {o_full}");
}
