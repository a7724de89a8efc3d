//! Many households stepped in parallel.

use super::game::HouseholdGame;
use super::StepResult;
use rayon::prelude::*;

/// A batch of environments stepped together on rayon's pool.
#[derive(Debug, Clone, Default)]
pub struct Batch {
    /// The environments.
    pub envs: Vec<HouseholdGame>,
}

impl Batch {
    /// A batch of environments.
    pub fn new(envs: Vec<HouseholdGame>) -> Self {
        Batch { envs }
    }

    /// Resets every environment; returns their first observations.
    pub fn reset(&mut self) -> Vec<String> {
        self.envs.par_iter_mut().map(|e| e.reset()).collect()
    }

    /// Steps environment `i` with `commands[i]`; `None` skips it (for finished episodes).
    pub fn step(&mut self, commands: &[Option<String>]) -> Vec<Option<StepResult>> {
        assert_eq!(
            commands.len(),
            self.envs.len(),
            "one command per environment"
        );
        self.envs
            .par_iter_mut()
            .zip(commands.par_iter())
            .map(|(e, c)| c.as_ref().map(|c| e.step(c)))
            .collect()
    }

    /// The admissible commands of every environment.
    pub fn admissible(&mut self) -> Vec<Vec<String>> {
        self.envs
            .par_iter_mut()
            .map(|e| e.admissible().to_vec())
            .collect()
    }
}
