//! One shape for every episode a policy plays, whatever the setting: its steps ([`StepRec`]) and
//! the episode ([`Trajectory`]). Below the play loop, the judge and the `Setting` trait, which all
//! speak of it, so that none of them imports another in a circle.

use serde::{Deserialize, Serialize};

/// One step of an episode.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepRec {
    /// What the policy saw (as the record keeps it).
    pub observation: String,
    /// The earlier steps as the prompt told them (the desktop's "Previous actions", the
    /// household's notes); empty where the prompt carries its own history.
    pub previous: String,
    /// The environment state the step starts from, as a key: the steps of a task's episodes
    /// with equal keys start from the same state (the groups of credit by state,
    /// `advantage = "anchor"`); `None` where the setting gives none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<u64>,
    /// The policy's prompt (token ids, chat template applied; empty for a prompt with an image,
    /// whose tokens the server keeps).
    pub prompt_ids: Vec<u32>,
    /// The policy's answer (token ids).
    pub response_ids: Vec<u32>,
    /// `log π_old` of the answer's tokens.
    pub logprobs: Vec<f32>,
    /// With constrained answers, the tokens each answer token was drawn among (`logprobs` are
    /// over these only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choices: Option<Vec<Vec<u32>>>,
    /// The answer's text.
    pub answer: String,
    /// The action it was taken as.
    pub action: String,
    /// The code the action ran, where the setting runs code (the desktop's pyautogui).
    pub code: String,
    /// Why the step failed or was read otherwise than written, if it was.
    pub error: Option<String>,
    /// What the environment showed after it.
    pub next_observation: String,
    /// The step's label, the one a judge's process accuracy, μ and `household.oracle_verdicts`
    /// are measured against: the household's is the label an agent could know (the searching
    /// expert's, which knows only what the agent has seen:
    /// `rla_env::household::expert::knowable_label`), the desktop's its expert's (whose plan is
    /// fully informed there: the screen shows everything).
    pub progress: bool,
    /// A second label of the step where the setting has one: the household's fully informed
    /// planner's (did the step shorten the shortest plan of an expert that knows where every
    /// object is? `rla_env::household::expert::progress_label`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planner_progress: Option<bool>,
}

/// One episode.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Trajectory {
    /// Index of its task in the batch.
    pub task: usize,
    /// Its steps.
    pub steps: Vec<StepRec>,
    /// The episode's score: 1 solved, 0 not, or the evaluator's share in between.
    pub score: f64,
}

impl Trajectory {
    /// Whether the task was solved.
    pub fn won(&self) -> bool {
        self.score >= 1.0
    }

    /// Whether the episode's last `last` actions (at least two) repeat one action or alternate
    /// between two: the loop a deterministic policy falls into when its prompt comes back to
    /// what it was. False for an episode shorter than `last`.
    pub fn ends_in_loop(&self, last: usize) -> bool {
        let n = self.steps.len();
        if last < 2 || n < last {
            return false;
        }
        let tail: Vec<&str> = self.steps[n - last..]
            .iter()
            .map(|s| s.action.as_str())
            .collect();
        tail.iter().enumerate().all(|(i, a)| *a == tail[i % 2])
    }
}
