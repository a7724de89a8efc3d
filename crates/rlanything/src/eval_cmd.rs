//! `rlanything eval`: a policy's greedy success in its run's setting (`--config`), or the
//! household's step-by-step views of its episodes, ALFWorld's own game folders and the judge's
//! verdicts on them. The policy is a checkpoint (`--model DIR`) or a model on OpenAI-compatible
//! servers (`--url URL --model NAME`); the evaluation is `rla_train::eval`'s, this file parses
//! the arguments and prints.

use anyhow::{bail, Result};
use rla_core::Split;
use rla_env::household::splits::{eval_tasks_first, split_size};
use rla_lm::Sampler;
use rla_train::config::SettingConfig;
use rla_train::eval;
use rla_train::household::config::HouseholdConfig;
use rla_train::household::eval::{self as household_eval, HouseholdFlags};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct EvalArgs {
    /// A policy checkpoint (HF layout, or a Hugging Face id `owner/name[@rev]` found in the local
    /// hub cache); with `--config`, by default the run's last checkpoint
    /// (`RUN/checkpoint/policy`) or the config's `policy.path`. With `--url`, the model's name
    /// on the servers.
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Evaluate a model on an OpenAI-compatible server (vLLM, SGLang, `rlanything serve`) at
    /// this base URL (`http://host:port`, or `http://host:port/v1`; repeat for more servers)
    /// instead of a checkpoint in process; `--model` names it there.
    #[arg(long = "url", value_name = "URL")]
    pub urls: Vec<String>,
    /// With `--url`: the checkpoint folder whose tokenizer and chat template the served model
    /// has (default: the checkpoint `--config` names; without either, the server's own, which
    /// answers chat requests only). The household reads the prompt settings it records.
    #[arg(long, value_name = "DIR")]
    pub tokenizer: Option<PathBuf>,
    /// With `--url`: send `Authorization: Bearer <KEY>`, the key read from this environment
    /// variable.
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    #[command(flatten)]
    pub calls: CallLimits,
    /// Which split: in-domain or ood (the fixed splits), or validation (the tuning split).
    #[arg(long, default_value = "in-domain")]
    pub split: String,
    /// Number of tasks (default: all).
    #[arg(long)]
    pub n: Option<usize>,
    /// Play ALFWorld's own game folders instead of a split: every folder under DIR holding a
    /// `game.tw-pddl` and its `traj_data.json` (as in ALFWorld's `valid_seen`), greedily.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["split", "judge"])]
    pub games: Option<PathBuf>,
    /// History window of the prompts (default: the checkpoint's own, else 2).
    #[arg(long)]
    pub window: Option<usize>,
    /// Listing style of the admissible commands (numbered, inline, command or unlisted)
    /// (default: the checkpoint's own, else numbered).
    #[arg(long)]
    pub prompt_style: Option<String>,
    /// Draw answers only among the admissible ones, as in training with `constrain_actions`
    /// (default: the checkpoint's own, else off).
    #[arg(long)]
    pub constrained: bool,
    /// Give the policy the agent's notes, as in training with `household.notes` (default: the
    /// checkpoint's own, else off).
    #[arg(long)]
    pub notes: bool,
    /// Step limit of each episode (default: the checkpoint's own, else 60).
    #[arg(long)]
    pub step_limit: Option<usize>,
    /// Print the first N episodes step by step.
    #[arg(long, default_value_t = 0)]
    pub show: usize,
    /// Household: also print the policy's take rate of an object in view with empty hands, by
    /// the number the object is shown with, target or not (a policy that reads the number as a
    /// cue takes `X 3` more readily than `X 1`).
    #[arg(long)]
    pub take_rates: bool,
    /// Sample the answers at this temperature instead of greedily, `--samples` episodes per
    /// task (or per game of the household's `--games`), and print the mean success with its
    /// standard error over the tasks (a lower-variance view of a policy than one greedy
    /// episode a task); any setting's split with `--config`.
    #[arg(long)]
    pub temperature: Option<f64>,
    /// Episodes per task with `--temperature`.
    #[arg(long, default_value_t = 4)]
    pub samples: usize,
    /// Most tokens of each answer (a pretrained model reasons before its `\boxed{}`).
    #[arg(long, default_value_t = 16)]
    pub max_tokens: usize,
    /// Then judge every step played this many times with the judge's prompt (sampled at
    /// temperature 1), and print the judge's quality against the steps' labels (the ones an agent
    /// could know, and the fully informed planner's) and the episodes' outcomes.
    #[arg(long, default_value_t = 0)]
    pub judge: usize,
    /// The judge (default: the policy checkpoint itself).
    #[arg(long)]
    pub judge_model: Option<PathBuf>,
    /// Most tokens of each verdict.
    #[arg(long, default_value_t = 128)]
    pub judge_tokens: usize,
    /// Show the judge the agent's notes above each step, as in training with
    /// `household.judge_notes` (default: the run's config, else off).
    #[arg(long)]
    pub judge_notes: bool,
    /// A run folder or a run config (any setting): evaluates its policy as the run does
    /// (the setting's own evaluation, its prompts and step limit); the household's flags above
    /// override the config's.
    #[arg(long, value_name = "RUN_OR_CONFIG")]
    pub config: Option<PathBuf>,
    /// Desktop (with `--config`): play the split with one departure from the plain sheet applied
    /// to every task (`shift-right`, `shift-down`, `gaps`, `wide`, `long`, `unlocated`,
    /// `swapped-names`), or `all`: the plain split and each kind, as a table.
    #[arg(long, value_name = "KIND")]
    pub perturb: Option<String>,
    /// With `--config`: also count the split's tasks won by kind, as a table (the household:
    /// ALFWorld's goal type; the desktop: each task's family and how many columns it works on)
    #[arg(long)]
    pub by_kind: bool,
}

