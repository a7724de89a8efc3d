//! OSWorld task files with RLAnything's fields.
//!
//! A task is OSWorld's task JSON — `id`, `snapshot`, `instruction`, `source`, `config` (setup
//! steps), `related_apps`, `evaluator` (`postconfig`, `func`, the `result` and `expected` getters,
//! `options`) — plus what RLAnything adds to adapt it: `task_template` (evaluator key → canonical
//! instruction), `evaluator_list` (evaluator key → full evaluator), `current_task` (the active
//! key → its instruction) and `history`. Every key this module does not name is kept as it was,
//! so reading and writing a file gives back the same JSON value (an explicit `null` of an optional
//! key is the one exception: it is written back as an absent key, which OSWorld reads the same).
//!
//! [`DesktopTask::check`] then says whether the setting can score the task: an evaluator
//! function, getter or rule type it does not implement is an error naming the field.

use crate::DesktopError;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// Keys this module does not name, kept in order of name.
pub type Extra = BTreeMap<String, Value>;

/// One value or a list of them, written back in the shape it was read.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum OneOrMany<T> {
    /// A single value.
    One(T),
    /// A list.
    Many(Vec<T>),
}

impl<'de, T: serde::de::DeserializeOwned> Deserialize<'de> for OneOrMany<T> {
    /// A list is `Many`, anything else `One`; an error inside says what was wrong with the
    /// value (a missing `type`, …) rather than that no variant matched.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match Value::deserialize(d)? {
            Value::Array(v) => v
                .into_iter()
                .enumerate()
                .map(|(i, x)| {
                    serde_json::from_value(x).map_err(|e| D::Error::custom(format!("[{i}]: {e}")))
                })
                .collect::<Result<Vec<T>, _>>()
                .map(OneOrMany::Many),
            x => serde_json::from_value(x)
                .map(OneOrMany::One)
                .map_err(D::Error::custom),
        }
    }
}

impl<T> OneOrMany<T> {
    /// The values as a slice.
    pub fn as_slice(&self) -> &[T] {
        match self {
            OneOrMany::One(x) => std::slice::from_ref(x),
            OneOrMany::Many(v) => v,
        }
    }
}

/// A setup or post-configuration step (`download`, `open`, `activate_window`, `execute`,
/// `sleep`, …): its type and parameters, as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetupStep {
    /// `type`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `parameters`.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub parameters: Value,
    /// Other keys.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A getter: where the evaluator finds a file or value (`vm_file`, `cloud_file`, …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Getter {
    /// `type`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The getter's own keys (`path`, `dest`, `rules`, …).
    #[serde(flatten)]
    pub fields: Extra,
}

impl Getter {
    /// A string field of the getter.
    pub fn str_field(&self, key: &str) -> Option<&str> {
        self.fields.get(key).and_then(Value::as_str)
    }

    /// The file paths it names: `path` is one path, or a list of them (with `multi: true`).
    pub fn paths(&self) -> Option<Vec<&str>> {
        match self.fields.get("path")? {
            Value::String(s) => Some(vec![s.as_str()]),
            Value::Array(v) => v.iter().map(Value::as_str).collect(),
            _ => None,
        }
    }
}

/// One comparison rule of `compare_table` (`sheet_data`, `check_cell`, …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    /// `type`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The rule's own keys (`sheet_idx0`, `coordinate`, `props`, …).
    #[serde(flatten)]
    pub fields: Extra,
}

/// An evaluator's `options`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Options {
    /// `rules`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules: Option<Vec<Rule>>,
    /// Other keys.
    #[serde(flatten)]
    pub extra: Extra,
}

