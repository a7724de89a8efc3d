//! The expert: a planner that finds a shortest plan to the goal from any state, and the oracle
//! step labels derived from it; the searching expert, which acts only on what the agent has
//! seen, and the step labels an agent could know derived from it ([`knowable_label`]).
//!
//! Every command costs one step and every receptacle is one `go to` away, so a shortest plan is
//! a short sequence of phases — put down what the hands hold if it is in the way, fetch a target
//! object (go, open, take), transform it (go to the appliance, heat / cool / clean), bring it to
//! a goal receptacle (go, open, move) or to the lamp (go, use). The planner enumerates every
//! choice of receptacle to put things down in, target instance, appliance and goal receptacle,
//! simulates each phase sequence on the state, and keeps the shortest. Plans are checked against
//! breadth-first search in the tests.

use super::game::{GameFile, TrajData};
use super::task::{GoalKind, TaskSpec};
use super::world::{prop, state, Action, State, World};

/// The goal in the planner's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GoalSpec {
    /// The task type.
    pub kind: GoalKind,
    /// Object type index.
    pub object: u16,
    /// Receptacle type index (all but `look_at_obj_in_light`).
    pub receptacle: Option<u16>,
    /// Lamp type index (`look_at_obj_in_light`).
    pub lamp: Option<u16>,
}

impl GoalSpec {
    /// From class names (`Apple`, `CounterTop`, `DeskLamp`).
    pub fn from_names(
        world: &World,
        kind: GoalKind,
        object: &str,
        receptacle: Option<&str>,
        lamp: Option<&str>,
    ) -> Result<GoalSpec, String> {
        let ty = |n: &str| {
            world
                .type_index(&format!("{n}Type"))
                .ok_or_else(|| format!("the scene has no type {n}Type"))
        };
        let spec = GoalSpec {
            kind,
            object: ty(object)?,
            receptacle: receptacle.filter(|s| !s.is_empty()).map(ty).transpose()?,
            lamp: lamp.filter(|s| !s.is_empty()).map(ty).transpose()?,
        };
        if kind == GoalKind::LookAtObjInLight && spec.lamp.is_none() {
            return Err("look_at_obj_in_light needs a lamp type".into());
        }
        if kind != GoalKind::LookAtObjInLight && spec.receptacle.is_none() {
            return Err(format!("{} needs a receptacle type", kind.as_str()));
        }
        Ok(spec)
    }

    /// From a task spec.
    pub fn from_task(world: &World, t: &TaskSpec) -> Result<GoalSpec, String> {
        GoalSpec::from_names(
            world,
            t.goal,
            &t.object,
            t.receptacle.as_deref(),
            t.lamp.as_deref(),
        )
    }

    /// From ALFWorld's `traj_data.json`.
    pub fn from_traj(world: &World, t: &TrajData) -> Result<GoalSpec, String> {
        let kind = GoalKind::parse(&t.task_type)
            .ok_or_else(|| format!("unknown task_type {}", t.task_type))?;
        let p = &t.pddl_params;
        GoalSpec::from_names(
            world,
            kind,
            &p.object_target,
            Some(&p.parent_target),
            Some(&p.toggle_target),
        )
    }

    /// From a loaded game file (needs its `traj_data.json`).
    pub fn from_game(game: &GameFile) -> Result<GoalSpec, String> {
        let t = game
            .traj
            .as_ref()
            .ok_or("the game has no traj_data.json beside it")?;
        GoalSpec::from_traj(&game.world, t)
    }
}

/// A plan being built on a copy of the state.
struct Sim<'a> {
    w: &'a World,
    st: State,
    plan: Vec<Action>,
}

impl<'a> Sim<'a> {
    fn new(w: &'a World, st: &State) -> Self {
        Sim {
            w,
            st: st.clone(),
            plan: Vec::with_capacity(16),
        }
    }

    fn act(&mut self, a: Action) {
        self.w.apply(&mut self.st, a);
        self.plan.push(a);
    }

    fn goto(&mut self, r: u16) {
        if self.st.agent_loc != self.w.receptacles[r as usize].loc {
            self.act(Action::Goto(r));
        }
    }

