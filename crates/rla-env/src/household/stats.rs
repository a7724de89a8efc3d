//! A split's statistics, to hold a split beside ALFWorld's game files: the scenes' size (rooms,
//! receptacles, locations shared, objects and classes) and what a shown instance number tells about
//! the target — the chance that an object shown as `X k` is a target, for each `k`. In ALFWorld's
//! scenes each class has its own 1 to 3 instances, the target's count drawn like any other's, so the
//! number carries no information; a generator that adds distractors one at a time makes `X 3` a
//! target far more often than `X 1`.

use super::world::World;
use std::collections::BTreeMap;
use std::fmt;

/// One scene's figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SceneStats {
    /// Receptacles.
    pub receptacles: usize,
    /// Receptacles that share their location with another.
    pub shared: usize,
    /// Receptacles open at the start.
    pub open: usize,
    /// Objects placed in receptacles at the start.
    pub objects: usize,
    /// Their classes.
    pub classes: usize,
    /// Instances of the target class.
    pub targets: usize,
    /// Shown instance number → (objects shown with it, targets among them).
    pub by_number: BTreeMap<usize, (usize, usize)>,
}

/// The number an object is shown with (`3` in `apple 3`).
fn shown_number(name: &str) -> Option<usize> {
    name.rsplit(' ').next().and_then(|k| k.parse().ok())
}

/// The figures of one scene, whose goal object class is `target` (`Apple`).
pub fn scene_stats(w: &World, target: &str) -> SceneStats {
    let mut s = SceneStats {
        receptacles: w.receptacles.len(),
        ..SceneStats::default()
    };
    let mut at: BTreeMap<u16, usize> = BTreeMap::new();
    for r in &w.receptacles {
        *at.entry(r.loc).or_default() += 1;
    }
    s.shared = w.receptacles.iter().filter(|r| at[&r.loc] > 1).count();
    s.open = w.initial.opened.iter().filter(|o| **o).count();
    let target_type = w.type_index(&format!("{target}Type"));
    let mut classes = std::collections::BTreeSet::new();
    for (i, o) in w.objects.iter().enumerate() {
        if o.name.is_empty() || w.initial.obj_in[i].is_none() {
            continue;
        }
        s.objects += 1;
        classes.insert(o.otype);
        let is_target = target_type.is_some() && o.otype == target_type;
        s.targets += usize::from(is_target);
        if let Some(k) = shown_number(&o.name) {
            let e = s.by_number.entry(k).or_default();
            e.0 += 1;
            e.1 += usize::from(is_target);
        }
    }
    s.classes = classes.len();
    s
}

/// A split's figures: means over its scenes, and the target chance by shown number.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SplitStats {
    /// Scenes.
    pub scenes: usize,
    /// Scenes by room kind, where it is known.
    pub rooms: BTreeMap<String, usize>,
    /// Sums over the scenes.
    pub sum: SceneStats,
    /// Scenes with a single target instance.
    pub single_target: usize,
}

impl SplitStats {
    /// Adds a scene.
    pub fn add(&mut self, s: &SceneStats, room: Option<&str>) {
        self.scenes += 1;
        if let Some(r) = room {
            *self.rooms.entry(r.to_string()).or_default() += 1;
        }
        let t = &mut self.sum;
        t.receptacles += s.receptacles;
        t.shared += s.shared;
        t.open += s.open;
        t.objects += s.objects;
        t.classes += s.classes;
        t.targets += s.targets;
        for (k, (n, hit)) in &s.by_number {
            let e = t.by_number.entry(*k).or_default();
            e.0 += n;
            e.1 += hit;
        }
        self.single_target += usize::from(s.targets == 1);
    }

    fn mean(&self, x: usize) -> f64 {
        x as f64 / self.scenes.max(1) as f64
    }

    /// The chance that an object shown with number `k` is a target (`None` where no object is).
    pub fn target_chance(&self, k: usize) -> Option<f64> {
        self.sum
            .by_number
            .get(&k)
            .filter(|(n, _)| *n > 0)
            .map(|(n, hit)| *hit as f64 / *n as f64)
    }

    /// The mean number of objects a scene.
    pub fn objects_per_scene(&self) -> f64 {
        self.mean(self.sum.objects)
    }
}

