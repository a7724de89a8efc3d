//! The step label an agent could know (`knowable_label`), on hand-built worlds: the searching
//! expert fed every step's observation decides, not the planner that knows where everything is.

use rla_env::household::expert::{knowable_label, progress_label, GoalSpec, SearchExpert};
use rla_env::household::pddl::parse_problem;
use rla_env::household::world::{Action, State, World};
use rla_env::household::GoalKind;

/// A room with a countertop (seen on arrival), two closed cabinets, a sofa (which holds no
/// apple or mug) and the dining table the apple must go to; the apple lies in `apple_in`, a mug
/// on the countertop. ALFWorld numbers a class down its sorted identifiers: `Cabinet_bar_1` is
/// `cabinet 2`, `Cabinet_bar_2` is `cabinet 1`.
fn world(apple_in: &str) -> (World, GoalSpec) {
    let receptacles = [
        ("CounterTop_bar_1", "CounterTopType", "loc_counter", false),
        ("Cabinet_bar_1", "CabinetType", "loc_cabinet1", true),
        ("Cabinet_bar_2", "CabinetType", "loc_cabinet2", true),
        ("Sofa_bar_1", "SofaType", "loc_sofa", false),
        ("DiningTable_bar_1", "DiningTableType", "loc_table", false),
    ];
    let loc = |id: &str| receptacles.iter().find(|r| r.0 == id).unwrap().2;
    let mut p =
        String::from("(define (problem hand)\n(:domain alfred)\n(:objects\n agent1 - agent\n");
    for t in ["AppleType", "MugType"] {
        p += &format!(" {t} - otype\n");
    }
    for t in [
        "CounterTopType",
        "CabinetType",
        "SofaType",
        "DiningTableType",
    ] {
        p += &format!(" {t} - rtype\n");
    }
    p += " Apple_bar_1 - object\n Mug_bar_1 - object\n";
    for r in &receptacles {
        p += &format!(" {} - receptacle\n", r.0);
    }
    p += " loc_start - location\n";
    for r in &receptacles {
        p += &format!(" {} - location\n", r.2);
    }
    p += ")\n(:init\n";
    for rt in ["CounterTopType", "CabinetType", "DiningTableType"] {
        for ot in ["AppleType", "MugType"] {
            p += &format!(" (canContain {rt} {ot})\n");
        }
    }
    for r in &receptacles {
        p += &format!(
            " (receptacleType {} {})\n (receptacleAtLocation {} {})\n",
            r.0, r.1, r.0, r.2
        );
        if r.3 {
            p += &format!(" (openable {})\n", r.0);
        }
    }
    p += " (atLocation agent1 loc_start)\n";
    for (o, t, at) in [
        ("Apple_bar_1", "AppleType", apple_in),
        ("Mug_bar_1", "MugType", "CounterTop_bar_1"),
    ] {
        p += &format!(
            " (objectType {o} {t})\n (pickupable {o})\n (inReceptacle {o} {at})\n (objectAtLocation {o} {})\n",
            loc(at)
        );
    }
    p +=
        ")\n(:goal (and (exists (?r - receptacle) (exists (?o - object) (and (inReceptacle ?o ?r) \
          (objectType ?o AppleType) (receptacleType ?r DiningTableType))))))\n)\n";
    let problem = parse_problem(&p).unwrap();
    let w = World::from_problem(&problem, "put an apple in diningtable").unwrap();
    let g = GoalSpec::from_names(
        &w,
        GoalKind::PickAndPlaceSimple,
        "Apple",
        Some("DiningTable"),
        None,
    )
    .unwrap();
    (w, g)
}

/// An episode in progress: the state, and the searching expert fed every step so far.
struct Walk<'a> {
    w: &'a World,
    g: GoalSpec,
    st: State,
    known: SearchExpert,
}

impl<'a> Walk<'a> {
    fn new(w: &'a World, g: GoalSpec) -> Self {
        Walk {
            w,
            g,
            st: w.initial.clone(),
            known: SearchExpert::new(w),
        }
    }

