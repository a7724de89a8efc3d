//! The agent's notes: a compact record of what its past actions revealed, kept from the text of
//! the game alone (the intro, each command and its feedback), so that a policy with a short
//! history window still knows where it has looked, what it saw there, what it holds and what it
//! has done. Nothing here reads the world's hidden state.
//!
//! Rendered into the prompt as a few lines:
//!
//! ```text
//! unseen: cabinet 3, drawer 1, fridge 1
//! seen: cabinet 2 has candle 2; countertop 1 has apple 1, knife 1
//! holding: candle 3
//! did: clean knife 1
//! repeated: move candle 3 to cabinet 2 (2 times); go to cabinet 2 (3 times)
//! hint: The apple is in the fridge 1.
//! ```
//!
//! With [`NotesStyle::Compact`] the lists are shorter, which a tiny model reads in fewer tokens
//! when ALFRED's rooms hold up to 28 cabinets and 40 objects: the unseen places of a kind are
//! written as ranges (`unseen: cabinet 1-4 6 9-28, drawer 1-3, fridge 1`), and `seen` keeps only
//! the objects whose class the task names (with the places that hold them). Both are still read
//! from the game's text alone: the classes are the words of the task's sentence.
//!
//! The `repeated` line counts the commands the agent has played more than once. Without it, an
//! agent that takes an object and puts it back (or walks between two places) sees the same prompt
//! again and again, and a greedy policy repeats the pair until the step limit; with it, a loop is
//! a state the policy can see, and RL can learn to leave it.

/// How much the notes write out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotesStyle {
    /// Every unseen place by name; every object seen, wherever it was.
    #[default]
    Full,
    /// Unseen places of a kind as number ranges; only the objects of the classes the task names.
    Compact,
}

/// What the agent has learnt about the room so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Notes {
    /// How the notes are written.
    style: NotesStyle,
    /// The words of the task's sentence (lower case): the classes `Compact` keeps in `seen`.
    task_words: Vec<String>,
    /// Places named by the intro that the agent has not yet looked into (a closed receptacle
    /// it only stood at counts as unseen), in name order.
    unseen: Vec<String>,
    /// Places looked into, with what they held at the last look (in the order first seen).
    seen: Vec<(String, Vec<String>)>,
    /// The object in hand.
    holding: Option<String>,
    /// Things done to objects (`clean knife 1`, `turn on desklamp 1`), in order.
    did: Vec<String>,
    /// The intro's hint sentence, if it had one.
    hint: Option<String>,
    /// Every command played, with how often, the most recent last.
    played: Vec<(String, u32)>,
}

/// How many repeated commands the `repeated` line shows (the most recent).
const REPEATS_SHOWN: usize = 3;

/// `a cabinet 1, a cabinet 2, and a drawer 1` → the names, articles dropped; `nothing` → none.
fn split_list(s: &str) -> Vec<String> {
    let s = s.trim().trim_end_matches('.');
    if s == "nothing" || s.is_empty() {
        return vec![];
    }
    s.split(", ")
        .map(|x| x.strip_prefix("and ").unwrap_or(x))
        .map(|x| {
            x.strip_prefix("a ")
                .or_else(|| x.strip_prefix("an "))
                .unwrap_or(x)
        })
        .map(|x| x.trim().to_string())
        .filter(|x| !x.is_empty())
        .collect()
}

/// The text between `start` and the next `end` (after `start`).
fn between<'a>(s: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let i = s.find(start)? + start.len();
    let j = s[i..].find(end)? + i;
    Some(&s[i..j])
}

impl Notes {
    /// Notes at the start of an episode, from the game's intro: every place it lists is unseen;
    /// the sentence after the task, if any, is the hint.
    pub fn from_intro(intro: &str, style: NotesStyle) -> Notes {
        let mut unseen = between(intro, "Looking quickly around you, you see ", ".\n")
            .or_else(|| between(intro, "Looking quickly around you, you see ", "."))
            .map(split_list)
            .unwrap_or_default();
        unseen.sort();
        unseen.dedup();
        let hint = intro.find("Your task is to: ").and_then(|i| {
            let rest = &intro[i..];
            let j = rest.find(". ")? + 2;
            let h = rest[j..].trim();
            (!h.is_empty()).then(|| h.to_string())
        });
        let task_words = intro
            .find("Your task is to: ")
            .map(|i| {
                let rest = &intro[i + "Your task is to: ".len()..];
                let end = rest.find('.').unwrap_or(rest.len());
                rest[..end]
                    .split_whitespace()
                    .map(|w| w.to_ascii_lowercase())
                    .collect()
            })
            .unwrap_or_default();
        Notes {
            style,
            task_words,
            unseen,
            hint,
            ..Default::default()
        }
    }