    fn open(&mut self, r: u16) {
        if self.w.receptacles[r as usize].openable && !self.st.opened[r as usize] {
            self.act(Action::Open(r));
        }
    }

    fn take(&mut self, o: u16) -> bool {
        if self.st.held == Some(o) {
            return true;
        }
        let Some(r) = self.st.obj_in[o as usize] else {
            return false;
        };
        if self.st.held.is_some() || self.w.objects[o as usize].props & prop::PICKUPABLE == 0 {
            return false;
        }
        self.goto(r);
        self.open(r);
        self.act(Action::Take(o, r));
        true
    }

    fn put(&mut self, r: u16) -> bool {
        let Some(h) = self.st.held else { return false };
        let Some(ot) = self.w.objects[h as usize].otype else {
            return false;
        };
        if !self.w.can_contain(self.w.receptacles[r as usize].rtype, ot) {
            return false;
        }
        self.goto(r);
        self.open(r);
        self.act(Action::Move(h, r));
        true
    }
}

fn transform_flag(kind: GoalKind) -> Option<u8> {
    match kind {
        GoalKind::PickCleanThenPlaceInRecep => Some(state::CLEAN),
        GoalKind::PickHeatThenPlaceInRecep => Some(state::HOT),
        GoalKind::PickCoolThenPlaceInRecep => Some(state::COOL),
        _ => None,
    }
}

fn appliance_type(w: &World, kind: GoalKind) -> Option<u16> {
    kind.transform()
        .and_then(|(_, a)| w.type_index(&format!("{a}Type")))
}

/// The instances of the goal's object type that `known` admits.
fn known_targets(w: &World, g: &GoalSpec, known: &dyn Fn(u16) -> bool) -> Vec<u16> {
    w.objects_of_type(g.object)
        .iter()
        .copied()
        .filter(|&o| known(o))
        .collect()
}

/// A shortest plan from `st` to the goal, or `None` if the goal cannot be reached. An empty plan
/// means the goal already holds.
pub fn plan(w: &World, st: &State, g: &GoalSpec) -> Option<Vec<Action>> {
    plan_with(w, st, g, &|_| true)
}

