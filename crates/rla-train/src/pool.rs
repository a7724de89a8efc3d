//! The task pool of any setting: slots holding the active tasks (with the ids they held
//! before), rewrites waiting for their accuracy, and the lineage of every decided rewrite.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rla_core::adapt::Direction;
use serde::{Deserialize, Serialize};

/// What the pool needs of a task: an id, and the id of the task it was rewritten from.
pub trait PoolTask:
    Clone + std::fmt::Debug + PartialEq + Serialize + for<'de> Deserialize<'de>
{
    /// The task's id (unique within a run).
    fn id(&self) -> &str;
    /// The id of the task it was rewritten from, if any.
    fn parent(&self) -> Option<&str>;
}

/// One slot of the pool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(bound = "T: PoolTask")]
pub struct Slot<T> {
    /// The active task.
    pub task: T,
    /// Ids of the tasks it replaced, oldest first.
    pub history: Vec<String>,
}

/// A rewrite waiting for its accuracy (rolled out in the next iteration).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(bound = "T: PoolTask")]
pub struct Pending<T> {
    /// The slot whose task it would replace.
    pub slot: usize,
    /// The rewritten task.
    pub task: T,
    /// Harder or easier.
    pub direction: Direction,
    /// The parent's accuracy when the rewrite was proposed.
    pub parent_acc: f64,
    /// The critique that guided it.
    pub critique: Option<String>,
    /// What was changed.
    pub perturbation: String,
    /// The iteration that proposed it.
    pub proposed_at: usize,
}

/// A decided rewrite (one line of `tasks.jsonl`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(bound = "T: PoolTask")]
pub struct Lineage<T> {
    /// The rewrite's id.
    pub id: String,
    /// Its parent's id.
    pub parent: String,
    /// Harder or easier.
    pub direction: Direction,
    /// What was changed.
    pub perturbation: String,
    /// The critique that guided it.
    pub critique: Option<String>,
    /// The parent's accuracy.
    pub acc_before: f64,
    /// The rewrite's measured accuracy.
    pub acc_after: f64,
    /// Whether it joined the pool.
    pub accepted: bool,
    /// The iteration of the decision.
    pub iteration: usize,
    /// The task.
    pub task: T,
}

/// Slots, pending rewrites and lineage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(bound = "T: PoolTask")]
pub struct Pool<T> {
    /// The active tasks.
    pub slots: Vec<Slot<T>>,
    /// Rewrites to roll out next.
    pub pending: Vec<Pending<T>>,
    /// Every rewrite decided so far.
    pub lineage: Vec<Lineage<T>>,
    /// With `draw = "stream"`, the order tasks are drawn in (absent: drawn at random each
    /// iteration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<Stream>,
}

/// How a run draws its iteration's tasks from the pool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Draw {
    /// `tasks_per_iteration` distinct slots at random each iteration, independently of the
    /// iterations before: over a run a task of a small pool is drawn many times.
    #[default]
    Random,
    /// A per-run permutation of the whole pool, read in order: no task repeats before every
    /// task has been drawn once (then a new permutation, an *epoch*); an accepted rewrite gets a
    /// slot of its own, placed at a random point of the current epoch's rest.
    Stream,
}

impl Draw {
    /// Whether it is the default, [`Draw::Random`] (a config that says nothing of it).
    pub fn is_random(&self) -> bool {
        *self == Draw::Random
    }
}

/// The stream's place: the current epoch's order, how far it has been read, and how often each
/// slot has been drawn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stream {
    /// The current epoch's permutation of slots.
    pub order: Vec<usize>,
    /// How many of `order` have been drawn.
    pub next: usize,
    /// Epochs begun (1 while the first permutation is read).
    pub epoch: u64,
    /// Draws of each slot so far.
    pub draws: Vec<u32>,
}

impl Stream {
    /// Slots drawn at least once.
    pub fn distinct(&self) -> usize {
        self.draws.iter().filter(|&&d| d > 0).count()
    }

