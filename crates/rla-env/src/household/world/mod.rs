//! The household world: entities and facts read from an ALFWorld game, the dynamic state, the
//! admissible commands, the effects of each command and the text ALFWorld prints.

use super::goal::{self, Facts, Goal, Term};
use super::pddl::{Formula, Problem};
use std::collections::HashMap;

mod load;

use load::type_position;

pub use super::vocab::{Ent, Kind, Pred};

/// Static properties of an object (bit flags).
pub mod prop {
    /// can be picked up
    pub const PICKUPABLE: u8 = 1;
    /// can be cleaned in a sink basin
    pub const CLEANABLE: u8 = 2;
    /// can be heated in a microwave
    pub const HEATABLE: u8 = 4;
    /// can be cooled in a fridge
    pub const COOLABLE: u8 = 8;
    /// can be sliced with a knife
    pub const SLICEABLE: u8 = 16;
    /// can be switched on (lamps)
    pub const TOGGLEABLE: u8 = 32;
    /// holds things (mug, bowl, pan …)
    pub const RECEPTACLE_OBJECT: u8 = 64;
}

/// Dynamic states of an object (bit flags).
pub mod state {
    /// cleaned
    pub const CLEAN: u8 = 1;
    /// heated
    pub const HOT: u8 = 2;
    /// cooled
    pub const COOL: u8 = 4;
    /// sliced
    pub const SLICED: u8 = 8;
    /// toggled at least once
    pub const TOGGLED: u8 = 16;
    /// switched on
    pub const ON: u8 = 32;
}

/// A receptacle: a place that holds objects.
#[derive(Debug, Clone)]
pub struct Receptacle {
    /// PDDL identifier.
    pub id: String,
    /// Display name (`cabinet 3`).
    pub name: String,
    /// Receptacle type (index in [`World::types`]).
    pub rtype: u16,
    /// Location index.
    pub loc: u16,
    /// Whether it opens and closes.
    pub openable: bool,
}

/// An object.
#[derive(Debug, Clone)]
pub struct Object {
    /// PDDL identifier.
    pub id: String,
    /// Display name (`apple 2`); empty for the class placeholders ALFRED problems declare.
    pub name: String,
    /// Object type, if any.
    pub otype: Option<u16>,
    /// [`prop`] flags.
    pub props: u8,
}

/// The dynamic part of a household: everything a command can change.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct State {
    /// Where the agent stands.
    pub agent_loc: u16,
    /// Which receptacles are open.
    pub opened: Vec<bool>,
    /// The receptacle each object is in.
    pub obj_in: Vec<Option<u16>>,
    /// The location of each object (`None` while held).
    pub obj_at: Vec<Option<u16>>,
    /// The object in the agent's hands.
    pub held: Option<u16>,
    /// [`state`] flags per object.
    pub flags: Vec<u8>,
    /// The `(object, receptacle)` pairs of the `not_inreceptacle` facts ALFWorld's engine
    /// holds, sorted: the object was taken from the receptacle and has not been moved back into
    /// it since. TextWorld's PDDL backend adds such a fact for each deleted one (taking deletes
    /// `inReceptacle`) and drops it when the fact is added again (moving adds it); nothing at
    /// reset holds one. `look` reads them.
    pub taken_from: Vec<(u16, u16)>,
}

/// A command the household understands, with resolved arguments.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    Look,
    Inventory,
    Help,
    Goto(u16),
    Open(u16),
    Close(u16),
    Take(u16, u16),
    Move(u16, u16),
    ExamineRecep(u16),
    ExamineObj(u16),
    Use(u16),
    Heat(u16, u16),
    Clean(u16, u16),
    Cool(u16, u16),
    Slice(u16, u16),
}

/// ALFWorld's `help` text.
pub const HELP_TEXT: &str = "Available commands:\n  look:                             look around your current location\n  inventory:                        check your current inventory\n  go to (receptacle):               move to a receptacle\n  open (receptacle):                open a receptacle\n  close (receptacle):               close a receptacle\n  take (object) from (receptacle):  take an object from a receptacle\n  move (object) to (receptacle):  place an object in or on a receptacle\n  examine (something):              examine a receptacle or an object\n  use (object):                     use an object\n  heat (object) with (receptacle):  heat an object using a receptacle\n  clean (object) with (receptacle): clean an object using a receptacle\n  cool (object) with (receptacle):  cool an object using a receptacle\n  slice (object) with (object):     slice an object using a sharp object\n";

