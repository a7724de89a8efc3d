//! The harder rewrites that stay harder: each gives a task the searching expert wins within its
//! step limit in strictly more steps than the parent, keeps the goal's meaning, is the same for
//! the same seed, and they keep applying in a row while any applies.

use rla_core::adapt::Direction;
use rla_core::Split;
use rla_env::household::data::alfred;
use rla_env::household::expert::GoalSpec;
use rla_env::household::harder::{
    apply, harder, harder_candidates, lookalikes, searched_steps, Parent,
};
use rla_env::household::perturb::{self, Perturbation};
use rla_env::household::splits::{eval_tasks, train_tasks};
use rla_env::household::task::{receptacle_slots, Placed};
use rla_env::household::{GameFile, GoalKind, HouseholdGame, TaskSpec, World};
use std::collections::BTreeSet;
use std::sync::Arc;

/// A place task built by hand on a floor plan, on the first scene seed whose task the searching
/// expert wins.
fn hand_built(floor_plan: u32, object: &str, receptacle: &str) -> TaskSpec {
    (0..20)
        .map(|seed| {
            serde_json::from_value::<TaskSpec>(serde_json::json!({
                "id": format!("hand-{floor_plan}"),
                "floor_plan": floor_plan,
                "scene_seed": seed,
                "goal": "pick_and_place_simple",
                "object": object,
                "receptacle": receptacle,
                "targets": 1,
                "distractors": 6,
                "step_limit": 40,
            }))
            .unwrap()
        })
        .find(|t| searched_steps(t).is_ok())
        .expect("a scene the searching expert wins")
}

/// Generated tasks: training draws (goal types in turn) and the in-domain split's first.
fn generated() -> Vec<TaskSpec> {
    let mut v = train_tasks(36, 11);
    v.extend(eval_tasks(Split::InDomain).into_iter().take(24));
    v
}

/// The names of the receptacles holding an object of `class` at the start.
fn holders(w: &World, class: &str) -> BTreeSet<String> {
    let Some(t) = w.type_index(&format!("{class}Type")) else {
        return BTreeSet::new();
    };
    w.objects_of_type(t)
        .iter()
        .filter_map(|&o| w.initial.obj_in[o as usize])
        .map(|r| w.receptacles[r as usize].name.clone())
        .collect()
}

/// Checks one child against its parent: the expert wins it within its limit in more steps, it
/// records its parent, and it means what its rewrite says. Returns the rewrite's kind.
fn check_child(p: &Parent, t: &TaskSpec, pert: &Perturbation, c: &TaskSpec) -> String {
    assert_eq!(c.parent.as_deref(), Some(t.id.as_str()));
    assert_eq!(pert.direction(t), Direction::Harder);
    let n = searched_steps(c).unwrap();
    assert!(
        n > p.steps() && n <= c.step_limit,
        "{pert:?}: {n} after {}",
        p.steps()
    );
    assert_eq!(c.object, t.object, "{pert:?}");
    let w = c.build().unwrap();
    let g = GoalSpec::from_task(&w, c).unwrap();
    assert_eq!(g.kind, c.goal);
    match pert {
        Perturbation::Escalate { goal, lamp } => {
            assert_eq!(t.goal, GoalKind::PickAndPlaceSimple);
            assert_eq!(c.goal, *goal);
            assert!(
                alfred().goal_valid(*goal, c.room()),
                "{goal:?} in {:?}",
                c.room()
            );
            if let Some((able, _)) = goal.transform() {
                assert!(alfred().has(&c.object, able), "{} is not {able}", c.object);
            }
            match goal {
                GoalKind::LookAtObjInLight => {
                    assert_eq!(c.receptacle, None);
                    assert_eq!(&c.lamp, lamp);
                    assert!(alfred().has(lamp.as_deref().unwrap(), "toggleable"));
                }
                GoalKind::PickTwoObjAndPlace => {
                    assert_eq!(c.receptacle, t.receptacle);
                    assert!(c.targets >= 2 && c.targets >= t.targets);
                }
                _ => assert_eq!((&c.receptacle, c.targets), (&t.receptacle, t.targets)),
            }
            format!("escalate {}", goal.as_str())
        }
        Perturbation::HideTargets { place } => {
            assert_eq!(
                (c.goal, &c.receptacle, c.targets),
                (t.goal, &t.receptacle, t.targets)
            );
            assert!(holders(&w, &c.object).contains(place), "{place}");
            let r = w.receptacles.iter().position(|r| r.name == *place).unwrap();
            assert!(!w.initial.opened[r], "{place} starts open");
            "hide".into()
        }
        Perturbation::Lookalike { class } => {
            assert_eq!(
                (c.goal, &c.receptacle, c.targets),
                (t.goal, &t.receptacle, t.targets)
            );
            assert!(lookalikes(class, &c.object));
            let was = p.first_taken_from().unwrap();
            assert!(holders(&w, class).contains(was), "no {class} in the {was}");
            assert!(
                !holders(&w, &c.object).contains(was),
                "a target is still in the {was}"
            );
            "lookalike".into()
        }
        other => panic!("{other:?} is not a harder rewrite that stays harder"),
    }
}

