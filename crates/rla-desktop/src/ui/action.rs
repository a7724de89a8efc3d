//! OSWorld's action space, parsed and never executed: a restricted subset of pyautogui code
//! (`click`, `doubleClick`, `rightClick`, `middleClick`, `moveTo`, `dragTo`, `mouseDown`,
//! `mouseUp`, `write`/`typewrite`, `press`, `hotkey`, `keyDown`, `keyUp`, `scroll`,
//! `time.sleep`), the special answers `WAIT`, `DONE` and `FAIL`, and the reference's
//! `computer_use` tool calls (`<tool_call>{"name": "computer_use", "arguments": {...}}`).
//!
//! Code is read as a list of statements, each a call with literal arguments (numbers,
//! strings, lists of strings, `True`/`False`, and `tag_N`, the centre of set-of-marks element
//! N). Anything else — another function, a variable, an expression, a loop — is an error that
//! names it.

use std::fmt;

/// The most characters an action may type, and the most statements in one step.
pub const MAX_TEXT: usize = 4096;
/// The most statements in one step.
pub const MAX_STATEMENTS: usize = 32;

/// A mouse button.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Button {
    /// Left.
    Left,
    /// Right.
    Right,
    /// Middle.
    Middle,
}

/// A point: screen pixels, the current mouse position, or a set-of-marks element.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Point {
    /// Where the mouse is.
    Current,
    /// Screen pixels.
    At(f64, f64),
    /// The centre of set-of-marks element `n` (`tag_n`).
    Mark(usize),
}

/// One action.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Press and release `button` `clicks` times at a point.
    Click {
        /// Where.
        at: Point,
        /// Which button.
        button: Button,
        /// How many times.
        clicks: u32,
    },
    /// Move the mouse.
    MoveTo(Point),
    /// Press `button` where the mouse is, move to the point, release.
    DragTo(Point, Button),
    /// Press a button (at a point, or where the mouse is).
    MouseDown(Point, Button),
    /// Release a button.
    MouseUp(Point, Button),
    /// Type text (each character a key press; `\n` is Enter, `\t` Tab).
    Write(String),
    /// Press keys one after another.
    Press(Vec<String>),
    /// Hold the keys in order, then release them (`ctrl`, `c`).
    Hotkey(Vec<String>),
    /// Hold a key.
    KeyDown(String),
    /// Release a key.
    KeyUp(String),
    /// Scroll by clicks (positive up), at a point.
    Scroll(i32, Point),
    /// Do nothing this step (`WAIT`, `time.sleep`, `computer_use` `wait`).
    Wait,
    /// The agent says the task is done.
    Done,
    /// The agent says the task cannot be done.
    Fail,
}

/// Why an action did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ActionError(pub String);

fn err<T>(m: impl Into<String>) -> Result<T, ActionError> {
    Err(ActionError(m.into()))
}

/// A literal argument.
#[derive(Debug, Clone, PartialEq)]
enum Lit {
    Num(f64),
    Str(String),
    List(Vec<Lit>),
    Bool(bool),
    None,
    Tag(usize),
}

impl fmt::Display for Lit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Lit::Num(x) => write!(f, "{x}"),
            Lit::Str(s) => write!(f, "{s:?}"),
            Lit::List(v) => write!(f, "[{} items]", v.len()),
            Lit::Bool(b) => write!(f, "{b}"),
            Lit::None => write!(f, "None"),
            Lit::Tag(n) => write!(f, "tag_{n}"),
        }
    }
}

struct Lexer<'a> {
    s: &'a [u8],
    src: &'a str,
    i: usize,
}

