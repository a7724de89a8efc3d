//! `rlanything`: the command-line program of RLAnything, as a library: [`main_with`] parses
//! arguments and dispatches to the commands. The `rlanything` binary and the Python package's
//! `rlanything` command (through its extension module) both call it.

mod access;
mod args;
mod backend;
mod bench_cmd;
mod code_cmd;
mod compare_cmd;
mod desktop_cmd;
mod desktop_real;
mod env_cmd;
mod eval_cmd;
mod judge_cmd;
mod lm_cmd;
mod quickstart;
mod serve_cmd;
mod theory_cmd;
mod train_cmd;

use anyhow::Result;
use std::io::IsTerminal;

/// `mi_option_purge_delay`: its position in `mi_option_e` in mimalloc 2 and 3 (the Rust bindings
/// do not name it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Keeps freed memory mapped: by default mimalloc hands it back to the kernel after 10 ms, and a
/// training step that frees and reallocates the same large tensors then faults every page in
/// again, zero-filled (about a tenth of a training step on two cores). `MIMALLOC_PURGE_DELAY`
/// still overrides this.
fn keep_freed_memory() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets a process-wide allocator option; valid at any time
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
    }
}
use clap::{Parser, Subcommand};

/// RLAnything: policy, reward model and environment trained together in one closed RL loop.
#[derive(Parser)]
#[command(name = "rlanything", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the main job end to end on this machine with default settings (about 8 minutes on 2
    /// cores).
    Quickstart(quickstart::Args),
    /// The household environment: replay traces, benchmark, generate tasks, solve, play.
    #[command(subcommand)]
    Env(env_cmd::EnvCmd),
    /// The coding setting: run programs on tests in the sandbox, HumanEval.
    #[command(subcommand)]
    Code(code_cmd::CodeCmd),
    /// The GUI setting: score results of OSWorld tasks, export generated tasks, play, screenshot, benchmark.
    #[command(subcommand)]
    Desktop(desktop_cmd::DesktopCmd),
    /// Language models: log-probabilities, generation, tiny models from scratch.
    #[command(subcommand)]
    Lm(lm_cmd::LmCmd),
    /// Benchmarks: `bench lm` measures model throughput and FLOPs utilisation, `bench iteration`
    /// the training seconds an iteration of a run config takes.
    #[command(subcommand)]
    Bench(bench_cmd::BenchCmd),
    /// Warm-start tiny policy and reward models by SFT.
    Pretrain(train_cmd::PretrainArgs),
    /// Train (or resume) a run.
    Train(train_cmd::TrainArgs),
    /// Evaluate a policy checkpoint on an evaluation split.
    Eval(eval_cmd::EvalArgs),
    /// The household judge's accuracy on fresh episodes of the policy, as the warm start measures
    /// it on its held-out ones: process accuracy against the labels an agent could know and
    /// against the fully informed planner's, outcome accuracy, μ.
    JudgeAccuracy(judge_cmd::Args),
    /// Compare two policies on the same tasks with the same draws: each one's sampled success,
    /// their paired difference with its standard error, and a verdict.
    Compare(compare_cmd::Args),
    /// Write and print a run's report.
    Report {
        /// The run folder.
        run: std::path::PathBuf,
    },
    /// Serve a checkpoint over the OpenAI-compatible API (/v1/completions, /v1/chat/completions,
    /// /v1/models).
    Serve(serve_cmd::Args),
    /// Ask an OpenAI-compatible server (vLLM, SGLang, another) for each feature runs use, and
    /// say which it has; exits non-zero when it lacks one a run needs.
    Probe(serve_cmd::ProbeArgs),
    /// Run the four modes with the same seeds and budget; print the paper's Table 1.
    Ablate(train_cmd::AblateArgs),
    /// Print the Theorem 1 table: bound and ideal-judge precision for μ and m.
    Theory(theory_cmd::Args),
}

/// Runs the command line `args` (the program's name first, as `std::env::args_os` gives it) and
/// returns the process's exit status: 0, 1 for an error (said on stderr), 2 for arguments clap
/// refuses, 130 after Ctrl-C. Help and version requests print and return 0. Callable more than
/// once in a process: the log subscriber and the Ctrl-C handler are installed by the first call.
pub fn main_with<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    keep_freed_memory();
    // before any thread starts; `bench lm --threads` may change it before the first tensor op
    rla_model::set_thread_count(None);
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(colour(
            std::io::stderr().is_terminal(),
            std::env::var_os("NO_COLOR"),
        ))
        .try_init();
    // Ctrl-C or a termination signal: remove the sandboxes' temporary folders, then stop
    // (run folders are written atomically, so a run resumes from its last checkpoint).
    let _ = ctrlc::set_handler(|| {
        rla_env::code::sandbox::remove_live_folders();
        eprintln!("interrupted");
        std::process::exit(130);
    });
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            // help and version go to stdout with status 0; refused arguments to stderr with 2
            let _ = e.print();
            return e.exit_code();
        }
    };
    match run(cli) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {}", error_chain(&e));
            1
        }
    }
}

/// Whether to colour a stream: only a terminal, and never with `NO_COLOR` set to a non-empty
/// value (<https://no-color.org>). The logs are the only coloured output (the progress bars'
/// template has no colours and is drawn only on a terminal).
fn colour(is_terminal: bool, no_color: Option<std::ffi::OsString>) -> bool {
    is_terminal && no_color.is_none_or(|v| v.is_empty())
}

/// An error and its causes, `outer: inner: …`, each said once: a message that already includes
/// its cause's text (`"{path}: {source}"`) is not followed by that cause again.
fn error_chain(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let s = cause.to_string();
        if out.contains(&s) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&s);
    }
    out
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Quickstart(a) => quickstart::run(a),
        Command::Theory(a) => theory_cmd::run(a),
        Command::Env(c) => env_cmd::run(c),
        Command::Lm(c) => lm_cmd::run(c),
        Command::Code(c) => code_cmd::run(c),
        Command::Desktop(c) => desktop_cmd::run(c),
        Command::Bench(c) => bench_cmd::run(c),
        Command::Pretrain(a) => train_cmd::run_pretrain(a),
        Command::Train(a) => train_cmd::run_train(a),
        Command::Eval(a) => eval_cmd::run_eval(a),
        Command::Compare(a) => compare_cmd::run(a),
        Command::JudgeAccuracy(a) => judge_cmd::run(a),
        Command::Report { run } => train_cmd::run_report(run),
        Command::Ablate(a) => train_cmd::run_ablate(a),
        Command::Serve(a) => serve_cmd::run(a),
        Command::Probe(a) => serve_cmd::probe(a),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(colour(true, None));
        assert!(colour(true, Some("".into())));
        assert!(!colour(true, Some("1".into())));
        assert!(!colour(false, None));
    }

    #[test]
    fn a_cause_already_in_its_message_is_said_once() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "gone");
        let e = anyhow::Error::new(io)
            .context("reading x: gone")
            .context("loading");
        assert_eq!(error_chain(&e), "loading: reading x: gone");
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "gone");
        let e = anyhow::Error::new(io).context("reading x");
        assert_eq!(error_chain(&e), "reading x: gone");
    }
}
