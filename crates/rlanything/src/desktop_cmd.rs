//! `rlanything desktop …`: the GUI setting's spreadsheet desktop from the command line.

pub use crate::args::SplitArg;
use anyhow::{bail, Context, Result};
use rand::{Rng, SeedableRng};
use rla_core::Split;
use rla_desktop::tasks::expert;
use rla_desktop::tasks::family;
use rla_desktop::tasks::local;
use rla_desktop::ui::a11y::{self, TreeOptions};
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::time::Instant;

/// `--world`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default)]
pub enum WorldArg {
    /// The plain sheet (a table at A1, located instructions): what `models/desktop` learnt.
    #[default]
    Plain,
    /// OSWorld-like sheets: tables anywhere, shared header pool, paraphrased instructions; the
    /// OOD split from held-out pools.
    Sheets,
}

impl From<WorldArg> for family::World {
    fn from(w: WorldArg) -> family::World {
        match w {
            WorldArg::Plain => family::World::Plain,
            WorldArg::Sheets => family::World::Sheets,
        }
    }
}

#[derive(clap::Subcommand)]
pub enum DesktopCmd {
    /// Score a result workbook for an OSWorld task file; the score is the last line.
    Evaluate {
        /// The task JSON.
        #[arg(long)]
        task: PathBuf,
        /// The result file (what the task's `vm_file` getter reads).
        #[arg(long)]
        result: PathBuf,
        /// The expected file(s); default: the task's `cloud_file` paths, relative to the task file.
        #[arg(long)]
        expected: Vec<PathBuf>,
        /// A folder of downloaded files: a task's `http(s)` URLs are read from it, each under
        /// the URL's file name (else the name the task gives the file); nothing is fetched.
        #[arg(long)]
        files: Option<PathBuf>,
    },
    /// Write generated tasks as OSWorld task files with their workbooks.
    Export {
        /// Which tasks.
        #[arg(long, value_enum, default_value = "in-domain")]
        split: SplitArg,
        /// How many (evaluation splits stop at their size: 230 in-domain, 139 OOD, 140 validation).
        #[arg(long, default_value_t = usize::MAX)]
        n: usize,
        /// Output folder.
        #[arg(long)]
        out: PathBuf,
        /// The world the tasks are drawn in.
        #[arg(long, value_enum, default_value = "plain")]
        world: WorldArg,
    },
    /// Play a task by typing pyautogui code, one step per line; `tree`, `marks`, `expert`,
    /// `score` and `screenshot FILE.png` show things, an empty line ends the episode.
    Play {
        /// The task JSON (its workbooks beside it, as `export` writes them).
        task: PathBuf,
        /// Screen size.
        #[arg(long, default_value = "1920x1080")]
        screen: String,
        /// A folder of downloaded files: a task's `http(s)` URLs are read from it, each under
        /// the URL's file name (else the name the task gives the file); nothing is fetched.
        #[arg(long)]
        files: Option<PathBuf>,
    },
    /// Write a screenshot of a task's start (or of an exported task) as PNG.
    Screenshot {
        /// The task JSON.
        task: PathBuf,
        /// The PNG to write.
        #[arg(long)]
        out: PathBuf,
        /// Screen size.
        #[arg(long, default_value = "1920x1080")]
        screen: String,
        /// Image size (default: the screen's).
        #[arg(long)]
        size: Option<String>,
        /// Draw set-of-marks boxes and numbers.
        #[arg(long)]
        marks: bool,
        /// A folder of downloaded files: a task's `http(s)` URLs are read from it, each under
        /// the URL's file name (else the name the task gives the file); nothing is fetched.
        #[arg(long)]
        files: Option<PathBuf>,
    },
    /// Play an evaluation split greedily: a vision-language model on an inference server
    /// (`--url`, `--model`: each step sends the screenshot, PNG as a data URI, with the prompt to
    /// `/v1/chat/completions`, and runs the answer, a `computer_use` tool call or pyautogui code),
    /// or the expert (`--expert`); on the native desktop, or on a real one (`--desktop URL`, a
    /// server speaking OSWorld's protocol: `desktop serve-real`, or an OSWorld VM). The success
    /// rate is the last line.
    Eval {
        /// The model server's base URL (repeat for more servers).
        #[arg(long = "url")]
        urls: Vec<String>,
        /// The model's name on it.
        #[arg(long)]
        model: Option<String>,
        /// Play the expert instead of a model.
        #[arg(long)]
        expert: bool,
        /// A real desktop's address (`http://HOST:PORT`); default: the native desktop.
        #[arg(long)]
        desktop: Option<String>,
        /// Do not reset the real desktop before each task (OSWorld's VMs have no reset: revert
        /// the VM to its snapshot instead).
        #[arg(long)]
        no_reset: bool,
        /// Send `Authorization: Bearer <KEY>`, the key read from this environment variable.
        #[arg(long)]
        api_key_env: Option<String>,
        /// Send the real desktop `Authorization: Bearer <KEY>`, the key read from this
        /// environment variable (its `serve-real --api-key-env`).
        #[arg(long)]
        desktop_api_key_env: Option<String>,
        /// Which tasks.
        #[arg(long, value_enum, default_value = "in-domain")]
        split: SplitArg,
        /// How many (at most the split's size).
        #[arg(long, default_value_t = 20)]
        n: usize,
        /// Screen size (the screenshot's too) of the native desktop.
        #[arg(long, default_value = "1920x1080")]
        screen: String,
        /// Most steps per episode.
        #[arg(long, default_value_t = 15)]
        step_limit: usize,
        /// Most tokens per answer.
        #[arg(long, default_value_t = 512)]
        max_tokens: usize,
        /// Seconds allowed for each request.
        #[arg(long, default_value_t = 600.0)]
        timeout_s: f64,
        /// Print the steps of this many episodes.
        #[arg(long, default_value_t = 0)]
        show: usize,
        /// Write the first episode's screens (before each step and at the end) to this folder
        /// as PNG, 960 pixels wide.
        #[arg(long)]
        record: Option<PathBuf>,
        /// Play the split with one departure from the plain sheet applied to every task:
        /// shift-right, shift-down, gaps, wide, long, unlocated or swapped-names.
        #[arg(long, value_name = "KIND", value_parser = family::Perturb::parse)]
        perturb: Option<family::Perturb>,
        /// The world the tasks are drawn in.
        #[arg(long, value_enum, default_value = "plain")]
        world: WorldArg,
    },
    /// Serve a real desktop over OSWorld's controller protocol: Xvfb, openbox, a D-Bus session
    /// with the accessibility bus, and LibreOffice Calc with a seeded profile (install them with
    /// `scripts/desktop-real.sh`). It binds to 127.0.0.1 (elsewhere only with a key) and runs only
    /// pyautogui calls and conversions inside its session folder unless told otherwise; SIGTERM or
    /// Ctrl-C stops it and every process it started.
    ServeReal {
        /// Port (0: any free one; the address is printed).
        #[arg(long, default_value_t = 5000)]
        port: u16,
        /// Address to bind; beyond loopback it needs --api-key-env (whoever holds the key drives
        /// this desktop).
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
        /// Screen size.
        #[arg(long, default_value = "1920x1080")]
        screen: String,
        /// Run any Python and any command sent, as OSWorld's own server does.
        #[arg(long)]
        allow_any_code: bool,
        /// The Python with pyautogui and pyatspi (default: $RLA_DESKTOP_PYTHON, else
        /// target/desktop-venv/bin/python, else /usr/bin/python3).
        #[arg(long)]
        python: Option<PathBuf>,
        /// Take only requests with `Authorization: Bearer <KEY>`, the key read from this
        /// environment variable; needed to bind beyond loopback.
        #[arg(long)]
        api_key_env: Option<String>,
    },
    /// Step the desktop with random valid actions, the accessibility tree computed every step;
    /// prints steps per second on one core.
    Bench {
        /// Steps (default: 200000 natively, 100 on a real desktop).
        #[arg(long)]
        steps: Option<usize>,
        /// A real desktop's address: each step is an action, a screenshot and the tree, as an
        /// agent's step is. Repeat it for more desktops: the bench steps the first alone, then
        /// the first 2, 3, … side by side, and prints the steps per second of each count.
        #[arg(long = "desktop")]
        desktops: Vec<String>,
        /// Seed of the actions.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Send the real desktop `Authorization: Bearer <KEY>`, the key read from this
        /// environment variable (its `serve-real --api-key-env`).
        #[arg(long)]
        desktop_api_key_env: Option<String>,
    },
}

