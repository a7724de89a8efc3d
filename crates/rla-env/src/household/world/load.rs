//! A world from a PDDL problem: the identifiers `:objects` declares, the facts of `:init` read
//! into the initial state and the receptacle and object tables, display names, and indexes.

use super::*;

/// The identifiers that `:objects` declares, by kind, in the order the world numbers them.
pub(super) struct Declared {
    /// Agents, in declaration order.
    agents: Vec<String>,
    /// Locations, in declaration order.
    locations: Vec<String>,
    /// Receptacles, sorted by lowercased identifier, repeats dropped.
    receptacles: Vec<String>,
    /// Objects, sorted by lowercased identifier, repeats dropped.
    objects: Vec<String>,
    /// Types, in declaration order, repeats in a row dropped.
    types: Vec<String>,
}

/// The facts of `:init`, read one by one: what they say of the scene and of the initial state.
pub(super) struct InitFacts {
    scene: SceneFacts,
    state: StateFacts,
}

/// What `:init` says of the static scene.
pub(super) struct SceneFacts {
    /// The number of types (the side of `can_contain`).
    types: usize,
    /// `canContain rt ot`, row `rt`, column `ot`.
    can_contain: Vec<bool>,
    /// Each receptacle's type.
    rtype: Vec<Option<u16>>,
    /// Each receptacle's location.
    rloc: Vec<Option<u16>>,
    /// Whether each receptacle opens.
    openable: Vec<bool>,
    /// Each object's type.
    otype: Vec<Option<u16>>,
    /// Each object's [`prop`] flags.
    props: Vec<u8>,
}

/// What `:init` says of the initial state.
pub(super) struct StateFacts {
    agent_loc: Option<u16>,
    opened: Vec<bool>,
    obj_in: Vec<Option<u16>>,
    obj_at: Vec<Option<u16>>,
    held: Option<u16>,
    flags: Vec<u8>,
}

/// Facts of `:init` that no action of the current domain reads, besides `holdsAny`.
pub(super) const UNREAD_FACTS: [&str; 8] = [
    "checked",
    "examined",
    "wasinreceptacle",
    "full",
    "moveable",
    "inreceptacleobject",
    "isreceptacleobjectfull",
    "holdsanyreceptacleobject",
];

/// Names receptacles and typed objects as ALFWorld does: display class and a number, the
/// numbers of a class counting down along the sorted identifiers (`cabinet 3`, `cabinet 2` …).
pub(super) fn number_display_names(receptacles: &mut [Receptacle], objects: &mut [Object]) {
    let mut classes: HashMap<String, Vec<(String, Ent)>> = HashMap::new();
    for (i, r) in receptacles.iter().enumerate() {
        classes
            .entry(display_class(&r.id))
            .or_default()
            .push((r.id.to_ascii_lowercase(), Ent::Recep(i as u16)));
    }
    for (i, o) in objects.iter().enumerate() {
        if o.otype.is_some() {
            classes
                .entry(display_class(&o.id))
                .or_default()
                .push((o.id.to_ascii_lowercase(), Ent::Obj(i as u16)));
        }
    }
    for (class, mut members) in classes {
        members.sort_by(|a, b| a.0.cmp(&b.0));
        let n = members.len();
        for (rank, (_, e)) in members.into_iter().enumerate() {
            let name = format!("{class} {}", n - rank);
            match e {
                Ent::Recep(r) => receptacles[r as usize].name = name,
                Ent::Obj(o) => objects[o as usize].name = name,
                _ => unreachable!(),
            }
        }
    }
}

/// For each of `n` keys (types, locations), the items that have it, in list order.
pub(super) fn index_by(n: usize, keys: impl Iterator<Item = Option<u16>>) -> Vec<Vec<u16>> {
    let mut index = vec![Vec::new(); n];
    for (i, k) in keys.enumerate() {
        if let Some(k) = k {
            index[k as usize].push(i as u16);
        }
    }
    index
}

/// The index of a type name.
pub(super) fn type_position(types: &[String], name: &str) -> Option<u16> {
    types.iter().position(|t| t == name).map(|i| i as u16)
}

/// The task sentence without the `Your task is to: ` prefix and final period.
pub(super) fn task_sentence(task: &str) -> String {
    task.trim()
        .trim_start_matches("Your task is to:")
        .trim()
        .trim_end_matches('.')
        .to_string()
}