/// [`plan`] using only the objects `known` admits (target instances and lamps): the plan of an
/// agent that knows where those objects are and nothing else.
pub fn plan_with(
    w: &World,
    st: &State,
    g: &GoalSpec,
    known: &dyn Fn(u16) -> bool,
) -> Option<Vec<Action>> {
    if w.goal_reached(st) {
        return Some(Vec::new());
    }
    let mut best: Option<Vec<Action>> = None;
    let mut consider = |sim: Sim| {
        if w.goal_reached(&sim.st) && best.as_ref().is_none_or(|b| sim.plan.len() < b.len()) {
            best = Some(sim.plan);
        }
    };
    let targets = known_targets(w, g, known);
    let targets = targets.as_slice();
    // Where the held object could be put down, if it must be (`None`: keep it).
    let drops: Vec<Option<u16>> = match st.held {
        None => vec![None],
        Some(h) => {
            let mut v: Vec<Option<u16>> = vec![None];
            if let Some(ot) = w.objects[h as usize].otype {
                v.extend(
                    (0..w.receptacles.len() as u16)
                        .filter(|&r| w.can_contain(w.receptacles[r as usize].rtype, ot))
                        .map(Some),
                );
            }
            v
        }
    };
    let start = |d: Option<u16>| -> Option<Sim> {
        let mut s = Sim::new(w, st);
        if let Some(r) = d {
            if !s.put(r) {
                return None;
            }
        }
        Some(s)
    };
    match g.kind {
        GoalKind::LookAtObjInLight => {
            let lamps: Vec<u16> = w
                .objects_of_type(g.lamp?)
                .iter()
                .copied()
                .filter(|&o| known(o))
                .collect();
            for &d in &drops {
                for &o in targets {
                    for &l in &lamps {
                        let Some(mut s) = start(d) else { continue };
                        if !s.take(o) {
                            continue;
                        }
                        let Some(lr) = s.st.obj_in[l as usize] else {
                            continue;
                        };
                        s.goto(lr);
                        if s.st.flags[l as usize] & state::TOGGLED == 0 {
                            s.act(Action::Use(l));
                        }
                        consider(s);
                    }
                }
            }
        }
        GoalKind::PickTwoObjAndPlace => {
            let goals = w.receptacles_of_type(g.receptacle?);
            for &d in &drops {
                for &r in goals {
                    let placed = targets
                        .iter()
                        .filter(|&&o| st.obj_in[o as usize] == Some(r))
                        .count();
                    let free: Vec<u16> = targets
                        .iter()
                        .copied()
                        .filter(|&o| st.obj_in[o as usize] != Some(r))
                        .collect();
                    let need = 2usize.saturating_sub(placed);
                    let mut orders: Vec<Vec<u16>> = Vec::new();
                    if need == 1 {
                        orders.extend(free.iter().map(|&o| vec![o]));
                    } else {
                        for &a in &free {
                            for &b in &free {
                                if a != b {
                                    orders.push(vec![a, b]);
                                }
                            }
                        }
                    }
                    for order in orders {
                        let Some(mut s) = start(d) else { continue };
                        let ok = order.iter().all(|&o| s.take(o) && s.put(r));
                        if ok {
                            consider(s);
                        }
                    }
                }
            }
        }
        kind => {
            let goals = w.receptacles_of_type(g.receptacle?);
            let flag = transform_flag(kind);
            let appliances: Vec<Option<u16>> = match appliance_type(w, kind) {
                Some(t) => w.receptacles_of_type(t).iter().copied().map(Some).collect(),
                None if flag.is_some() => return None,
                None => vec![None],
            };
            for &d in &drops {
                for &o in targets {
                    for &a in &appliances {
                        for &r in goals {
                            let Some(mut s) = start(d) else { continue };
                            if !s.take(o) {
                                continue;
                            }
                            if let (Some(f), Some(a)) = (flag, a) {
                                if s.st.flags[o as usize] & f == 0 {
                                    s.goto(a);
                                    s.act(match kind {
                                        GoalKind::PickCleanThenPlaceInRecep => Action::Clean(o, a),
                                        GoalKind::PickHeatThenPlaceInRecep => Action::Heat(o, a),
                                        _ => Action::Cool(o, a),
                                    });
                                }
                            }
                            if s.put(r) {
                                consider(s);
                            }
                        }
                    }
                }
            }
        }
    }
    best
}

/// A shortest plan from `st` as the commands an agent would type, if the goal is reachable.
pub fn plan_commands(w: &World, st: &State, g: &GoalSpec) -> Option<Vec<String>> {
    let actions = plan(w, st, g)?;
    let mut st = st.clone();
    let mut out = Vec::with_capacity(actions.len());
    for a in actions {
        out.push(w.command(&st, a).expect("planned actions are admissible"));
        w.apply(&mut st, a);
    }
    Some(out)
}

/// Length of a shortest plan from `st`, if the goal is reachable.
pub fn distance(w: &World, st: &State, g: &GoalSpec) -> Option<usize> {
    plan(w, st, g).map(|p| p.len())
}

/// The oracle label of one step: did it shorten the expert's remaining plan?
///
/// `before` and `after` are the states around the step. These labels measure a judge's process
/// accuracy and feed supervised warm starts; they are training rewards only in the diagnostic
/// that asks what a judge that is always right would give (`household.oracle_verdicts`).
pub fn progress_label(w: &World, before: &State, after: &State, g: &GoalSpec) -> bool {
    match (distance(w, before, g), distance(w, after, g)) {
        (Some(b), Some(a)) => a < b,
        (None, Some(_)) => true,
        _ => false,
    }
}