/// How long a model on servers may take (`--timeout`, `--tries`): the flags of the commands that
/// take `--url`.
#[derive(clap::Args, Debug, Clone, Copy, Default)]
pub struct CallLimits {
    /// With `--url`: seconds a request may take, from connecting to the reply's last byte (a
    /// server that never answers, or trickles its reply, fails there) (default: 600).
    #[arg(long, value_name = "SECS", alias = "timeout-s")]
    pub timeout: Option<f64>,
    /// With `--url`: tries of a request, each on the least-loaded live server, before the command
    /// fails (default: 4).
    #[arg(long, value_name = "N")]
    pub tries: Option<usize>,
}

impl CallLimits {
    /// Sets `ends`' time-outs and tries as the flags say.
    fn apply(&self, ends: &mut rla_remote::client::Endpoints) -> Result<()> {
        if let Some(t) = self.timeout {
            if !(t > 0.0 && t <= 86_400.0) {
                bail!("--timeout {t}: a positive number of seconds, at most 86400");
            }
            ends.timeout = std::time::Duration::from_secs_f64(t);
            ends.head_timeout = ends.timeout;
        }
        if let Some(n) = self.tries {
            if !(1..=100).contains(&n) {
                bail!("--tries {n}: from 1 to 100");
            }
            ends.tries = n;
        }
        Ok(())
    }
}

/// `--perturb`: the kinds to play, `None` the plain sheet.
fn parse_perturb(p: &str) -> Result<Vec<Option<rla_desktop::tasks::family::Perturb>>> {
    use rla_desktop::tasks::family::Perturb;
    if p == "all" {
        return Ok(std::iter::once(None)
            .chain(Perturb::ALL.into_iter().map(Some))
            .collect());
    }
    Ok(vec![Some(Perturb::parse(p).map_err(|e| {
        anyhow::anyhow!("--perturb {p}: {e}, or all")
    })?)])
}

/// `--perturb`: the split under each kind, a line each, then a table when there are several.
fn perturbed_eval(
    cfg: &rla_train::config::RunConfig,
    policy: &Policy,
    split: Split,
    a: &EvalArgs,
    kinds: &[Option<rla_desktop::tasks::family::Perturb>],
) -> Result<()> {
    use rla_train::desktop::config::DesktopConfig;
    let mut rows = vec![];
    for &k in kinds {
        let mut cfg = cfg.clone();
        DesktopConfig::of_mut(&mut cfg).perturb = k;
        let name = k.map_or("none", |k| k.name());
        let r = eval::setting_success(&cfg, policy.sampler.sampler(), split, a.n, true)?;
        println!(
            "{} success on {} {} tasks, perturbation {name}: {:.3}",
            policy.name, r.n, a.split, r.success
        );
        rows.push((name, r.n, r.success));
    }
    if rows.len() > 1 {
        println!("\n| perturbation | tasks | success |\n|---|---|---|");
        for (name, n, s) in rows {
            println!("| {name} | {n} | {:.1}% |", 100.0 * s);
        }
    }
    Ok(())
}

