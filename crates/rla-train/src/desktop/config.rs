//! The desktop's table of the run config (`[desktop]`).

use crate::config::{RunConfig, SettingConfig};
use serde::{Deserialize, Serialize};

/// The GUI setting (`[desktop]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DesktopConfig {
    /// Step limit in training (the reference allows 30).
    pub train_step_limit: usize,
    /// Step limit in evaluation.
    pub eval_step_limit: usize,
    /// Previous actions shown to the policy and the judge ("Step i: …").
    pub history: usize,
    /// Screen width in pixels.
    pub screen_width: u32,
    /// Screen height in pixels.
    pub screen_height: u32,
    /// Draw the policy's answer only among the state's candidate actions (tiny models need it).
    /// Without it an answer may also be a `computer_use` tool call or pyautogui code, as real
    /// models answer.
    pub constrain_actions: bool,
    /// What the policy sees of the screen.
    pub observation: DesktopObservation,
    /// With `observation = "a11y_tree"`: the tree is cut after this many of the policy's
    /// tokens (OSWorld's default is 10,000).
    pub tree_tokens: usize,
    /// The evaluation splits played with one departure from the plain sheet applied to every
    /// task (`shift-right`, `shift-down`, `gaps`, `wide`, `long`, `unlocated`,
    /// `swapped-names`; `rla_desktop::family::Perturb`): the robustness check. Training tasks
    /// are never perturbed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub perturb: Option<rla_desktop::family::Perturb>,
    /// The world tasks are drawn in: `plain` (a table at A1, three numeric columns, located
    /// instructions; what `models/desktop` learnt) or `sheets` (OSWorld-like sheets: tables
    /// anywhere, 2–8 numeric columns, up to 30 rows, one shared pool of headers, paraphrased
    /// instructions, a count of values; the OOD split from held-out names, layouts and
    /// paraphrases; `rla_desktop::sheets`). Pool, warm start and splits alike.
    #[serde(skip_serializing_if = "rla_desktop::family::World::is_plain")]
    pub world: rla_desktop::family::World,
}

/// What a desktop policy sees of the screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DesktopObservation {
    /// The compact summary of tiny policies: the cursor, what is open, the columns by the rows
    /// they fill, the tabs (`rla_desktop::tiny::observation`).
    Compact,
    /// The accessibility tree linearised as OSWorld gives it to text-only models, with the
    /// action space of pyautogui and `computer_use` explained in the prompt.
    A11yTree,
    /// A PNG screenshot of the screen, sent with the prompt to a vision-language model on an
    /// inference server (`rlanything desktop eval`): for evaluation only, since the image's
    /// prompt tokens are the server's and an update needs them.
    Screenshot,
}

impl Default for DesktopConfig {
    fn default() -> Self {
        DesktopConfig {
            train_step_limit: 12,
            eval_step_limit: 15,
            history: 3,
            screen_width: 1920,
            screen_height: 1080,
            constrain_actions: true,
            observation: DesktopObservation::Compact,
            tree_tokens: 10_000,
            perturb: None,
            world: rla_desktop::family::World::Plain,
        }
    }
}

impl SettingConfig for DesktopConfig {
    /// Also refuses what a tiny policy cannot do when the run's policy is not a checkpoint
    /// (a tiny model warm-started here).
    fn validate(&self, run: &RunConfig, active: bool) -> Result<(), String> {
        let d = self;
        let checkpoint = run.policy.path.is_some();
        if !(1..=30).contains(&d.train_step_limit) || !(1..=30).contains(&d.eval_step_limit) {
            return Err(format!(
                "desktop.train_step_limit = {}, desktop.eval_step_limit = {}: each must lie in 1..=30 (OSWorld's episodes have at most 30 steps)",
                d.train_step_limit, d.eval_step_limit
            ));
        }
        if d.screen_width < 640
            || d.screen_height < 400
            || d.screen_width > 8192
            || d.screen_height > 8192
        {
            return Err(format!(
                "desktop.screen_width × screen_height = {}×{}: from 640×400 to 8192×8192",
                d.screen_width, d.screen_height
            ));
        }
        if !d.constrain_actions && active && !checkpoint {
            return Err("desktop.constrain_actions = false needs a policy checkpoint that answers freely; tiny models need the constraint".into());
        }
        if d.observation == DesktopObservation::A11yTree && active && !checkpoint {
            return Err("desktop.observation = \"a11y_tree\" needs a policy checkpoint; tiny models are warm-started on the compact observation".into());
        }
        if d.observation == DesktopObservation::Screenshot && active {
            return Err("desktop.observation = \"screenshot\" is for evaluating a vision-language model on a server (`rlanything desktop eval`); a training run needs the policy's prompt tokens, which the server keeps".into());
        }
        if d.tree_tokens < 100 {
            return Err(format!(
                "desktop.tree_tokens = {}: at least 100 (the tree's header alone takes some)",
                d.tree_tokens
            ));
        }
        if active && run.pretrain.dagger_rounds > 0 && d.observation != DesktopObservation::Compact
        {
            return Err(
                "pretrain.dagger_rounds: the desktop's DAgger labels the compact screen the \
                 tiny policy reads (desktop.observation = \"compact\")"
                    .into(),
            );
        }
        Ok(())
    }
}
