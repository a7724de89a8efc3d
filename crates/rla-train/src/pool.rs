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
        }
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
            if grow {
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