/// `--split`.
pub(crate) fn parse_split(s: &str) -> Result<Split> {
    Ok(match s {
        "in-domain" | "in_domain" => Split::InDomain,
        "ood" => Split::Ood,
        "validation" => Split::Validation,
        s => bail!("--split {s}: use in-domain, ood or validation"),
    })
}

/// `--prompt-style`.
fn parse_prompt_style(s: &str) -> Result<rla_train::household::PromptStyle> {
    use rla_train::household::PromptStyle;
    Ok(match s {
        "numbered" => PromptStyle::Numbered,
        "inline" => PromptStyle::Inline,
        "command" => PromptStyle::Command,
        "unlisted" => PromptStyle::Unlisted,
        s => bail!("--prompt-style {s}: use numbered, inline, command or unlisted"),
    })
}

/// The household's flags that override its config or a checkpoint's settings.
fn household_flags(a: &EvalArgs) -> Result<HouseholdFlags> {
    Ok(HouseholdFlags {
        window: a.window,
        style: a
            .prompt_style
            .as_deref()
            .map(parse_prompt_style)
            .transpose()?,
        step_limit: a.step_limit,
        notes: a.notes,
        constrained: a.constrained,
    })
}

/// The policy evaluated: a checkpoint opened here, or a model on servers.
pub(crate) struct Policy {
    pub(crate) sampler: Box<dyn PolicySampler>,
    /// How the lines name it.
    pub(crate) name: String,
    /// The folder of its files here (the checkpoint, or the served model's tokenizer).
    pub(crate) files: Option<PathBuf>,
}

/// Where a model is: a checkpoint (`--model DIR`) or a model on servers (`--url URL --model
/// NAME`, with the tokenizer's folder and the key's variable).
pub(crate) struct ModelPlace<'a> {
    pub(crate) model: Option<&'a Path>,
    pub(crate) urls: &'a [String],
    pub(crate) tokenizer: Option<&'a Path>,
    pub(crate) api_key_env: Option<&'a str>,
    pub(crate) calls: CallLimits,
}

/// What a policy is used as here.
pub(crate) trait PolicySampler {
    fn sampler(&self) -> &dyn Sampler;
}

impl PolicySampler for Box<dyn rla_lm::Model> {
    fn sampler(&self) -> &dyn Sampler {
        &**self
    }
}

impl PolicySampler for rla_remote::client::RemoteSampler<Box<dyn rla_lm::Codec>> {
    fn sampler(&self) -> &dyn Sampler {
        self
    }
}

/// Opens the policy `--model` (or `--url` and `--model`) names; `default` is the checkpoint
/// the config names.
fn open_policy(a: &EvalArgs, default: Option<PathBuf>, config: Option<&Path>) -> Result<Policy> {
    open_model(
        &ModelPlace {
            model: a.model.as_deref(),
            urls: &a.urls,
            tokenizer: a.tokenizer.as_deref(),
            api_key_env: a.api_key_env.as_deref(),
            calls: a.calls,
        },
        default,
        config,
    )
}

