//! The expert solves every evaluation task and every conformance game, with shortest plans.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rla_core::Split;
use rla_env::household::expert::{plan, progress_label, GoalSpec};
use rla_env::household::splits::{eval_tasks, train_tasks};
use rla_env::household::world::Action;
use rla_env::household::{GameFile, HouseholdGame, World};
use std::collections::{HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/alfworld-traces")
}

/// Plays a plan by its command text, as a policy would.
fn play(world: Arc<World>, plan: &[Action], limit: usize) -> bool {
    let mut env = HouseholdGame::new(world.clone()).with_step_limit(limit);
    env.reset();
    let mut state = world.initial.clone();
    for a in plan {
        let mut list = Vec::new();
        world.actions(&state, &mut list);
        let cmd = list
            .iter()
            .find(|(_, b)| b == a)
            .expect("planned action admissible")
            .0
            .clone();
        world.apply(&mut state, *a);
        let s = env.step(&cmd);
        if s.done {
            return s.won;
        }
    }
    false
}

#[test]
fn expert_solves_every_conformance_game() {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert_eq!(dirs.len(), 20);
    for d in dirs {
        let g = GameFile::load(&d).unwrap();
        let spec = GoalSpec::from_game(&g).unwrap();
        let p = plan(&g.world, &g.world.initial, &spec)
            .unwrap_or_else(|| panic!("no plan for {}", d.display()));
        assert!(!p.is_empty());
        assert!(
            play(g.world.clone(), &p, 60),
            "{} not won by its plan",
            d.display()
        );
    }
}

#[test]
fn expert_solves_every_task_of_every_split() {
    let mut n = 0;
    for split in Split::EVALUATION {
        for t in eval_tasks(split) {
            let w = Arc::new(t.build().unwrap());
            let spec = GoalSpec::from_task(&w, &t).unwrap();
            let p = plan(&w, &w.initial, &spec).unwrap_or_else(|| panic!("no plan for {}", t.id));
            assert!(!p.is_empty() && p.len() <= t.step_limit);
            assert!(play(w, &p, t.step_limit), "{} not won", t.id);
            n += 1;
        }
    }
    assert_eq!(n, 140 + 134 + 500);
}

/// Breadth-first search over every state-changing command: the true shortest plan length.
fn bfs(w: &World, start: &rla_env::household::State, max: usize) -> Option<usize> {
    let mut seen = HashSet::new();
    let mut q = VecDeque::new();
    seen.insert(start.clone());
    q.push_back((start.clone(), 0usize));
    let mut acts = Vec::new();
    while let Some((s, d)) = q.pop_front() {
        if w.goal_reached(&s) {
            return Some(d);
        }
        if d == max {
            continue;
        }
        w.actions(&s, &mut acts);
        for (_, a) in acts.clone() {
            if matches!(
                a,
                Action::Look
                    | Action::Inventory
                    | Action::Help
                    | Action::ExamineRecep(_)
                    | Action::ExamineObj(_)
            ) {
                continue;
            }
            let mut n = s.clone();
            w.apply(&mut n, a);
            if seen.insert(n.clone()) {
                q.push_back((n, d + 1));
            }
        }
    }
    None
}

#[test]
fn plans_are_shortest_against_breadth_first_search() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut checked = 0;
    for mut t in train_tasks(60, 3) {
        t.distractors = 1;
        t.targets = t.targets.min(2);
        let w = t.build().unwrap();
        if w.receptacles.len() > 16 {
            continue;
        }
        let spec = GoalSpec::from_task(&w, &t).unwrap();
        // From the initial state and from a state a few random steps in.
        let mut st = w.initial.clone();
        for round in 0..2 {
            let p = plan(&w, &st, &spec).unwrap();
            if p.len() <= 7 {
                assert_eq!(
                    bfs(&w, &st, p.len()),
                    Some(p.len()),
                    "{} round {round}",
                    t.id
                );
                checked += 1;
            }
            let mut acts = Vec::new();
            for _ in 0..4 {
                w.actions(&st, &mut acts);
                let a = acts.choose(&mut rng).unwrap().1;
                w.apply(&mut st, a);
            }
        }
    }
    assert!(checked >= 15, "only {checked} plans checked");
}

#[test]
fn plans_from_random_states_win_and_the_first_step_makes_progress() {
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    for t in train_tasks(30, 11) {
        let w = t.build().unwrap();
        let spec = GoalSpec::from_task(&w, &t).unwrap();
        let mut st = w.initial.clone();
        let mut acts = Vec::new();
        for _ in 0..25 {
            w.actions(&st, &mut acts);
            let a = acts.choose(&mut rng).unwrap().1;
            w.apply(&mut st, a);
            if w.goal_reached(&st) {
                break;
            }
            let p = plan(&w, &st, &spec).expect("reachable");
            // executing the plan wins
            let mut s2 = st.clone();
            for &b in &p {
                w.apply(&mut s2, b);
            }
            assert!(w.goal_reached(&s2), "{}", t.id);
            // the plan's first step is progress; look never is
            let mut s3 = st.clone();
            w.apply(&mut s3, p[0]);
            assert!(progress_label(&w, &st, &s3, &spec));
            let mut s4 = st.clone();
            w.apply(&mut s4, Action::Look);
            assert!(!progress_label(&w, &st, &s4, &spec));
        }
    }
}

#[test]
fn the_searching_expert_solves_every_task_of_every_split_from_what_it_sees() {
    use rla_env::household::expert::SearchExpert;
    let mut tasks: Vec<_> = Split::EVALUATION.into_iter().flat_map(eval_tasks).collect();
    tasks.extend(train_tasks(200, 11));
    let (mut steps, mut optimal) = (0, 0);
    for t in &tasks {
        let w = t.build().unwrap();
        let g = GoalSpec::from_task(&w, t).unwrap();
        let mut s = SearchExpert::new(&w);
        let mut st = w.initial.clone();
        let mut won = false;
        for _ in 0..t.step_limit {
            let Some(a) = s.next(&w, &st, &g) else { break };
            w.apply(&mut st, a);
            s.observe(&w, &st, a);
            steps += 1;
            if w.goal_reached(&st) {
                won = true;
                break;
            }
        }
        assert!(
            won,
            "{} ({} in FloorPlan{}) not won by the searching expert",
            t.id,
            t.goal.as_str(),
            t.floor_plan
        );
        optimal += plan(&w, &w.initial, &g).unwrap().len();
    }
    // it must search, so it takes longer than the omniscient expert
    assert!(steps > optimal, "{steps} against {optimal}");
}