fn screen(s: &str) -> Result<(u32, u32)> {
    let (w, h) = s
        .split_once(['x', 'X'])
        .with_context(|| format!("--screen {s:?}: expected WIDTHxHEIGHT, e.g. 1920x1080"))?;
    Ok((
        w.trim()
            .parse()
            .with_context(|| format!("--screen {s:?}: the width is not a number"))?,
        h.trim()
            .parse()
            .with_context(|| format!("--screen {s:?}: the height is not a number"))?,
    ))
}

pub fn run(cmd: DesktopCmd) -> Result<()> {
    match cmd {
        DesktopCmd::Evaluate {
            task,
            result,
            expected,
            files,
        } => {
            let s = local::score(&task, files.as_deref(), &result, &expected)
                .map_err(anyhow::Error::msg)?;
            println!("{s}");
            Ok(())
        }
        DesktopCmd::Export {
            split,
            n,
            out,
            world,
        } => {
            let specs = family::split_in(world.into(), split.into(), n);
            if specs.is_empty() {
                bail!("no tasks to write (--n {n})");
            }
            for s in &specs {
                local::export(&family::generate(s), &out)?;
            }
            println!("wrote {} tasks to {}", specs.len(), out.display());
            Ok(())
        }
        DesktopCmd::Play {
            task,
            screen: sc,
            files,
        } => play(task, files, screen(&sc)?),
        DesktopCmd::Screenshot {
            task,
            out,
            screen: sc,
            size,
            marks,
            files,
        } => {
            let (w, h) = screen(&sc)?;
            let (_, d) = local::open(&task, files.as_deref(), w, h)?;
            let nodes = a11y::tree(&d, TreeOptions::default());
            let img = rla_desktop::ui::render::draw(&d, &nodes, marks);
            let img = match size {
                Some(s) => {
                    let (iw, ih) = self::screen(&s)?;
                    img.scaled(iw, ih)
                        .map_err(|m| anyhow::anyhow!("--size {s}: {m}"))?
                }
                None => img,
            };
            rla_desktop::sheet::xlsx::write_atomic(&out, &img.png())?;
            println!("wrote {} ({}×{})", out.display(), img.width, img.height);
            Ok(())
        }
        DesktopCmd::Bench {
            steps,
            seed,
            desktops,
            ..
        } if desktops.is_empty() => bench(steps.unwrap_or(200_000), seed),
        DesktopCmd::Bench {
            steps,
            seed,
            desktops,
            desktop_api_key_env,
        } => crate::desktop_real::bench(
            &desktops,
            crate::access::api_key(desktop_api_key_env.as_deref())?,
            steps.unwrap_or(100),
            seed,
        ),
        DesktopCmd::ServeReal {
            port,
            host,
            screen: sc,
            allow_any_code,
            python,
            api_key_env,
        } => crate::desktop_real::serve(
            port,
            &host,
            &sc,
            allow_any_code,
            python,
            api_key_env.as_deref(),
        ),
        DesktopCmd::Eval {
            urls,
            model,
            expert,
            desktop,
            no_reset,
            api_key_env,
            desktop_api_key_env,
            split,
            n,
            screen: sc,
            step_limit,
            max_tokens,
            timeout_s,
            show,
            record,
            perturb,
            world,
        } => {
            if step_limit == 0 {
                bail!("--step-limit 0: an episode needs at least one step");
            }
            if !(timeout_s > 0.0 && timeout_s <= 86_400.0) {
                bail!("--timeout-s {timeout_s}: a positive number of seconds, at most 86400");
            }
            let (w, h) = screen(&sc)?;
            let vlm = match (expert, urls.is_empty(), model) {
                (true, true, None) => None,
                (true, _, _) => bail!("--expert plays the expert; --url and --model play a served model: give one or the other"),
                (false, false, Some(model)) => {
                    let mut ends = rla_remote::client::Endpoints::one(&urls[0], &model);
                    ends.urls = urls
                        .iter()
                        .map(|u| rla_remote::client::base_url(u))
                        .collect();
                    ends.api_key = crate::access::api_key(api_key_env.as_deref())?;
                    ends.timeout = std::time::Duration::from_secs_f64(timeout_s);
                    ends.head_timeout = ends.timeout;
                    Some(rla_remote::client::RemoteSampler::new(
                        rla_remote::client::ServerTokenizer,
                        ends,
                    )?)
                }
                (false, _, _) => bail!("give --url and --model (a vision-language model on an inference server), or --expert"),
            };
            // the tasks either player plays, and how its last line names them
            let specs = family::perturbed(family::split_in(world.into(), split.into(), n), perturb);
            if specs.is_empty() {
                bail!("no tasks to play (--n {n})");
            }
            let what = match perturb {
                None => format!("{:?}", Split::from(split)),
                Some(p) => format!("{:?} ({})", Split::from(split), p.name()),
            };
            match (desktop, vlm) {
                (None, Some(vlm)) => {
                    vision_eval(&vlm, (&specs, &what), (w, h), step_limit, max_tokens, show)
                }
                (desktop, vlm) => crate::desktop_real::eval(
                    desktop.as_deref(),
                    crate::access::api_key(desktop_api_key_env.as_deref())?,
                    !no_reset,
                    vlm.as_ref().map(|v| v as &dyn rla_lm::Sampler),
                    (specs, &what),
                    (w, h),
                    step_limit,
                    max_tokens,
                    timeout_s,
                    show,
                    record.as_deref(),
                ),
            }
        }
    }
}

