//! The desktop against small scripted sessions: pyautogui code in, the workbook, the saved file
//! and the accessibility tree out.

use rla_desktop::osworld::compare::compare_table;
use rla_desktop::sheet::addr::Addr;
use rla_desktop::sheet::formula::Value;
use rla_desktop::sheet::workbook::{Content, Workbook};
use rla_desktop::sheet::xlsx;
use rla_desktop::ui::a11y::{self, TreeOptions};
use rla_desktop::ui::action::parse_code;
use rla_desktop::ui::app::Desktop;
use serde_json::json;
use std::path::Path;

fn a(s: &str) -> Addr {
    Addr::parse(s).unwrap()
}

fn desk(dir: &Path) -> Desktop {
    let mut b = Workbook::default();
    let s = &mut b.sheets[0];
    for (i, (name, rev, cost)) in [
        ("Region", "Revenue", "Cost"),
        ("north", "10", "4"),
        ("south", "30", "12"),
        ("east", "20", "5"),
    ]
    .iter()
    .enumerate()
    {
        for (c, v) in [name, rev, cost].iter().enumerate() {
            s.cells
                .insert(Addr::new(i as u32, c as u32), Content::typed(v).unwrap());
        }
    }
    let p = dir.join("sales.xlsx");
    xlsx::save(&b, &p).unwrap();
    Desktop::open(&p, 1920, 1080).unwrap()
}

/// The centre of the first node named `name` (of role `tag`, if given).
fn at(d: &Desktop, tag: &str, name: &str) -> (i32, i32) {
    let nodes = a11y::tree(d, TreeOptions { empty_cells: true });
    nodes
        .iter()
        .find(|n| n.name == name && (tag.is_empty() || n.tag == tag))
        .unwrap_or_else(|| panic!("no {tag} {name:?} on the screen"))
        .rect
        .center()
}

fn run(d: &mut Desktop, code: &str) {
    let actions = parse_code(code).unwrap_or_else(|e| panic!("{code}: {e}"));
    let out = d.step(&actions, &[]);
    assert_eq!(out.error, None, "{code}");
}

fn click(d: &mut Desktop, tag: &str, name: &str) {
    let (x, y) = at(d, tag, name);
    run(d, &format!("pyautogui.click({x}, {y})"));
}

fn value(d: &Desktop, sheet: usize, cell: &str) -> Value {
    d.book.value(sheet, a(cell))
}

#[test]
fn typing_formulas_and_saving_write_a_real_xlsx() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = desk(dir.path());
    click(&mut d, "table-cell", "D1");
    run(
        &mut d,
        "pyautogui.write('Profit\\n=B2-C2\\n=B3-C3\\n=B4-C4\\n')",
    );
    assert_eq!(value(&d, 0, "D1"), Value::Text("Profit".into()));
    assert_eq!(value(&d, 0, "D3"), Value::Number(18.0));
    assert_eq!(d.cursor, a("D5"), "Enter moves down");
    run(
        &mut d,
        "pyautogui.typewrite('=SUM(D2:D4)'); pyautogui.press('tab')",
    );
    assert_eq!(value(&d, 0, "D5"), Value::Number(39.0));
    assert_eq!(d.cursor, a("E5"), "Tab moves right");
    assert!(d.dirty);
    run(&mut d, "pyautogui.hotkey('ctrl', 's')");
    assert_eq!(d.saves, 1);
    // the saved file is what an evaluator reads: formulas with their results
    let path = d.path.clone().unwrap();
    let back = xlsx::open(&path).unwrap();
    assert_eq!(
        back.sheets[0].cells.get(&a("D2")),
        Some(&Content::Formula("B2-C2".into()))
    );
    let cached = xlsx::cached(&path).unwrap();
    assert!(cached[0]
        .cells
        .contains(&(a("D5"), xlsx::Stored::Number(39.0))));
    // and compare_table finds it equal to a workbook written with the same values
    let mut expected = back.clone();
    for (addr, c) in expected.sheets[0].cells.iter_mut() {
        if let Content::Formula(_) = c {
            *c = match back.value(0, *addr) {
                Value::Number(x) => Content::Number(x),
                v => Content::Text(v.to_string()),
            };
        }
    }
    let e = dir.path().join("expected.xlsx");
    xlsx::save(&expected, &e).unwrap();
    let rules = json!({"rules": [{"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0"}]});
    assert_eq!(compare_table(Some(&path), Some(&e), &rules), Ok(1.0));
}

#[test]
fn tabs_then_enter_return_to_the_first_column_and_escape_cancels() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = desk(dir.path());
    click(&mut d, "table-cell", "A6");
    run(&mut d, "pyautogui.write('west\\t7\\t1\\n')");
    assert_eq!(d.cursor, a("A7"));
    assert_eq!(value(&d, 0, "C6"), Value::Number(1.0));
    run(&mut d, "pyautogui.write('oops'); pyautogui.press('esc')");
    assert_eq!(value(&d, 0, "A7"), Value::Empty);
    // F2 edits the content in place
    click(&mut d, "table-cell", "B6");
    run(
        &mut d,
        "pyautogui.press('f2'); pyautogui.write('0'); pyautogui.press('enter')",
    );
    assert_eq!(value(&d, 0, "B6"), Value::Number(70.0));
    run(&mut d, "pyautogui.hotkey('ctrl', 'z')");
    assert_eq!(value(&d, 0, "B6"), Value::Number(7.0), "undo");
}