/// The reply to anything that is not an admissible command.
pub const NOTHING_HAPPENS: &str = "Nothing happens.";

/// A household world: the static scene, its goal and its initial state.
#[derive(Debug, Clone)]
pub struct World {
    /// Location identifiers.
    pub locations: Vec<String>,
    /// Receptacles, sorted by lowercased identifier (the order lists use).
    pub receptacles: Vec<Receptacle>,
    /// Objects, sorted by lowercased identifier.
    pub objects: Vec<Object>,
    /// Type names (`AppleType`, `CabinetType` …).
    pub types: Vec<String>,
    /// The task sentence without the `Your task is to: ` prefix and final period.
    pub task: String,
    /// A hint sentence shown after the task ("The apple is in the fridge 1."), if any.
    pub hint: Option<String>,
    /// The initial state.
    pub initial: State,
    names: HashMap<String, Ent>,
    can_contain: Vec<bool>,
    objs_by_type: Vec<Vec<u16>>,
    receps_by_type: Vec<Vec<u16>>,
    receps_at_loc: Vec<Vec<u16>>,
    goal: Goal,
    goal_vars: usize,
    ty_microwave: Option<u16>,
    ty_fridge: Option<u16>,
    ty_sinkbasin: Option<u16>,
    ty_knife: Option<u16>,
    ty_butterknife: Option<u16>,
}

/// ALFWorld's display class of an identifier: the part before the first `_bar_`, lowercased,
/// plus `basin` when the identifier contains `basin`.
pub fn display_class(id: &str) -> String {
    let lower = id.to_ascii_lowercase();
    let mut class = lower.split("_bar_").next().unwrap_or("").to_string();
    if lower.contains("basin") {
        class.push_str("basin");
    }
    class
}

/// ALFWorld's list: `a x 1, a y 2, and a z 1` (always `, and ` before the last item, even of
/// two), or `nothing`.
pub fn join_list<'a>(items: impl IntoIterator<Item = &'a str>, article: bool) -> String {
    let items: Vec<&str> = items.into_iter().collect();
    if items.is_empty() {
        return "nothing".to_string();
    }
    let mut s = String::new();
    let n = items.len();
    for (i, it) in items.iter().enumerate() {
        if i > 0 {
            s.push_str(if i == n - 1 { ", and " } else { ", " });
        }
        if article {
            s.push_str("a ");
        }
        s.push_str(it);
    }
    s
}

impl World {
    /// Replaces the goal (used by generated tasks).
    pub fn set_goal(&mut self, f: &Formula) -> Result<(), String> {
        let (g, n) = goal::compile(f, self)?;
        self.goal = g;
        self.goal_vars = n;
        Ok(())
    }

    /// The entity a PDDL name denotes.
    pub fn entity(&self, name: &str) -> Option<Ent> {
        self.names.get(name).copied()
    }

    /// The index of a type name.
    pub fn type_index(&self, name: &str) -> Option<u16> {
        type_position(&self.types, name)
    }

    /// Objects of a type, in list order.
    pub fn objects_of_type(&self, t: u16) -> &[u16] {
        &self.objs_by_type[t as usize]
    }

    /// Receptacles of a type, in list order.
    pub fn receptacles_of_type(&self, t: u16) -> &[u16] {
        &self.receps_by_type[t as usize]
    }

    /// Receptacles at a location, in list order.
    pub fn receptacles_at(&self, l: u16) -> &[u16] {
        &self.receps_at_loc[l as usize]
    }

    /// `canContain rt ot`.
    pub fn can_contain(&self, rt: u16, ot: u16) -> bool {
        self.can_contain[rt as usize * self.types.len() + ot as usize]
    }

