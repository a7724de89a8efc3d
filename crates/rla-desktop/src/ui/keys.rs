//! pyautogui's key names, and Python string literals as the code a desktop runs writes them.

/// A key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Key {
    /// A character key (typed as that character; letters lower-case unless shifted).
    Char(char),
    /// Enter / Return.
    Enter,
    /// Tab.
    Tab,
    /// Escape.
    Esc,
    /// Backspace.
    Backspace,
    /// Delete.
    Delete,
    /// Arrow up.
    Up,
    /// Arrow down.
    Down,
    /// Arrow left.
    Left,
    /// Arrow right.
    Right,
    /// Home.
    Home,
    /// End.
    End,
    /// Page up.
    PageUp,
    /// Page down.
    PageDown,
    /// Shift.
    Shift,
    /// Control.
    Ctrl,
    /// Alt.
    Alt,
    /// The Windows / Command key.
    Meta,
    /// F1–F24.
    F(u8),
    /// Insert, Caps Lock, Print Screen and the other keys this desktop ignores.
    Other,
}

impl Key {
    /// The key pyautogui names `name` (`'enter'`, `'ctrl'`, `'a'`, `'f2'`, …).
    pub fn parse(name: &str) -> Option<Key> {
        let mut chars = name.chars();
        if let (Some(c), None) = (chars.next(), chars.next()) {
            return (!c.is_control()).then_some(Key::Char(c));
        }
        let lower = name.to_ascii_lowercase();
        Some(match lower.as_str() {
            "enter" | "return" | "\n" => Key::Enter,
            "tab" | "\t" => Key::Tab,
            "esc" | "escape" => Key::Esc,
            "backspace" => Key::Backspace,
            "delete" | "del" => Key::Delete,
            "up" => Key::Up,
            "down" => Key::Down,
            "left" => Key::Left,
            "right" => Key::Right,
            "home" => Key::Home,
            "end" => Key::End,
            "pageup" | "pgup" => Key::PageUp,
            "pagedown" | "pgdn" => Key::PageDown,
            "space" => Key::Char(' '),
            "shift" | "shiftleft" | "shiftright" => Key::Shift,
            "ctrl" | "ctrlleft" | "ctrlright" | "control" => Key::Ctrl,
            "alt" | "altleft" | "altright" | "option" | "optionleft" | "optionright" => Key::Alt,
            "win" | "winleft" | "winright" | "command" | "cmd" | "super" => Key::Meta,
            "insert" | "capslock" | "numlock" | "scrolllock" | "printscreen" | "prtsc"
            | "pause" | "apps" | "volumeup" | "volumedown" | "volumemute" => Key::Other,
            f if f.starts_with('f') && f.len() <= 3 => {
                let n: u8 = f[1..].parse().ok()?;
                if (1..=24).contains(&n) {
                    Key::F(n)
                } else {
                    return None;
                }
            }
            _ => return None,
        })
    }

    /// Whether it is a modifier.
    pub fn is_modifier(self) -> bool {
        matches!(self, Key::Shift | Key::Ctrl | Key::Alt | Key::Meta)
    }
}

/// A Python string literal.
pub fn py_str(s: &str) -> String {
    let mut out = String::from("'");
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_as_pyautogui_names_them() {
        assert_eq!(Key::parse("enter"), Some(Key::Enter));
        assert_eq!(Key::parse("Return"), Some(Key::Enter));
        assert_eq!(Key::parse("ctrlleft"), Some(Key::Ctrl));
        assert_eq!(Key::parse("a"), Some(Key::Char('a')));
        assert_eq!(Key::parse("space"), Some(Key::Char(' ')));
        assert_eq!(Key::parse("f2"), Some(Key::F(2)));
        assert_eq!(Key::parse("f25"), None);
        assert_eq!(Key::parse("notakey"), None);
        assert_eq!(Key::parse(""), None);
    }
}