impl Declared {
    /// Groups the declared identifiers by kind and puts receptacles and objects in list order;
    /// an unknown type, a problem without an agent and more than `u16::MAX` of a kind are errors.
    fn collect(p: &Problem) -> Result<Declared, String> {
        let mut d = Declared {
            agents: Vec::new(),
            locations: Vec::new(),
            receptacles: Vec::new(),
            objects: Vec::new(),
            types: Vec::new(),
        };
        for (n, ty) in &p.objects {
            match Kind::from_type_name(ty) {
                Some(Kind::Agent) => d.agents.push(n.clone()),
                Some(Kind::Location) => d.locations.push(n.clone()),
                Some(Kind::Receptacle) => d.receptacles.push(n.clone()),
                Some(Kind::Object) => d.objects.push(n.clone()),
                Some(Kind::Type) => d.types.push(n.clone()),
                None => return Err(format!(":objects: unknown type '{ty}' of '{n}'")),
            }
        }
        if d.agents.is_empty() {
            return Err(":objects: no object of type agent".into());
        }
        let sort_ids = |v: &mut Vec<String>| {
            v.sort_by_key(|a| a.to_ascii_lowercase());
            v.dedup();
        };
        sort_ids(&mut d.receptacles);
        sort_ids(&mut d.objects);
        d.types.dedup();
        let max = u16::MAX as usize;
        if d.locations.len() > max
            || d.receptacles.len() > max
            || d.objects.len() > max
            || d.types.len() > max
        {
            return Err(":objects: too many objects".into());
        }
        Ok(d)
    }

    /// The entity each identifier denotes; of a name declared under two kinds, the later of
    /// agent, location, receptacle, object and type wins.
    fn names(&self) -> HashMap<String, Ent> {
        let mut names = HashMap::new();
        for a in &self.agents {
            names.insert(a.clone(), Ent::Agent);
        }
        let mut number = |ids: &[String], ent: fn(u16) -> Ent| {
            for (i, id) in ids.iter().enumerate() {
                names.insert(id.clone(), ent(i as u16));
            }
        };
        number(&self.locations, Ent::Loc);
        number(&self.receptacles, Ent::Recep);
        number(&self.objects, Ent::Obj);
        number(&self.types, Ent::Type);
        names
    }
}

impl InitFacts {
    /// Reads every fact of `:init` in order; the first that cannot be read is the error.
    fn read(p: &Problem, ids: &Declared, names: &HashMap<String, Ent>) -> Result<Self, String> {
        let (nr, no, nt) = (ids.receptacles.len(), ids.objects.len(), ids.types.len());
        let mut facts = InitFacts {
            scene: SceneFacts {
                types: nt,
                can_contain: vec![false; nt * nt],
                rtype: vec![None; nr],
                rloc: vec![None; nr],
                openable: vec![false; nr],
                otype: vec![None; no],
                props: vec![0; no],
            },
            state: StateFacts {
                agent_loc: None,
                opened: vec![false; nr],
                obj_in: vec![None; no],
                obj_at: vec![None; no],
                held: None,
                flags: vec![0; no],
            },
        };
        for (pred, args) in &p.init {
            facts.read_fact(pred, args, names)?;
        }
        Ok(facts)
    }

    /// Reads one fact: a predicate of the domain with arguments of the right kinds, or one of
    /// the predicates no action reads (skipped).
    fn read_fact(
        &mut self,
        pred: &str,
        args: &[String],
        names: &HashMap<String, Ent>,
    ) -> Result<(), String> {
        let p = match Pred::parse(pred) {
            Some(Pred::HoldsAny) => return Ok(()),
            Some(p) => p,
            None if UNREAD_FACTS.contains(&pred.to_ascii_lowercase().as_str()) => return Ok(()),
            None => return Err(format!(":init: unsupported predicate '{pred}'")),
        };
        let ent = |i: usize| -> Result<Ent, String> {
            let a = args
                .get(i)
                .ok_or_else(|| format!(":init: ({pred} …) has too few arguments"))?;
            names
                .get(a)
                .copied()
                .ok_or_else(|| format!(":init: ({pred} …) names undeclared object '{a}'"))
        };
        let read = if p.arity() == 1 {
            self.set(p, &[ent(0)?])
        } else {
            let a = ent(0)?;
            self.set(p, &[a, ent(1)?])
        };
        if read {
            Ok(())
        } else {
            Err(format!(
                ":init: ({pred} {}) has arguments of the wrong types",
                args.join(" ")
            ))
        }
    }