/// Plays `tasks` with `vlm` on screenshots; prints the success rate, naming the tasks `what`.
fn vision_eval(
    vlm: &dyn rla_lm::Sampler,
    (tasks, what): (&[family::Spec], &str),
    (w, h): (u32, u32),
    step_limit: usize,
    max_tokens: usize,
    show: usize,
) -> Result<()> {
    use rla_train::config::RunConfig;
    use rla_train::desktop::config::{DesktopConfig, DesktopObservation};
    let cfg = RunConfig::with_table(
        "desktop",
        DesktopConfig {
            observation: DesktopObservation::Screenshot,
            constrain_actions: false,
            screen_width: w,
            screen_height: h,
            ..Default::default()
        },
    );
    let bar = rla_train::bar((tasks.len() * step_limit) as u64, "eval");
    let trajs = rla_train::desktop::rollout(
        vlm,
        &cfg,
        tasks,
        1,
        step_limit,
        &rla_lm::SampleParams::greedy(max_tokens),
        false,
        Some(&bar),
    )?;
    bar.finish_and_clear();
    for (t, spec) in trajs.iter().zip(tasks).take(show) {
        let task = family::generate(spec).task;
        println!("task {}: {} (score {})", task.id, task.instruction, t.score);
        for (i, s) in t.steps.iter().enumerate() {
            let error = s
                .error
                .as_deref()
                .map(|e| format!(" — failed: {e}"))
                .unwrap_or_default();
            println!("  {:>2}. {}{error}", i + 1, s.action);
        }
    }
    let solved = trajs.iter().filter(|t| t.score >= 1.0).count();
    println!(
        "success on {} {what} tasks: {:.3} ({solved} solved)",
        tasks.len(),
        solved as f64 / tasks.len() as f64
    );
    Ok(())
}

