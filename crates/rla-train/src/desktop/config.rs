//! The desktop's table of the run config (`[desktop]`).

use crate::config::{EvalSources, RewriterKind, RunConfig, SettingConfig};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

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
    /// With `observation = "compact"`: the summary also names the two empty columns right of
    /// the table by their letters (`| empty I J`), so the cell a new column's header goes in is
    /// read off the screen instead of counted from the table's first column
    /// (`rla_desktop::play::tiny::Summary`). A policy reads the summary it was trained on.
    pub empty_columns: bool,
    /// The evaluation splits played with one departure from the plain sheet applied to every
    /// task (`shift-right`, `shift-down`, `gaps`, `wide`, `long`, `unlocated`,
    /// `swapped-names`; `rla_desktop::tasks::family::Perturb`): the robustness check. Training tasks
    /// are never perturbed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub perturb: Option<rla_desktop::tasks::family::Perturb>,
    /// The world tasks are drawn in: `plain` (a table at A1, three numeric columns, located
    /// instructions; what `models/desktop` learnt) or `sheets` (OSWorld-like sheets: tables
    /// anywhere, 2–8 numeric columns, up to 30 rows, one shared pool of headers, paraphrased
    /// instructions, a count of values; the OOD split from held-out names, layouts and
    /// paraphrases; `rla_desktop::tasks::sheets`). Pool, warm start and splits alike.
    #[serde(skip_serializing_if = "rla_desktop::tasks::family::World::is_plain")]
    pub world: rla_desktop::tasks::family::World,
    /// A folder of OSWorld task files (`*.json`, sub-folders too, as OSWorld's
    /// `evaluation_examples/examples/libreoffice_calc`) as the training pool in place of
    /// generated tasks: the pool draws `pool_size` of them (seeded). Tasks whose evaluator or
    /// setup this setting does not run are left out and counted. `~` and `$VARIABLE`s are
    /// expanded; a relative path is read from the config's folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub train_tasks: Option<PathBuf>,
    /// Folders of OSWorld task files in place of the evaluation splits (`{ in_domain = "…",
    /// ood = "…", validation = "…" }`); `[eval]`'s counts take the first tasks of each, in path
    /// order.
    #[serde(default, skip_serializing_if = "EvalSources::is_empty")]
    pub eval_tasks: EvalSources,
    /// A folder of the files task files download: a task's `http(s)` URL is read from it under
    /// the URL's file name (else the name the task gives the file), since nothing online is
    /// fetched; relative URLs are read from the task file's folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<PathBuf>,
    /// Who rewrites task files (`train_tasks`): `structured` edits the start file (easier:
    /// half the cells the answer changes filled in; harder: a distractor table beside the
    /// data), `reward_model` the instruction, from the judge's critique. Generated tasks are
    /// rewritten by their spec either way (a tiny policy reads its family's instructions only).
    pub rewriter: RewriterKind,
    /// Real desktops to play the episodes on instead of the native one (`rlanything desktop
    /// serve-real` servers, or OSWorld VMs: `["http://127.0.0.1:5000", …]`), one episode a
    /// desktop at a time, the desktops side by side; the tiny policy reads the same summary off
    /// their accessibility trees. A desktop that stops answering is marked down and its episode
    /// played again on another.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub desktops: Vec<String>,
    /// A command run before each episode on a desktop that has no `/setup/reset` (an OSWorld
    /// VM: revert it to its snapshot), as a list (`["vmrun", "revertToSnapshot", …]`), with the
    /// desktop's URL in `RLA_DESKTOP_URL`; without it each desktop is reset through
    /// `/setup/reset`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revert: Option<Vec<String>>,
    /// Seconds a call to a real desktop may take before it counts as not answering.
    pub desktop_timeout: f64,
}

/// What a desktop policy sees of the screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DesktopObservation {
    /// The compact summary of tiny policies: the cursor, what is open, the columns by the rows
    /// they fill, the tabs (`rla_desktop::play::tiny::observation`).
    Compact,
    /// The accessibility tree linearised as OSWorld gives it to text-only models, with the
    /// action space of pyautogui and `computer_use` explained in the prompt.
    A11yTree,
    /// A PNG screenshot of the screen, sent with the prompt to a vision-language model on an
    /// inference server (`rlanything desktop eval`): for evaluation only, since the image's
    /// prompt tokens are the server's and an update needs them.
    Screenshot,
}

