//! Goal formulas compiled against a household world and evaluated on its state.
//!
//! Existential goals are solved by backtracking that binds each variable from the facts that
//! constrain it (the objects of a type, the contents of a receptacle, the receptacle at a
//! location …) before falling back to the variable's whole domain, so a goal check costs a few
//! look-ups rather than a scan of every combination.
//!
//! A goal knows the world only through [`Facts`], which the household's world implements.

use super::pddl::Formula;
use super::vocab::{Ent, Kind, Pred};

/// What a goal asks of the world it is compiled against and evaluated in.
pub trait Facts {
    /// The dynamic state facts are read off.
    type State;

    /// The entity a constant names.
    fn entity(&self, name: &str) -> Option<Ent>;

    /// All entities of a kind.
    fn domain(&self, k: Kind) -> Box<dyn Iterator<Item = Ent> + '_>;

    /// Whether a fact holds in a state.
    fn fact(&self, st: &Self::State, p: Pred, a: &[Ent]) -> bool;

    /// Candidates for the one unbound variable `var` of a fact, read off the state; `None`
    /// when this fact cannot generate them.
    fn generate(
        &self,
        st: &Self::State,
        p: Pred,
        args: &[Term],
        var: usize,
        get: impl Fn(&Term) -> Option<Ent>,
    ) -> Option<Vec<Ent>>;
}

/// A term of a compiled formula.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Term {
    /// A variable slot.
    Var(usize),
    /// A constant entity.
    Const(Ent),
}

/// A formula compiled against one world.
#[derive(Debug, Clone)]
pub enum Goal {
    /// A fact.
    Atom(Pred, Vec<Term>),
    /// Equality of two terms.
    Eq(Term, Term),
    /// Negation.
    Not(Box<Goal>),
    /// Conjunction.
    And(Vec<Goal>),
    /// Disjunction.
    Or(Vec<Goal>),
    /// `∃ vars: ∧ conjuncts` (nested conjunctions and existentials are flattened into one).
    Exists(Vec<(usize, Kind)>, Vec<(Goal, u64)>),
    /// `∀ vars: body`.
    Forall(Vec<(usize, Kind)>, Box<Goal>),
}

/// Compiles a formula: resolves constants and predicates, numbers variables.
pub fn compile<W: Facts>(f: &Formula, world: &W) -> Result<(Goal, usize), String> {
    let mut scope: Vec<(String, usize)> = Vec::new();
    let mut next = 0usize;
    let g = compile_rec(f, world, &mut scope, &mut next)?;
    if next > 64 {
        return Err(format!(
            "goal uses {next} variables; at most 64 are supported"
        ));
    }
    Ok((g, next))
}

fn term<W: Facts>(t: &str, world: &W, scope: &[(String, usize)]) -> Result<Term, String> {
    if t.starts_with('?') {
        scope
            .iter()
            .rev()
            .find(|(n, _)| n == t)
            .map(|(_, i)| Term::Var(*i))
            .ok_or_else(|| format!("unbound variable {t}"))
    } else {
        world
            .entity(t)
            .map(Term::Const)
            .ok_or_else(|| format!("unknown constant {t}"))
    }
}

fn bind_vars(
    vars: &[(String, String)],
    scope: &mut Vec<(String, usize)>,
    next: &mut usize,
) -> Result<Vec<(usize, Kind)>, String> {
    vars.iter()
        .map(|(n, ty)| {
            let k = Kind::from_type_name(ty).ok_or_else(|| format!("unknown type {ty} of {n}"))?;
            scope.push((n.clone(), *next));
            *next += 1;
            Ok((*next - 1, k))
        })
        .collect()
}

fn compile_rec<W: Facts>(
    f: &Formula,
    world: &W,
    scope: &mut Vec<(String, usize)>,
    next: &mut usize,
) -> Result<Goal, String> {
    Ok(match f {
        Formula::Atom(p, args) => {
            let pred = Pred::parse(p).ok_or_else(|| format!("unsupported predicate {p}"))?;
            if args.len() != pred.arity() {
                return Err(format!(
                    "{p} takes {} arguments, not {}",
                    pred.arity(),
                    args.len()
                ));
            }
            let terms = args
                .iter()
                .map(|a| term(a, world, scope))
                .collect::<Result<Vec<_>, _>>()?;
            Goal::Atom(pred, terms)
        }
        Formula::Eq(a, b) => Goal::Eq(term(a, world, scope)?, term(b, world, scope)?),
        Formula::Not(x) => Goal::Not(Box::new(compile_rec(x, world, scope, next)?)),
        Formula::And(xs) => Goal::And(
            xs.iter()
                .map(|x| compile_rec(x, world, scope, next))
                .collect::<Result<_, _>>()?,
        ),
        Formula::Or(xs) => Goal::Or(
            xs.iter()
                .map(|x| compile_rec(x, world, scope, next))
                .collect::<Result<_, _>>()?,
        ),
        Formula::Exists(vars, body) => {
            let depth = scope.len();
            let mut slots = bind_vars(vars, scope, next)?;
            let mut conj = Vec::new();
            flatten(body, world, scope, next, &mut slots, &mut conj)?;
            scope.truncate(depth);
            let with_masks = conj.into_iter().map(|g| {
                let m = free_mask(&g);
                (g, m)
            });
            Goal::Exists(slots, with_masks.collect())
        }
        Formula::Forall(vars, body) => {
            let depth = scope.len();
            let slots = bind_vars(vars, scope, next)?;
            let b = compile_rec(body, world, scope, next)?;
            scope.truncate(depth);
            Goal::Forall(slots, Box::new(b))
        }
    })
}