    /// Draws of a slot drawn before.
    pub fn repeats(&self) -> usize {
        self.draws
            .iter()
            .map(|&d| d.saturating_sub(1) as usize)
            .sum()
    }
}

impl<T: PoolTask> Pool<T> {
    /// A pool of fresh tasks, nothing pending.
    pub fn new(tasks: Vec<T>) -> Pool<T> {
        Pool {
            slots: tasks
                .into_iter()
                .map(|task| Slot {
                    task,
                    history: vec![],
                })
                .collect(),
            pending: vec![],
            lineage: vec![],
            stream: None,
        }
    }

    /// This iteration's `n` distinct slots: drawn at random with `seed` ([`Draw::Random`]), or
    /// the next ones of the run's stream ([`Draw::Stream`]; `epoch_seed(e)` names epoch e's
    /// permutation, so a resumed run draws what it would have).
    pub fn draw(
        &mut self,
        n: usize,
        how: Draw,
        seed: u64,
        epoch_seed: impl Fn(u64) -> u64,
    ) -> Vec<usize> {
        if how == Draw::Random {
            return self.sample(n, seed);
        }
        let len = self.slots.len();
        let st = self.stream.get_or_insert_with(|| Stream {
            order: vec![],
            next: 0,
            epoch: 0,
            draws: vec![],
        });
        st.draws.resize(len, 0);
        let n = n.min(len);
        let mut out: Vec<usize> = Vec::with_capacity(n);
        while out.len() < n {
            if st.next >= st.order.len() {
                st.epoch += 1;
                st.order = sample_slots(len, len, epoch_seed(st.epoch));
                st.next = 0;
                // the slots this draw took already go last, so one draw holds no task twice
                let (taken, fresh): (Vec<usize>, Vec<usize>) =
                    st.order.iter().partition(|s| out.contains(s));
                st.order = fresh.into_iter().chain(taken).collect();
            }
            let s = st.order[st.next];
            st.next += 1;
            out.push(s);
            st.draws[s] += 1;
        }
        out
    }

    /// `n` distinct slots drawn with the seed.
    pub fn sample(&self, n: usize, seed: u64) -> Vec<usize> {
        sample_slots(self.slots.len(), n, seed)
    }

    /// Records the decision on a pending rewrite; an accepted one replaces its slot's task
    /// (history kept) or, with `grow`, gets a slot of its own.
    pub fn record_outcome(
        &mut self,
        p: &Pending<T>,
        acc: f64,
        accepted: bool,
        k: usize,
        grow: bool,
    ) {
        self.lineage.push(Lineage {
            id: p.task.id().to_string(),
            parent: p.task.parent().unwrap_or_default().to_string(),
            direction: p.direction,
            perturbation: p.perturbation.clone(),
            critique: p.critique.clone(),
            acc_before: p.parent_acc,
            acc_after: acc,
            accepted,
            iteration: k,
            task: p.task.clone(),
        });
        if accepted {
            if let Some(st) = &mut self.stream {
                // a task of its own, drawn in this epoch's rest
                let slot = self.slots.len();
                self.slots.push(Slot {
                    task: p.task.clone(),
                    history: vec![],
                });
                st.draws.push(0);
                let rest = st.order.len() - st.next.min(st.order.len());
                let at = st.next
                    + (rla_core::seed::stream(k as u64, &[slot as u64]) as usize) % (rest + 1);
                st.order.insert(at.min(st.order.len()), slot);
            } else if grow {
                self.slots.push(Slot {
                    task: p.task.clone(),
                    history: vec![],
                });
            } else if let Some(s) = self.slots.get_mut(p.slot) {
                let old = std::mem::replace(&mut s.task, p.task.clone());
                s.history.push(old.id().to_string());
            }
        }
    }
}

/// `n` distinct indices of `0..len`, drawn with the seed.
pub fn sample_slots(len: usize, n: usize, seed: u64) -> Vec<usize> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut idx: Vec<usize> = (0..len).collect();
    idx.shuffle(&mut rng);
    idx.truncate(n.min(len));
    idx
}

