//! `rlanything desktop serve-real`, and `desktop eval`/`bench` over the one task runner
//! (`rla_desktop::play::runner`): the native desktop or a real one behind OSWorld's protocol.

use anyhow::{bail, Context, Result};
use rand::{Rng, SeedableRng};
use rla_core::Split;
use rla_desktop::play::runner::{self, ExpertAgent, Native, Real, Screen};
use rla_desktop::remote::{tree, RemoteDesktop};
use rla_desktop::tasks::family;
use rla_train::desktop::screen::OnScreen;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The Python that runs the server: `--python`, `$RLA_DESKTOP_PYTHON`, the venv that
/// `scripts/desktop-real.sh` makes, or the system's.
fn server_python(python: Option<PathBuf>) -> PathBuf {
    if let Some(p) = python {
        return p;
    }
    if let Some(p) = std::env::var_os("RLA_DESKTOP_PYTHON") {
        return PathBuf::from(p);
    }
    for base in [
        std::env::current_dir().ok(),
        Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")),
    ]
    .into_iter()
    .flatten()
    {
        let p = base.join("target/desktop-venv/bin/python");
        if p.exists() {
            return p;
        }
    }
    PathBuf::from("/usr/bin/python3")
}

/// Writes the server's script and the modules it imports into a folder made for them, readable
/// by this user only (mode 0700, a fresh random name), so that no file another user placed in
/// the temporary folder runs in their stead; the server removes them and the folder when it
/// stops. The entry script's path.
fn private_script() -> Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new()
        .prefix("rlanything-desktop-server-")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
        .context("making the desktop server's folder")?;
    let script = rla_desktop::remote::write_server(dir.path())
        .with_context(|| format!("writing the desktop server into {}", dir.path().display()))?;
    let _ = dir.keep();
    Ok(script)
}

/// Runs the desktop server in place of this process (its signals reach it directly).
pub fn serve(
    port: u16,
    host: &str,
    screen: &str,
    allow_any_code: bool,
    python: Option<PathBuf>,
    api_key_env: Option<&str>,
) -> Result<()> {
    use std::os::unix::process::CommandExt;
    let key = crate::access::api_key(api_key_env)?;
    if key.as_deref() == Some("") {
        bail!(
            "--api-key-env: the environment variable {} is empty",
            api_key_env.unwrap_or("")
        );
    }
    if !crate::access::is_loopback(host) && key.is_none() {
        // the server says what it exposes once it listens
        bail!(
            "--host {host} is reachable beyond this machine: give --api-key-env VAR (requests \
             must then carry `Authorization: Bearer <key>`), or bind 127.0.0.1"
        );
    }
    let python = server_python(python);
    // pyautogui is looked up, not imported: importing it opens the X display, which the server
    // has not started yet
    let check = std::process::Command::new(&python)
        .args([
            "-c",
            "import importlib.util, sys, pyatspi, tkinter, PIL; sys.exit(importlib.util.find_spec('pyautogui') is None and 'No module named pyautogui')",
        ])
        .output();
    match check {
        Err(e) => bail!(
            "{}: {e}: the desktop server needs a Python with pyautogui and pyatspi (scripts/desktop-real.sh installs them; --python names another)",
            python.display()
        ),
        Ok(o) if !o.status.success() => {
            let err = String::from_utf8_lossy(&o.stderr);
            bail!(
                "{} lacks what the desktop server imports ({}); scripts/desktop-real.sh installs it, --python names another",
                python.display(),
                err.lines().last().unwrap_or("").trim()
            )
        }
        Ok(_) => {}
    }
    let script = private_script()?;
    let mut cmd = std::process::Command::new(&python);
    cmd.arg(&script).args([
        "--port",
        &port.to_string(),
        "--host",
        host,
        "--screen",
        screen,
    ]);
    cmd.arg("--remove-script");
    if allow_any_code {
        cmd.arg("--allow-any-code");
    }
    if let Some(var) = api_key_env {
        cmd.args(["--api-key-env", var]);
    }
    let err = cmd.exec();
    Err(err).with_context(|| format!("starting {}", python.display()))
}

fn screen_for(
    desktop: Option<&str>,
    desktop_key: Option<String>,
    reset: bool,
    size: (u32, u32),
    timeout_s: f64,
) -> Result<Box<dyn Screen>> {
    Ok(match desktop {
        None => Box::new(Native::new(size.0, size.1)),
        Some(url) => Box::new(Real {
            remote: RemoteDesktop::new(url, Duration::from_secs_f64(timeout_s))?
                .with_api_key(desktop_key),
            reset,
            cache: None,
        }),
    })
}