impl<'a> Lexer<'a> {
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\r' | b'\n') {
            self.i += 1;
        }
    }
    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.i).copied()
    }
    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn ident(&mut self) -> Option<&'a str> {
        self.ws();
        let st = self.i;
        while self.i < self.s.len()
            && (self.s[self.i].is_ascii_alphanumeric() || self.s[self.i] == b'_')
        {
            self.i += 1;
        }
        (self.i > st).then(|| &self.src[st..self.i])
    }
    fn string(&mut self, q: u8) -> Result<String, ActionError> {
        // at the opening quote
        self.i += 1;
        let mut out = String::new();
        loop {
            let Some(&c) = self.s.get(self.i) else {
                return err("a string is not closed");
            };
            if c == q {
                self.i += 1;
                break;
            }
            if c == b'\n' {
                return err("a string is not closed on its line");
            }
            if c == b'\\' {
                let Some(&e) = self.s.get(self.i + 1) else {
                    return err("a string ends in a backslash");
                };
                self.i += 2;
                match e {
                    b'n' => out.push('\n'),
                    b't' => out.push('\t'),
                    b'r' => out.push('\r'),
                    b'\\' => out.push('\\'),
                    b'\'' => out.push('\''),
                    b'"' => out.push('"'),
                    b'0' => out.push('\0'),
                    b'x' | b'u' => {
                        let n = if e == b'x' { 2 } else { 4 };
                        let hex = self.src.get(self.i..self.i + n).unwrap_or("");
                        let c = u32::from_str_radix(hex, 16).ok().and_then(char::from_u32);
                        match c {
                            Some(c) if hex.len() == n => {
                                out.push(c);
                                self.i += n;
                            }
                            _ => return err(format!("a bad \\{} escape", e as char)),
                        }
                    }
                    _ => {
                        out.push('\\');
                        out.push(e as char);
                    }
                }
            } else {
                let ch = self.src[self.i..].chars().next().unwrap_or('\u{fffd}');
                out.push(ch);
                self.i += ch.len_utf8();
            }
            if out.len() > MAX_TEXT {
                return err(format!("a string is longer than {MAX_TEXT} characters"));
            }
        }
        Ok(out)
    }
    fn lit(&mut self, depth: usize) -> Result<Lit, ActionError> {
        if depth > 4 {
            return err("lists are nested too deeply");
        }
        match self.peek() {
            Some(q @ (b'\'' | b'"')) => {
                let s = self.string(q)?;
                Ok(Lit::Str(s))
            }
            Some(b'[') | Some(b'(') => {
                let close = if self.s[self.i] == b'[' { b']' } else { b')' };
                self.i += 1;
                let mut v = Vec::new();
                loop {
                    if self.eat(close) {
                        break;
                    }
                    v.push(self.lit(depth + 1)?);
                    if v.len() > 64 {
                        return err("a list has more than 64 items");
                    }
                    if !self.eat(b',') {
                        if self.eat(close) {
                            break;
                        }
                        return err("expected `,` in a list");
                    }
                }
                Ok(Lit::List(v))
            }
            Some(c) if c.is_ascii_digit() || c == b'-' || c == b'+' || c == b'.' => {
                let st = self.i;
                self.i += 1;
                while self.i < self.s.len()
                    && (self.s[self.i].is_ascii_digit()
                        || matches!(self.s[self.i], b'.' | b'e' | b'E'))
                {
                    self.i += 1;
                }
                let t = &self.src[st..self.i];
                match t.parse::<f64>() {
                    Ok(x) if x.is_finite() => Ok(Lit::Num(x)),
                    _ => err(format!("`{t}` is not a number")),
                }
            }
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                let id = self.ident().unwrap_or("");
                match id {
                    "True" => Ok(Lit::Bool(true)),
                    "False" => Ok(Lit::Bool(false)),
                    "None" => Ok(Lit::None),
                    _ => match id.strip_prefix("tag_").and_then(|n| n.parse::<usize>().ok()) {
                        Some(n) => Ok(Lit::Tag(n)),
                        None => err(format!("`{id}` is not a literal (only numbers, strings, lists, True/False and tag_N are)")),
                    },
                }
            }
            Some(c) => err(format!("unexpected `{}` in the arguments", c as char)),
            None => err("the arguments end too early"),
        }
    }
}