    /// Records a fact; `false` when its arguments are of the wrong kinds.
    fn set(&mut self, p: Pred, a: &[Ent]) -> bool {
        use Ent::*;
        use Pred::*;
        let (sc, st) = (&mut self.scene, &mut self.state);
        match (p, a) {
            (CanContain, [Type(a), Type(b)]) => {
                sc.can_contain[*a as usize * sc.types + *b as usize] = true
            }
            (ReceptacleType, [Recep(r), Type(t)]) => sc.rtype[*r as usize] = Some(*t),
            (ReceptacleAtLocation, [Recep(r), Loc(l)]) => sc.rloc[*r as usize] = Some(*l),
            (ObjectType, [Obj(o), Type(t)]) => sc.otype[*o as usize] = Some(*t),
            (InReceptacle, [Obj(o), Recep(r)]) => st.obj_in[*o as usize] = Some(*r),
            (ObjectAtLocation, [Obj(o), Loc(l)]) => st.obj_at[*o as usize] = Some(*l),
            (AtLocation, [Agent, Loc(l)]) => st.agent_loc = Some(*l),
            (Holds, [Agent, Obj(o)]) => st.held = Some(*o),
            (Openable, [Recep(r)]) => sc.openable[*r as usize] = true,
            (Opened, [Recep(r)]) => st.opened[*r as usize] = true,
            (Pickupable, [Obj(o)]) => sc.props[*o as usize] |= prop::PICKUPABLE,
            (Cleanable, [Obj(o)]) => sc.props[*o as usize] |= prop::CLEANABLE,
            (Heatable, [Obj(o)]) => sc.props[*o as usize] |= prop::HEATABLE,
            (Coolable, [Obj(o)]) => sc.props[*o as usize] |= prop::COOLABLE,
            (Sliceable, [Obj(o)]) => sc.props[*o as usize] |= prop::SLICEABLE,
            (Toggleable, [Obj(o)]) => sc.props[*o as usize] |= prop::TOGGLEABLE,
            (IsReceptacleObject, [Obj(o)]) => sc.props[*o as usize] |= prop::RECEPTACLE_OBJECT,
            (IsClean, [Obj(o)]) => st.flags[*o as usize] |= state::CLEAN,
            (IsHot, [Obj(o)]) => st.flags[*o as usize] |= state::HOT,
            (IsCool, [Obj(o)]) => st.flags[*o as usize] |= state::COOL,
            (IsSliced, [Obj(o)]) => st.flags[*o as usize] |= state::SLICED,
            (IsToggled, [Obj(o)]) => st.flags[*o as usize] |= state::TOGGLED,
            (IsOn, [Obj(o)]) => st.flags[*o as usize] |= state::ON,
            _ => return false,
        }
        true
    }
}

impl SceneFacts {
    /// The receptacles, display names still empty; one without a type or a location is an
    /// error.
    fn receptacles(&self, ids: &[String]) -> Result<Vec<Receptacle>, String> {
        ids.iter()
            .enumerate()
            .map(|(i, id)| {
                Ok(Receptacle {
                    id: id.clone(),
                    name: String::new(),
                    rtype: self.rtype[i]
                        .ok_or_else(|| format!(":init: receptacle '{id}' has no receptacleType"))?,
                    loc: self.rloc[i].ok_or_else(|| {
                        format!(":init: receptacle '{id}' has no receptacleAtLocation")
                    })?,
                    openable: self.openable[i],
                })
            })
            .collect()
    }

    /// The objects, display names still empty.
    fn objects(&self, ids: &[String]) -> Vec<Object> {
        ids.iter()
            .enumerate()
            .map(|(i, id)| Object {
                id: id.clone(),
                name: String::new(),
                otype: self.otype[i],
                props: self.props[i],
            })
            .collect()
    }
}

impl StateFacts {
    /// The initial state; a problem that does not place the agent is an error.
    fn into_state(self) -> Result<State, String> {
        Ok(State {
            agent_loc: self
                .agent_loc
                .ok_or(":init: no (atLocation agent …) fact")?,
            opened: self.opened,
            obj_in: self.obj_in,
            obj_at: self.obj_at,
            held: self.held,
            flags: self.flags,
            taken_from: Vec::new(),
        })
    }
}

impl World {
    /// Builds a world from a parsed problem and its task sentence, in steps: the identifiers
    /// `:objects` declares, by kind; the entity each name denotes; the facts of `:init`; from
    /// them the initial state and the receptacle and object tables, then their display names;
    /// the indexes by type and location; and last the goal, compiled against the finished
    /// world. The first fault found is the error.
    pub fn from_problem(p: &Problem, task: &str) -> Result<World, String> {
        let ids = Declared::collect(p)?;
        let names = ids.names();
        let InitFacts { scene, state } = InitFacts::read(p, &ids, &names)?;
        let initial = state.into_state()?;
        let mut receptacles = scene.receptacles(&ids.receptacles)?;
        let mut objects = scene.objects(&ids.objects);
        number_display_names(&mut receptacles, &mut objects);
        let nt = ids.types.len();
        let objs_by_type = index_by(nt, objects.iter().map(|o| o.otype));
        let receps_by_type = index_by(nt, receptacles.iter().map(|r| Some(r.rtype)));
        let receps_at_loc = index_by(ids.locations.len(), receptacles.iter().map(|r| Some(r.loc)));
        let ty = |n: &str| type_position(&ids.types, n);
        let mut w = World {
            ty_microwave: ty("MicrowaveType"),
            ty_fridge: ty("FridgeType"),
            ty_sinkbasin: ty("SinkBasinType"),
            ty_knife: ty("KnifeType"),
            ty_butterknife: ty("ButterKnifeType"),
            locations: ids.locations,
            receptacles,
            objects,
            types: ids.types,
            task: task_sentence(task),
            hint: None,
            initial,
            names,
            can_contain: scene.can_contain,
            objs_by_type,
            receps_by_type,
            receps_at_loc,
            goal: Goal::And(vec![]),
            goal_vars: 0,
        };
        w.set_goal(&p.goal).map_err(|e| format!(":goal: {e}"))?;
        Ok(w)
    }
}