    /// What a place held at the last look, if the agent has looked into it.
    fn contents(&mut self, place: &str) -> Option<&mut Vec<String>> {
        self.seen
            .iter_mut()
            .find(|(p, _)| p == place)
            .map(|(_, v)| v)
    }

    fn saw(&mut self, place: &str, items: Vec<String>) {
        self.unseen.retain(|u| u != place);
        match self.contents(place) {
            Some(v) => *v = items,
            None => self.seen.push((place.to_string(), items)),
        }
    }

    /// Records that the agent played `command` (before its feedback is observed).
    pub fn played(&mut self, command: &str) {
        let n = match self.played.iter().position(|(c, _)| c == command) {
            Some(i) => self.played.remove(i).1,
            None => 0,
        };
        self.played.push((command.to_string(), n + 1));
    }

    /// Records what a command's feedback revealed. Feedback it does not recognise (`Nothing
    /// happens.`, `look`, `inventory`) changes nothing.
    pub fn observe(&mut self, feedback: &str) {
        let f = feedback.trim();
        if let Some(rest) = f
            .strip_prefix("You arrive at ")
            .or_else(|| f.strip_prefix("You open the "))
        {
            let Some(dot) = rest.find(". ") else { return };
            let place = &rest[..dot];
            let desc = &rest[dot + 2..];
            if let Some(items) = desc
                .find("you see ")
                .map(|i| split_list(&desc[i + "you see ".len()..]))
            {
                self.saw(place, items);
            }
        } else if let Some(rest) = f.strip_prefix("You pick up the ") {
            if let Some((obj, place)) = rest.trim_end_matches('.').split_once(" from the ") {
                if let Some(v) = self.contents(place) {
                    v.retain(|o| o != obj);
                }
                self.holding = Some(obj.to_string());
            }
        } else if let Some(rest) = f.strip_prefix("You move the ") {
            if let Some((obj, place)) = rest.trim_end_matches('.').split_once(" to the ") {
                if let Some(v) = self.contents(place) {
                    v.push(obj.to_string());
                }
                self.holding = None;
            }
        } else {
            for verb in ["heat", "clean", "cool"] {
                if let Some(rest) = f.strip_prefix(&format!("You {verb} the ")) {
                    if let Some((obj, _)) = rest.split_once(" using the ") {
                        self.did.push(format!("{verb} {obj}"));
                    }
                    return;
                }
            }
            if let Some(obj) = f.strip_prefix("You turn on the ") {
                self.did
                    .push(format!("turn on {}", obj.trim_end_matches('.')));
            } else if let Some(rest) = f.strip_prefix("You sliced the ") {
                if let Some((obj, _)) = rest.split_once(" with the ") {
                    self.did.push(format!("slice {obj}"));
                }
            }
        }
    }

    /// Whether `object` (`apple 2`) is of a class the task's sentence names.
    fn named_by_task(&self, object: &str) -> bool {
        let class = object.rsplit_once(' ').map_or(object, |(c, _)| c);
        self.task_words.iter().any(|w| w == class)
    }

    /// The notes as prompt lines (each ending in a newline); empty parts are left out.
    pub fn render(&self) -> String {
        let mut s = String::new();
        if !self.unseen.is_empty() {
            let unseen = match self.style {
                NotesStyle::Full => self.unseen.join(", "),
                NotesStyle::Compact => ranges(&self.unseen),
            };
            s.push_str(&format!("unseen: {unseen}\n"));
        }
        let keep = |o: &&String| self.style == NotesStyle::Full || self.named_by_task(o);
        let seen: Vec<String> = self
            .seen
            .iter()
            .map(|(p, v)| (p, v.iter().filter(keep).cloned().collect::<Vec<_>>()))
            .filter(|(_, v)| !v.is_empty())
            .map(|(p, v)| format!("{p} has {}", v.join(", ")))
            .collect();
        if !seen.is_empty() {
            s.push_str(&format!("seen: {}\n", seen.join("; ")));
        }
        if let Some(h) = &self.holding {
            s.push_str(&format!("holding: {h}\n"));
        }
        if !self.did.is_empty() {
            s.push_str(&format!("did: {}\n", self.did.join(", ")));
        }
        let repeated: Vec<String> = self
            .played
            .iter()
            .rev()
            .filter(|(_, n)| *n > 1)
            .take(REPEATS_SHOWN)
            .map(|(c, n)| format!("{c} ({n} times)"))
            .collect();
        if !repeated.is_empty() {
            s.push_str(&format!("repeated: {}\n", repeated.join("; ")));
        }
        if let Some(h) = &self.hint {
            s.push_str(&format!("hint: {h}\n"));
        }
        s
    }
}