/// The first step of the part of a goal that what is known already allows, when the whole goal
/// does not: with one of two objects known, taking it and putting it in place; with the object
/// to look at known but no lamp, taking it before searching on.
fn partial_step(
    w: &World,
    st: &State,
    g: &GoalSpec,
    known: &dyn Fn(u16) -> bool,
) -> Option<Action> {
    let targets = known_targets(w, g, known);
    match g.kind {
        GoalKind::PickTwoObjAndPlace => {
            let goals = w.receptacles_of_type(g.receptacle?);
            let mut best: Option<Vec<Action>> = None;
            for &o in &targets {
                if st.obj_in[o as usize].is_some_and(|r| goals.contains(&r)) {
                    continue;
                }
                for &r in goals {
                    let mut s = Sim::new(w, st);
                    if s.take(o) && s.put(r) && best.as_ref().is_none_or(|b| s.plan.len() < b.len())
                    {
                        best = Some(s.plan);
                    }
                }
            }
            best?.first().copied()
        }
        GoalKind::LookAtObjInLight => {
            if st.held.is_some_and(|h| targets.contains(&h)) {
                return None;
            }
            let mut best: Option<Vec<Action>> = None;
            for &o in &targets {
                let mut s = Sim::new(w, st);
                if s.take(o) && best.as_ref().is_none_or(|b| s.plan.len() < b.len()) {
                    best = Some(s.plan);
                }
            }
            best?.first().copied()
        }
        _ => None,
    }
}

/// Where a receptacle comes in the searching expert's order: those it sees by going there before
/// those it must open (an openable one that is `closed`), each kind in number order (`cabinet 2`
/// before `cabinet 10`).
pub fn search_key(w: &World, r: u16, closed: bool) -> (bool, String, u32) {
    let rec = &w.receptacles[r as usize];
    let (class, number) = rec.name.rsplit_once(' ').unwrap_or((&rec.name, ""));
    (
        rec.openable && closed,
        class.to_string(),
        number.parse::<u32>().unwrap_or(0),
    )
}

/// An expert that sees only what the agent sees: it acts on the objects it has observed (in
/// receptacles it has looked into, in its hands, or named by the task's hint) and otherwise
/// searches the receptacles that could hold what it needs: those it sees by going there first, then
/// those it must open, each kind in number order. Its steps are demonstrations a policy can imitate
/// from its own observations.
#[derive(Debug, Clone, Default)]
pub struct SearchExpert {
    observed: Vec<bool>,
}

impl SearchExpert {
    /// How many steps the searcher takes to win from the start, if it wins within `limit`.
    pub fn solves_within(w: &World, g: &GoalSpec, limit: usize) -> Option<usize> {
        let mut s = SearchExpert::new(w);
        let mut st = w.initial.clone();
        for n in 1..=limit {
            let a = s.next(w, &st, g)?;
            w.apply(&mut st, a);
            s.observe(w, &st, a);
            if w.goal_reached(&st) {
                return Some(n);
            }
        }
        None
    }

    /// A fresh searcher for a world; a hint naming a receptacle counts as having looked into it.
    pub fn new(w: &World) -> Self {
        let mut observed = vec![false; w.receptacles.len()];
        if let Some(h) = &w.hint {
            for (i, r) in w.receptacles.iter().enumerate() {
                if h.ends_with(&format!(" {}.", r.name)) {
                    observed[i] = true;
                }
            }
        }
        SearchExpert { observed }
    }

    /// Records what an executed action revealed.
    pub fn observe(&mut self, w: &World, st: &State, a: Action) {
        match a {
            Action::Goto(r) => {
                for &x in w.receptacles_at(w.receptacles[r as usize].loc) {
                    if !w.receptacles[x as usize].openable || st.opened[x as usize] {
                        self.observed[x as usize] = true;
                    }
                }
            }
            Action::Open(r) | Action::ExamineRecep(r)
                if !w.receptacles[r as usize].openable || st.opened[r as usize] =>
            {
                self.observed[r as usize] = true;
            }
            _ => {}
        }
    }

    /// The next action: the plan over known objects if there is one, else the next search step.
    pub fn next(&self, w: &World, st: &State, g: &GoalSpec) -> Option<Action> {
        self.steps(w, st, g, false).first().copied()
    }

    /// Every action the searcher could take next from what it knows: the first step of its plan
    /// over known objects (or of the part of the goal they allow) where it has one, else a search
    /// step toward any receptacle not yet looked into that could hold what it needs, whichever
    /// first (the number order [`SearchExpert::next`] searches in is one of many an agent could
    /// equally follow: nothing it has seen tells the places apart). Empty where it has nothing to
    /// do (the goal holds, or it is out of reach).
    pub fn choices(&self, w: &World, st: &State, g: &GoalSpec) -> Vec<Action> {
        self.steps(w, st, g, true)
    }

