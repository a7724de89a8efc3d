//! The desktop's prompts: the policy's (compact observation, accessibility tree, screenshot)
//! and its answers, free-form answers read as actions, and the judge's prompt and warm-start
//! answers.

use rla_desktop::ui::action::{parse_code, parse_tool_calls, Action, Coordinates};

/// The policy's prompt.
pub fn policy_prompt(instruction: &str, previous: &str, observation: &str) -> String {
    format!(
        "You operate a spreadsheet. Task: {instruction}\nPrevious actions: {previous}\nScreen: {observation}\nAnswer with one action."
    )
}

/// What a free-form answer may do, as the prompts with the tree or the screenshot explain it.
fn action_space(width: u32, height: u32) -> String {
    format!(
        "You operate a spreadsheet application (LibreOffice Calc) on a {width}x{height} screen. \
Each step, answer with one line `Action: <what you do, in one sentence>` and then one action: \
either a tool call\n<tool_call>\n{{\"name\": \"computer_use\", \"arguments\": {{\"action\": \"left_click\", \"coordinate\": [x, y]}}}}\n</tool_call>\n\
(actions: key with \"keys\", type with \"text\", mouse_move, left_click, right_click, middle_click, double_click, left_click_drag with \"coordinate\", scroll with \"pixels\", wait, terminate with \"status\" success or failure; coordinates are screen pixels), \
or pyautogui code in a ```python block (click, doubleClick, rightClick, moveTo, dragTo, write, press, hotkey, scroll), \
or WAIT, DONE or FAIL. Changes count once the file is saved."
    )
}

/// The policy's prompt with the accessibility tree, for models that answer freely: the screen,
/// the action space (a `computer_use` tool call or pyautogui code), the task and its history.
pub fn tree_prompt(
    instruction: &str,
    previous: &str,
    tree: &str,
    width: u32,
    height: u32,
) -> String {
    format!(
        "{}\nTask: {instruction}\nPrevious actions: {previous}\n\
The screen's accessibility tree (tag, name, text, class, description, position, size):\n{tree}",
        action_space(width, height)
    )
}

/// The text beside a screenshot, for vision-language models: the action space, the task and
/// its history (the image follows the text).
pub fn screenshot_prompt(instruction: &str, previous: &str, width: u32, height: u32) -> String {
    format!(
        "{}\nTask: {instruction}\nPrevious actions: {previous}\nThe screenshot of the screen follows.",
        action_space(width, height)
    )
}

/// The actions of a free-form answer: `computer_use` tool calls (screen pixels), or pyautogui
/// code (in a fence, or on the lines after `Action: …`), or WAIT, DONE or FAIL.
pub fn free_form_actions(text: &str, width: u32, height: u32) -> Result<Vec<Action>, String> {
    let t = text.trim();
    if t.contains("<tool_call>") || t.lines().any(|l| l.trim_start().starts_with('{')) {
        return parse_tool_calls(t, Coordinates::Absolute, width, height).map_err(|e| e.0);
    }
    match parse_code(t) {
        Ok(a) => Ok(a),
        Err(e) => match t.split_once('\n') {
            Some((first, rest)) if first.trim_start().starts_with("Action:") => {
                parse_code(rest.trim()).map_err(|e| e.0)
            }
            _ => Err(e.0),
        },
    }
}

/// What a free-form step is called in "Previous actions": its `Action:` sentence, else the
/// answer's start.
pub fn step_summary(text: &str) -> String {
    let t = text.trim();
    let line = t
        .lines()
        .find_map(|l| l.trim().strip_prefix("Action:"))
        .unwrap_or_else(|| t.lines().next().unwrap_or(""));
    line.trim().chars().take(160).collect()
}

/// The policy's answer for an action.
pub fn policy_answer(action: &str) -> String {
    format!("Action: {action}")
}

/// The action of an answer, if it names one of the candidates.
pub fn parse_answer<'a>(text: &str, candidates: &'a [String]) -> Option<&'a String> {
    let t = text.trim();
    let a = t.strip_prefix("Action:").unwrap_or(t).trim();
    candidates.iter().find(|c| c.as_str() == a)
}

/// "Step 1: click B2; Step 2: …" over the last `window` actions.
pub fn previous_actions(actions: &[String], window: usize) -> String {
    if actions.is_empty() {
        return "none".into();
    }
    let start = actions.len().saturating_sub(window);
    actions[start..]
        .iter()
        .enumerate()
        .map(|(i, a)| format!("Step {}: {a}", start + i + 1))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The judge's prompt for one step.
pub fn judge_prompt(
    instruction: &str,
    previous: &str,
    observation: &str,
    answer: &str,
    next: &str,
) -> String {
    format!(
        "Judge one step of a spreadsheet agent. Objective: {instruction}\nPrevious actions: {previous}\nScreen before: {observation}\nThe agent answered: {answer}\nScreen after: {next}\nScore 1 only if the step is relevant to the objective, executable, and makes visible progress. Reason briefly, then answer \\boxed{{1}} or \\boxed{{-1}}."
    )
}

/// A judge answer in the warm start's format.
pub fn judge_answer(action: &str, good: bool) -> String {
    if good {
        format!("{action} which helps \\boxed{{1}}")
    } else {
        format!("{action} which does not help \\boxed{{-1}}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rla_core::reward::StepScore;

    #[test]
    fn the_history_window_and_answers_shape_the_prompts() {
        let acts: Vec<String> = ["click B1", "copy", "click tab Sheet2", "paste"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(previous_actions(&[], 3), "none");
        assert_eq!(
            previous_actions(&acts, 2),
            "Step 3: click tab Sheet2; Step 4: paste"
        );
        assert_eq!(previous_actions(&acts, 9).matches("Step").count(), 4);
        let cands = vec!["click B3".to_string(), "done".into()];
        assert_eq!(parse_answer("Action: click B3", &cands), Some(&cands[0]));
        assert_eq!(parse_answer(" done ", &cands), Some(&cands[1]));
        assert_eq!(parse_answer("Action: click Z9", &cands), None);
        assert!(crate::judge::parse_verdict(&judge_answer("copy", true)) == StepScore::Positive);
    }
}