fn play(task: PathBuf, files: Option<PathBuf>, (w, h): (u32, u32)) -> Result<()> {
    let files = files.as_deref();
    let (t, mut d) = local::open(&task, files, w, h)?;
    println!("{}\n", t.instruction);
    let words = |s: &str| s.split_whitespace().count();
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let tmp = tempfile::tempdir()?;
    let result = tmp.path().join(&d.name);
    loop {
        let nodes = a11y::tree(&d, TreeOptions::default());
        if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
            print!("> ");
            std::io::stdout().flush()?;
        }
        let Some(line) = lines.next().transpose()? else {
            break;
        };
        let line = line.trim();
        match line {
            "" => break,
            "tree" => println!("{}", a11y::linearize(&nodes, usize::MAX, &words)),
            "marks" => println!("{}", a11y::marks_text(&nodes)),
            "score" | "expert" => {
                let saved = d.saved.clone().unwrap_or_else(|| d.book.clone());
                rla_desktop::sheet::xlsx::save(&saved, &result)?;
                if line == "score" {
                    match local::score(&task, files, &result, &[]) {
                        Ok(s) => println!("score (as saved): {s}"),
                        Err(e) => println!("cannot score: {e}"),
                    }
                } else {
                    println!("(the expert plays generated tasks: `rlanything desktop export` writes them with their spec in `history`)");
                    if let Some(spec) = t
                        .history
                        .clone()
                        .and_then(|h| serde_json::from_value::<family::Spec>(h).ok())
                    {
                        let mut ep = rla_desktop::tasks::episode::DesktopEpisode::new(
                            family::generate(&spec),
                            w,
                            h,
                        )
                        .map_err(anyhow::Error::msg)?;
                        ep.desktop = d.clone();
                        println!("{}", expert::next(&ep));
                    }
                }
            }
            l if l.starts_with("screenshot ") => {
                let out = PathBuf::from(l["screenshot ".len()..].trim());
                let img = rla_desktop::ui::render::draw(&d, &nodes, false);
                rla_desktop::sheet::xlsx::write_atomic(&out, &img.png())?;
                println!("wrote {}", out.display());
            }
            code => {
                let actions = match rla_desktop::ui::action::parse_code(code) {
                    Ok(a) => a,
                    Err(e) => {
                        println!("not an action: {e}");
                        continue;
                    }
                };
                let out = d.step(&actions, &a11y::mark_centres(&nodes));
                if let Some(e) = out.error {
                    println!("failed: {e}");
                }
                if out.finished.is_some() {
                    break;
                }
            }
        }
    }
    let mut end = d.clone();
    rla_desktop::tasks::episode::run_postconfig(
        &mut end,
        t.evaluator.postconfig.as_deref().unwrap_or(&[]),
    )
    .map_err(anyhow::Error::msg)?;
    let saved = end.saved.clone().unwrap_or_else(|| end.book.clone());
    rla_desktop::sheet::xlsx::save(&saved, &result)?;
    let s = local::score(&task, files, &result, &[]).map_err(anyhow::Error::msg)?;
    println!("{s}");
    Ok(())
}