    /// How many steps the searcher takes to reach the goal from `st` with what it knows now
    /// (0: the goal holds), going on through the world as it is, if it reaches it within `limit`.
    pub fn steps_to_goal(
        &self,
        w: &World,
        st: &State,
        g: &GoalSpec,
        limit: usize,
    ) -> Option<usize> {
        let mut s = self.clone();
        let mut st = st.clone();
        for n in 0..=limit {
            if w.goal_reached(&st) {
                return Some(n);
            }
            if n == limit {
                break;
            }
            let a = s.next(w, &st, g)?;
            w.apply(&mut st, a);
            s.observe(w, &st, a);
        }
        None
    }

    /// The searcher's next action, or with `all` every action it could equally take.
    fn steps(&self, w: &World, st: &State, g: &GoalSpec, all: bool) -> Vec<Action> {
        let known = |o: u16| {
            st.held == Some(o) || st.obj_in[o as usize].is_some_and(|r| self.observed[r as usize])
        };
        if let Some(p) = plan_with(w, st, g, &known) {
            return p.first().copied().into_iter().collect();
        }
        if let Some(a) = partial_step(w, st, g, &known) {
            return vec![a];
        }
        // The target in hand: only the lamp is still sought, and it may stand on any receptacle
        // of the scene.
        let holding_target = st
            .held
            .is_some_and(|h| w.objects[h as usize].otype == Some(g.object));
        let lamp_known = g.lamp.is_some_and(|l| {
            (0..w.objects.len() as u16).any(|o| w.objects[o as usize].otype == Some(l) && known(o))
        });
        // Search: the unobserved receptacles that could hold a target (or the lamp), those seen by
        // going there before those that must be opened too, each kind in number order
        // (`cabinet 2` before `cabinet 10`).
        let mut order: Vec<u16> = (0..w.receptacles.len() as u16).collect();
        order.sort_by_cached_key(|&r| search_key(w, r, !st.opened[r as usize]));
        let wanted = |r: u16| {
            let rt = w.receptacles[r as usize].rtype;
            (!holding_target && w.can_contain(rt, g.object)) || (g.lamp.is_some() && !lamp_known)
        };
        let search = |r: u16| {
            if w.receptacles[r as usize].loc != st.agent_loc {
                Action::Goto(r)
            } else if w.receptacles[r as usize].openable && !st.opened[r as usize] {
                Action::Open(r)
            } else {
                Action::ExamineRecep(r)
            }
        };
        let unseen = order
            .into_iter()
            .filter(|&r| !self.observed[r as usize] && wanted(r));
        if all {
            unseen.map(search).collect()
        } else {
            unseen.take(1).map(search).collect()
        }
    }
}

/// The most steps [`knowable_label`] follows the searching expert for: it looks into every
/// receptacle at most once (go, open, examine) and then plays a plan.
fn searcher_limit(w: &World) -> usize {
    4 * w.receptacles.len() + 32
}

/// The step label an agent could know: was the step one the searching expert would take from
/// what the agent has seen, or one after which the searching expert (with what the agent has seen
/// after it) needs fewer steps to the goal than it needed before?
///
/// `known_before` and `known_after` are a [`SearchExpert`] fed every step's observation up to
/// the step and up to and including it; `action` is the step's action (`None`: a command that
/// did nothing). Unlike [`progress_label`], which asks the planner that knows where every object
/// is, a step that looks into a receptacle not yet seen while the object is still unseen is
/// good, and walking to places already seen is not.
pub fn knowable_label(
    w: &World,
    g: &GoalSpec,
    (before, known_before): (&State, &SearchExpert),
    action: Option<Action>,
    (after, known_after): (&State, &SearchExpert),
) -> bool {
    if action.is_some_and(|a| known_before.choices(w, before, g).contains(&a)) {
        return true;
    }
    let limit = searcher_limit(w);
    match (
        known_before.steps_to_goal(w, before, g, limit),
        known_after.steps_to_goal(w, after, g, limit),
    ) {
        (Some(b), Some(a)) => a < b,
        (None, Some(_)) => true,
        _ => false,
    }
}