#[test]
fn every_harder_rewrite_is_won_in_more_steps_and_keeps_the_goal() {
    let mut kinds = BTreeSet::new();
    let mut children = 0;
    for t in generated() {
        let p = Parent::new(&t).unwrap();
        for pert in harder_candidates(&p).into_iter().flatten() {
            if let Ok(c) = apply(&p, &pert, 1) {
                assert_eq!(c.id, format!("{}~1", t.id));
                kinds.insert(check_child(&p, &t, &pert, &c));
                // the same rewrite through perturb::apply gives the same task
                assert_eq!(perturb::apply(&t, &pert, 1).unwrap(), c);
                children += 1;
            }
        }
    }
    assert!(children >= 60, "{children}");
    for k in ["hide", "lookalike", "escalate pick_two_obj_and_place"] {
        assert!(kinds.contains(k), "{k} never applied: {kinds:?}");
    }
}

#[test]
fn hand_built_place_tasks_escalate_to_every_goal_their_room_allows() {
    // a kitchen with a sink basin, a microwave and a fridge: an apple can be cleaned, heated and
    // cooled, and a second one placed
    let t = hand_built(7, "Apple", "CounterTop");
    let p = Parent::new(&t).unwrap();
    let escalations: Vec<Perturbation> = harder_candidates(&p)
        .into_iter()
        .flatten()
        .filter(|x| matches!(x, Perturbation::Escalate { .. }))
        .collect();
    let goals: BTreeSet<GoalKind> = escalations
        .iter()
        .map(|x| match x {
            Perturbation::Escalate { goal, .. } => *goal,
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(
        goals,
        BTreeSet::from([
            GoalKind::PickCleanThenPlaceInRecep,
            GoalKind::PickHeatThenPlaceInRecep,
            GoalKind::PickCoolThenPlaceInRecep,
            GoalKind::PickTwoObjAndPlace,
        ]),
        "a kitchen has no lamp goal"
    );
    for x in &escalations {
        let c = apply(&p, x, 2).unwrap();
        check_child(&p, &t, x, &c);
        assert_eq!(apply(&p, x, 2).unwrap(), c, "deterministic");
        // an escalated goal does not escalate again: ALFWorld has no clean-and-place of two
        let q = Parent::new(&c).unwrap();
        for y in harder_candidates(&q).into_iter().flatten() {
            assert!(!matches!(y, Perturbation::Escalate { .. }), "{y:?}");
        }
        assert!(apply(
            &q,
            &Perturbation::Escalate {
                goal: GoalKind::PickTwoObjAndPlace,
                lamp: None
            },
            3
        )
        .is_err());
    }
    // a living room with a desk lamp: a cell phone can be looked at under it, on some scene
    let mut looked = 0;
    for seed in 0..6 {
        let mut t = hand_built(218, "CellPhone", "Sofa");
        t.scene_seed += seed;
        let Ok(p) = Parent::new(&t) else { continue };
        let x = Perturbation::Escalate {
            goal: GoalKind::LookAtObjInLight,
            lamp: Some("DeskLamp".into()),
        };
        assert!(harder_candidates(&p).into_iter().flatten().any(|y| y == x));
        if let Ok(c) = apply(&p, &x, 1) {
            check_child(&p, &t, &x, &c);
            looked += 1;
        }
        // a kitchen's goal types are not a living room's
        assert!(apply(
            &p,
            &Perturbation::Escalate {
                goal: GoalKind::PickHeatThenPlaceInRecep,
                lamp: None
            },
            1
        )
        .is_err());
    }
    assert!(looked > 0);
}

#[test]
fn the_choice_among_the_rewrites_that_apply_is_seeded() {
    let t = hand_built(7, "Apple", "CounterTop");
    let mut chosen = BTreeSet::new();
    for seed in 0..12 {
        let (a, ca) = harder(&t, seed, 4).unwrap();
        let (b, cb) = harder(&t, seed, 4).unwrap();
        assert_eq!((&a, &ca), (&b, &cb), "seed {seed}");
        assert_eq!(ca.id, format!("{}~4", t.id));
        chosen.insert(a.describe());
    }
    // escalations, hiding places: the seed picks among them
    assert!(chosen.len() >= 3, "{chosen:?}");
    assert!(
        chosen.iter().any(|d| d.starts_with("escalate: ")),
        "{chosen:?}"
    );
    assert!(
        chosen.iter().any(|d| d.starts_with("hide targets: ")),
        "{chosen:?}"
    );
}

#[test]
fn five_rewrites_in_a_row_stay_solvable_while_any_applies() {
    let mut longest = 0;
    let mut composed = false;
    for (i, t) in generated().into_iter().enumerate().step_by(2) {
        let mut cur = t.clone();
        let mut steps = searched_steps(&cur).unwrap();
        let mut done = Vec::new();
        for k in 1..=5 {
            match harder(&cur, (i * 10 + k) as u64, k) {
                Some((pert, c)) => {
                    let n = searched_steps(&c).unwrap();
                    assert!(n > steps && n <= c.step_limit, "{}: {pert:?}", c.id);
                    assert_eq!(c.parent.as_deref(), Some(cur.id.as_str()));
                    done.push(pert);
                    (cur, steps) = (c, n);
                }
                None => {
                    // none applies: every candidate is refused
                    let p = Parent::new(&cur).unwrap();
                    for pert in harder_candidates(&p).into_iter().flatten() {
                        assert!(apply(&p, &pert, k).is_err(), "{pert:?} applies");
                    }
                    break;
                }
            }
        }
        longest = longest.max(done.len());
        composed |= done
            .first()
            .is_some_and(|x| matches!(x, Perturbation::Escalate { .. }))
            && done.len() >= 2;
    }
    assert!(longest >= 3, "{longest}");
    assert!(composed, "no escalated goal was rewritten harder again");
}

#[test]
fn hidden_targets_are_part_of_the_scene_and_its_game_file() {
    let t = hand_built(7, "Apple", "CounterTop");
    let p = Parent::new(&t).unwrap();
    let x = harder_candidates(&p)
        .into_iter()
        .flatten()
        .find(|x| matches!(x, Perturbation::HideTargets { .. }))
        .unwrap();
    let c = apply(&p, &x, 1).unwrap();
    // written with its places, read back the same; the parent's JSON names none
    let json = serde_json::to_string(&c).unwrap();
    assert!(json.contains("\"target_places\""), "{json}");
    assert!(!serde_json::to_string(&t).unwrap().contains("target_places"));
    assert_eq!(serde_json::from_str::<TaskSpec>(&json).unwrap(), c);
    // the exported game loads into the same world
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("game.tw-pddl"), c.game_json().unwrap()).unwrap();
    std::fs::write(dir.path().join("traj_data.json"), c.traj_json()).unwrap();
    let g = GameFile::load(dir.path()).unwrap();
    let mut a = HouseholdGame::new(g.world.clone());
    let mut b = HouseholdGame::new(Arc::new(c.build().unwrap()));
    assert_eq!(a.reset(), b.reset());
    assert_eq!(a.admissible(), b.admissible());
    assert!(holders(&g.world, "Apple").contains(match &x {
        Perturbation::HideTargets { place } => place.as_str(),
        _ => unreachable!(),
    }));
}

#[test]
fn bad_places_are_named() {
    let t = hand_built(7, "Apple", "CounterTop");
    let slots = receptacle_slots(7);
    let find = |class: &str| slots.iter().position(|s| s == class).unwrap();
    let err = |c: TaskSpec| c.validate().unwrap_err().to_string();
    let mut c = t.clone();
    c.target_places = vec![slots.len()];
    assert!(err(c).contains("target_places"));
    let mut c = t.clone();
    c.target_places = vec![find("CounterTop")];
    let e = err(c);
    assert!(
        e.contains("target_places") && e.contains("where the goal wants"),
        "{e}"
    );
    let mut c = t.clone();
    c.target_places = vec![find("Fridge"), find("Fridge")];
    assert!(err(c).contains("2 places for 1 targets"));
    let mut c = t.clone();
    c.target_places = vec![find("StoveBurner")];
    let e = err(c);
    assert!(e.contains("cannot contain a Apple"), "{e}");
    let mut c = t.clone();
    c.extra_objects = vec![Placed {
        class: "Apple".into(),
        at: find("Fridge"),
    }];
    assert!(err(c).contains("extra_objects"));
    let mut c = t.clone();
    c.extra_objects = vec![
        Placed {
            class: "Knife".into(),
            at: find("CounterTop"),
        };
        alfred().max_instances + 1
    ];
    let e = err(c);
    assert!(e.contains("more than 3 extra Knife"), "{e}");
    // a rewrite to another object forgets the old one's places
    let mut c = apply(
        &Parent::new(&t).unwrap(),
        &harder_candidates(&Parent::new(&t).unwrap())
            .into_iter()
            .flatten()
            .find(|x| matches!(x, Perturbation::HideTargets { .. }))
            .unwrap(),
        1,
    )
    .unwrap();
    assert!(!c.target_places.is_empty());
    c = perturb::apply(
        &c,
        &Perturbation::SwapObject {
            object: "Egg".into(),
        },
        2,
    )
    .unwrap();
    assert!(c.target_places.is_empty());
}

#[test]
fn lookalikes_share_a_head_noun() {
    for (a, b) in [
        ("Knife", "ButterKnife"),
        ("SaltShaker", "PepperShaker"),
        ("SoapBottle", "Glassbottle"),
        ("Towel", "HandTowel"),
        ("Box", "TissueBox"),
    ] {
        assert!(lookalikes(a, b) && lookalikes(b, a), "{a} {b}");
    }
    for (a, b) in [
        ("Pot", "Potato"),
        ("CD", "Bread"),
        ("Pen", "Pencil"),
        ("Knife", "Knife"),
    ] {
        assert!(!lookalikes(a, b), "{a} {b}");
    }
}