/// An evaluator: what is run after the episode and how the result is scored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evaluator {
    /// `postconfig`: steps run before reading the result (saving the file, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub postconfig: Option<Vec<SetupStep>>,
    /// `func`: the metric, or several combined by `conj`.
    pub func: OneOrMany<String>,
    /// `result`: the getter(s) of what the agent produced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<OneOrMany<Getter>>,
    /// `expected`: the getter(s) of the reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<OneOrMany<Getter>>,
    /// `options`: the metric's options (per function when `func` is a list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<OneOrMany<Options>>,
    /// `conj`: `and` or `or` over several functions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conj: Option<String>,
    /// Other keys.
    #[serde(flatten)]
    pub extra: Extra,
}

/// An OSWorld task with RLAnything's adaptation fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DesktopTask {
    /// `id`.
    pub id: String,
    /// `snapshot` (the domain, e.g. `libreoffice_calc`).
    pub snapshot: String,
    /// `instruction`: what the agent is asked to do.
    pub instruction: String,
    /// `source`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// `config`: setup steps (download and open the file, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<Vec<SetupStep>>,
    /// `related_apps`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub related_apps: Option<Vec<String>>,
    /// `evaluator`: the active evaluator.
    pub evaluator: Evaluator,
    /// `task_template`: evaluator key → canonical instruction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_template: Option<BTreeMap<String, String>>,
    /// `evaluator_list`: evaluator key → evaluator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluator_list: Option<BTreeMap<String, Evaluator>>,
    /// `current_task`: the active evaluator key → its instruction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_task: Option<BTreeMap<String, String>>,
    /// `history`: the task's earlier versions, as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<Value>,
    /// Other keys (`trajectory`, `proxy`, `fixed_ip`, …).
    #[serde(flatten)]
    pub extra: Extra,
}

/// The evaluator functions the setting scores.
pub const FUNCS: [&str; 2] = ["compare_table", "compare_csv"];
/// The getter types the setting reads: a file on the desktop (`vm_file`), a reference file
/// (`cloud_file`, a local path in this setting; `local_file`).
pub const GETTERS: [&str; 3] = ["vm_file", "cloud_file", "local_file"];
/// The `compare_table` rules the setting implements (`crate::osworld::compare`).
pub const RULES: [&str; 12] = [
    "sheet_data",
    "sheet_name",
    "check_cell",
    "sheet_fuzzy",
    "sheet_print",
    "freeze",
    "zoom",
    "row_props",
    "data_validation",
    "style",
    "chart",
    "pivot_table",
];

/// `kind` is one of `known`; else an error naming the field, the kind and what is known.
fn implemented(
    kind: &str,
    known: &[&str],
    what: &str,
    field: impl FnOnce() -> String,
) -> Result<(), String> {
    if known.contains(&kind) {
        return Ok(());
    }
    Err(format!(
        "{} = {kind:?}: not a {what} this setting implements (it implements {})",
        field(),
        known.join(", ")
    ))
}

impl Evaluator {
    /// Checks the function, getter and rule types; the error names the field (`at` is the
    /// evaluator's own path, such as `evaluator` or `evaluator_list.evaluator2`).
    pub fn check(&self, at: &str) -> Result<(), String> {
        let funcs = self.func.as_slice();
        if funcs.is_empty() {
            return Err(format!("{at}.func: empty"));
        }
        for (i, f) in funcs.iter().enumerate() {
            implemented(f, &FUNCS, "function", || match self.func {
                OneOrMany::One(_) => format!("{at}.func"),
                OneOrMany::Many(_) => format!("{at}.func[{i}]"),
            })?;
        }
        for (key, getters) in [("result", &self.result), ("expected", &self.expected)] {
            let Some(g) = getters else {
                return Err(format!(
                    "{at}.{key}: missing (the metric compares two files)"
                ));
            };
            for (i, g) in g.as_slice().iter().enumerate() {
                implemented(&g.kind, &GETTERS, "getter", || {
                    format!("{at}.{key}[{i}].type")
                })?;
                if g.paths().is_none_or(|p| p.is_empty()) {
                    return Err(format!(
                        "{at}.{key}[{i}].path: missing (a path, or a list of paths)"
                    ));
                }
            }
        }
        // several functions are scored in step with their getters and options
        if let OneOrMany::Many(fs) = &self.func {
            let lists = [
                ("result", self.result.as_ref().map(|g| g.as_slice().len())),
                (
                    "expected",
                    self.expected.as_ref().map(|g| g.as_slice().len()),
                ),
                ("options", self.options.as_ref().map(|o| o.as_slice().len())),
            ];
            for (key, n) in lists {
                if let Some(n) = n.filter(|&n| n != fs.len()) {
                    return Err(format!(
                        "{at}.{key}: {n} entries for {} functions in {at}.func",
                        fs.len()
                    ));
                }
            }
        }
        if let Some(o) = &self.options {
            for (i, o) in o.as_slice().iter().enumerate() {
                for (j, r) in o.rules.iter().flatten().enumerate() {
                    implemented(&r.kind, &RULES, "compare_table rule", || {
                        format!("{at}.options[{i}].rules[{j}].type")
                    })?;
                }
            }
        }
        Ok(())
    }
}