/// Opens the model `a` names; `default` is the checkpoint the config names.
pub(crate) fn open_model(
    a: &ModelPlace,
    default: Option<PathBuf>,
    config: Option<&Path>,
) -> Result<Policy> {
    if a.urls.is_empty() {
        if a.tokenizer.is_some() || a.api_key_env.is_some() {
            bail!("--tokenizer and --api-key-env go with --url (a model on a server)");
        }
        if a.calls.timeout.is_some() || a.calls.tries.is_some() {
            bail!("--timeout and --tries go with --url (a model on a server)");
        }
        let model = match (a.model, default, config) {
            (Some(m), _, _) => crate::backend::model_dir(m)?,
            (None, Some(d), _) => d,
            (None, None, Some(c)) => bail!(
                "{}: no trained policy to evaluate (no checkpoint/policy, no policy.path); name \
                 one with --model",
                c.display()
            ),
            (None, None, None) => bail!("name the policy: --model DIR, or --config RUN_OR_CONFIG"),
        };
        let lm = crate::backend::open_sampler(&model)?;
        return Ok(Policy {
            sampler: Box::new(lm),
            name: model.display().to_string(),
            files: Some(model),
        });
    }
    let name = a
        .model
        .as_ref()
        .map(|m| m.to_string_lossy().into_owned())
        .ok_or_else(|| anyhow::anyhow!("--url: name the model on the server with --model NAME"))?;
    let files = a.tokenizer.map(Path::to_path_buf).or(default);
    let codec: Box<dyn rla_lm::Codec> = match &files {
        Some(dir) => crate::backend::backend().codec(dir)?,
        None => Box::new(rla_remote::client::ServerTokenizer),
    };
    let mut ends = rla_remote::client::Endpoints::one(&a.urls[0], &name);
    ends.urls = a
        .urls
        .iter()
        .map(|u| rla_remote::client::base_url(u))
        .collect();
    ends.api_key = crate::access::api_key(a.api_key_env)?;
    a.calls.apply(&mut ends)?;
    let remote = rla_remote::client::RemoteSampler::new(codec, ends)?;
    Ok(Policy {
        sampler: Box::new(remote),
        name: format!("{name} at {}", a.urls.join(", ")),
        files,
    })
}