/// A call: `module.function(args, key=value)`.
struct Call {
    name: String,
    args: Vec<Lit>,
    kwargs: Vec<(String, Lit)>,
}

impl Call {
    fn arg(&self, i: usize, key: &str) -> Option<&Lit> {
        self.kwargs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
            .or_else(|| self.args.get(i))
    }
    fn known(&self, keys: &[&str]) -> Result<(), ActionError> {
        for (k, _) in &self.kwargs {
            if !keys.contains(&k.as_str()) {
                return err(format!("{}() takes no argument `{k}`", self.name));
            }
        }
        Ok(())
    }
}

fn statement(lx: &mut Lexer) -> Result<Option<Call>, ActionError> {
    while lx.eat(b';') {}
    let Some(first) = lx.ident() else {
        return match lx.peek() {
            None => Ok(None),
            Some(c) => err(format!(
                "unexpected `{}`: a statement must be a pyautogui call",
                c as char
            )),
        };
    };
    if first == "import" || first == "from" {
        // `import pyautogui`, `import time`, `from time import sleep`: nothing to do
        let st = lx.i;
        while lx.i < lx.s.len() && !matches!(lx.s[lx.i], b'\n' | b';') {
            lx.i += 1;
        }
        let rest = lx.src[st..lx.i].trim();
        let ok = rest
            .split([',', ' '])
            .filter(|w| !w.is_empty())
            .all(|w| matches!(w, "pyautogui" | "time" | "import" | "sleep" | "as" | "pg"));
        if !ok {
            return err(format!(
                "only `import pyautogui` and `import time` are allowed, not `{first} {rest}`"
            ));
        }
        return Ok(Some(Call {
            name: "import".into(),
            args: vec![],
            kwargs: vec![],
        }));
    }
    let mut name = first.to_string();
    while lx.eat(b'.') {
        let Some(part) = lx.ident() else {
            return err("a name ends in `.`");
        };
        name.push('.');
        name.push_str(part);
    }
    if !lx.eat(b'(') {
        return err(format!(
            "`{name}` must be called: only pyautogui calls are allowed"
        ));
    }
    let (mut args, mut kwargs) = (Vec::new(), Vec::new());
    loop {
        if lx.eat(b')') {
            break;
        }
        // keyword?
        let save = lx.i;
        if let Some(id) = lx.ident() {
            if lx.peek() == Some(b'=') && lx.s.get(lx.i + 1) != Some(&b'=') {
                lx.i += 1;
                kwargs.push((id.to_string(), lx.lit(0)?));
            } else {
                lx.i = save;
                args.push(lx.lit(0)?);
            }
        } else {
            args.push(lx.lit(0)?);
        }
        if args.len() + kwargs.len() > 16 {
            return err(format!("{name}() has too many arguments"));
        }
        if !lx.eat(b',') {
            if lx.eat(b')') {
                break;
            }
            return err(format!("expected `,` or `)` in {name}(…)"));
        }
    }
    // one statement per line or `;`
    lx.ws();
    if lx.peek().is_some_and(|c| c == b';') {
        lx.i += 1;
    }
    Ok(Some(Call { name, args, kwargs }))
}

fn num(l: Option<&Lit>, what: &str) -> Result<Option<f64>, ActionError> {
    match l {
        None | Some(Lit::None) => Ok(None),
        Some(Lit::Num(x)) => Ok(Some(*x)),
        Some(other) => err(format!("{what} must be a number, not {other}")),
    }
}