/// Flattens `and` and nested `exists` into one conjunction with one set of variables.
fn flatten<W: Facts>(
    f: &Formula,
    world: &W,
    scope: &mut Vec<(String, usize)>,
    next: &mut usize,
    slots: &mut Vec<(usize, Kind)>,
    out: &mut Vec<Goal>,
) -> Result<(), String> {
    match f {
        Formula::And(xs) => {
            for x in xs {
                flatten(x, world, scope, next, slots, out)?;
            }
        }
        Formula::Exists(vars, body) => {
            // Hoisting is sound inside a conjunction: variables get fresh slots.
            slots.extend(bind_vars(vars, scope, next)?);
            flatten(body, world, scope, next, slots, out)?;
        }
        other => out.push(compile_rec(other, world, scope, next)?),
    }
    Ok(())
}

fn free_mask(g: &Goal) -> u64 {
    fn t(x: &Term) -> u64 {
        match x {
            Term::Var(i) => 1u64 << i,
            Term::Const(_) => 0,
        }
    }
    match g {
        Goal::Atom(_, a) => a.iter().map(t).fold(0, |m, x| m | x),
        Goal::Eq(a, b) => t(a) | t(b),
        Goal::Not(x) => free_mask(x),
        Goal::And(xs) | Goal::Or(xs) => xs.iter().fold(0, |m, x| m | free_mask(x)),
        Goal::Exists(vs, cs) => {
            let bound: u64 = vs.iter().fold(0, |m, (v, _)| m | (1 << v));
            cs.iter().fold(0, |m, (_, fm)| m | fm) & !bound
        }
        Goal::Forall(vs, b) => {
            let bound: u64 = vs.iter().fold(0, |m, (v, _)| m | (1 << v));
            free_mask(b) & !bound
        }
    }
}

/// An environment of variable bindings.
pub struct Env {
    vals: Vec<Option<Ent>>,
    bound: u64,
}

impl Env {
    /// An empty environment with `n` slots.
    pub fn new(n: usize) -> Self {
        Env {
            vals: vec![None; n],
            bound: 0,
        }
    }
    fn set(&mut self, v: usize, e: Ent) {
        self.vals[v] = Some(e);
        self.bound |= 1 << v;
    }
    fn unset(&mut self, v: usize) {
        self.vals[v] = None;
        self.bound &= !(1 << v);
    }
    fn get(&self, t: &Term) -> Option<Ent> {
        match t {
            Term::Const(e) => Some(*e),
            Term::Var(i) => self.vals[*i],
        }
    }
}

/// Evaluates a compiled goal on a state.
pub fn eval<W: Facts>(g: &Goal, world: &W, st: &W::State, env: &mut Env) -> bool {
    match g {
        Goal::Atom(p, args) => {
            let mut a = [Ent::Agent; 3];
            for (i, t) in args.iter().enumerate() {
                match env.get(t) {
                    Some(e) => a[i] = e,
                    None => return false,
                }
            }
            world.fact(st, *p, &a[..args.len()])
        }
        Goal::Eq(a, b) => env.get(a).is_some() && env.get(a) == env.get(b),
        Goal::Not(x) => !eval(x, world, st, env),
        Goal::And(xs) => xs.iter().all(|x| eval(x, world, st, env)),
        Goal::Or(xs) => xs.iter().any(|x| eval(x, world, st, env)),
        Goal::Exists(vars, conj) => solve(vars, conj, world, st, env),
        Goal::Forall(vars, body) => forall(vars, body, world, st, env),
    }
}

fn forall<W: Facts>(
    vars: &[(usize, Kind)],
    body: &Goal,
    world: &W,
    st: &W::State,
    env: &mut Env,
) -> bool {
    let Some(((v, k), rest)) = vars.split_first() else {
        return eval(body, world, st, env);
    };
    for e in world.domain(*k) {
        env.set(*v, e);
        let ok = forall(rest, body, world, st, env);
        env.unset(*v);
        if !ok {
            return false;
        }
    }
    true
}

fn solve<W: Facts>(
    vars: &[(usize, Kind)],
    conj: &[(Goal, u64)],
    world: &W,
    st: &W::State,
    env: &mut Env,
) -> bool {
    // Every conjunct whose variables are all bound must hold.
    for (g, m) in conj {
        if m & !env.bound == 0 && !eval(g, world, st, env) {
            return false;
        }
    }
    let Some(&(var, kind)) = vars.iter().find(|(v, _)| env.bound & (1 << v) == 0) else {
        return true;
    };
    // Prefer candidates generated by a fact with this variable as its only unbound term.
    let mut cands: Option<Vec<Ent>> = None;
    for (g, m) in conj {
        if *m & !env.bound == 1 << var {
            if let Goal::Atom(p, args) = g {
                if let Some(c) = world.generate(st, *p, args, var, |t| env.get(t)) {
                    if cands.as_ref().is_none_or(|old| c.len() < old.len()) {
                        cands = Some(c);
                    }
                }
            }
        }
    }
    let cands = cands.unwrap_or_else(|| world.domain(kind).collect());
    for e in cands {
        if e.kind() != kind {
            continue;
        }
        env.set(var, e);
        let ok = solve(vars, conj, world, st, env);
        env.unset(var);
        if ok {
            return true;
        }
    }
    false
}