/// Place names grouped by kind, each kind's numbers as ranges: `cabinet 1`, `cabinet 2`,
/// `cabinet 3`, `cabinet 5`, `drawer 1` → `cabinet 1-3 5, drawer 1`. Kinds in name order; a name
/// without a number stands alone.
fn ranges(places: &[String]) -> String {
    let mut kinds: std::collections::BTreeMap<&str, Vec<u32>> = Default::default();
    let mut alone = Vec::new();
    for p in places {
        match p
            .rsplit_once(' ')
            .and_then(|(k, n)| Some((k, n.parse::<u32>().ok()?)))
        {
            Some((k, n)) => kinds.entry(k).or_default().push(n),
            None => alone.push(p.as_str()),
        }
    }
    let mut parts: Vec<(String, String)> = alone
        .into_iter()
        .map(|p| (p.to_string(), p.to_string()))
        .collect();
    for (k, mut ns) in kinds {
        ns.sort_unstable();
        ns.dedup();
        let mut runs: Vec<String> = Vec::new();
        let mut i = 0;
        while i < ns.len() {
            let mut j = i;
            while j + 1 < ns.len() && ns[j + 1] == ns[j] + 1 {
                j += 1;
            }
            runs.push(if j > i {
                format!("{}-{}", ns[i], ns[j])
            } else {
                ns[i].to_string()
            });
            i = j + 1;
        }
        parts.push((k.to_string(), format!("{k} {}", runs.join(" "))));
    }
    parts.sort();
    parts
        .into_iter()
        .map(|(_, p)| p)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SettingConfig;
    use crate::household::config::HouseholdConfig;

    const INTRO: &str = "-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. Looking quickly around you, you see a drawer 1, a cabinet 2, a cabinet 1, and a countertop 1.\n\nYour task is to: put a clean knife in countertop. The knife is in the drawer 1.";

    #[test]
    fn intro_lists_the_unseen_places_and_the_hint() {
        let n = Notes::from_intro(INTRO, NotesStyle::Full);
        assert_eq!(
            n.render(),
            "unseen: cabinet 1, cabinet 2, countertop 1, drawer 1\nhint: The knife is in the drawer 1.\n"
        );
        let plain = Notes::from_intro("You are in the middle of a room. Looking quickly around you, you see a fridge 1.\n\nYour task is to: cool some egg.", NotesStyle::Full);
        assert_eq!(plain.render(), "unseen: fridge 1\n");
    }

    #[test]
    fn compact_notes_write_ranges_and_keep_only_the_classes_the_task_names() {
        let intro = "You are in the middle of a room. Looking quickly around you, you see a cabinet 3, a cabinet 1, a cabinet 10, a cabinet 2, a cabinet 5, a drawer 1, a fridge 1, and a sinkbasin 2.\n\nYour task is to: put a clean knife in countertop.";
        let mut n = Notes::from_intro(intro, NotesStyle::Compact);
        assert_eq!(
            n.render(),
            "unseen: cabinet 1-3 5 10, drawer 1, fridge 1, sinkbasin 2\n"
        );
        n.observe("You arrive at drawer 1. On the drawer 1, you see a butterknife 1, a knife 2, and a fork 2.");
        n.observe("You arrive at cabinet 2. On the cabinet 2, you see a spoon 1.");
        assert_eq!(
            n.render(),
            "unseen: cabinet 1 3 5 10, fridge 1, sinkbasin 2\nseen: drawer 1 has knife 2\n"
        );
        // the full notes of the same episode name everything
        let mut f = Notes::from_intro(intro, NotesStyle::Full);
        f.observe("You arrive at drawer 1. On the drawer 1, you see a butterknife 1, a knife 2, and a fork 2.");
        assert!(f
            .render()
            .contains("seen: drawer 1 has butterknife 1, knife 2, fork 2\n"));
        assert!(f
            .render()
            .starts_with("unseen: cabinet 1, cabinet 10, cabinet 2"));
        assert_eq!(
            ranges(&["desk".into(), "armchair 2".into()]),
            "armchair 2, desk"
        );
    }

    #[test]
    fn looks_takes_moves_and_transforms_are_recorded() {
        let mut n = Notes::from_intro(INTRO, NotesStyle::Full);
        n.observe("You arrive at cabinet 1. The cabinet 1 is closed.");
        assert!(n.render().starts_with("unseen: cabinet 1, cabinet 2"));
        n.observe("You open the cabinet 1. The cabinet 1 is open. In it, you see nothing.");
        n.observe("You arrive at drawer 1. On the drawer 1, you see a knife 1, and a fork 2.");
        n.observe("Nothing happens.");
        n.observe("You pick up the knife 1 from the drawer 1.");
        n.observe("You clean the knife 1 using the sinkbasin 1.");
        assert_eq!(
            n.render(),
            "unseen: cabinet 2, countertop 1\nseen: drawer 1 has fork 2\nholding: knife 1\ndid: clean knife 1\nhint: The knife is in the drawer 1.\n"
        );
        n.observe("You arrive at countertop 1. On the countertop 1, you see nothing.");
        n.observe("You move the knife 1 to the countertop 1.");
        n.observe("You turn on the desklamp 1.");
        let r = n.render();
        assert!(
            r.contains("seen: drawer 1 has fork 2; countertop 1 has knife 1\n"),
            "{r}"
        );
        assert!(!r.contains("holding"), "{r}");
        assert!(
            r.contains("did: clean knife 1, turn on desklamp 1\n"),
            "{r}"
        );
    }

    #[test]
    fn a_loop_never_shows_the_same_notes_twice() {
        let mut n = Notes::from_intro(INTRO, NotesStyle::Full);
        n.observe("You arrive at drawer 1. On the drawer 1, you see a knife 1, and a fork 2.");
        let mut seen = std::collections::HashSet::new();
        // take the knife and put it back, again and again
        for _ in 0..6 {
            for (cmd, fb) in [
                (
                    "take knife 1 from drawer 1",
                    "You pick up the knife 1 from the drawer 1.",
                ),
                (
                    "move knife 1 to drawer 1",
                    "You move the knife 1 to the drawer 1.",
                ),
            ] {
                n.played(cmd);
                n.observe(fb);
                assert!(seen.insert(n.render()), "a repeated prompt: {}", n.render());
            }
        }
        let r = n.render();
        assert!(
            r.contains("repeated: move knife 1 to drawer 1 (6 times); take knife 1 from drawer 1 (6 times)\n"),
            "{r}"
        );
        // commands played once are not listed; at most three repeated ones are, the most recent first
        let mut m = Notes::from_intro(INTRO, NotesStyle::Full);
        for c in [
            "look",
            "go to cabinet 1",
            "go to cabinet 2",
            "look",
            "inventory",
        ] {
            m.played(c);
        }
        assert!(
            m.render().contains("repeated: look (2 times)\n"),
            "{}",
            m.render()
        );
        for c in [
            "go to cabinet 1",
            "go to cabinet 2",
            "inventory",
            "go to cabinet 1",
        ] {
            m.played(c);
        }
        assert!(
            m.render().contains("repeated: go to cabinet 1 (3 times); inventory (2 times); go to cabinet 2 (2 times)\n"),
            "{}",
            m.render()
        );
    }

    #[test]
    fn demonstrations_carry_the_notes_only_when_asked() {
        use crate::household::prompts::PromptStyle;
        let tasks = rla_env::household::splits::train_tasks(3, 5);
        let demo = |notes| {
            let mut cfg = crate::config::RunConfig::default();
            cfg.pretrain.noise = 0.0;
            HouseholdConfig::of_mut(&mut cfg).history_window = 1;
            HouseholdConfig::of_mut(&mut cfg).prompt_style = PromptStyle::Unlisted;
            HouseholdConfig::of_mut(&mut cfg).notes = notes;
            let steps = crate::household::warm::demonstrations(&tasks, &cfg, 0)
                .unwrap()
                .0;
            steps
                .into_iter()
                .map(|d| (d.prompt, d.answer))
                .collect::<Vec<_>>()
        };
        let (with, without) = (demo(true), demo(false));
        assert_eq!(with.len(), without.len(), "the same episodes");
        assert!(without.iter().all(|(p, _)| !p.contains("unseen: ")));
        assert!(with.iter().any(|(p, _)| p.contains("\nunseen: ")));
        // as the expert searches, places move from unseen to seen and objects into its hand
        assert!(with.iter().any(|(p, _)| p.contains("\nseen: ")));
        assert!(with.iter().any(|(p, _)| p.contains("\nholding: ")));
    }
}