fn point(c: &Call) -> Result<Point, ActionError> {
    match c.arg(0, "x") {
        Some(Lit::Tag(n)) => return Ok(Point::Mark(*n)),
        Some(Lit::List(v)) if v.len() == 2 => {
            if let (Lit::Num(x), Lit::Num(y)) = (&v[0], &v[1]) {
                return Ok(Point::At(*x, *y));
            }
            return err(format!("{}(): a point must be two numbers", c.name));
        }
        _ => {}
    }
    let x = num(c.arg(0, "x"), "x")?;
    let y = num(c.arg(1, "y"), "y")?;
    match (x, y) {
        (Some(x), Some(y)) => Ok(Point::At(x, y)),
        (None, None) => Ok(Point::Current),
        _ => err(format!("{}() needs both x and y", c.name)),
    }
}

fn button(c: &Call, default: Button) -> Result<Button, ActionError> {
    match c.kwargs.iter().find(|(k, _)| k == "button").map(|x| &x.1) {
        None => Ok(default),
        Some(Lit::Str(b)) => match b.as_str() {
            "left" | "primary" => Ok(Button::Left),
            "right" | "secondary" => Ok(Button::Right),
            "middle" => Ok(Button::Middle),
            _ => err(format!("unknown button {b:?}")),
        },
        Some(other) => err(format!("button must be a string, not {other}")),
    }
}

fn keys(c: &Call) -> Result<Vec<String>, ActionError> {
    let mut out = Vec::new();
    let mut push = |l: &Lit| -> Result<(), ActionError> {
        match l {
            Lit::Str(s) => {
                out.push(s.clone());
                Ok(())
            }
            Lit::List(v) => {
                for x in v {
                    match x {
                        Lit::Str(s) => out.push(s.clone()),
                        other => return err(format!("a key must be a string, not {other}")),
                    }
                }
                Ok(())
            }
            other => err(format!("a key must be a string, not {other}")),
        }
    };
    for a in &c.args {
        push(a)?;
    }
    if let Some((_, l)) = c.kwargs.iter().find(|(k, _)| k == "keys") {
        push(l)?;
    }
    if out.is_empty() {
        return err(format!("{}() needs a key", c.name));
    }
    for k in &out {
        if crate::ui::keys::Key::parse(k).is_none() {
            return err(format!("{k:?} is not a key pyautogui knows"));
        }
    }
    Ok(out)
}