    /// All entities of a kind.
    pub fn domain(&self, k: Kind) -> Box<dyn Iterator<Item = Ent> + '_> {
        match k {
            Kind::Agent => Box::new(std::iter::once(Ent::Agent)),
            Kind::Location => Box::new((0..self.locations.len() as u16).map(Ent::Loc)),
            Kind::Receptacle => Box::new((0..self.receptacles.len() as u16).map(Ent::Recep)),
            Kind::Object => Box::new((0..self.objects.len() as u16).map(Ent::Obj)),
            Kind::Type => Box::new((0..self.types.len() as u16).map(Ent::Type)),
        }
    }

    fn has_prop(&self, o: u16, p: u8) -> bool {
        self.objects[o as usize].props & p != 0
    }

    /// Whether a fact holds in a state.
    pub fn fact(&self, st: &State, p: Pred, a: &[Ent]) -> bool {
        use Ent::*;
        use Pred::*;
        let flag = |o: u16, f: u8| st.flags[o as usize] & f != 0;
        match (p, a) {
            (ObjectType, [Obj(o), Type(t)]) => self.objects[*o as usize].otype == Some(*t),
            (ReceptacleType, [Recep(r), Type(t)]) => self.receptacles[*r as usize].rtype == *t,
            (InReceptacle, [Obj(o), Recep(r)]) => st.obj_in[*o as usize] == Some(*r),
            (Holds, [Agent, Obj(o)]) => st.held == Some(*o),
            (HoldsAny, [Agent]) => st.held.is_some(),
            (AtLocation, [Agent, Loc(l)]) => st.agent_loc == *l,
            (ReceptacleAtLocation, [Recep(r), Loc(l)]) => self.receptacles[*r as usize].loc == *l,
            (ObjectAtLocation, [Obj(o), Loc(l)]) => st.obj_at[*o as usize] == Some(*l),
            (IsClean, [Obj(o)]) => flag(*o, state::CLEAN),
            (IsHot, [Obj(o)]) => flag(*o, state::HOT),
            (IsCool, [Obj(o)]) => flag(*o, state::COOL),
            (IsSliced, [Obj(o)]) => flag(*o, state::SLICED),
            (IsToggled, [Obj(o)]) => flag(*o, state::TOGGLED),
            (IsOn, [Obj(o)]) => flag(*o, state::ON),
            (Cleanable, [Obj(o)]) => self.has_prop(*o, prop::CLEANABLE),
            (Heatable, [Obj(o)]) => self.has_prop(*o, prop::HEATABLE),
            (Coolable, [Obj(o)]) => self.has_prop(*o, prop::COOLABLE),
            (Sliceable, [Obj(o)]) => self.has_prop(*o, prop::SLICEABLE),
            (Toggleable, [Obj(o)]) => self.has_prop(*o, prop::TOGGLEABLE),
            (Pickupable, [Obj(o)]) => self.has_prop(*o, prop::PICKUPABLE),
            (IsReceptacleObject, [Obj(o)]) => self.has_prop(*o, prop::RECEPTACLE_OBJECT),
            (Openable, [Recep(r)]) => self.receptacles[*r as usize].openable,
            (Opened, [Recep(r)]) => st.opened[*r as usize],
            (CanContain, [Type(a), Type(b)]) => self.can_contain(*a, *b),
            _ => false,
        }
    }

    /// Candidates for the one unbound variable `var` of a fact, read off the state; `None`
    /// when this fact cannot generate them.
    pub fn generate(
        &self,
        st: &State,
        p: Pred,
        args: &[Term],
        var: usize,
        get: impl Fn(&Term) -> Option<Ent>,
    ) -> Option<Vec<Ent>> {
        use Ent::*;
        use Pred::*;
        let pos = args.iter().position(|t| *t == Term::Var(var))?;
        let other = |i: usize| get(&args[i]);
        Some(match (p, pos) {
            (ObjectType, 0) => match other(1)? {
                Type(t) => self.objs_by_type[t as usize]
                    .iter()
                    .map(|&o| Obj(o))
                    .collect(),
                _ => vec![],
            },
            (ReceptacleType, 0) => match other(1)? {
                Type(t) => self.receps_by_type[t as usize]
                    .iter()
                    .map(|&r| Recep(r))
                    .collect(),
                _ => vec![],
            },
            (InReceptacle, 0) => match other(1)? {
                Recep(r) => (0..self.objects.len() as u16)
                    .filter(|&o| st.obj_in[o as usize] == Some(r))
                    .map(Obj)
                    .collect(),
                _ => vec![],
            },
            (InReceptacle, 1) => match other(0)? {
                Obj(o) => st.obj_in[o as usize].map(Recep).into_iter().collect(),
                _ => vec![],
            },
            (Holds, 1) => st.held.map(Obj).into_iter().collect(),
            (Holds, 0) | (AtLocation, 0) => vec![Agent],
            (AtLocation, 1) => vec![Loc(st.agent_loc)],
            (ReceptacleAtLocation, 1) => match other(0)? {
                Recep(r) => vec![Loc(self.receptacles[r as usize].loc)],
                _ => vec![],
            },
            (ReceptacleAtLocation, 0) => match other(1)? {
                Loc(l) => self.receps_at_loc[l as usize]
                    .iter()
                    .map(|&r| Recep(r))
                    .collect(),
                _ => vec![],
            },
            (ObjectAtLocation, 1) => match other(0)? {
                Obj(o) => st.obj_at[o as usize].map(Loc).into_iter().collect(),
                _ => vec![],
            },
            _ => return None,
        })
    }

    /// Whether the goal holds in a state.
    pub fn goal_reached(&self, st: &State) -> bool {
        let mut env = goal::Env::new(self.goal_vars);
        goal::eval(&self.goal, self, st, &mut env)
    }

    fn rname(&self, r: u16) -> &str {
        &self.receptacles[r as usize].name
    }

    fn oname(&self, o: u16) -> &str {
        &self.objects[o as usize].name
    }

    fn is_open(&self, st: &State, r: u16) -> bool {
        !self.receptacles[r as usize].openable || st.opened[r as usize]
    }

    /// Objects in a receptacle, in list order.
    pub fn contents<'a>(&'a self, st: &'a State, r: u16) -> impl Iterator<Item = u16> + 'a {
        (0..self.objects.len() as u16).filter(move |&o| st.obj_in[o as usize] == Some(r))
    }

    /// `examine R`: `On the R, you see …` / `The R is closed.` / `The R is open. In it, you see …`.
    pub fn describe_receptacle(&self, st: &State, r: u16) -> String {
        let rec = &self.receptacles[r as usize];
        let items = || join_list(self.contents(st, r).map(|o| self.oname(o)), true);
        if rec.openable {
            if st.opened[r as usize] {
                format!("The {} is open. In it, you see {}.", rec.name, items())
            } else {
                format!("The {} is closed.", rec.name)
            }
        } else {
            format!("On the {}, you see {}.", rec.name, items())
        }
    }

    /// What `look` lists "next to" the agent: ALFWorld's grammar lists an object once for
    /// each receptacle `r` at the agent's location such that the object is at that location
    /// and `not_inreceptacle(o, r)` holds, ordered by object, then receptacle. So only objects
    /// the agent has moved show: one taken from a receptacle of this spot and moved onto
    /// another of it (or taken from one, then moved back to the spot), once per receptacle of
    /// the spot it was taken from and not since moved into. At a spot with one receptacle the
    /// list is always empty.
    pub fn next_to<'a>(&'a self, st: &'a State) -> impl Iterator<Item = u16> + 'a {
        let here = st.agent_loc;
        st.taken_from
            .iter()
            .filter(move |&&(o, r)| {
                st.obj_at[o as usize] == Some(here) && self.receptacles[r as usize].loc == here
            })
            .map(|&(o, _)| o)
    }

    /// `look`.
    pub fn look(&self, st: &State) -> String {
        let here = self.receptacles_at(st.agent_loc);
        if here.is_empty() {
            "You are in the middle of a room. Looking quickly around you, you see nothing.".into()
        } else {
            format!(
                "You are facing the {}. Next to it, you see {}.",
                join_list(here.iter().map(|&r| self.rname(r)), false),
                join_list(self.next_to(st).map(|o| self.oname(o)), true)
            )
        }
    }

    /// The text shown at reset.
    pub fn intro(&self, st: &State) -> String {
        let look = if self.receptacles_at(st.agent_loc).is_empty() {
            format!(
                "You are in the middle of a room. Looking quickly around you, you see {}.",
                join_list(self.receptacles.iter().map(|r| r.name.as_str()), true)
            )
        } else {
            self.look(st)
        };
        let mut s = format!(
            "-= Welcome to TextWorld, ALFRED! =-\n\n{look}\n\nYour task is to: {}.",
            self.task
        );
        if let Some(h) = &self.hint {
            s.push(' ');
            s.push_str(h);
        }
        s
    }

    fn examine_object(&self, st: &State, o: u16) -> String {
        let n = self.oname(o);
        if self.has_prop(o, prop::RECEPTACLE_OBJECT) {
            return format!("This is a normal {n}. In it, you see nothing.");
        }
        let f = st.flags[o as usize];
        let (c, h, k, s) = (
            f & state::CLEAN != 0,
            f & state::HOT != 0,
            f & state::COOL != 0,
            f & state::SLICED != 0,
        );
        let t = self.has_prop(o, prop::TOGGLEABLE);
        let sliceable = self.has_prop(o, prop::SLICEABLE);
        match () {
            _ if c && h && s => format!("This is a hot and clean sliced {n}."),
            _ if c && k && s => format!("This is a cool and clean sliced {n}."),
            _ if c && s => format!("This is a clean sliced {n}."),
            _ if h && s => format!("This is a hot sliced {n}."),
            _ if k && s => format!("This is a cool sliced {n}."),
            _ if c && h => format!("This is a hot and clean {n}."),
            _ if c && k => format!("This is a cool and clean {n}."),
            _ if h => format!("This is a hot {n}."),
            _ if c => format!("This is a clean {n}."),
            _ if k => format!("This is a cold {n}."),
            _ if t && f & state::TOGGLED != 0 => format!("This {n} is on."),
            _ if t => format!("This {n} is off."),
            _ if sliceable && s => format!("This is a sliced {n}."),
            _ => format!("There's nothing special about {n}."),
        }
    }

    fn is_knife(&self, o: u16) -> bool {
        let t = self.objects[o as usize].otype;
        t.is_some() && (t == self.ty_knife || t == self.ty_butterknife)
    }

    /// The command text of an action admissible in `st`.
    pub fn command(&self, st: &State, a: Action) -> Option<String> {
        let mut list = Vec::new();
        self.actions(st, &mut list);
        list.into_iter().find(|(_, b)| *b == a).map(|(c, _)| c)
    }

    /// Every admissible action with its command text, unsorted.
    pub fn actions(&self, st: &State, out: &mut Vec<(String, Action)>) {
        out.clear();
        let here = st.agent_loc;
        for (i, r) in self.receptacles.iter().enumerate() {
            if r.loc != here {
                out.push((format!("go to {}", r.name), Action::Goto(i as u16)));
            }
        }
        for &r in self.receptacles_at(here) {
            let rec = &self.receptacles[r as usize];
            out.push((format!("examine {}", rec.name), Action::ExamineRecep(r)));
            if rec.openable {
                if st.opened[r as usize] {
                    out.push((format!("close {}", rec.name), Action::Close(r)));
                } else {
                    out.push((format!("open {}", rec.name), Action::Open(r)));
                }
            }
            let open = self.is_open(st, r);
            for o in self.contents(st, r) {
                if open && st.held.is_none() && self.has_prop(o, prop::PICKUPABLE) {
                    out.push((
                        format!("take {} from {}", self.oname(o), rec.name),
                        Action::Take(o, r),
                    ));
                }
                if self.has_prop(o, prop::TOGGLEABLE) {
                    out.push((format!("use {}", self.oname(o)), Action::Use(o)));
                }
            }
            if let Some(h) = st.held {
                let obj = &self.objects[h as usize];
                if open && obj.otype.is_some_and(|ot| self.can_contain(rec.rtype, ot)) {
                    out.push((
                        format!("move {} to {}", obj.name, rec.name),
                        Action::Move(h, r),
                    ));
                }
                let rt = Some(rec.rtype);
                if rt == self.ty_microwave && self.has_prop(h, prop::HEATABLE) {
                    out.push((
                        format!("heat {} with {}", obj.name, rec.name),
                        Action::Heat(h, r),
                    ));
                }
                if rt == self.ty_sinkbasin && self.has_prop(h, prop::CLEANABLE) {
                    out.push((
                        format!("clean {} with {}", obj.name, rec.name),
                        Action::Clean(h, r),
                    ));
                }
                if rt == self.ty_fridge && self.has_prop(h, prop::COOLABLE) {
                    out.push((
                        format!("cool {} with {}", obj.name, rec.name),
                        Action::Cool(h, r),
                    ));
                }
            }
        }
        if let Some(h) = st.held {
            out.push((format!("examine {}", self.oname(h)), Action::ExamineObj(h)));
            if self.is_knife(h) {
                for (o, at) in st.obj_at.iter().enumerate() {
                    if *at == Some(here) && self.has_prop(o as u16, prop::SLICEABLE) {
                        out.push((
                            format!("slice {} with {}", self.oname(o as u16), self.oname(h)),
                            Action::Slice(o as u16, h),
                        ));
                    }
                }
            }
        }
        out.push(("help".into(), Action::Help));
        out.push(("inventory".into(), Action::Inventory));
        out.push(("look".into(), Action::Look));
        out.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        out.dedup_by(|a, b| a.0 == b.0);
    }

    /// Applies an admissible action and returns ALFWorld's feedback.
    pub fn apply(&self, st: &mut State, a: Action) -> String {
        match a {
            Action::Look => self.look(st),
            Action::Help => HELP_TEXT.to_string(),
            Action::Inventory => match st.held {
                Some(h) => format!("You are carrying: a {}.", self.oname(h)),
                None => "You are not carrying anything.".into(),
            },
            Action::Goto(r) => {
                st.agent_loc = self.receptacles[r as usize].loc;
                format!(
                    "You arrive at {}. {}",
                    self.rname(r),
                    self.describe_receptacle(st, r)
                )
            }
            Action::Open(r) => {
                st.opened[r as usize] = true;
                format!(
                    "You open the {}. {}",
                    self.rname(r),
                    self.describe_receptacle(st, r)
                )
            }
            Action::Close(r) => {
                st.opened[r as usize] = false;
                format!("You close the {}.", self.rname(r))
            }
            Action::Take(o, r) => {
                st.obj_in[o as usize] = None;
                st.obj_at[o as usize] = None;
                st.held = Some(o);
                if let Err(i) = st.taken_from.binary_search(&(o, r)) {
                    st.taken_from.insert(i, (o, r));
                }
                format!(
                    "You pick up the {} from the {}.",
                    self.oname(o),
                    self.rname(r)
                )
            }
            Action::Move(o, r) => {
                st.obj_in[o as usize] = Some(r);
                st.obj_at[o as usize] = Some(st.agent_loc);
                st.held = None;
                if let Ok(i) = st.taken_from.binary_search(&(o, r)) {
                    st.taken_from.remove(i);
                }
                format!("You move the {} to the {}.", self.oname(o), self.rname(r))
            }
            Action::ExamineRecep(r) => self.describe_receptacle(st, r),
            Action::ExamineObj(o) => self.examine_object(st, o),
            Action::Use(o) => {
                let f = &mut st.flags[o as usize];
                *f ^= state::ON;
                *f |= state::TOGGLED;
                format!("You turn on the {}.", self.oname(o))
            }
            Action::Heat(o, r) => {
                let f = &mut st.flags[o as usize];
                *f = (*f | state::HOT) & !state::COOL;
                format!(
                    "You heat the {} using the {}.",
                    self.oname(o),
                    self.rname(r)
                )
            }
            Action::Clean(o, r) => {
                st.flags[o as usize] |= state::CLEAN;
                format!(
                    "You clean the {} using the {}.",
                    self.oname(o),
                    self.rname(r)
                )
            }
            Action::Cool(o, r) => {
                let f = &mut st.flags[o as usize];
                *f = (*f | state::COOL) & !state::HOT;
                format!(
                    "You cool the {} using the {}.",
                    self.oname(o),
                    self.rname(r)
                )
            }
            Action::Slice(co, ko) => {
                st.flags[co as usize] |= state::SLICED;
                format!(
                    "You sliced the {} with the {}.",
                    self.oname(co),
                    self.oname(ko)
                )
            }
        }
    }
}

/// Goals read the world through its own look-ups.
impl Facts for World {
    type State = State;

    fn entity(&self, name: &str) -> Option<Ent> {
        World::entity(self, name)
    }

    fn domain(&self, k: Kind) -> Box<dyn Iterator<Item = Ent> + '_> {
        World::domain(self, k)
    }

    fn fact(&self, st: &State, p: Pred, a: &[Ent]) -> bool {
        World::fact(self, st, p, a)
    }

    fn generate(
        &self,
        st: &State,
        p: Pred,
        args: &[Term],
        var: usize,
        get: impl Fn(&Term) -> Option<Ent>,
    ) -> Option<Vec<Ent>> {
        World::generate(self, st, p, args, var, get)
    }
}

// The steps of `World::from_problem`.
