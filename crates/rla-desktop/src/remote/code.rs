//! Parsed actions written back as the pyautogui code a real desktop runs: set-of-marks points
//! (`tag_N`) become the marks' screen centres, and `<` in typed text becomes
//! `pyautogui.hotkey('shift', ',')` (pyautogui types `>` for it on the VMs' keyboard map; OSWorld's
//! controller rewrites it the same way). `WAIT`, `DONE` and `FAIL` are not code: they give `None`.

use crate::ui::action::{Action, Button, Point};
use crate::ui::keys::py_str;

fn button(b: Button) -> &'static str {
    match b {
        Button::Left => "left",
        Button::Right => "right",
        Button::Middle => "middle",
    }
}

fn point(p: Point, marks: &[(i32, i32)]) -> Result<Option<(i32, i32)>, String> {
    match p {
        Point::Current => Ok(None),
        Point::At(x, y) => Ok(Some((x.round() as i32, y.round() as i32))),
        Point::Mark(n) => marks
            .get(n.wrapping_sub(1))
            .copied()
            .map(Some)
            .ok_or_else(|| {
                format!(
                    "tag_{n} is not a mark of this screen ({} marks)",
                    marks.len()
                )
            }),
    }
}

fn at(p: Option<(i32, i32)>) -> String {
    match p {
        Some((x, y)) => format!("{x}, {y}, "),
        None => String::new(),
    }
}

fn keys(k: &[String]) -> String {
    k.iter().map(|k| py_str(k)).collect::<Vec<_>>().join(", ")
}

/// The code of one action, or `None` for `WAIT`, `DONE` and `FAIL`.
pub fn action(a: &Action, marks: &[(i32, i32)]) -> Result<Option<String>, String> {
    Ok(Some(match a {
        Action::Click {
            at: p,
            button: b,
            clicks,
        } => {
            let p = at(point(*p, marks)?);
            format!(
                "pyautogui.click({p}clicks={clicks}, button={})",
                py_str(button(*b))
            )
        }
        Action::MoveTo(p) => match point(*p, marks)? {
            Some((x, y)) => format!("pyautogui.moveTo({x}, {y})"),
            None => return Ok(None),
        },
        Action::DragTo(p, b) => {
            let p = at(point(*p, marks)?);
            format!(
                "pyautogui.dragTo({p}duration=0.2, button={})",
                py_str(button(*b))
            )
        }
        Action::MouseDown(p, b) => {
            format!(
                "pyautogui.mouseDown({}button={})",
                at(point(*p, marks)?),
                py_str(button(*b))
            )
        }
        Action::MouseUp(p, b) => {
            format!(
                "pyautogui.mouseUp({}button={})",
                at(point(*p, marks)?),
                py_str(button(*b))
            )
        }
        Action::Write(text) => text
            .split('<')
            .enumerate()
            .flat_map(|(i, part)| {
                let shift = (i > 0).then(|| "pyautogui.hotkey('shift', ',')".to_string());
                let write =
                    (!part.is_empty()).then(|| format!("pyautogui.write({})", py_str(part)));
                shift.into_iter().chain(write)
            })
            .collect::<Vec<_>>()
            .join("; "),
        Action::Press(k) => format!("pyautogui.press([{}])", keys(k)),
        Action::Hotkey(k) => format!("pyautogui.hotkey({})", keys(k)),
        Action::KeyDown(k) => format!("pyautogui.keyDown({})", py_str(k)),
        Action::KeyUp(k) => format!("pyautogui.keyUp({})", py_str(k)),
        Action::Scroll(n, p) => match point(*p, marks)? {
            Some((x, y)) => format!("pyautogui.scroll({n}, x={x}, y={y})"),
            None => format!("pyautogui.scroll({n})"),
        },
        Action::Wait | Action::Done | Action::Fail => return Ok(None),
    }))
}

/// The code of a step's actions, joined with `; ` (`None` when none of them is code).
pub fn actions(acts: &[Action], marks: &[(i32, i32)]) -> Result<Option<String>, String> {
    let mut parts = Vec::new();
    for a in acts {
        if let Some(c) = action(a, marks)? {
            if !c.is_empty() {
                parts.push(c);
            }
        }
    }
    Ok((!parts.is_empty()).then(|| parts.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::action::parse_code;

    fn round_trip(code: &str) -> String {
        actions(&parse_code(code).unwrap(), &[(10, 20), (30, 40)])
            .unwrap()
            .unwrap()
    }

    #[test]
    fn code_parses_back_to_the_same_actions() {
        for code in [
            "pyautogui.click(5, 6)",
            "pyautogui.doubleClick(5, 6)",
            "pyautogui.rightClick(5, 6)",
            "pyautogui.moveTo(1, 2); pyautogui.dragTo(3, 4, duration=0.2)",
            "pyautogui.write('a\\'b\\nc')",
            "pyautogui.press('enter')",
            "pyautogui.hotkey('ctrl', 's')",
            "pyautogui.scroll(-3)",
        ] {
            let a = parse_code(code).unwrap();
            assert_eq!(parse_code(&round_trip(code)).unwrap(), a, "{code}");
        }
    }

    #[test]
    fn marks_become_their_centres() {
        assert_eq!(
            round_trip("pyautogui.click(tag_2)"),
            "pyautogui.click(30, 40, clicks=1, button='left')"
        );
        let e = actions(&parse_code("pyautogui.click(tag_3)").unwrap(), &[(1, 1)]).unwrap_err();
        assert!(e.contains("tag_3"), "{e}");
    }

    #[test]
    fn less_than_is_typed_with_shift_and_comma() {
        assert_eq!(
            round_trip("pyautogui.write('=IF(A1<2;1;0)\\n')"),
            "pyautogui.write('=IF(A1'); pyautogui.hotkey('shift', ','); pyautogui.write('2;1;0)\\n')"
        );
        assert_eq!(
            round_trip("pyautogui.write('<')"),
            "pyautogui.hotkey('shift', ',')"
        );
    }

    #[test]
    fn done_and_wait_are_not_code() {
        assert_eq!(actions(&parse_code("DONE").unwrap(), &[]).unwrap(), None);
        assert_eq!(actions(&parse_code("WAIT").unwrap(), &[]).unwrap(), None);
    }
}