fn to_action(c: Call) -> Result<Option<Action>, ActionError> {
    let name = c
        .name
        .strip_prefix("pyautogui.")
        .or_else(|| c.name.strip_prefix("pg."))
        .unwrap_or(&c.name)
        .to_string();
    let clicks_of = |c: &Call, d: u32| -> Result<u32, ActionError> {
        match num(
            c.kwargs.iter().find(|(k, _)| k == "clicks").map(|x| &x.1),
            "clicks",
        )? {
            None => Ok(d),
            Some(x) if (1.0..=3.0).contains(&x) && x.fract() == 0.0 => Ok(x as u32),
            Some(x) => err(format!("clicks = {x}: 1, 2 or 3")),
        }
    };
    const MOUSE: [&str; 8] = [
        "x",
        "y",
        "clicks",
        "interval",
        "button",
        "duration",
        "tween",
        "logScreenshot",
    ];
    Ok(Some(match name.as_str() {
        "import" => return Ok(None),
        "click" | "leftClick" => {
            c.known(&MOUSE)?;
            Action::Click {
                at: point(&c)?,
                button: button(&c, Button::Left)?,
                clicks: clicks_of(&c, 1)?,
            }
        }
        "doubleClick" | "tripleClick" => {
            c.known(&MOUSE)?;
            Action::Click {
                at: point(&c)?,
                button: button(&c, Button::Left)?,
                clicks: if name == "doubleClick" { 2 } else { 3 },
            }
        }
        "rightClick" | "middleClick" => {
            c.known(&MOUSE)?;
            Action::Click {
                at: point(&c)?,
                button: if name == "rightClick" { Button::Right } else { Button::Middle },
                clicks: 1,
            }
        }
        "moveTo" => {
            c.known(&MOUSE)?;
            Action::MoveTo(point(&c)?)
        }
        "dragTo" => {
            c.known(&MOUSE)?;
            Action::DragTo(point(&c)?, button(&c, Button::Left)?)
        }
        "mouseDown" | "mouseUp" => {
            c.known(&MOUSE)?;
            let (p, b) = (point(&c)?, button(&c, Button::Left)?);
            if name == "mouseDown" {
                Action::MouseDown(p, b)
            } else {
                Action::MouseUp(p, b)
            }
        }
        "write" | "typewrite" => {
            c.known(&["message", "interval", "logScreenshot"])?;
            match c.arg(0, "message") {
                Some(Lit::Str(s)) => {
                    if s.chars().count() > MAX_TEXT {
                        return err(format!("{name}() types more than {MAX_TEXT} characters"));
                    }
                    Action::Write(s.clone())
                }
                Some(Lit::List(_)) => Action::Press(keys(&Call {
                    name: name.clone(),
                    args: vec![c.arg(0, "message").cloned().unwrap_or(Lit::None)],
                    kwargs: vec![],
                })?),
                Some(other) => return err(format!("{name}() types a string, not {other}")),
                None => return err(format!("{name}() needs the text to type")),
            }
        }
        "press" => {
            c.known(&["keys", "presses", "interval", "logScreenshot"])?;
            let ks = keys(&Call {
                name: name.clone(),
                args: c.args.clone(),
                kwargs: c.kwargs.iter().filter(|(k, _)| k == "keys").cloned().collect(),
            })?;
            let presses = match num(c.kwargs.iter().find(|(k, _)| k == "presses").map(|x| &x.1), "presses")? {
                None => 1,
                Some(x) if (1.0..=50.0).contains(&x) && x.fract() == 0.0 => x as usize,
                Some(x) => return err(format!("presses = {x}: from 1 to 50")),
            };
            let mut all = Vec::new();
            for _ in 0..presses {
                all.extend(ks.iter().cloned());
            }
            Action::Press(all)
        }
        "hotkey" => {
            c.known(&["interval", "logScreenshot"])?;
            Action::Hotkey(keys(&c)?)
        }
        "keyDown" | "keyUp" => {
            c.known(&["key", "logScreenshot"])?;
            let k = keys(&Call {
                name: name.clone(),
                args: c.arg(0, "key").cloned().into_iter().collect(),
                kwargs: vec![],
            })?;
            if k.len() != 1 {
                return err(format!("{name}() takes one key"));
            }
            if name == "keyDown" {
                Action::KeyDown(k[0].clone())
            } else {
                Action::KeyUp(k[0].clone())
            }
        }
        "scroll" | "vscroll" => {
            c.known(&["clicks", "x", "y", "logScreenshot"])?;
            let n = num(c.arg(0, "clicks"), "clicks")?.ok_or_else(|| ActionError("scroll() needs clicks".into()))?;
            if n.abs() > 10_000.0 {
                return err("scroll() by more than 10000 clicks");
            }
            let x = num(c.arg(1, "x"), "x")?;
            let y = num(c.arg(2, "y"), "y")?;
            let at = match (x, y) {
                (Some(x), Some(y)) => Point::At(x, y),
                _ => Point::Current,
            };
            Action::Scroll(n as i32, at)
        }
        "time.sleep" | "sleep" => Action::Wait,
        other => return err(format!("`{other}` is not in the action space (click, doubleClick, rightClick, middleClick, moveTo, dragTo, mouseDown, mouseUp, write, typewrite, press, hotkey, keyDown, keyUp, scroll, time.sleep)")),
    }))
}