#[test]
fn a_column_is_copied_to_a_new_sheet_and_renamed_through_the_dialog() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = desk(dir.path());
    click(&mut d, "column-header", "B");
    run(&mut d, "pyautogui.hotkey('ctrl', 'c')");
    click(&mut d, "push-button", "Insert Sheet");
    assert_eq!(d.book.names(), ["Sheet1", "Sheet2"]);
    assert_eq!(d.sheet, 1);
    click(&mut d, "table-cell", "A1");
    run(&mut d, "pyautogui.hotkey('ctrl', 'v')");
    assert_eq!(value(&d, 1, "A1"), Value::Text("Revenue".into()));
    assert_eq!(value(&d, 1, "A4"), Value::Number(20.0));
    // a double click on the tab opens Rename Sheet with the name selected
    let (x, y) = at(&d, "page-tab", "Sheet2");
    run(&mut d, &format!("pyautogui.doubleClick({x}, {y})"));
    assert!(d.dialog.is_some());
    run(&mut d, "pyautogui.write('a/b\\n')");
    assert!(
        d.dialog
            .as_ref()
            .unwrap()
            .error
            .as_ref()
            .unwrap()
            .contains('/'),
        "refused, the dialog stays"
    );
    run(
        &mut d,
        "pyautogui.hotkey('ctrl', 'a'); pyautogui.write('Revenue\\n')",
    );
    assert!(d.dialog.is_none());
    assert_eq!(d.book.names(), ["Sheet1", "Revenue"]);
}

#[test]
fn sheets_are_inserted_and_deleted_through_menus() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = desk(dir.path());
    click(&mut d, "menu", "Sheet");
    click(&mut d, "menu-item", "Insert Sheet...");
    click(&mut d, "radio-button", "After current sheet");
    click(&mut d, "text", "Name");
    run(
        &mut d,
        "pyautogui.press('backspace', presses=6); pyautogui.write('Totals')",
    );
    click(&mut d, "push-button", "OK");
    assert_eq!(d.book.names(), ["Sheet1", "Totals"]);
    // the tab's context menu deletes it after a confirmation
    let (x, y) = at(&d, "page-tab", "Totals");
    run(&mut d, &format!("pyautogui.rightClick({x}, {y})"));
    click(&mut d, "menu-item", "Delete Sheet...");
    click(&mut d, "push-button", "Yes");
    assert_eq!(d.book.names(), ["Sheet1"]);
    // the last sheet cannot go
    run(&mut d, &format!("pyautogui.rightClick({x}, {y})"));
    let (x, y) = at(&d, "page-tab", "Sheet1");
    run(&mut d, &format!("pyautogui.rightClick({x}, {y})"));
    click(&mut d, "menu-item", "Delete Sheet...");
    run(&mut d, "pyautogui.press('enter')");
    assert!(d.dialog.as_ref().unwrap().error.is_some());
    run(&mut d, "pyautogui.press('esc')");
    assert!(d.dialog.is_none());
    assert_eq!(d.book.names(), ["Sheet1"]);
}

#[test]
fn sorting_keeps_the_header_and_moves_whole_rows() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = desk(dir.path());
    click(&mut d, "table-cell", "B2");
    click(&mut d, "menu", "Data");
    click(&mut d, "menu-item", "Sort Descending");
    let col = |d: &Desktop, c: &str| -> Vec<String> {
        (1..=4)
            .map(|r| value(d, 0, &format!("{c}{r}")).to_string())
            .collect()
    };
    assert_eq!(col(&d, "A"), ["Region", "south", "east", "north"]);
    assert_eq!(col(&d, "B"), ["Revenue", "30", "20", "10"]);
    assert_eq!(col(&d, "C"), ["Cost", "12", "5", "4"]);
}

#[test]
fn cut_and_paste_moves_formulas_relative_references() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = desk(dir.path());
    click(&mut d, "table-cell", "D2");
    run(&mut d, "pyautogui.write('=B2*2\\n')");
    click(&mut d, "table-cell", "D2");
    run(&mut d, "pyautogui.hotkey('ctrl', 'c')");
    // a drag selects D3:D4, and the paste fills from its top
    let (x0, y0) = at(&d, "table-cell", "D3");
    let (x1, y1) = at(&d, "table-cell", "D4");
    run(
        &mut d,
        &format!("pyautogui.moveTo({x0}, {y0}); pyautogui.dragTo({x1}, {y1}, duration=0.5)"),
    );
    assert_eq!(d.selection.to_string(), "D3:D4");
    run(&mut d, "pyautogui.hotkey('ctrl', 'v')");
    assert_eq!(
        d.book.sheets[0].cells.get(&a("D3")),
        Some(&Content::Formula("B3*2".into()))
    );
    assert_eq!(value(&d, 0, "D3"), Value::Number(60.0));
    // cut moves it
    click(&mut d, "table-cell", "D3");
    run(&mut d, "pyautogui.hotkey('ctrl', 'x')");
    click(&mut d, "table-cell", "E5");
    run(&mut d, "pyautogui.hotkey('ctrl', 'v')");
    assert_eq!(value(&d, 0, "D3"), Value::Empty);
    assert_eq!(
        d.book.sheets[0].cells.get(&a("E5")),
        Some(&Content::Formula("C5*2".into()))
    );
    // Delete clears a selection
    click(&mut d, "column-header", "E");
    run(&mut d, "pyautogui.press('delete')");
    assert_eq!(value(&d, 0, "E5"), Value::Empty);
}