impl DesktopTask {
    /// Parses a task from JSON text; `origin` names it in errors.
    pub fn from_json(text: &str, origin: &Path) -> Result<DesktopTask, DesktopError> {
        let t: DesktopTask = serde_json::from_str(text)
            .map_err(|e| DesktopError::invalid(origin, "task JSON", e.to_string()))?;
        Ok(t)
    }

    /// Reads and parses a task file.
    pub fn load(path: &Path) -> Result<DesktopTask, DesktopError> {
        let text = rla_core::file::read_to_string(path).map_err(|e| DesktopError::Io {
            path: path.to_path_buf(),
            source: e,
        })?;
        DesktopTask::from_json(&text, path)
    }

    /// The task as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a task serialises")
    }

    /// Checks that the setting can score the task: its active evaluator and every evaluator of
    /// `evaluator_list` use implemented functions, getters and rules; `current_task` names one
    /// key of `task_template`, which in turn names keys of `evaluator_list`.
    pub fn check(&self) -> Result<(), String> {
        self.evaluator.check("evaluator")?;
        if let Some(list) = &self.evaluator_list {
            for (k, e) in list {
                e.check(&format!("evaluator_list.{k}"))?;
            }
        }
        if let Some(tt) = &self.task_template {
            for k in tt.keys() {
                if !self
                    .evaluator_list
                    .as_ref()
                    .is_some_and(|l| l.contains_key(k))
                {
                    return Err(format!(
                        "task_template.{k}: no evaluator of that key in evaluator_list"
                    ));
                }
            }
        }
        if let Some(cur) = &self.current_task {
            if cur.len() != 1 {
                return Err(format!(
                    "current_task: names {} evaluator keys, it must name exactly one",
                    cur.len()
                ));
            }
            let k = cur.keys().next().expect("one key");
            if !self
                .task_template
                .as_ref()
                .is_some_and(|t| t.contains_key(k))
            {
                return Err(format!("current_task.{k}: not a key of task_template"));
            }
        }
        Ok(())
    }

    /// The active evaluator key (`current_task`'s), if the task has one.
    pub fn active_key(&self) -> Option<&str> {
        self.current_task
            .as_ref()
            .and_then(|c| c.keys().next())
            .map(String::as_str)
    }

    /// The task switched to another evaluator of its template: that evaluator becomes the active
    /// one and its canonical instruction the instruction, as the reference's harder and easier
    /// rewrites do.
    pub fn switched_to(&self, key: &str) -> Result<DesktopTask, String> {
        let instruction = self
            .task_template
            .as_ref()
            .and_then(|t| t.get(key))
            .ok_or_else(|| format!("task_template.{key}: no such evaluator key"))?;
        let evaluator = self
            .evaluator_list
            .as_ref()
            .and_then(|l| l.get(key))
            .ok_or_else(|| format!("evaluator_list.{key}: no such evaluator key"))?;
        let mut t = self.clone();
        t.evaluator = evaluator.clone();
        t.instruction = instruction.clone();
        t.current_task = Some(BTreeMap::from([(key.to_string(), instruction.clone())]));
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A task in OSWorld's format with every RLAnything field, written for these tests.
    const TASK: &str = r#"{
  "id": "calc-copy-0001",
  "snapshot": "libreoffice_calc",
  "instruction": "Copy the Revenue column to Sheet2.",
  "source": "generated",
  "config": [
    {"type": "download", "parameters": {"files": [{"url": "sales.xlsx", "path": "/home/user/sales.xlsx"}]}},
    {"type": "open", "parameters": {"path": "/home/user/sales.xlsx"}}
  ],
  "trajectory": "trajectories/calc-copy-0001",
  "related_apps": ["libreoffice calc"],
  "evaluator": {
    "postconfig": [{"type": "sleep", "parameters": {"seconds": 0.5}}],
    "func": "compare_table",
    "expected": {"type": "cloud_file", "path": "sales_gold.xlsx", "dest": "sales_gold.xlsx"},
    "result": {"type": "vm_file", "path": "/home/user/sales.xlsx", "dest": "sales.xlsx"},
    "options": {"rules": [{"type": "sheet_data", "sheet_idx0": "RNSheet2", "sheet_idx1": "ENSheet2"}]}
  },
  "proxy": false,
  "possibility_of_env_change": "low",
  "current_task": {"evaluator1": "Copy the Revenue column to Sheet2."},
  "task_template": {
    "evaluator1": "Copy the Revenue column to Sheet2.",
    "evaluator2": "Copy the Revenue column to Sheet2 and rename it to Profit."
  },
  "evaluator_list": {
    "evaluator1": {
      "func": "compare_table",
      "expected": {"type": "cloud_file", "path": "sales_gold.xlsx", "dest": "sales_gold.xlsx"},
      "result": {"type": "vm_file", "path": "/home/user/sales.xlsx", "dest": "sales.xlsx"},
      "options": {"rules": [{"type": "sheet_data", "sheet_idx0": "RNSheet2", "sheet_idx1": "ENSheet2"}]}
    },
    "evaluator2": {
      "func": ["compare_table"],
      "expected": [{"type": "cloud_file", "path": "sales_gold_p1.xlsx", "dest": "g.xlsx"}],
      "result": [{"type": "vm_file", "path": "/home/user/sales.xlsx", "dest": "sales.xlsx"}],
      "options": [{"rules": [
        {"type": "sheet_data", "sheet_idx0": "RNSheet2", "sheet_idx1": "ENSheet2"},
        {"type": "check_cell", "sheet_idx": "RNSheet2", "coordinate": "A1", "props": {"value": {"method": "eq", "ref": "Profit"}}}
      ]}]
    }
  },
  "history": [{"instruction": "Copy the Revenue column to a new sheet.", "accuracy": 0.875}]
}"#;

    fn parse(text: &str) -> DesktopTask {
        DesktopTask::from_json(text, Path::new("t.json")).unwrap()
    }

    #[test]
    fn a_task_round_trips_to_the_same_json_value() {
        let t = parse(TASK);
        let original: Value = serde_json::from_str(TASK).unwrap();
        // an empty rule list stays one
        let full = r#"{"rules": [{"type": "sheet_data", "sheet_idx0": "RNSheet2", "sheet_idx1": "ENSheet2"}]}"#;
        assert!(TASK.contains(full));
        let empty = TASK.replacen(full, r#"{"rules": []}"#, 1);
        let v: Value = serde_json::from_str(&empty).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&parse(&empty).to_json()).unwrap(),
            v
        );
        let written: Value = serde_json::from_str(&t.to_json()).unwrap();
        assert_eq!(written, original);
        assert_eq!(parse(&t.to_json()), t);
        // the keys it does not name are kept
        assert_eq!(t.extra["trajectory"], "trajectories/calc-copy-0001");
        assert_eq!(t.extra["proxy"], false);
        t.check().unwrap();
        assert_eq!(t.active_key(), Some("evaluator1"));
        // a getter may name several files at once
        let from = r#""path": "/home/user/sales.xlsx", "dest": "sales.xlsx"}"#;
        assert!(TASK.contains(from));
        let multi = TASK.replacen(
            from,
            r#""path": ["/home/user/sales.xlsx", "/home/user/sales-Sheet1.csv"], "dest": ["a.xlsx", "a.csv"], "multi": true}"#,
            1,
        );
        let m = parse(&multi);
        m.check().unwrap();
        let g = &m.evaluator.result.as_ref().unwrap().as_slice()[0];
        assert_eq!(g.paths().unwrap().len(), 2);
    }

    #[test]
    fn switching_evaluators_takes_the_templates_instruction() {
        let t = parse(TASK).switched_to("evaluator2").unwrap();
        assert_eq!(
            t.instruction,
            "Copy the Revenue column to Sheet2 and rename it to Profit."
        );
        assert_eq!(t.active_key(), Some("evaluator2"));
        let rules = &t.evaluator.options.as_ref().unwrap().as_slice()[0].rules;
        assert_eq!(rules.as_ref().unwrap().len(), 2);
        t.check().unwrap();
        assert!(parse(TASK)
            .switched_to("evaluator9")
            .unwrap_err()
            .contains("evaluator9"));
    }

    #[test]
    fn what_the_setting_cannot_score_is_named() {
        let with = |from: &str, to: &str| {
            assert!(TASK.contains(from), "{from}");
            parse(&TASK.replacen(from, to, 1)).check().unwrap_err()
        };
        let e = with(
            r#""func": "compare_table""#,
            r#""func": "compare_pptx_files""#,
        );
        assert!(
            e.starts_with("evaluator.func = \"compare_pptx_files\""),
            "{e}"
        );
        let e = with(
            r#""func": ["compare_table"]"#,
            r#""func": ["compare_table", "infeasible"]"#,
        );
        assert!(e.starts_with("evaluator_list.evaluator2.func[1]"), "{e}");
        let e = with(r#"{"type": "vm_file""#, r#"{"type": "vm_command_line""#);
        assert!(
            e.starts_with("evaluator.result[0].type = \"vm_command_line\""),
            "{e}"
        );
        let e = with(r#""type": "check_cell""#, r#""type": "sparkline""#);
        assert!(
            e.starts_with("evaluator_list.evaluator2.options[0].rules[1].type = \"sparkline\""),
            "{e}"
        );
        assert!(e.contains("sheet_data"), "the known ones are listed: {e}");
        let e = with(
            r#""current_task": {"evaluator1""#,
            r#""current_task": {"evaluator7""#,
        );
        assert!(e.starts_with("current_task.evaluator7"), "{e}");
        let e = with(
            r#""func": ["compare_table"]"#,
            r#""func": ["compare_table", "compare_csv"]"#,
        );
        assert!(
            e.starts_with("evaluator_list.evaluator2.result: 1 entries for 2 functions"),
            "{e}"
        );
        // a missing field is a parse error naming it, inside a list too
        let no_type = TASK.replacen(r#"[{"type": "vm_file", "#, "[{", 1);
        assert_ne!(no_type, TASK);
        let e = DesktopTask::from_json(&no_type, Path::new("t.json"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("[0]: missing field `type`"), "{e}");
        // a missing field is a parse error naming it
        let no_instruction = TASK.replacen(
            r#""instruction": "Copy the Revenue column to Sheet2.","#,
            "",
            1,
        );
        let e = DesktopTask::from_json(&no_instruction, Path::new("t.json"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("t.json") && e.contains("instruction"), "{e}");
    }
}
