//! A model playing a task file on a runner's screen through the desktop setting's play loop
//! (`rla_train::desktop::screen`, what `desktop eval --url … --desktop URL` plays a real desktop
//! with): its answers, read as free-form actions and run as code, do on the screen what the
//! runner's expert agent does, and the task's evaluator scores the result.

use rla_core::Split;
use rla_desktop::play::runner::{self, ExpertAgent, Native};
use rla_desktop::tasks::family;
use rla_lm::{LmError, Message, Sample, SampleParams, Sampler, VisualMessage};
use rla_train::desktop::screen::{play_on_screen, OnScreen};
use std::sync::Mutex;

/// A model that answers from a script, one answer a turn, and keeps what it was shown.
struct Scripted {
    answers: Mutex<Vec<String>>,
    shown: Mutex<Vec<(String, usize)>>,
}

impl Scripted {
    fn new(answers: Vec<String>) -> Scripted {
        Scripted {
            answers: Mutex::new(answers.into_iter().rev().collect()),
            shown: Mutex::new(vec![]),
        }
    }
}

fn unsupported<T>() -> rla_lm::Result<T> {
    Err(LmError::Unsupported("reads images only".into()))
}

impl rla_lm::Codec for Scripted {
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

impl Sampler for Scripted {
    fn sample(&self, _: &rla_lm::Request) -> rla_lm::Result<Vec<Vec<Sample>>> {
        unsupported()
    }
    fn score(&self, _: &[(Vec<u32>, Vec<u32>)]) -> rla_lm::Result<Vec<Vec<f32>>> {
        unsupported()
    }
    fn generate_visual(
        &self,
        chats: &[Vec<VisualMessage>],
        _: usize,
        _: &SampleParams,
    ) -> rla_lm::Result<Vec<Vec<Sample>>> {
        let mut out = vec![];
        for chat in chats {
            let m = chat.last().unwrap();
            self.shown
                .lock()
                .unwrap()
                .push((m.text.clone(), m.png.as_ref().map_or(0, Vec::len)));
            let text = self
                .answers
                .lock()
                .unwrap()
                .pop()
                .unwrap_or_else(|| "I do not know what to do".into());
            out.push(vec![Sample {
                text,
                tokens: vec![],
                logprobs: vec![],
                finish: rla_lm::Finish::Stop,
            }]);
        }
        Ok(out)
    }
}

const SIZE: (u32, u32) = (1280, 720);

/// A folder for an episode's result file.
fn made(d: std::path::PathBuf) -> std::path::PathBuf {
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn on(step_limit: usize) -> OnScreen<'static> {
    OnScreen {
        size: SIZE,
        step_limit,
        max_tokens: 64,
        record: None,
    }
}

#[test]
fn a_models_answers_play_the_screen_as_the_runners_expert_does() {
    let dir = tempfile::tempdir().unwrap();
    for (i, spec) in family::split(Split::InDomain, 3).iter().enumerate() {
        let g = family::generate(spec);
        let d = dir.path().join(i.to_string());
        let task = rla_desktop::tasks::local::export(&g, &d).unwrap();
        // the expert through the runner: its code steps and a full score
        let mut expert = ExpertAgent::new(g.clone(), false, SIZE).unwrap();
        let mut screen = Native::new(SIZE.0, SIZE.1);
        let p = runner::play(&mut screen, &task, &mut expert, 60, &made(d.join("expert"))).unwrap();
        assert_eq!(p.score, 1.0, "{}", g.task.id);
        // the same steps as a model's answers (pyautogui code in a fence), then DONE
        let answers: Vec<String> = p
            .steps
            .iter()
            .map(|(code, _)| match code.as_str() {
                "DONE" => "DONE".to_string(),
                c => format!("```python\n{c}\n```"),
            })
            .collect();
        let model = Scripted::new(answers);
        let mut screen = Native::new(SIZE.0, SIZE.1);
        let q = play_on_screen(&model, &mut screen, &task, &made(d.join("model")), on(60)).unwrap();
        assert_eq!(q.score, 1.0, "{}: {:?}", g.task.id, q.steps);
        assert_eq!(q.steps.len(), p.steps.len());
        assert!(q.steps.iter().all(|(_, e)| e.is_none()), "{:?}", q.steps);
        assert_eq!(q.steps.last().unwrap().0, "DONE");
        // each turn showed the task's instruction and the screen
        let shown = model.shown.lock().unwrap();
        assert_eq!(shown.len(), p.steps.len());
        assert!(
            shown
                .iter()
                .all(|(text, png)| text.contains(&g.task.instruction) && *png > 0),
            "{:?}",
            shown.iter().map(|s| &s.0).collect::<Vec<_>>()
        );
    }
}

#[test]
fn a_model_that_stops_at_once_or_answers_no_action_scores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let g = family::generate(&family::split(Split::InDomain, 1)[0]);
    let task = rla_desktop::tasks::local::export(&g, dir.path()).unwrap();
    let model = Scripted::new(vec!["DONE".into()]);
    let mut screen = Native::new(SIZE.0, SIZE.1);
    let p = play_on_screen(
        &model,
        &mut screen,
        &task,
        &made(dir.path().join("a")),
        on(5),
    )
    .unwrap();
    assert_eq!(p.score, 0.0);
    assert_eq!(p.steps, vec![("DONE".to_string(), None)]);
    // prose is no action: every step meets an error, up to the step limit
    let model = Scripted::new(vec![]);
    let mut screen = Native::new(SIZE.0, SIZE.1);
    let p = play_on_screen(
        &model,
        &mut screen,
        &task,
        &made(dir.path().join("b")),
        on(3),
    )
    .unwrap();
    assert_eq!(p.score, 0.0);
    assert_eq!(p.steps.len(), 3);
    assert!(p.steps.iter().all(|(_, e)| e.is_some()), "{:?}", p.steps);
    // the screens of the first steps recorded when asked
    let rec = dir.path().join("rec");
    let model = Scripted::new(vec![]);
    let mut screen = Native::new(SIZE.0, SIZE.1);
    let o = OnScreen {
        record: Some((&rec, 320)),
        ..on(2)
    };
    play_on_screen(&model, &mut screen, &task, &made(dir.path().join("c")), o).unwrap();
    assert!(rec.join("step-00.png").exists() && rec.join("step-01.png").exists());
}