#[test]
fn the_name_box_moves_the_cursor_and_refuses_bad_references() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = desk(dir.path());
    click(&mut d, "combo-box", "Name Box");
    run(&mut d, "pyautogui.write('C80\\n')");
    assert_eq!(d.cursor, a("C80"));
    assert!(d.top > 0, "scrolled to it");
    click(&mut d, "combo-box", "Name Box");
    run(&mut d, "pyautogui.write('nowhere\\n')");
    assert!(d.status.as_ref().unwrap().contains("Invalid reference"));
    assert_eq!(d.cursor, a("C80"));
    run(&mut d, "pyautogui.hotkey('ctrl', 'home')");
    assert_eq!((d.cursor, d.top), (a("A1"), 0));
    run(&mut d, "pyautogui.hotkey('ctrl', 'end')");
    assert_eq!(d.cursor, a("C4"));
    run(&mut d, "pyautogui.hotkey('ctrl', 'up')");
    assert_eq!(d.cursor, a("C1"));
    run(&mut d, "pyautogui.keyDown('shift'); pyautogui.press('down'); pyautogui.press('right'); pyautogui.keyUp('shift')");
    assert_eq!(d.selection.to_string(), "C1:D2");
}

#[test]
fn hostile_or_malformed_actions_fail_the_step_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = desk(dir.path());
    let before = d.book.clone();
    for code in [
        "pyautogui.click(5000, 20)",
        "pyautogui.click(-1, 20)",
        "pyautogui.click(tag_999)",
    ] {
        let out = d.step(&parse_code(code).unwrap(), &[]);
        assert!(out.error.is_some(), "{code}");
    }
    // a step stops at its first failing action
    let out = d.step(
        &parse_code("pyautogui.click(9999, 9999)\npyautogui.write('x')").unwrap(),
        &[],
    );
    assert_eq!(out.actions, 1);
    assert!(d.edit.is_none());
    let out = d.step(&parse_code("pyautogui.write('a\\x01b')").unwrap(), &[]);
    assert!(out.error.unwrap().contains("control"));
    assert_eq!(d.book, before);
    assert_eq!(
        d.step(&parse_code("DONE").unwrap(), &[]).finished,
        Some(true)
    );
    // long text into a dialog field is capped
    run(&mut d, "pyautogui.hotkey('ctrl', 'a')");
    click(&mut d, "menu", "Sheet");
    click(&mut d, "menu-item", "Rename Sheet...");
    run(&mut d, &format!("pyautogui.write('{}')", "y".repeat(3000)));
    assert!(d.dialog.as_ref().unwrap().field.len() <= 64);
}

#[test]
fn the_tree_is_linearised_as_osworld_does_and_cut_to_a_budget() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = desk(dir.path());
    click(&mut d, "table-cell", "A5");
    run(&mut d, "pyautogui.write('say \"hi\"\\n')");
    let nodes = a11y::tree(&d, TreeOptions::default());
    let words = |s: &str| s.split_whitespace().count();
    let text = a11y::linearize(&nodes, 100_000, &words);
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(a11y::HEADER));
    assert!(
        text.contains("menu\tFile\t\"\"\tMenuBar\t\t(8, 28)\t(64, 26)"),
        "{text}"
    );
    assert!(
        text.contains("table-cell\tA5\t\"say \"\"hi\"\"\"\tScCell"),
        "quotes are doubled"
    );
    assert!(text.contains("page-tab\tSheet1\t\"\"\tTabBar\tselected"));
    assert!(
        !text.contains("table-cell\tH20\t"),
        "far empty cells are left out by default"
    );
    let full = a11y::tree(&d, TreeOptions { empty_cells: true });
    assert!(full.len() > nodes.len() + 500);
    let cut = a11y::linearize(&nodes, 60, &words);
    assert!(cut.ends_with("[...]") && words(&cut) <= 61);
    // marks are the interactive nodes; tag_N clicks the N-th
    let marks = a11y::mark_centres(&nodes);
    let listing = a11y::marks_text(&nodes);
    let n = listing
        .lines()
        .position(|l| l.contains("table-cell B3"))
        .unwrap()
        + 1;
    d.step(
        &parse_code(&format!("pyautogui.click(tag_{n})")).unwrap(),
        &marks,
    );
    assert_eq!(d.cursor, a("B3"));
}
