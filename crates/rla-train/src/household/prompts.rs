//! The household's prompts: the policy's view of a step and its answer formats, the parser of
//! its answers, and the judge's prompt and warm-start answers.

use crate::judge::last_boxed;

/// The policy's view of one step.
pub fn policy_prompt(
    task: &str,
    history: &[(String, String)],
    window: usize,
    observation: &str,
    admissible: &[String],
) -> String {
    policy_prompt_styled(
        task,
        history,
        window,
        observation,
        admissible,
        PromptStyle::Numbered,
        "",
    )
}

/// How the admissible commands are listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PromptStyle {
    /// `3: go to fridge 1`, the reference's numbered list.
    #[default]
    Numbered,
    /// `go to fridge 1 \boxed{3}`: each line is exactly the answer that picks it, which a tiny
    /// model trained from scratch learns by copying; parsing is unchanged.
    Inline,
    /// `- go to fridge 1`, answered with the command itself in the box, `\\boxed{go to fridge 1}`
    /// (see [`parse_choice`]): the tiny-scale format, which needs no number lookup.
    Command,
    /// No listing; answered like [`PromptStyle::Command`]. Only with constrained decoding
    /// (`constrain_actions`), which carries the admissible set instead of the prompt: the
    /// shortest prompts, for tiny models on CPU.
    Unlisted,
}

/// [`policy_prompt`] with a listing style and the agent's notes (rendered by
/// [`crate::notes::Notes::render`]; empty for none), which follow the task line.
pub fn policy_prompt_styled<'a>(
    task: &str,
    history: &'a [(String, String)],
    window: usize,
    observation: &'a str,
    admissible: &[String],
    style: PromptStyle,
    notes: &str,
) -> String {
    let mut s = format!("Your task is to: {task}.\n");
    s.push_str(notes);
    let shown = |obs: &'a str| -> &'a str {
        if notes.is_empty() {
            obs
        } else {
            compact_observation(obs)
        }
    };
    let start = history.len().saturating_sub(window);
    for (obs, act) in &history[start..] {
        s.push_str(&format!(
            "observation: {}\nyou took action: {act}\n",
            shown(obs)
        ));
    }
    s.push_str(&format!("observation: {}\n", shown(observation)));
    if style != PromptStyle::Unlisted {
        s.push_str("admissible actions:\n");
    }
    for (i, a) in admissible.iter().enumerate() {
        match style {
            PromptStyle::Numbered => s.push_str(&format!("{}: {a}\n", i + 1)),
            PromptStyle::Inline => s.push_str(&format!("{}\n", policy_answer(a, i))),
            PromptStyle::Command => s.push_str(&format!("- {a}\n")),
            PromptStyle::Unlisted => break,
        }
    }
    match style {
        PromptStyle::Command | PromptStyle::Unlisted => {
            s.push_str("Think about the next step, then give your action in \\boxed{}.")
        }
        _ => s.push_str(
            "Think about the next step, then give the number of your action in \\boxed{}.",
        ),
    }
    s
}

/// An observation as the prompt shows it beside the notes, which already hold the intro's
/// places, task and hint and say where the agent is not: the intro becomes its first sentence,
/// and the game's list of commands (the answer to `help`) one line.
pub fn compact_observation(obs: &str) -> &str {
    if obs.contains("Looking quickly around you, you see ") {
        "You are in the middle of a room."
    } else if obs.starts_with("Available commands:") {
        "Available commands: look, inventory, go to, open, close, take, move, examine, use, heat, clean, cool, slice."
    } else {
        obs
    }
}

/// The policy's answer in a prompt style: the command, then its number in the box; or, for
/// [`PromptStyle::Command`], the command in the box.
pub fn policy_answer_styled(command: &str, index: usize, style: PromptStyle) -> String {
    match style {
        PromptStyle::Command | PromptStyle::Unlisted => format!("\\boxed{{{command}}}"),
        _ => policy_answer(command, index),
    }
}

/// The chosen command: `\\boxed{k}` picks the k-th command (1-based; out of range is clipped);
/// a box holding exactly one of the admissible commands picks that command; anything else is
/// unparseable and takes index 0, as in the reference implementation.
pub fn parse_choice(text: &str, admissible: &[String]) -> (usize, bool) {
    if let Some(b) = last_boxed(text) {
        if b.parse::<i64>().is_err() {
            if let Some(i) = admissible.iter().position(|a| a == b) {
                return (i, true);
            }
        }
    }
    parse_action(text, admissible.len())
}

/// The policy's answer in the format its warm start teaches: the command, then its number.
pub fn policy_answer(command: &str, index: usize) -> String {
    format!("{command} \\boxed{{{}}}", index + 1)
}

/// The chosen command index: the last `\boxed{k}` (1-based) of the answer; an unparseable answer
/// takes index 0 and an out-of-range one is clipped, as in the reference implementation.
pub fn parse_action(text: &str, n: usize) -> (usize, bool) {
    match last_boxed(text).and_then(|b| b.parse::<i64>().ok()) {
        Some(k) => (((k - 1).max(0) as usize).min(n.saturating_sub(1)), true),
        None => (0, false),
    }
}

/// The judge's prompt for one step; `notes` (the agent's notes before the step, a line each, or
/// nothing) go above it.
pub fn judge_prompt(
    task: &str,
    notes: &str,
    observation: &str,
    answer: &str,
    action: &str,
    next_observation: &str,
) -> String {
    format!(
        "Your task is to judge one step of an agent whose task is to: {task}.\n{notes}observation: {observation}\nthe agent answered: {answer}\nso it took action: {action}\nnext observation: {next_observation}\nScore 1 only if the action suits the task, the reasoning is relevant and consistent, and the next observation shows progress. Reason briefly, then answer \\boxed{{1}} or \\boxed{{-1}}."
    )
}