/// Parses pyautogui code (or `WAIT`, `DONE`, `FAIL`) into actions; code inside a Markdown
/// fence is taken from the fence.
pub fn parse_code(code: &str) -> Result<Vec<Action>, ActionError> {
    let t = code.trim();
    match t {
        "WAIT" => return Ok(vec![Action::Wait]),
        "DONE" => return Ok(vec![Action::Done]),
        "FAIL" => return Ok(vec![Action::Fail]),
        _ => {}
    }
    let body = fenced(t).unwrap_or(t);
    if body.len() > 4 * MAX_TEXT {
        return err(format!(
            "the code is longer than {} characters",
            4 * MAX_TEXT
        ));
    }
    let mut lx = Lexer {
        s: body.as_bytes(),
        src: body,
        i: 0,
    };
    let mut out = Vec::new();
    let mut n = 0;
    while let Some(c) = statement(&mut lx)? {
        n += 1;
        if n > MAX_STATEMENTS {
            return err(format!("more than {MAX_STATEMENTS} statements in one step"));
        }
        if let Some(a) = to_action(c)? {
            out.push(a);
        }
    }
    if out.is_empty() {
        return err("no action");
    }
    Ok(out)
}

fn fenced(t: &str) -> Option<&str> {
    let start = t.find("```")?;
    let rest = &t[start + 3..];
    let rest = rest.strip_prefix("python").unwrap_or(rest);
    let end = rest.find("```")?;
    Some(rest[..end].trim())
}

/// How `computer_use` coordinates are given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coordinates {
    /// Screen pixels.
    Absolute,
    /// A 0–999 grid over the screen (the reference's default for Qwen3-VL).
    Relative,
}