fn bench(steps: usize, seed: u64) -> Result<()> {
    if steps == 0 {
        bail!("--steps must be at least 1");
    }
    let specs = family::split(Split::Train, 64);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let words = ["Sheet2", "Profit", "12", "=B2-C2", "Total"];
    let mut ep =
        rla_desktop::tasks::episode::DesktopEpisode::new(family::generate(&specs[0]), 1920, 1080)
            .map_err(anyhow::Error::msg)?;
    let (mut errors, mut episodes, mut bytes) = (0usize, 0usize, 0usize);
    let counter = |s: &str| s.len() / 4;
    let t = Instant::now();
    for i in 0..steps {
        let nodes = ep.tree(TreeOptions::default());
        bytes += a11y::linearize(&nodes, 4096, &counter).len();
        let marks = a11y::marks(&nodes).len();
        let m = rng.gen_range(1..=marks);
        let actions = match rng.gen_range(0..8) {
            0..=2 => vec![rla_desktop::ui::action::Action::Click {
                at: rla_desktop::ui::action::Point::Mark(m),
                button: rla_desktop::ui::action::Button::Left,
                clicks: 1,
            }],
            3 => vec![rla_desktop::ui::action::Action::Click {
                at: rla_desktop::ui::action::Point::Mark(m),
                button: rla_desktop::ui::action::Button::Right,
                clicks: 1,
            }],
            4 => vec![rla_desktop::ui::action::Action::Write(format!(
                "{}\n",
                words[rng.gen_range(0..words.len())]
            ))],
            5 => vec![rla_desktop::ui::action::Action::Press(vec!["esc".into()])],
            6 => vec![rla_desktop::ui::action::Action::Hotkey(vec![
                "ctrl".into(),
                ["c", "v", "z"][rng.gen_range(0..3)].into(),
            ])],
            _ => vec![rla_desktop::ui::action::Action::Press(vec![[
                "down", "tab", "delete",
            ][rng.gen_range(0..3)]
            .into()])],
        };
        if ep.step(&actions, &nodes).error.is_some() {
            errors += 1;
        }
        if ep.steps >= 30 || i % 30 == 29 {
            episodes += 1;
            ep = rla_desktop::tasks::episode::DesktopEpisode::new(
                family::generate(&specs[episodes % specs.len()]),
                1920,
                1080,
            )
            .map_err(anyhow::Error::msg)?;
        }
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "{steps} steps ({episodes} episodes of 30, {errors} failed actions, tree {:.0} bytes/step) in {secs:.2} s: {:.0} steps/s",
        bytes as f64 / steps as f64,
        steps as f64 / secs
    );
    Ok(())
}