/// A short phrase naming what a command does ("took apple", "went to fridge").
pub fn action_phrase(action: &str) -> String {
    let w: Vec<&str> = action.split_whitespace().collect();
    match w.as_slice() {
        ["go", "to", r, ..] => format!("went to {r}"),
        ["take", o, ..] => format!("took {o}"),
        ["move", o, _, "to", r, ..] => format!("moved {o} to {r}"),
        ["open", r, ..] => format!("opened {r}"),
        ["close", r, ..] => format!("closed {r}"),
        ["heat", o, ..] => format!("heated {o}"),
        ["cool", o, ..] => format!("cooled {o}"),
        ["clean", o, ..] => format!("cleaned {o}"),
        ["use", o, ..] => format!("used {o}"),
        ["slice", o, ..] => format!("sliced {o}"),
        ["examine", ..] | ["look"] | ["inventory"] | ["help"] => "only looked".into(),
        _ => "did nothing useful".into(),
    }
}

/// A judge answer in the warm start's format: what the step did, and the verdict.
pub fn judge_answer(action: &str, good: bool) -> String {
    let p = action_phrase(action);
    if good {
        format!("{p} which helps \\boxed{{1}}")
    } else {
        format!("{p} which does not help \\boxed{{-1}}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::reasoning;

    #[test]
    fn actions_parse_like_the_reference() {
        assert_eq!(parse_action("go there \\boxed{3}", 5), (2, true));
        assert_eq!(parse_action("\\boxed{1} then \\boxed{4}", 5), (3, true));
        assert_eq!(parse_action("no box", 5), (0, false));
        assert_eq!(parse_action("\\boxed{x}", 5), (0, false));
        assert_eq!(parse_action("\\boxed{99}", 5), (4, true));
        assert_eq!(parse_action("\\boxed{0}", 5), (0, true));
        assert_eq!(parse_action("\\boxed{-3}", 5), (0, true));
        let adm: Vec<String> = vec!["look".into(), "go to fridge 1".into()];
        assert_eq!(parse_choice("\\boxed{go to fridge 1}", &adm), (1, true));
        assert_eq!(parse_choice("\\boxed{ go to fridge 1 }", &adm), (1, true));
        assert_eq!(parse_choice("\\boxed{go to fridge 9}", &adm), (0, false));
        assert_eq!(parse_choice("\\boxed{2}", &adm), (1, true));
        assert_eq!(
            parse_choice(&policy_answer_styled("look", 0, PromptStyle::Command), &adm),
            (0, true)
        );
    }

    #[test]
    fn prompts_show_the_window_and_numbered_commands() {
        let h = vec![
            ("o1".to_string(), "a1".to_string()),
            ("o2".to_string(), "a2".to_string()),
            ("o3".to_string(), "a3".to_string()),
        ];
        let p = policy_prompt(
            "put a apple in fridge",
            &h,
            2,
            "now",
            &["look".into(), "go to fridge 1".into()],
        );
        assert!(!p.contains("o1") && p.contains("o2") && p.contains("you took action: a3"));
        assert!(p.contains("1: look\n2: go to fridge 1\n"));
        assert_eq!(
            reasoning(&policy_answer("go to fridge 1", 1)),
            "go to fridge 1"
        );
        assert_eq!(
            parse_action(&policy_answer("go to fridge 1", 1), 2),
            (1, true)
        );
    }

    #[test]
    fn the_judge_reads_the_notes_above_the_step_only_when_given() {
        let bare = judge_prompt(
            "put a mug in desk",
            "",
            "you see a desk",
            "a",
            "go to desk 1",
            "ok",
        );
        let with = judge_prompt(
            "put a mug in desk",
            "unseen: shelf 1\nholding: mug 1\n",
            "you see a desk",
            "a",
            "go to desk 1",
            "ok",
        );
        assert!(bare.contains("to: put a mug in desk.\nobservation: you see a desk\n"));
        assert!(with.contains("desk.\nunseen: shelf 1\nholding: mug 1\nobservation: you see"));
        assert_eq!(with.replace("unseen: shelf 1\nholding: mug 1\n", ""), bare);
    }

    #[test]
    fn beside_notes_the_intro_and_the_help_are_one_line() {
        let intro = "-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. Looking quickly around you, you see a fridge 1, and a shelf 1.\n\nYour task is to: cool some egg.";
        let help = rla_env::household::world::HELP_TEXT;
        let h = vec![(help.to_string(), "look".to_string())];
        let with = policy_prompt_styled(
            "cool some egg",
            &h,
            1,
            intro,
            &[],
            PromptStyle::Unlisted,
            "unseen: fridge 1, shelf 1\n",
        );
        assert!(with.contains("observation: You are in the middle of a room.\n"));
        assert!(!with.contains("Looking quickly") && !with.contains("(receptacle)"));
        assert!(with.contains("observation: Available commands: look, inventory"));
        let without = policy_prompt_styled(
            "cool some egg",
            &h,
            1,
            intro,
            &[],
            PromptStyle::Unlisted,
            "",
        );
        assert!(without.contains(intro) && without.contains(help));
        // anything else is shown as the game wrote it
        assert_eq!(
            compact_observation("You arrive at shelf 1."),
            "You arrive at shelf 1."
        );
    }
}
