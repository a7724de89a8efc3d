//! The task pool, pending rewrites and their lineage, and the structured rewriter that maps the
//! judge's critique to household perturbations.

use crate::config::RunConfig;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rla_core::adapt::Direction;
use rla_env::household::perturb::{proposals, Perturbation};
use rla_env::household::splits::train_tasks;
use rla_env::household::TaskSpec;
use serde::{Deserialize, Serialize};

/// One slot of the pool: its active task and the tasks it held before.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Slot {
    /// The task rolled out when the slot is sampled.
    pub task: TaskSpec,
    /// Earlier tasks of this slot (ids), oldest first.
    pub history: Vec<String>,
}

/// The task pool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskPool {
    /// Its slots.
    pub slots: Vec<Slot>,
}

impl TaskPool {
    /// The run's starting pool: `pool_size` training tasks with the training step limit.
    pub fn initial(cfg: &RunConfig) -> TaskPool {
        let slots = train_tasks(cfg.pool_size, cfg.seed)
            .into_iter()
            .map(|mut t| {
                t.step_limit = cfg.train_step_limit;
                Slot {
                    task: t,
                    history: vec![],
                }
            })
            .collect();
        TaskPool { slots }
    }

    /// Samples `n` distinct slots.
    pub fn sample(&self, n: usize, seed: u64) -> Vec<usize> {
        sample_slots(self.slots.len(), n, seed)
    }
}

/// `n` distinct slot indices out of `len` (all of them, shuffled, when `n ≥ len`), seeded.
pub fn sample_slots(len: usize, n: usize, seed: u64) -> Vec<usize> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut idx: Vec<usize> = (0..len).collect();
    idx.shuffle(&mut rng);
    idx.truncate(n.min(len));
    idx
}

/// A rewrite waiting for its accuracy to be measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pending {
    /// The slot it would replace (or extend, when the pool grows).
    pub slot: usize,
    /// The rewritten task.
    pub task: TaskSpec,
    /// Harder or easier.
    pub direction: Direction,
    /// The parent's accuracy when the rewrite was proposed.
    pub parent_acc: f64,
    /// The summarised critique that guided it.
    pub critique: Option<String>,
    /// The perturbation applied.
    pub perturbation: String,
    /// The iteration that proposed it.
    pub proposed_at: usize,
}

/// A lineage record (one line of `tasks.jsonl`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lineage {
    /// The rewrite's id.
    pub id: String,
    /// Its parent's id.
    pub parent: String,
    /// Harder or easier.
    pub direction: Direction,
    /// The perturbation.
    pub perturbation: String,
    /// The critique.
    pub critique: Option<String>,
    /// Parent accuracy before.
    pub acc_before: f64,
    /// The rewrite's measured accuracy.
    pub acc_after: f64,
    /// Whether it joined the pool.
    pub accepted: bool,
    /// Iteration of the decision.
    pub iteration: usize,
    /// The task itself.
    pub task: TaskSpec,
}

/// The structured rewriter: picks the perturbation the critique points to. Failures that the judge
/// blames on wandering ("went to", "only looked") get a hint first when making a task easier;
/// otherwise targets, distractors and receptacle types move the difficulty.
pub fn structured_rewrite(
    parent: &TaskSpec,
    dir: Direction,
    critique: Option<&str>,
) -> Option<(Perturbation, TaskSpec)> {
    let mut cands = proposals(parent, dir);
    let wandering = critique.is_some_and(|c| c.contains("went to") || c.contains("only looked"));
    let rank = |p: &Perturbation| -> usize {
        match (dir, p) {
            (Direction::Easier, Perturbation::AddHint) if wandering => 0,
            (Direction::Easier, Perturbation::SwapReceptacle { .. }) => 1,
            (Direction::Easier, Perturbation::MoreTargets) => 2,
            (Direction::Easier, Perturbation::AddHint) => 3,
            (Direction::Harder, Perturbation::SwapReceptacle { .. }) => 0,
            (Direction::Harder, Perturbation::RemoveHint) => 1,
            (Direction::Harder, Perturbation::FewerTargets) => 2,
            (Direction::Harder, Perturbation::AddDistractors { .. }) => 3,
            _ => 4,
        }
    };
    cands.sort_by_key(|(p, _)| rank(p));
    cands.into_iter().next()
}
