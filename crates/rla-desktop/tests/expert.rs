//! The expert solves every task of the fixed splits through the GUI, from the start and from
//! states a random agent left behind; its score is then 1, and before it 0.

use rand::{Rng, SeedableRng};
use rla_core::Split;
use rla_desktop::tasks::episode::DesktopEpisode;
use rla_desktop::tasks::expert;
use rla_desktop::tasks::family::{generate, split};
use rla_desktop::ui::a11y::{self, TreeOptions};

fn episode(spec: &rla_desktop::tasks::family::Spec) -> DesktopEpisode {
    DesktopEpisode::new(generate(spec), 1920, 1080).unwrap()
}

#[test]
fn the_expert_solves_every_split_task() {
    for which in Split::EVALUATION {
        let specs = split(which, usize::MAX);
        let mut lengths = Vec::new();
        for spec in &specs {
            let ep = episode(spec);
            assert_eq!(
                ep.score(),
                Ok(0.0),
                "{}: unsolved at the start",
                ep.task.task.id
            );
            let steps = expert::solve(&ep).unwrap_or_else(|e| panic!("{e}"));
            let mut e = ep.clone();
            for code in &steps[..steps.len() - 1] {
                let nodes = e.tree(TreeOptions::default());
                assert_eq!(e.step_code(code, &nodes).error, None, "{code}");
            }
            assert_eq!(e.score(), Ok(1.0), "{}: {steps:?}", ep.task.task.id);
            lengths.push(steps.len());
        }
        let mean = lengths.iter().sum::<usize>() as f64 / lengths.len() as f64;
        assert!(
            mean < 15.0 && *lengths.iter().max().unwrap() <= 30,
            "{which:?}: mean {mean}, max {:?}",
            lengths.iter().max()
        );
    }
}

#[test]
fn the_expert_recovers_from_a_random_agents_mess() {
    let specs = split(Split::InDomain, 60);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let words = ["Sheet2", "Profit", "12", "=B2-C2", "Total", "x"];
    for spec in &specs {
        let mut ep = episode(spec);
        for _ in 0..rng.gen_range(1..12) {
            let nodes = ep.tree(TreeOptions::default());
            let marks = a11y::marks(&nodes);
            let m = rng.gen_range(1..=marks.len());
            let code = match rng.gen_range(0..7) {
                0 => format!("pyautogui.click(tag_{m})"),
                1 => format!("pyautogui.rightClick(tag_{m})"),
                2 => format!("pyautogui.doubleClick(tag_{m})"),
                3 => format!(
                    "pyautogui.write('{}\\n')",
                    words[rng.gen_range(0..words.len())]
                ),
                4 => [
                    "pyautogui.hotkey('ctrl', 'c')",
                    "pyautogui.hotkey('ctrl', 'v')",
                    "pyautogui.hotkey('ctrl', 'x')",
                ][rng.gen_range(0..3)]
                .into(),
                5 => [
                    "pyautogui.press('delete')",
                    "pyautogui.press('tab')",
                    "pyautogui.press('enter')",
                    "pyautogui.press('down')",
                ][rng.gen_range(0..4)]
                .into(),
                _ => format!("pyautogui.click(tag_{m}); pyautogui.write('7')"),
            };
            ep.step_code(&code, &nodes);
        }
        let d = expert::distance(&ep)
            .unwrap_or_else(|| panic!("{}: no plan from {:?}", ep.task.task.id, ep.desktop.book));
        let steps = expert::solve(&ep).unwrap();
        assert_eq!(d, steps.len());
        let mut e = ep.clone();
        for code in &steps[..steps.len() - 1] {
            let nodes = e.tree(TreeOptions::default());
            e.step_code(code, &nodes);
        }
        assert_eq!(e.score(), Ok(1.0), "{}", ep.task.task.id);
    }
}

#[test]
#[ignore]
fn show() {
    for spec in split(Split::InDomain, 4)
        .iter()
        .chain(split(Split::Ood, 2).iter())
    {
        let ep = episode(spec);
        println!(
            "{}\n  {}\n  {:?}",
            ep.task.task.id,
            ep.task.task.instruction,
            expert::solve(&ep).unwrap()
        );
    }
}