impl fmt::Display for SplitStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "scenes                          {}", self.scenes)?;
        if !self.rooms.is_empty() {
            let rooms: Vec<String> = self.rooms.iter().map(|(r, n)| format!("{r} {n}")).collect();
            writeln!(f, "rooms                           {}", rooms.join(", "))?;
        }
        let s = &self.sum;
        writeln!(
            f,
            "receptacles a scene             {:.1}",
            self.mean(s.receptacles)
        )?;
        writeln!(
            f,
            "  sharing a location            {:.1}",
            self.mean(s.shared)
        )?;
        writeln!(
            f,
            "  open at the start             {:.2}",
            self.mean(s.open)
        )?;
        writeln!(
            f,
            "objects a scene                 {:.1}",
            self.mean(s.objects)
        )?;
        writeln!(
            f,
            "object classes a scene          {:.1}",
            self.mean(s.classes)
        )?;
        writeln!(
            f,
            "target instances a scene        {:.2}",
            self.mean(s.targets)
        )?;
        writeln!(
            f,
            "single-target scenes            {:.1}%",
            100.0 * self.mean(self.single_target)
        )?;
        writeln!(f, "shown as   objects   targets   chance it is a target")?;
        for (k, (n, hit)) in &s.by_number {
            writeln!(
                f,
                "  X {k:<5} {n:>8} {hit:>9}   {:>5.1}%",
                100.0 * *hit as f64 / (*n).max(1) as f64
            )?;
        }
        Ok(())
    }
}

/// A policy's take rate of an object in view, by the number it is shown with and whether it is a
/// target: at every state of its episodes where its hands are empty, each object it may take
/// (a `take` among the admissible commands) is a chance, taken or not. A policy that learnt the
/// shown number as a cue takes `X 3` far more readily than `X 1`, target or not.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TakeRates {
    /// (target, shown number) → (chances, takes).
    pub counts: BTreeMap<(bool, usize), (usize, usize)>,
}

impl TakeRates {
    /// Replays an episode's commands on its world from the start, counting the chances and the
    /// takes; a command the world does not accept ends the replay.
    pub fn add_episode(&mut self, w: &std::sync::Arc<World>, target: &str, commands: &[String]) {
        use super::world::Action;
        let target_type = w.type_index(&format!("{target}Type"));
        let mut env = super::game::HouseholdGame::new(w.clone());
        env.reset();
        for c in commands {
            if env.state().held.is_none() {
                let takes: Vec<u16> = env
                    .admissible()
                    .to_vec()
                    .iter()
                    .filter(|a| a.starts_with("take "))
                    .filter_map(|a| match env.parse(a) {
                        Some(Action::Take(o, _)) => Some(o),
                        _ => None,
                    })
                    .collect();
                let taken = match env.parse(c) {
                    Some(Action::Take(o, _)) => Some(o),
                    _ => None,
                };
                for o in takes {
                    let obj = &w.objects[o as usize];
                    let Some(k) = shown_number(&obj.name) else {
                        continue;
                    };
                    let is_target = target_type.is_some() && obj.otype == target_type;
                    let e = self.counts.entry((is_target, k)).or_default();
                    e.0 += 1;
                    e.1 += usize::from(taken == Some(o));
                }
            }
            match env.parse(c) {
                Some(a) => {
                    env.apply(a);
                }
                None => break,
            }
        }
    }

    /// The take rate of objects shown with number `k`, targets or not (`None` without a chance).
    pub fn rate(&self, target: bool, k: usize) -> Option<f64> {
        self.counts
            .get(&(target, k))
            .filter(|(n, _)| *n > 0)
            .map(|(n, t)| *t as f64 / *n as f64)
    }
}

impl fmt::Display for TakeRates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "take rate of an object in view (hands empty), by the number it is shown with"
        )?;
        writeln!(
            f,
            "shown as   target: chances  taken  rate   distractor: chances  taken  rate"
        )?;
        let numbers: std::collections::BTreeSet<usize> =
            self.counts.keys().map(|(_, k)| *k).collect();
        for k in numbers {
            let cell = |t: bool| {
                let (n, hit) = self.counts.get(&(t, k)).copied().unwrap_or((0, 0));
                format!(
                    "{n:>8} {hit:>6} {:>5.1}%",
                    100.0 * hit as f64 / n.max(1) as f64
                )
            };
            writeln!(f, "  X {k:<5} {}        {}", cell(true), cell(false))?;
        }
        Ok(())
    }
}