pub fn run_eval(a: EvalArgs) -> Result<()> {
    if a.temperature.is_some() && a.judge > 0 {
        bail!("--temperature samples the policy's episodes; the judge's view (--judge) judges greedy ones");
    }
    let flags = household_flags(&a)?;
    let perturbs = a.perturb.as_deref().map(parse_perturb).transpose()?;
    if a.by_kind && a.config.is_none() {
        bail!("--by-kind counts a run's split by kind: name the run or its config with --config");
    }
    if perturbs.is_some() && a.config.is_none() {
        bail!("--perturb plays a desktop run's split: name the run or its config with --config");
    }
    let mut run_cfg = None;
    let mut default = None;
    if let Some(c) = &a.config {
        let (mut cfg, policy) = eval::run_config(c)?;
        default = policy;
        // the household's step-by-step and sampled views play its episodes here; anything else
        // is the setting's own evaluation
        let household_views = a.games.is_some()
            || (a.show > 0 && cfg.setting == "household")
            || a.judge > 0
            || a.take_rates;
        if perturbs.is_some() && cfg.setting != "desktop" {
            bail!(
                "--perturb: perturbations are the desktop's sheets; this run's setting is {}",
                cfg.setting
            );
        }
        if cfg.setting != "household" && household_views {
            bail!(
                "--games, --judge and --take-rates are the household's views; this run's setting is {}",
                cfg.setting
            );
        }
        if a.by_kind && (household_views || perturbs.is_some()) {
            bail!("--by-kind counts the setting's own greedy evaluation; leave out --perturb and the household's views");
        }
        if a.show > 0 && perturbs.is_some() {
            bail!("--show prints the plain split's episodes; leave out --perturb");
        }
        if cfg.setting != "household" || !household_views {
            let split = parse_split(&a.split)?;
            if cfg.setting == "household" {
                flags.apply_to_config(&mut cfg)?;
            }
            let policy = open_policy(&a, default, Some(c))?;
            if let Some(kinds) = perturbs {
                return perturbed_eval(&cfg, &policy, split, &a, &kinds);
            }
            let started = std::time::Instant::now();
            if let Some(temperature) = a.temperature {
                if a.by_kind || a.show > 0 {
                    bail!("--by-kind and --show count and print greedy episodes; leave out --temperature");
                }
                let sampling = rla_train::setting::Sampling {
                    temperature,
                    samples: a.samples,
                    seed: 0,
                };
                let r = eval::setting_sampled(
                    &cfg,
                    policy.sampler.sampler(),
                    split,
                    a.n,
                    sampling,
                    true,
                )?;
                println!(
                    "{} success on {} {} tasks, {} episodes each at temperature {temperature}: \
                     {:.3} ± {:.3} (standard error over tasks; {} setting; {:.0} s)",
                    policy.name,
                    r.per_task.len(),
                    a.split,
                    a.samples,
                    r.mean,
                    r.std_error,
                    r.setting,
                    started.elapsed().as_secs_f64()
                );
                return Ok(());
            }
            if a.by_kind || a.show > 0 {
                let (r, played) =
                    eval::setting_episodes(&cfg, policy.sampler.sampler(), split, a.n, true)?;
                for (i, e) in played.iter().take(a.show).enumerate() {
                    println!("{}", eval::show_episode(i, e));
                }
                println!(
                    "{} success on {} {} tasks: {:.3} ({} setting; {:.0} s)",
                    policy.name,
                    r.n,
                    a.split,
                    r.success,
                    r.setting,
                    started.elapsed().as_secs_f64()
                );
                if a.by_kind {
                    println!("\n| kind | won | tasks | success |\n|---|---|---|---|");
                    let mut kinds =
                        eval::count_kinds(played.iter().map(|e| (e.kind.as_str(), e.traj.won())));
                    kinds.sort_by(|x, y| x.kind.cmp(&y.kind));
                    for k in kinds {
                        println!(
                            "| {} | {} | {} | {:.1}% |",
                            k.kind,
                            k.won,
                            k.tasks,
                            100.0 * k.won as f64 / k.tasks as f64
                        );
                    }
                }
                return Ok(());
            }
            let r = eval::setting_success(&cfg, policy.sampler.sampler(), split, a.n, true)?;
            println!(
                "{} success on {} {} tasks: {:.3} ({} setting; {:.0} s)",
                policy.name,
                r.n,
                a.split,
                r.success,
                r.setting,
                started.elapsed().as_secs_f64()
            );
            return Ok(());
        }
        run_cfg = Some(cfg);
    }
    let split = parse_split(&a.split)?;
    let size = split_size(split);
    let n = a.n.unwrap_or(size);
    if n > size {
        bail!(
            "--n {n}: the {} split holds {size} tasks; ask for at most {size}",
            a.split
        );
    }
    let tasks = eval_tasks_first(split, n);
    let policy = open_policy(&a, default, a.config.as_deref())?;
    let lm = policy.sampler.sampler();
    // the run's config, else the settings the checkpoint records, else the reference's
    // numbered prompt; explicit flags override either
    let recorded = match (&run_cfg, &policy.files) {
        (Some(cfg), _) => Some(rla_train::household::Episodes::evaluation(cfg)),
        (None, Some(files)) => rla_train::household::Episodes::load_from(files)?,
        (None, None) => None,
    };
    if recorded.is_none() {
        eprintln!(
            "{} records no prompt settings ({}); using the flags' (default: numbered prompt, \
             window 2, 60 steps)",
            policy
                .files
                .as_deref()
                .unwrap_or(Path::new(&policy.name))
                .display(),
            rla_train::household::EPISODES_FILE
        );
    }
    let ep = flags.apply_to_episodes(recorded.unwrap_or(household_eval::DEFAULT_EPISODES))?;
    if let Some(dir) = &a.games {
        return print_games(&a, &policy.name, lm, dir, ep);
    }
    if let Some(t) = a.temperature {
        let sampling = rla_train::setting::Sampling {
            temperature: t,
            samples: a.samples,
            seed: 0,
        };
        let r = household_eval::household_sampled(lm, &tasks[..n], ep, sampling, a.max_tokens)?;
        for t in r.trajs.iter().take(a.show) {
            print_episode(&format!("task: {}", tasks[t.task].sentence()), t);
        }
        println!(
            "{} success on {n} {} tasks, {} episodes each at temperature {t}: {:.3} \
             (standard error {:.3})",
            policy.name, a.split, a.samples, r.mean, r.std_error,
        );
        return Ok(());
    }
    let started = std::time::Instant::now();
    let g = household_eval::household_greedy(lm, &tasks[..n], ep, a.max_tokens)?;
    let played = started.elapsed().as_secs_f64();
    for (t, task) in g.trajs.iter().zip(&tasks[..n]).take(a.show) {
        print_episode(&format!("task: {}", task.sentence()), t);
    }
    println!(
        "{} success on {n} {} tasks: {:.3} ({} steps in {played:.0} s)",
        policy.name,
        a.split,
        g.success(),
        g.steps
    );
    println!(
        "lost {}; {} of them end in a loop (their last {} actions repeat one action or alternate between two)",
        g.lost(),
        g.looped,
        household_eval::LOOP_STEPS
    );
    if a.take_rates {
        print!(
            "{}",
            household_eval::task_take_rates(&g.trajs, &tasks[..n])?
        );
    }
    if a.judge > 0 {
        let notes = a.judge_notes
            || run_cfg
                .as_ref()
                .is_some_and(|c| HouseholdConfig::of(c).judge_notes);
        print_judge(&a, lm, (&tasks[..n], notes), &g.trajs)?;
    }
    Ok(())
}

