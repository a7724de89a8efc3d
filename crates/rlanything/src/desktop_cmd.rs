//! `rlanything desktop …`: the GUI setting's spreadsheet desktop from the command line.

use anyhow::{bail, Context, Result};
use rand::{Rng, SeedableRng};
use rla_desktop::a11y::{self, TreeOptions};
use rla_desktop::family::{self, Split};
use rla_desktop::{expert, local};
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum SplitArg {
    InDomain,
    Ood,
    Validation,
    Train,
}

impl From<SplitArg> for Split {
    fn from(s: SplitArg) -> Split {
        match s {
            SplitArg::InDomain => Split::InDomain,
            SplitArg::Ood => Split::Ood,
            SplitArg::Validation => Split::Validation,
            SplitArg::Train => Split::Train,
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
    },
    /// Play a task by typing pyautogui code, one step per line; `tree`, `marks`, `expert`,
    /// `score` and `screenshot FILE.png` show things, an empty line ends the episode.
    Play {
        /// The task JSON (its workbooks beside it, as `export` writes them).
        task: PathBuf,
        /// Screen size.
        #[arg(long, default_value = "1920x1080")]
        screen: String,
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
    },
    /// Step the desktop with random valid actions, the accessibility tree computed every step;
    /// prints steps per second on one core.
    Bench {
        /// Steps.
        #[arg(long, default_value_t = 200_000)]
        steps: usize,
        /// Seed of the actions.
        #[arg(long, default_value_t = 0)]
        seed: u64,
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
        } => {
            let s = local::score(&task, &result, &expected).map_err(anyhow::Error::msg)?;
            println!("{s}");
            Ok(())
        }
        DesktopCmd::Export { split, n, out } => {
            let specs = family::split(split.into(), n);
            if specs.is_empty() {
                bail!("no tasks to write (--n {n})");
            }
            for s in &specs {
                local::export(&family::generate(s), &out)?;
            }
            println!("wrote {} tasks to {}", specs.len(), out.display());
            Ok(())
        }
        DesktopCmd::Play { task, screen: sc } => play(task, screen(&sc)?),
        DesktopCmd::Screenshot {
            task,
            out,
            screen: sc,
            size,
            marks,
        } => {
            let (w, h) = screen(&sc)?;
            let (_, d) = local::open(&task, w, h)?;
            let nodes = a11y::tree(&d, TreeOptions::default());
            let img = rla_desktop::render::draw(&d, &nodes, marks);
            let img = match size {
                Some(s) => {
                    let (iw, ih) = self::screen(&s)?;
                    img.scaled(iw, ih)
                }
                None => img,
            };
            rla_desktop::xlsx::write_atomic(&out, &img.png())?;
            println!("wrote {} ({}×{})", out.display(), img.width, img.height);
            Ok(())
        }
        DesktopCmd::Bench { steps, seed } => bench(steps, seed),
    }
}

fn play(task: PathBuf, (w, h): (u32, u32)) -> Result<()> {
    let (t, mut d) = local::open(&task, w, h)?;
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
                rla_desktop::xlsx::save(&saved, &result)?;
                if line == "score" {
                    match local::score(&task, &result, &[]) {
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
                        let mut ep =
                            rla_desktop::episode::Episode::new(family::generate(&spec), w, h)
                                .map_err(anyhow::Error::msg)?;
                        ep.desktop = d.clone();
                        println!("{}", expert::next(&ep));
                    }
                }
            }
            l if l.starts_with("screenshot ") => {
                let out = PathBuf::from(l["screenshot ".len()..].trim());
                let img = rla_desktop::render::draw(&d, &nodes, false);
                rla_desktop::xlsx::write_atomic(&out, &img.png())?;
                println!("wrote {}", out.display());
            }
            code => {
                let actions = match rla_desktop::action::parse_code(code) {
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
    rla_desktop::episode::run_postconfig(
        &mut end,
        t.evaluator.postconfig.as_deref().unwrap_or(&[]),
    )
    .map_err(anyhow::Error::msg)?;
    let saved = end.saved.clone().unwrap_or_else(|| end.book.clone());
    rla_desktop::xlsx::save(&saved, &result)?;
    let s = local::score(&task, &result, &[]).map_err(anyhow::Error::msg)?;
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
    let mut ep = rla_desktop::episode::Episode::new(family::generate(&specs[0]), 1920, 1080)
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
            0..=2 => vec![rla_desktop::action::Action::Click {
                at: rla_desktop::action::Point::Mark(m),
                button: rla_desktop::action::Button::Left,
                clicks: 1,
            }],
            3 => vec![rla_desktop::action::Action::Click {
                at: rla_desktop::action::Point::Mark(m),
                button: rla_desktop::action::Button::Right,
                clicks: 1,
            }],
            4 => vec![rla_desktop::action::Action::Write(format!(
                "{}\n",
                words[rng.gen_range(0..words.len())]
            ))],
            5 => vec![rla_desktop::action::Action::Press(vec!["esc".into()])],
            6 => vec![rla_desktop::action::Action::Hotkey(vec![
                "ctrl".into(),
                ["c", "v", "z"][rng.gen_range(0..3)].into(),
            ])],
            _ => vec![rla_desktop::action::Action::Press(vec![[
                "down", "tab", "delete",
            ][rng.gen_range(0..3)]
            .into()])],
        };
        if ep.step(&actions, &nodes).error.is_some() {
            errors += 1;
        }
        if ep.steps >= 30 || i % 30 == 29 {
            episodes += 1;
            ep = rla_desktop::episode::Episode::new(
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