impl DesktopConfig {
    /// What the compact summary says beyond the columns ([`DesktopConfig::empty_columns`]).
    pub fn summary(&self) -> rla_desktop::play::tiny::Summary {
        rla_desktop::play::tiny::Summary {
            empty_columns: self.empty_columns,
        }
    }
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
            empty_columns: false,
            perturb: None,
            world: rla_desktop::tasks::family::World::Plain,
            train_tasks: None,
            eval_tasks: EvalSources::default(),
            files: None,
            rewriter: RewriterKind::Structured,
            desktops: Vec::new(),
            revert: None,
            desktop_timeout: 120.0,
        }
    }
}

impl SettingConfig for DesktopConfig {
    fn resolve_paths(&mut self, folder: &Path) -> Result<(), String> {
        let paths = [
            ("train_tasks", &mut self.train_tasks),
            ("eval_tasks.in_domain", &mut self.eval_tasks.in_domain),
            ("eval_tasks.ood", &mut self.eval_tasks.ood),
            ("eval_tasks.validation", &mut self.eval_tasks.validation),
            ("files", &mut self.files),
        ];
        for (key, p) in paths {
            let Some(given) = p.as_ref() else {
                continue;
            };
            let text = given.to_string_lossy().into_owned();
            let mut path = rla_env::household::source::expand_path(&text)
                .map_err(|e| format!("desktop.{key}: {e}"))?;
            if path.is_relative() {
                path = folder.join(path);
            }
            if !path.is_dir() {
                return Err(format!(
                    "desktop.{key} = {text:?}: no such folder ({})",
                    path.display()
                ));
            }
            *p = Some(crate::config::data_path(&path));
        }
        Ok(())
    }

    fn data_sources(&self) -> Vec<(String, PathBuf)> {
        let mut v: Vec<(String, PathBuf)> = (self.train_tasks.clone())
            .map(|p| ("desktop.train_tasks".to_string(), p))
            .into_iter()
            .collect();
        v.extend(self.eval_tasks.named("desktop.eval_tasks"));
        v.extend(self.files.clone().map(|p| ("desktop.files".to_string(), p)));
        v
    }

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
        if d.empty_columns && d.observation != DesktopObservation::Compact {
            return Err("desktop.empty_columns adds to the compact summary (desktop.observation = \"compact\"); the accessibility tree and the screenshot show every column already".into());
        }
        if d.tree_tokens < 100 {
            return Err(format!(
                "desktop.tree_tokens = {}: at least 100 (the tree's header alone takes some)",
                d.tree_tokens
            ));
        }
        crate::config::at_most("desktop.tree_tokens", d.tree_tokens, 1 << 20)?;
        crate::config::at_most("desktop.history", d.history, 1_000)?;
        if let Some(u) = d
            .desktops
            .iter()
            .find(|u| !(u.starts_with("http://") || u.starts_with("https://")))
        {
            return Err(format!("desktop.desktops: {u:?} is not an http(s) URL"));
        }
        if !d.desktops.is_empty() && d.observation != DesktopObservation::Compact {
            return Err("desktop.desktops: the tiny policy's summary is read off a real desktop's tree (desktop.observation = \"compact\"); a served model plays real desktops with `rlanything desktop eval --desktop URL`".into());
        }
        if !d.desktops.is_empty() && !d.constrain_actions {
            return Err("desktop.desktops: episodes on real desktops draw the tiny policy's answers among the state's candidates (desktop.constrain_actions = true)".into());
        }
        if d.revert.as_ref().is_some_and(|r| r.is_empty()) {
            return Err("desktop.revert: a command and its arguments, as a list".into());
        }
        if !(d.desktop_timeout > 0.0 && d.desktop_timeout <= 3600.0) {
            return Err(format!(
                "desktop.desktop_timeout = {}: seconds, above 0 and at most 3600",
                d.desktop_timeout
            ));
        }
        if d.perturb.is_some() && !d.eval_tasks.is_empty() {
            return Err("desktop.perturb changes generated tasks; desktop.eval_tasks plays task files as they are written (perturb the generated splits, or drop one of the two)".into());
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