/// Plays `n` tasks of a split with the expert or a model, on the native desktop or a real one.
#[allow(clippy::too_many_arguments)]
pub fn eval(
    desktop: Option<&str>,
    desktop_key: Option<String>,
    reset: bool,
    vlm: Option<&dyn rla_lm::Sampler>,
    (specs, what): (Vec<family::Spec>, &str),
    size: (u32, u32),
    step_limit: usize,
    max_tokens: usize,
    timeout_s: f64,
    show: usize,
    record: Option<&std::path::Path>,
) -> Result<()> {
    if specs.is_empty() {
        bail!("no tasks to play");
    }
    let mut screen = screen_for(desktop, desktop_key, reset, size, timeout_s)?;
    let tmp = tempfile::tempdir()?;
    let bar = rla_train::bar(specs.len() as u64, "eval");
    let (mut solved, mut failed) = (0usize, 0usize);
    let t0 = Instant::now();
    for (i, spec) in specs.iter().enumerate() {
        let g = family::generate(spec);
        let dir = tmp.path().join(format!("{i}"));
        let path = rla_desktop::tasks::local::export(&g, &dir)?;
        let (id, instruction) = (g.task.id.clone(), g.task.instruction.clone());
        let rec = record.filter(|_| i == 0).map(|r| (r, 960));
        // the expert as the runner's agent; a model through the desktop setting's play loop
        let played = match vlm {
            None => {
                let mut agent =
                    ExpertAgent::new(g, desktop.is_some(), size).map_err(anyhow::Error::msg)?;
                runner::play_recorded(screen.as_mut(), &path, &mut agent, step_limit, &dir, rec)
                    .map_err(anyhow::Error::msg)
            }
            Some(v) => rla_train::desktop::screen::play_on_screen(
                v,
                screen.as_mut(),
                &path,
                &dir,
                OnScreen {
                    size,
                    step_limit,
                    max_tokens,
                    record: rec,
                },
            ),
        };
        match played {
            Ok(p) => {
                if p.score >= 1.0 {
                    solved += 1;
                }
                // the first `show` episodes, and the expert's failures (they are bugs)
                if i < show || (vlm.is_none() && p.score < 1.0) {
                    bar.suspend(|| {
                        println!(
                            "task {id} ({}): {instruction} (score {})",
                            spec.family.name(),
                            p.score
                        );
                        for (k, (code, err)) in p.steps.iter().enumerate() {
                            let err = err
                                .as_deref()
                                .map(|e| format!(" — failed: {e}"))
                                .unwrap_or_default();
                            println!("  {:>2}. {code}{err}", k + 1);
                        }
                    });
                }
            }
            Err(e) => {
                failed += 1;
                bar.suspend(|| eprintln!("task {id} ({}): {e}", spec.family.name()));
            }
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    let who = if vlm.is_some() {
        "the model"
    } else {
        "the expert"
    };
    let on = desktop
        .map(|u| format!("the desktop at {u}"))
        .unwrap_or_else(|| "the native desktop".into());
    if failed > 0 {
        println!("{failed} episodes could not be played (above); they count as failures");
    }
    println!(
        "{who} on {on}: {} tasks in {:.1} s",
        specs.len(),
        t0.elapsed().as_secs_f64()
    );
    println!(
        "success on {} {what} tasks: {:.3} ({solved} solved)",
        specs.len(),
        solved as f64 / specs.len() as f64
    );
    Ok(())
}

/// What a bench of one real desktop measured.
struct Stepped {
    reset_s: f64,
    act: f64,
    shot: f64,
    tree: f64,
    bytes: usize,
    errors: usize,
    elements: usize,
}

/// Steps one real desktop `steps` times: each step one random action (a click on a showing
/// cell, text typed into a cell, a key), then the screenshot and the tree, as an agent's step
/// has them.
fn bench_one(
    url: &str,
    key: Option<String>,
    steps: usize,
    seed: u64,
    bar: Option<&indicatif::ProgressBar>,
) -> Result<Stepped> {
    let remote = RemoteDesktop::new(url, Duration::from_secs(120))?.with_api_key(key);
    let mut real = Real {
        remote,
        reset: true,
        cache: None,
    };
    let tmp = tempfile::tempdir()?;
    let g = family::generate(&family::split(Split::Train, 1)[0]);
    let path = rla_desktop::tasks::local::export(&g, tmp.path())?;
    let task = rla_desktop::osworld::task::DesktopTask::load(&path)?;
    let t = Instant::now();
    real.set_up(&task, &path)
        .map_err(|e| anyhow::anyhow!("{url}: {e}"))?;
    let reset_s = t.elapsed().as_secs_f64();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let words = ["Profit", "12", "=B2-C2", "Total", "=SUM(B2:B4)"];
    let mut out = Stepped {
        reset_s,
        act: 0.0,
        shot: 0.0,
        tree: 0.0,
        bytes: 0,
        errors: 0,
        elements: 0,
    };
    let fail = |e: String| anyhow::anyhow!("{url}: {e}");
    let mut obs = real.observe().map_err(fail)?;
    for _ in 0..steps {
        let cells: Vec<&tree::Element> = obs
            .elements
            .iter()
            .filter(|e| e.showing && e.node.tag == "table-cell")
            .take(200)
            .collect();
        let code = match rng.gen_range(0..6) {
            0..=2 if !cells.is_empty() => {
                let (x, y) = cells[rng.gen_range(0..cells.len())].node.rect.center();
                format!("pyautogui.click({x}, {y})")
            }
            3 => format!(
                "pyautogui.write({})",
                rla_desktop::ui::keys::py_str(&format!(
                    "{}\n",
                    words[rng.gen_range(0..words.len())]
                ))
            ),
            4 => "pyautogui.press('esc')".into(),
            _ => [
                "pyautogui.press('down')",
                "pyautogui.press('right')",
                "pyautogui.hotkey('ctrl', 'z')",
            ][rng.gen_range(0..3)]
            .into(),
        };
        let a = Instant::now();
        if real.act(&code, &obs).map_err(fail)?.is_some() {
            out.errors += 1;
        }
        let b = Instant::now();
        let png = real.screenshot().map_err(fail)?;
        let c = Instant::now();
        obs = real.observe().map_err(fail)?;
        let d = Instant::now();
        out.bytes += png.len();
        out.act += (b - a).as_secs_f64();
        out.shot += (c - b).as_secs_f64();
        out.tree += (d - c).as_secs_f64();
        if let Some(bar) = bar {
            bar.inc(1);
        }
    }
    out.elements = obs.elements.len();
    Ok(out)
}

/// Steps real desktops: first the first one alone (each step's phases timed), then, with more
/// than one, the first 2, 3, … side by side, one thread each, and prints the steps per second
/// of each count: how the desktop's throughput scales with desktops.
pub fn bench(urls: &[String], key: Option<String>, steps: usize, seed: u64) -> Result<()> {
    if steps == 0 {
        bail!("--steps must be at least 1");
    }
    if urls.is_empty() {
        bail!("--desktop: give at least one desktop");
    }
    for k in 1..=urls.len() {
        let bar = rla_train::bar((k * steps) as u64, &format!("bench, {k} desktop(s)"));
        let t0 = Instant::now();
        let stats: Vec<Result<Stepped>> = std::thread::scope(|scope| {
            let handles: Vec<_> = urls[..k]
                .iter()
                .enumerate()
                .map(|(i, url)| {
                    let (key, bar) = (key.clone(), &bar);
                    scope.spawn(move || bench_one(url, key, steps, seed + i as u64, Some(bar)))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(anyhow::anyhow!("a bench thread panicked")))
                })
                .collect()
        });
        let secs = t0.elapsed().as_secs_f64();
        bar.finish_and_clear();
        let stats: Vec<Stepped> = stats.into_iter().collect::<Result<_>>()?;
        let reset: f64 = stats.iter().map(|s| s.reset_s).fold(0.0, f64::max);
        if k == 1 {
            let s = &stats[0];
            let per = |t: f64| 1000.0 * t / steps as f64;
            println!(
                "reset and set-up (reset, upload, open the file): {:.2} s; per step: action {:.0} ms, screenshot {:.0} ms ({:.0} KB), tree {:.0} ms ({} elements); {} failed actions",
                s.reset_s,
                per(s.act),
                per(s.shot),
                s.bytes as f64 / steps as f64 / 1024.0,
                per(s.tree),
                s.elements,
                s.errors
            );
        }
        println!(
            "{k} desktop(s), {steps} steps each, in {secs:.1} s ({reset:.1} s of it the slowest set-up): {:.2} steps/s",
            (k * steps) as f64 / (secs - reset).max(1e-9)
        );
    }
    Ok(())
}
