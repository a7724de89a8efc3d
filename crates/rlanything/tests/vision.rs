//! The GUI setting's vision-language path over real HTTP: `rlanything desktop eval` sends each
//! step's screenshot as a PNG data URI to `/v1/chat/completions` of the project's own server,
//! which hands the decoded image to a model that reads images; its answers are run on the
//! desktop. A text-only model refuses the image with a clear error.

use rla_core::Split;
use rla_desktop::tasks::episode::DesktopEpisode;
use rla_desktop::tasks::family;
use rla_desktop::ui::a11y::TreeOptions;
use rla_lm::{LmError, Message, Sample, SampleParams, Sampler, VisualMessage};
use rla_remote::server::{self, Options};
use std::process::Command;
use std::sync::{Arc, Mutex};

/// A model that "reads" screenshots: it keeps every image it is shown and answers by the turn
/// (the number of images it has seen of the same task): first `press("down")`, then `DONE`.
#[derive(Clone, Default)]
struct ScreenReader {
    seen: Arc<Mutex<Vec<Shown>>>,
}

/// A task's instruction and the PNG shown with it.
type Shown = (String, Vec<u8>);

fn unsupported<T>() -> rla_lm::Result<T> {
    Err(LmError::Unsupported("reads images only".into()))
}

impl rla_lm::Codec for ScreenReader {
    fn encode(&self, _: &str) -> rla_lm::Result<Vec<u32>> {
        unsupported()
    }
    fn decode(&self, _: &[u32]) -> rla_lm::Result<String> {
        unsupported()
    }
    fn eos_ids(&self) -> &[u32] {
        &[]
    }
    fn chat_template(&self, _: &[Message], _: bool) -> rla_lm::Result<Option<String>> {
        Ok(None)
    }
}

impl Sampler for ScreenReader {
    fn sample(&self, _: &rla_lm::Request) -> rla_lm::Result<Vec<Vec<Sample>>> {
        unsupported()
    }
    fn score(&self, _: &[(Vec<u32>, Vec<u32>)]) -> rla_lm::Result<Vec<Vec<f32>>> {
        unsupported()
    }
    fn generate_visual(
        &self,
        chats: &[Vec<VisualMessage>],
        n: usize,
        _: &SampleParams,
    ) -> rla_lm::Result<Vec<Vec<Sample>>> {
        let mut seen = self.seen.lock().unwrap();
        let mut out = Vec::new();
        for chat in chats {
            let m = chat.last().unwrap();
            let task = m
                .text
                .lines()
                .find_map(|l| l.strip_prefix("Task: "))
                .unwrap_or("")
                .to_string();
            let turn = seen.iter().filter(|(t, _)| *t == task).count();
            seen.push((task, m.png.clone().unwrap()));
            let text = if turn == 0 {
                "Action: move down one cell\n```python\npyautogui.press(\"down\")\n```"
            } else {
                "DONE"
            };
            out.push(
                (0..n)
                    .map(|_| Sample {
                        tokens: vec![7, 8],
                        logprobs: vec![-0.25, -0.5],
                        text: text.into(),
                        finish: rla_lm::Finish::Stop,
                    })
                    .collect(),
            );
        }
        Ok(out)
    }
}

fn eval(url: &str, n: usize) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rlanything"))
        .args(["desktop", "eval", "--url", url, "--model", "vlm"])
        .args(["--n", &n.to_string(), "--step-limit", "4", "--show", "1"])
        .args(["--screen", "1280x720"])
        .output()
        .unwrap()
}

/// The PNG's width and height (its IHDR chunk).
fn png_size(png: &[u8]) -> (u32, u32) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let be = |i: usize| u32::from_be_bytes(png[i..i + 4].try_into().unwrap());
    (be(16), be(20))
}

#[test]
fn a_served_vision_model_plays_the_desktop_on_screenshots() {
    let reader = ScreenReader::default();
    let s = server::start(reader.clone(), "vlm", "127.0.0.1:0", 4, Options::default()).unwrap();
    let out = eval(&s.url(), 2);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let seen = reader.seen.lock().unwrap().clone();
    // two tasks, two steps each: the answer ran, then DONE ended the episode
    assert_eq!(seen.len(), 4, "{stdout}");
    let specs = family::split(Split::InDomain, 2);
    for spec in &specs {
        let task = family::generate(spec);
        let shots: Vec<&Vec<u8>> = seen
            .iter()
            .filter(|(t, _)| *t == task.task.instruction)
            .map(|(_, p)| p)
            .collect();
        assert_eq!(shots.len(), 2, "{}", task.task.instruction);
        // the first image is the task's start, drawn at the screen's size
        let ep = DesktopEpisode::new(task.clone(), 1280, 720).unwrap();
        let start =
            rla_desktop::ui::render::draw(&ep.desktop, &ep.tree(TreeOptions::default()), false)
                .png();
        assert_eq!(png_size(shots[0]), (1280, 720));
        assert!(*shots[0] == start, "the first screenshot is not the start");
        // the second shows the step's effect: the cursor moved
        assert_ne!(shots[0], shots[1]);
    }
    assert!(stdout.contains("1. move down one cell"), "{stdout}");
    assert!(stdout.contains("success on 2 InDomain tasks"), "{stdout}");
}

#[test]
fn a_text_model_refuses_the_screenshot_with_a_clear_error() {
    let tok = rla_model::tok::build_word_level("a b c <|im_start|> <|im_end|>", 1).unwrap();
    let cfg = rla_model::config::ModelConfig::tiny(
        rla_model::config::Arch::Qwen2,
        tok.vocab_size(),
        16,
        1,
        2,
        1,
    );
    let lm = rla_model::Lm::init(
        &cfg,
        tok,
        3,
        candle_core::DType::F32,
        &candle_core::Device::Cpu,
    )
    .unwrap();
    let s = server::start(lm, "vlm", "127.0.0.1:0", 2, Options::default()).unwrap();
    let out = eval(&s.url(), 1);
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("400")
            && e.contains("cannot read the message's image")
            && e.contains("text only"),
        "{e}"
    );
}