/// Parses a response holding `computer_use` tool calls (inside `<tool_call>` tags or as a bare
/// JSON line) into actions, with coordinates scaled to a `width × height` screen.
pub fn parse_tool_calls(
    response: &str,
    coords: Coordinates,
    width: u32,
    height: u32,
) -> Result<Vec<Action>, ActionError> {
    let mut calls: Vec<String> = Vec::new();
    let mut inside = false;
    let mut cur: Vec<&str> = Vec::new();
    for line in response.lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("<tool_call>") {
            inside = true;
            let rest = rest.trim();
            if let Some(body) = rest.strip_suffix("</tool_call>") {
                calls.push(body.to_string());
                inside = false;
            } else if !rest.is_empty() {
                cur.push(rest);
            }
            continue;
        }
        if line.starts_with("</tool_call>") {
            if !cur.is_empty() {
                calls.push(cur.join("\n"));
                cur.clear();
            }
            inside = false;
            continue;
        }
        if inside {
            cur.push(line);
        } else if line.starts_with('{') && line.ends_with('}') {
            calls.push(line.to_string());
        }
    }
    if !cur.is_empty() {
        calls.push(cur.join("\n"));
    }
    if calls.is_empty() {
        return err("no computer_use tool call in the response");
    }
    let scale = |x: f64, y: f64| -> Point {
        match coords {
            Coordinates::Absolute => Point::At(x.trunc(), y.trunc()),
            Coordinates::Relative => Point::At(
                (x * width as f64 / 999.0).trunc(),
                (y * height as f64 / 999.0).trunc(),
            ),
        }
    };
    let mut out = Vec::new();
    for c in calls.iter().take(MAX_STATEMENTS) {
        let v: serde_json::Value = serde_json::from_str(c)
            .map_err(|e| ActionError(format!("a tool call is not JSON: {e}")))?;
        if v.get("name").and_then(|n| n.as_str()) != Some("computer_use") {
            return err("a tool call must name `computer_use`");
        }
        let args = v
            .get("arguments")
            .ok_or_else(|| ActionError("a tool call needs `arguments`".into()))?;
        let action = args
            .get("action")
            .and_then(|a| a.as_str())
            .ok_or_else(|| ActionError("a tool call needs `arguments.action`".into()))?;
        let at = || -> Result<Point, ActionError> {
            match args.get("coordinate") {
                None => Ok(Point::Current),
                Some(c) => match (
                    c.get(0).and_then(|x| x.as_f64()),
                    c.get(1).and_then(|x| x.as_f64()),
                ) {
                    (Some(x), Some(y)) => Ok(scale(x, y)),
                    _ => err("`coordinate` must be two numbers"),
                },
            }
        };
        out.push(match action {
            "left_click" => Action::Click { at: at()?, button: Button::Left, clicks: 1 },
            "right_click" => Action::Click { at: at()?, button: Button::Right, clicks: 1 },
            "middle_click" => Action::Click { at: at()?, button: Button::Middle, clicks: 1 },
            "double_click" | "triple_click" => Action::Click { at: at()?, button: Button::Left, clicks: 2 },
            "mouse_move" => Action::MoveTo(at()?),
            "left_click_drag" => Action::DragTo(at()?, Button::Left),
            "type" => {
                let t = args
                    .get("text")
                    .and_then(|t| t.as_str())
                    .ok_or_else(|| ActionError("`type` needs `text`".into()))?;
                if t.chars().count() > MAX_TEXT {
                    return err(format!("`type` of more than {MAX_TEXT} characters"));
                }
                Action::Write(t.to_string())
            }
            "key" => {
                let ks: Vec<String> = args
                    .get("keys")
                    .and_then(|k| k.as_array())
                    .ok_or_else(|| ActionError("`key` needs `keys`, a list".into()))?
                    .iter()
                    .map(|k| k.as_str().map(|s| s.trim().to_lowercase()).unwrap_or_default())
                    .collect();
                if ks.is_empty() || ks.iter().any(|k| crate::ui::keys::Key::parse(k).is_none()) {
                    return err(format!("`key` with keys {ks:?}: not keys pyautogui knows"));
                }
                if ks.len() > 1 {
                    Action::Hotkey(ks)
                } else {
                    Action::Press(ks)
                }
            }
            "scroll" => {
                let p = args.get("pixels").and_then(|p| p.as_f64()).unwrap_or(0.0);
                Action::Scroll(p.clamp(-10_000.0, 10_000.0) as i32, Point::Current)
            }
            "wait" => Action::Wait,
            "terminate" => match args.get("status").and_then(|s| s.as_str()) {
                Some("failure") => Action::Fail,
                _ => Action::Done,
            },
            other => return err(format!("computer_use action {other:?} is not one of key, type, mouse_move, left_click, left_click_drag, right_click, middle_click, double_click, scroll, wait, terminate")),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_pyautogui_subset() {
        let a = parse_code("import pyautogui\nimport time\npyautogui.click(100, 200)\ntime.sleep(0.5)\npyautogui.write('Profit', interval=0.1); pyautogui.press('enter')").unwrap();
        assert_eq!(
            a,
            vec![
                Action::Click {
                    at: Point::At(100.0, 200.0),
                    button: Button::Left,
                    clicks: 1
                },
                Action::Wait,
                Action::Write("Profit".into()),
                Action::Press(vec!["enter".into()]),
            ]
        );
        assert_eq!(
            parse_code("```python\npyautogui.click(x=5, y=6, button='right')\n```").unwrap(),
            vec![Action::Click {
                at: Point::At(5.0, 6.0),
                button: Button::Right,
                clicks: 1
            }]
        );
        assert_eq!(
            parse_code("pyautogui.doubleClick(tag_3)").unwrap()[0],
            Action::Click {
                at: Point::Mark(3),
                button: Button::Left,
                clicks: 2
            }
        );
        assert_eq!(
            parse_code("pyautogui.hotkey('ctrl', 'c')").unwrap()[0],
            Action::Hotkey(vec!["ctrl".into(), "c".into()])
        );
        assert_eq!(
            parse_code("pyautogui.press(['down', 'down'])").unwrap()[0],
            Action::Press(vec!["down".into(), "down".into()])
        );
        assert_eq!(
            parse_code("pyautogui.press('tab', presses=3)").unwrap()[0],
            Action::Press(vec!["tab".into(); 3])
        );
        assert_eq!(
            parse_code("pyautogui.typewrite(\"say \\\"hi\\\"\\n\")").unwrap()[0],
            Action::Write("say \"hi\"\n".into())
        );
        assert_eq!(
            parse_code("pyautogui.scroll(-3)").unwrap()[0],
            Action::Scroll(-3, Point::Current)
        );
        assert_eq!(
            parse_code("pyautogui.dragTo(300, 400, duration=0.5)").unwrap()[0],
            Action::DragTo(Point::At(300.0, 400.0), Button::Left)
        );
        assert_eq!(parse_code(" DONE ").unwrap(), vec![Action::Done]);
        assert_eq!(parse_code("FAIL").unwrap(), vec![Action::Fail]);
        // what OSWorld's postconfig runs with `python -c`
        assert_eq!(
            parse_code("import pyautogui; pyautogui.hotkey(\"ctrl\", \"s\");").unwrap(),
            vec![Action::Hotkey(vec!["ctrl".into(), "s".into()])]
        );
    }

    #[test]
    fn anything_outside_the_subset_is_an_error_naming_it() {
        for (code, says) in [
            ("import os\nos.system('rm -rf /')", "import"),
            ("os.system('ls')", "os.system"),
            ("pyautogui.click(x)", "literal"),
            ("pyautogui.click(__import__('os'))", "literal"),
            ("for i in range(3): pyautogui.click(1, 2)", "called"),
            ("pyautogui.write('abc", "not closed"),
            ("pyautogui.click(1, 2, foo=3)", "foo"),
            ("pyautogui.press('notakey')", "notakey"),
            ("pyautogui.click(1e999, 2)", "number"),
            ("exec('x')", "exec"),
            ("", "no action"),
            ("pyautogui.click(1, 2)\n".repeat(40).as_str(), "statements"),
        ] {
            let e = parse_code(code).unwrap_err().0;
            assert!(e.contains(says), "{code:?}: {e}");
        }
        let huge = format!("pyautogui.write('{}')", "a".repeat(MAX_TEXT + 10));
        assert!(parse_code(&huge).is_err());
        let nested = format!("pyautogui.press({}'a'{})", "[".repeat(50), "]".repeat(50));
        assert!(parse_code(&nested).is_err());
    }

    #[test]
    fn parses_computer_use_tool_calls() {
        let r = "Action: Click the cell B2.\n<tool_call>\n{\"name\": \"computer_use\", \"arguments\": {\"action\": \"left_click\", \"coordinate\": [500, 500]}}\n</tool_call>";
        assert_eq!(
            parse_tool_calls(r, Coordinates::Relative, 1998, 999).unwrap(),
            vec![Action::Click {
                at: Point::At(1000.0, 500.0),
                button: Button::Left,
                clicks: 1
            }]
        );
        let k = "<tool_call>{\"name\": \"computer_use\", \"arguments\": {\"action\": \"key\", \"keys\": [\"ctrl\", \"s\"]}}</tool_call>";
        assert_eq!(
            parse_tool_calls(k, Coordinates::Absolute, 10, 10).unwrap(),
            vec![Action::Hotkey(vec!["ctrl".into(), "s".into()])]
        );
        let t = "{\"name\": \"computer_use\", \"arguments\": {\"action\": \"terminate\", \"status\": \"success\"}}";
        assert_eq!(
            parse_tool_calls(t, Coordinates::Absolute, 10, 10).unwrap(),
            vec![Action::Done]
        );
        for bad in ["no call here", "<tool_call>{oops</tool_call>", "<tool_call>{\"name\": \"shell\", \"arguments\": {}}</tool_call>", "<tool_call>{\"name\": \"computer_use\", \"arguments\": {\"action\": \"launch\"}}</tool_call>"] {
            assert!(parse_tool_calls(bad, Coordinates::Absolute, 10, 10).is_err(), "{bad}");
        }
    }
}