#[cfg(test)]
mod tests {
    use super::*;
    use rla_core::adapt::Direction;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct T(String);
    impl PoolTask for T {
        fn id(&self) -> &str {
            &self.0
        }
        fn parent(&self) -> Option<&str> {
            None
        }
    }

    fn pool(n: usize) -> Pool<T> {
        Pool::new((0..n).map(|i| T(format!("t{i}"))).collect())
    }

    fn epoch_seed(e: u64) -> u64 {
        rla_core::seed::stream(7, &[e])
    }

    #[test]
    fn the_stream_draws_every_task_once_before_any_twice() {
        let mut p = pool(10);
        let mut seen = vec![];
        // 3 an iteration: the epoch ends inside the fourth draw
        for _ in 0..3 {
            seen.extend(p.draw(3, Draw::Stream, 0, epoch_seed));
        }
        let fourth = p.draw(3, Draw::Stream, 0, epoch_seed);
        seen.push(fourth[0]);
        let mut sorted = seen.clone();
        sorted.sort();
        assert_eq!(sorted, (0..10).collect::<Vec<_>>(), "{seen:?}");
        // no draw holds a task twice, across the epoch's end too
        let mut f = fourth.clone();
        f.sort();
        f.dedup();
        assert_eq!(f.len(), 3);
        let st = p.stream.as_ref().unwrap();
        assert_eq!((st.distinct(), st.repeats(), st.epoch), (10, 2, 2));
    }

    #[test]
    fn a_stream_resumed_from_its_state_draws_what_it_would_have() {
        let mut a = pool(7);
        a.draw(4, Draw::Stream, 0, epoch_seed);
        let saved: Pool<T> = serde_json::from_str(&serde_json::to_string(&a).unwrap()).unwrap();
        let mut b = saved;
        for _ in 0..5 {
            assert_eq!(
                a.draw(4, Draw::Stream, 0, epoch_seed),
                b.draw(4, Draw::Stream, 0, epoch_seed)
            );
        }
        // another run's seed, another order
        let mut c = pool(7);
        let first: Vec<_> = (0..3)
            .flat_map(|_| c.draw(2, Draw::Stream, 0, |e| rla_core::seed::stream(8, &[e])))
            .collect();
        let mut d = pool(7);
        let other: Vec<_> = (0..3)
            .flat_map(|_| d.draw(2, Draw::Stream, 0, epoch_seed))
            .collect();
        assert_ne!(first, other);
    }

    #[test]
    fn an_accepted_rewrite_is_a_task_of_its_own_in_the_rest_of_the_epoch() {
        let mut p = pool(6);
        p.draw(2, Draw::Stream, 0, epoch_seed);
        let pending = Pending {
            slot: 0,
            task: T("rewrite".into()),
            direction: Direction::Harder,
            parent_acc: 1.0,
            critique: None,
            perturbation: "x".into(),
            proposed_at: 1,
        };
        p.record_outcome(&pending, 0.5, true, 2, false);
        // the parent keeps its slot; the rewrite is slot 6
        assert_eq!(p.slots.len(), 7);
        assert_eq!(p.slots[0].task.0, "t0");
        assert_eq!(p.slots[6].task.0, "rewrite");
        // it is drawn before any task is drawn a second time
        let rest: Vec<usize> = (0..5)
            .flat_map(|_| p.draw(1, Draw::Stream, 0, epoch_seed))
            .collect();
        assert!(rest.contains(&6), "{rest:?}");
        assert_eq!(p.stream.as_ref().unwrap().repeats(), 0);
    }

    #[test]
    fn random_draws_are_the_old_ones() {
        let mut p = pool(9);
        assert_eq!(
            p.draw(4, Draw::Random, 3, epoch_seed),
            sample_slots(9, 4, 3)
        );
        assert!(p.stream.is_none());
    }
}