    /// Plays the command; returns (the knowable label, the planner's label).
    fn step(&mut self, cmd: &str) -> (bool, bool) {
        let mut list = Vec::new();
        self.w.actions(&self.st, &mut list);
        let a = list
            .iter()
            .find(|(c, _)| c == cmd)
            .unwrap_or_else(|| panic!("{cmd:?} is not admissible: {list:?}"))
            .1;
        let (before, known_before) = (self.st.clone(), self.known.clone());
        self.w.apply(&mut self.st, a);
        self.known.observe(self.w, &self.st, a);
        let knowable = knowable_label(
            self.w,
            &self.g,
            (&before, &known_before),
            Some(a),
            (&self.st, &self.known),
        );
        let planner = progress_label(self.w, &before, &self.st, &self.g);
        (knowable, planner)
    }
}

#[test]
fn searching_an_unseen_receptacle_while_the_object_is_unseen_is_good() {
    let (w, g) = world("Cabinet_bar_1");
    let mut walk = Walk::new(&w, g);
    // the countertop is the searcher's first place; the planner, which knows the apple is in
    // cabinet 2, calls it a wasted step
    assert_eq!(walk.step("go to countertop 1"), (true, false));
    // a cabinet is as good a place to look as any: the first, where the apple is not, too
    assert_eq!(walk.step("go to cabinet 1"), (true, false));
    assert_eq!(walk.step("open cabinet 1"), (true, false));
    // both labels agree once the search reaches the apple's cabinet
    assert_eq!(walk.step("go to cabinet 2"), (true, true));
    assert_eq!(walk.step("open cabinet 2"), (true, true));
}

#[test]
fn walking_back_and_forth_is_bad() {
    let (w, g) = world("Cabinet_bar_1");
    let mut walk = Walk::new(&w, g);
    assert!(walk.step("go to countertop 1").0);
    // the sofa holds no apple, and the countertop has been seen
    for cmd in ["go to sofa 1", "go to countertop 1", "go to sofa 1"] {
        assert_eq!(walk.step(cmd), (false, false), "{cmd}");
    }
}

#[test]
fn taking_the_seen_target_is_good_and_a_step_that_lengthens_the_plan_is_bad() {
    let (w, g) = world("CounterTop_bar_1");
    let mut walk = Walk::new(&w, g);
    assert_eq!(walk.step("go to countertop 1"), (true, true));
    // with the apple in view, the mug in hand would have to be put down again
    let (w2, g2) = world("CounterTop_bar_1");
    let mut detour = Walk::new(&w2, g2);
    detour.step("go to countertop 1");
    assert_eq!(detour.step("take mug 1 from countertop 1"), (false, false));
    // the apple seen, taking it is what the searcher would do
    assert_eq!(walk.step("take apple 1 from countertop 1"), (true, true));
    // putting it back where it was makes the remaining plan longer
    let before = walk.known.steps_to_goal(&w, &walk.st, &g, 50).unwrap();
    assert_eq!(walk.step("move apple 1 to countertop 1"), (false, false));
    let after = walk.known.steps_to_goal(&w, &walk.st, &g, 50).unwrap();
    assert!(after > before, "{before} → {after}");
    assert!(walk.step("take apple 1 from countertop 1").0);
    assert!(walk.step("go to diningtable 1").0);
    assert_eq!(walk.step("move apple 1 to diningtable 1"), (true, true));
    assert_eq!(walk.known.steps_to_goal(&w, &walk.st, &g, 50), Some(0));
}

#[test]
fn the_searchers_choices_are_every_unseen_place_that_could_hold_the_object() {
    let (w, g) = world("Cabinet_bar_1");
    let s = SearchExpert::new(&w);
    let mut names: Vec<String> = s
        .choices(&w, &w.initial, &g)
        .into_iter()
        .map(|a| w.command(&w.initial, a).unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "go to cabinet 1",
            "go to cabinet 2",
            "go to countertop 1",
            "go to diningtable 1"
        ]
    );
    // its own next step is the first of them in its order: open places before closed ones
    assert_eq!(
        s.next(&w, &w.initial, &g),
        Some(Action::Goto(
            w.receptacles
                .iter()
                .position(|r| r.name == "countertop 1")
                .unwrap() as u16
        ))
    );
}