/// An episode step by step, under a heading.
fn print_episode(heading: &str, t: &rla_train::play::Trajectory) {
    println!("{heading} ({})", if t.won() { "won" } else { "lost" });
    for (i, s) in t.steps.iter().enumerate() {
        println!("  {:>2}. {} → {}", i + 1, s.answer, s.next_observation);
    }
}

/// `eval --games DIR`: every game folder under DIR, played greedily; the success rate last.
fn print_games(
    a: &EvalArgs,
    name: &str,
    lm: &dyn Sampler,
    dir: &Path,
    ep: rla_train::household::Episodes,
) -> Result<()> {
    if let Some(t) = a.temperature {
        let sampling = rla_train::setting::Sampling {
            temperature: t,
            samples: a.samples,
            seed: 0,
        };
        let (folders, r) =
            household_eval::household_games_sampled(lm, dir, a.n, ep, sampling, a.max_tokens)?;
        for t in r.trajs.iter().take(a.show) {
            print_episode(&format!("game: {}", folders[t.task].display()), t);
        }
        println!(
            "{name} success on {} games of {}, {} episodes each at temperature {t}: {:.3} \
             (standard error {:.3})",
            folders.len(),
            dir.display(),
            a.samples,
            r.mean,
            r.std_error,
        );
        return Ok(());
    }
    let started = std::time::Instant::now();
    let g = household_eval::household_games(lm, dir, a.n, ep, a.max_tokens)?;
    let played = started.elapsed().as_secs_f64();
    for (t, f) in g.played.trajs.iter().zip(&g.folders).take(a.show) {
        print_episode(&format!("game: {}", f.display()), t);
    }
    if a.take_rates {
        print!("{}", g.take_rates);
    }
    println!(
        "{name} success on {} games of {}: {:.3} ({} won; {} steps in {played:.0} s)",
        g.folders.len(),
        dir.display(),
        g.played.success(),
        g.played.won,
        g.played.steps,
    );
    Ok(())
}

/// The judge's verdicts on the steps of `trajs`, and its quality against the steps' labels.
fn print_judge(
    a: &EvalArgs,
    policy: &dyn Sampler,
    tasks: (&[rla_env::household::task::TaskSpec], bool),
    trajs: &[rla_train::play::Trajectory],
) -> Result<()> {
    let own;
    let judge = match &a.judge_model {
        Some(d) => {
            own = crate::backend::open_sampler(&crate::backend::model_dir(d)?)?;
            &*own
        }
        None => policy,
    };
    let started = std::time::Instant::now();
    let v = household_eval::judge_steps(judge, tasks, trajs, a.judge, a.judge_tokens)?;
    let secs = started.elapsed().as_secs_f64();
    let q = &v.quality;
    let shown = |x: Option<f64>| x.map_or("n/a".into(), |x| format!("{x:.3}"));
    let by_outcome = q.outcome_calibration.unwrap_or_default();
    println!(
        "judge: {} verdicts on {} steps in {secs:.0} s; with a \\boxed{{±1}}: {} ({:.1}%); \
         process accuracy {} (against the labels an agent could know), {} (against the fully \
         informed planner's), outcome accuracy {}; μ (paper: by the outcome) {} (p+ {}, p- {}); \
         μ by the label {} (p+ {}, p- {})",
        v.verdicts,
        v.steps,
        v.parsed,
        100.0 * v.parsed as f64 / v.verdicts.max(1) as f64,
        shown(q.process_acc),
        shown(q.process_acc_planner),
        shown(q.outcome_acc),
        shown(by_outcome.mu()),
        shown(by_outcome.p_plus()),
        shown(by_outcome.p_minus()),
        shown(q.calibration.mu()),
        shown(q.calibration.p_plus()),
        shown(q.calibration.p_minus()),
    );
    if let Some(t) = &v.first {
        println!("a verdict: {t:?}");
    }
    Ok(())
}
