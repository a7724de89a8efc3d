//! Folders of OSWorld task files: what loads, what is counted out and why, files found in a
//! local folder for online URLs, and an episode played and scored from a task file.

use rla_core::Split;
use rla_desktop::tasks::episode::DesktopEpisode;
use rla_desktop::tasks::expert;
use rla_desktop::tasks::family::{generate, split};
use rla_desktop::tasks::local;
use rla_desktop::ui::a11y::TreeOptions;
use serde_json::{json, Value};
use std::path::Path;

/// A task file as OSWorld writes its Calc tasks: the start file and the gold file online,
/// one evaluator, no adaptation fields. Built from a generated task's files in `from`.
fn osworld_like(from: &Path, id: &str, files: &Path) -> Value {
    let task: Value = serde_json::from_str(&std::fs::read_to_string(from).unwrap()).unwrap();
    let folder = from.with_extension("");
    let key = task["evaluator"]["expected"]["path"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    // the start file under the URL's file name, the gold under the getter's `dest` (a Drive
    // URL's last segment is `download`)
    std::fs::copy(folder.join("start.xlsx"), files.join("sales.xlsx")).unwrap();
    std::fs::copy(folder.join(&key), files.join("sales_gold.xlsx")).unwrap();
    let mut ev = task["evaluator"].clone();
    let window = "sales.xlsx - LibreOffice Calc";
    ev["postconfig"][0]["parameters"]["window_name"] = json!(window);
    ev["result"] =
        json!({"type": "vm_file", "path": "/home/user/sales.xlsx", "dest": "sales.xlsx"});
    ev["expected"] = json!({
        "type": "cloud_file",
        "path": "https://drive.usercontent.google.com/download?id=1AbC&export=download",
        "dest": "sales_gold.xlsx"
    });
    json!({
        "id": id,
        "snapshot": "libreoffice_calc",
        "instruction": task["instruction"],
        "source": "hand-written in OSWorld's format",
        "config": [
            {"type": "download", "parameters": {"files": [
                {"url": "https://files.example.org/calc/sales.xlsx?raw=1", "path": "/home/user/sales.xlsx"}
            ]}},
            {"type": "open", "parameters": {"path": "/home/user/sales.xlsx"}}
        ],
        "trajectory": "trajectories/",
        "related_apps": ["libreoffice_calc"],
        "evaluator": ev,
        "proxy": false
    })
}

fn write(path: &Path, v: &Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_string_pretty(v).unwrap()).unwrap();
}

#[test]
fn a_folder_of_task_files_loads_counts_what_it_cannot_run_and_plays_from_local_files() {
    let tmp = tempfile::tempdir().unwrap();
    let made = tmp.path().join("made");
    let dir = tmp.path().join("tasks");
    let files = tmp.path().join("files");
    std::fs::create_dir_all(&files).unwrap();
    let specs = split(Split::InDomain, 2);
    let exported: Vec<_> = specs
        .iter()
        .map(|s| local::export(&generate(s), &made).unwrap())
        .collect();
    // two generated tasks as they are (files beside them, relative URLs), in a sub-folder
    for e in &exported {
        let to = dir.join("generated").join(e.file_name().unwrap());
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(e, &to).unwrap();
        let assets = e.with_extension("");
        let to_assets = to.with_extension("");
        std::fs::create_dir_all(&to_assets).unwrap();
        for f in std::fs::read_dir(&assets).unwrap() {
            let f = f.unwrap().path();
            std::fs::copy(&f, to_assets.join(f.file_name().unwrap())).unwrap();
        }
    }
    // one in OSWorld's own style, its files online
    let ow = osworld_like(&exported[0], "a1b2c3d4-osworld-like", &files);
    write(&dir.join("a1b2c3d4-osworld-like.json"), &ow);
    // four this setting does not run
    let mut v = ow.clone();
    v["id"] = json!("validations");
    v["evaluator"]["func"] = json!("check_data_validations");
    write(&dir.join("other/validations.json"), &v);
    let mut v = ow.clone();
    v["id"] = json!("freeze");
    v["evaluator"]["func"] = json!("check_xlsx_freeze");
    write(&dir.join("other/freeze.json"), &v);
    let mut v = ow.clone();
    v["id"] = json!("cmd");
    v["evaluator"]["result"] = json!({"type": "vm_command_line", "command": ["ls"]});
    write(&dir.join("other/cmd.json"), &v);
    let mut v = ow.clone();
    v["id"] = json!("writer");
    v["config"][1]["parameters"]["path"] = json!("/home/user/report.docx");
    write(&dir.join("other/writer.json"), &v);

    // online files need the files folder, and the error says so
    let e = local::folder(&dir, None).unwrap_err().to_string();
    assert!(
        e.contains("a1b2c3d4-osworld-like.json")
            && e.contains("files.example.org")
            && e.contains("files"),
        "{e}"
    );
    // with it, three tasks load and four are counted out by what they need
    let f = local::folder(&dir, Some(&files)).unwrap();
    let names: Vec<String> = f
        .tasks
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
    assert_eq!(names[0], "a1b2c3d4-osworld-like.json");
    let removed: Vec<(&str, usize)> = f.removed.iter().map(|(k, n)| (k.as_str(), *n)).collect();
    assert_eq!(
        removed,
        vec![
            ("document report.docx", 1),
            ("function check_data_validations", 1),
            ("function check_xlsx_freeze", 1),
            ("getter vm_command_line", 1),
        ]
    );
    let line = f.removed_line().unwrap();
    assert!(line.starts_with("4 task files not run here"), "{line}");

    // a file missing from the files folder is named
    std::fs::rename(files.join("sales_gold.xlsx"), files.join("moved.xlsx")).unwrap();
    let e = local::folder(&dir, Some(&files)).unwrap_err().to_string();
    assert!(e.contains("sales_gold.xlsx"), "{e}");
    std::fs::rename(files.join("moved.xlsx"), files.join("sales_gold.xlsx")).unwrap();

    // the OSWorld-style task plays on the native desktop: unsolved at the start, solved by the
    // expert (who works towards the gold file), scored by the evaluator on files
    let opened = local::load(&f.tasks[0], Some(&files)).unwrap();
    assert_eq!(opened.file, "sales.xlsx");
    assert!(opened.target.is_some() && opened.reference.is_some());
    let ep = DesktopEpisode::new(opened, 1920, 1080).unwrap();
    assert_eq!(ep.desktop.title(), "sales.xlsx - LibreOffice Calc");
    assert_eq!(ep.score(), Ok(0.0));
    let steps = expert::solve(&ep).unwrap();
    let mut e = ep.clone();
    for code in &steps[..steps.len() - 1] {
        let nodes = e.tree(TreeOptions::default());
        assert_eq!(e.step_code(code, &nodes).error, None, "{code}");
    }
    assert_eq!(e.score(), Ok(1.0), "{steps:?}");
    // the same task generated scores the same steps alike
    let g = DesktopEpisode::new(generate(&specs[0]), 1920, 1080).unwrap();
    assert_eq!(expert::solve(&g).unwrap().len(), steps.len());
}

#[test]
fn what_is_not_a_task_file_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("broken.json"), r#"{"id": 1}"#).unwrap();
    let e = local::folder(tmp.path(), None).unwrap_err().to_string();
    assert!(e.contains("broken.json"), "{e}");
    // an empty folder, and one whose every task is out, say so
    let empty = tempfile::tempdir().unwrap();
    let e = local::folder(empty.path(), None).unwrap_err().to_string();
    assert!(e.contains("no task file"), "{e}");
}

#[test]
fn a_task_without_a_reference_workbook_leaves_the_expert_nothing_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = &split(Split::InDomain, 1)[0];
    let path = local::export(&generate(spec), tmp.path()).unwrap();
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    // two functions, each on the same gold file: scored by files, no single target
    let ev = v["evaluator"].clone();
    v["evaluator"]["func"] = json!(["compare_table", "compare_table"]);
    v["evaluator"]["result"] = json!([ev["result"], ev["result"]]);
    v["evaluator"]["expected"] = json!([ev["expected"], ev["expected"]]);
    v["evaluator"]["options"] = json!([ev["options"], ev["options"]]);
    write(&path, &v);
    let opened = local::load(&path, None).unwrap();
    assert!(opened.target.is_none());
    let ep = DesktopEpisode::new(opened, 1920, 1080).unwrap();
    assert_eq!(ep.score(), Ok(0.0));
    assert_eq!(expert::next(&ep), "FAIL");
    let e = expert::solve(&ep).unwrap_err();
    assert!(e.contains("expects"), "{e}");
    assert_eq!(expert::distance(&ep), None);
}
