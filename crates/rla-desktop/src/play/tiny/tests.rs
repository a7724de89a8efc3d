//! The tests of `tiny`.

use super::*;
use crate::tasks::episode::DesktopEpisode;
use crate::tasks::family::{generate, split};
use rla_core::Split;

#[test]
fn expert_steps_are_candidates_and_round_trip() {
    let (mut mapped, mut total) = (0, 0);
    for spec in split(Split::InDomain, 40)
        .iter()
        .chain(split(Split::Ood, 20).iter())
    {
        let mut ep = DesktopEpisode::new(generate(spec), 1920, 1080).unwrap();
        for code in crate::tasks::expert::solve(&ep).unwrap() {
            let nodes = ep.tree(TREE);
            total += 1;
            let instruction = &ep.task.task.instruction;
            let act = from_code(&code, &ep.desktop, &nodes, instruction).unwrap_or_else(|| {
                panic!(
                    "{code} maps to no action in {}: cursor {} {:?}",
                    ep.task.task.id,
                    ep.desktop.cursor,
                    ep.desktop.book.sheets[ep.desktop.sheet]
                        .cells
                        .keys()
                        .map(|a| a.to_string())
                        .collect::<Vec<_>>()
                )
            });
            let cands = candidates(&ep.desktop, &nodes, &ep.task.task.instruction);
            assert!(cands.contains(&act), "{act} not among the candidates");
            let back = to_code(&act, &ep.desktop, &nodes).unwrap();
            let a = parse_code(&back).unwrap();
            // a sum or product may name its columns the other way round
            let commuted = act.starts_with("fill =") && !act.contains('(') && !act.contains('-');
            if !commuted {
                assert_eq!(a, parse_code(&code).unwrap(), "{act}");
            }
            mapped += 1;
            if act == "done" {
                break;
            }
            ep.step_code(&back, &nodes);
        }
        assert_eq!(ep.score(), Ok(1.0));
    }
    assert_eq!(mapped, total);
}

fn desktop(cells: &[(&str, Content)]) -> Desktop {
    let mut book = crate::sheet::workbook::Workbook::default();
    for (a, c) in cells {
        book.sheets[0]
            .cells
            .insert(Addr::parse(a).unwrap(), c.clone());
    }
    Desktop::new(book, None, 1920, 1080).unwrap()
}

#[test]
fn columns_go_by_their_header_and_others_by_letters() {
    let t = |s: &str| Content::Text(s.into());
    let d = desktop(&[
        ("A1", t("Product")),
        ("B1", t("Units")),
        ("C1", t("Cost")),
        ("D1", t("Net")),             // not unique (H1): letters
        ("E1", Content::Number(3.0)), // not text: letters
        ("F1", t("Net Sales")),       // words: a name
        ("G1", t("column")),          // a word of the vocabulary: letters
        ("H1", t("Net")),
        ("A2", t("tea")),
        ("B2", Content::Number(4.0)),
        ("C2", Content::Number(5.0)),
        ("B3", Content::Number(6.0)),
        ("C3", Content::Number(7.0)),
    ]);
    let n = Names::of(&d);
    let got: Vec<String> = (0..8).map(|c| n.column(c)).collect();
    assert_eq!(
        got,
        [
            "Product",
            "Units",
            "Cost",
            "D",
            "E",
            "Net Sales",
            "G",
            "H",
            "I"
        ][..8]
    );
    assert_eq!(n.column_of("Units"), Some(1));
    assert_eq!(n.column_of("D"), Some(3));
    // a column with a header is not called by its letters, nor a word that is no header
    assert_eq!(n.column_of("B"), None);
    assert_eq!(n.column_of("Price"), None);
    assert_eq!(n.cell(Addr::parse("B7").unwrap()), "Units 7");
    assert_eq!(n.cell(Addr::parse("I1").unwrap()), "I 1");

    let nodes = a11y::tree(&d, TREE);
    let cands = candidates(
        &d,
        &nodes,
        "Add a column Amount = Cost - Units in column I.",
    );
    for a in [
        "click column Units",
        "click Units 3",
        "click I 1",
        "type Amount",
    ] {
        assert!(cands.iter().any(|c| c == a), "{a} missing from {cands:?}");
    }
    assert!(!cands.iter().any(|c| c == "click column B"));
    // the fill writes the letters' formulas from the cursor down the data rows
    let mut d2 = d.clone();
    d2.cursor = Addr::parse("I2").unwrap();
    let nodes = a11y::tree(&d2, TREE);
    let cands = candidates(&d2, &nodes, "");
    assert!(cands.iter().any(|c| c == "fill =Cost-Units"));
    assert_eq!(
        to_code("fill =Cost-Units", &d2, &nodes).as_deref(),
        Some("pyautogui.write('=C2-B2\\n=C3-B3\\n')")
    );
    assert_eq!(to_code("fill =Price-Units", &d2, &nodes), None);
    // and the sum the instruction writes the other way round keeps its order
    let code = to_code("fill =Units+Cost", &d2, &nodes).unwrap();
    assert_eq!(
        from_code(&code, &d2, &nodes, "Net = Cost + Units").as_deref(),
        Some("fill =Cost+Units")
    );
    assert_eq!(
        from_code(&code, &d2, &nodes, "Net = Units + Cost").as_deref(),
        Some("fill =Units+Cost")
    );
}

#[test]
fn the_observation_lists_columns_by_the_rows_they_fill() {
    let t = |s: &str| Content::Text(s.into());
    let d = desktop(&[
        ("A1", t("Product")),
        ("B1", t("Units")),
        ("D1", t("Cost")),
        ("D2", t("x")),
        ("A2", t("tea")),
        ("A3", t("cocoa")),
        ("A5", t("Total")),
        ("B2", Content::Number(4.0)),
        ("B3", Content::Number(6.0)),
        ("C2", Content::Number(1.0)),
        ("E1", t("Cost")),
    ]);
    let nodes = a11y::tree(&d, TREE);
    assert_eq!(
        observation(&d, &nodes, Summary::default()),
        "sheet Sheet1 cursor Product 1 | Product 2-3 5 | Units 2-3 | C 2 | D header Cost 2 \
         | E header Cost | tab Sheet1"
    );
}

#[test]
fn the_summary_can_name_the_empty_columns_a_new_column_may_take() {
    let t = |s: &str| Content::Text(s.into());
    let mut d = desktop(&[
        ("C3", t("Product")),
        ("D3", t("Units")),
        ("E3", t("Gross profit")),
        ("C4", t("tea")),
        ("D4", Content::Number(4.0)),
        ("E4", Content::Number(6.0)),
    ]);
    let shown = Summary {
        empty_columns: true,
    };
    let nodes = a11y::tree(&d, TREE);
    let plain = observation(&d, &nodes, Summary::default());
    let with = observation(&d, &nodes, shown);
    assert!(!plain.contains("empty"), "{plain}");
    assert!(
        with.ends_with("| Gross profit 4 | empty F G | tab Sheet1"),
        "{with}"
    );
    // the two letters are clickable cells of the tree, the header row's
    let cands = candidates(&d, &nodes, "");
    for c in ["click F 3", "click G 3"] {
        assert!(cands.iter().any(|x| x == c), "{c}: {cands:?}");
    }
    // a header typed into the first moves them right
    d.book.sheets[0]
        .cells
        .insert(Addr::parse("F3").unwrap(), t("Margin"));
    let nodes = a11y::tree(&d, TREE);
    let with = observation(&d, &nodes, shown);
    assert!(with.contains("| Margin | empty G H |"), "{with}");
}

#[test]
fn words_come_from_the_instruction() {
    assert_eq!(
        words("Copy the Revenue column to a new sheet named Sheet2, then rename it to Profit."),
        ["Revenue", "Sheet2", "Profit"]
    );
}
#[test]
fn a_table_below_a_title_is_read_from_its_header_row() {
    let t = |s: &str| Content::Text(s.into());
    let d = desktop(&[
        ("A1", t("Sales report")),
        ("B4", t("Product")),
        ("C4", t("Gross profit")),
        ("D4", t("Units")),
        ("B5", t("tea")),
        ("C5", Content::Number(4.0)),
        ("D5", Content::Number(5.0)),
        ("B6", t("milk")),
        ("C6", Content::Number(6.0)),
        ("D6", Content::Number(7.0)),
    ]);
    assert_eq!(header_row(&d), 3);
    let n = Names::of(&d);
    assert_eq!(n.column(2), "Gross profit");
    assert_eq!(n.column_of("Units"), Some(3));
    assert_eq!(n.column(0), "A", "the title is no header");
    let mut d2 = d.clone();
    d2.cursor = Addr::parse("E5").unwrap();
    let nodes = a11y::tree(&d2, TREE);
    let cands = candidates(&d2, &nodes, "");
    assert!(
        cands.iter().any(|c| c == "fill =Gross profit-Units"),
        "{cands:?}"
    );
    assert_eq!(
        to_code("fill =Gross profit-Units", &d2, &nodes).as_deref(),
        Some("pyautogui.write('=C5-D5\\n=C6-D6\\n')")
    );
    assert!(observation(&d2, &nodes, Summary::default()).contains("| Gross profit 5-6 |"));
}
#[test]
fn the_sheets_worlds_expert_steps_map_to_actions() {
    use crate::tasks::family::{split_in, World};
    let (mut mapped, mut total) = (0, 0);
    let mut missing: std::collections::BTreeMap<String, usize> = Default::default();
    for spec in split_in(World::Sheets, Split::InDomain, 230) {
        let mut ep = DesktopEpisode::new(generate(&spec), 1920, 1080).unwrap();
        for code in crate::tasks::expert::solve(&ep).unwrap() {
            let nodes = ep.tree(TREE);
            total += 1;
            let instruction = &ep.task.task.instruction;
            match from_code(&code, &ep.desktop, &nodes, instruction) {
                Some(act) => {
                    let cands = candidates(&ep.desktop, &nodes, instruction);
                    if cands.contains(&act) {
                        mapped += 1;
                    } else {
                        *missing
                            .entry(format!(
                                "not a candidate: {}",
                                act.chars().take(30).collect::<String>()
                            ))
                            .or_default() += 1;
                    }
                }
                None => {
                    let kind: String = code.chars().take(22).collect();
                    *missing.entry(kind).or_default() += 1;
                }
            }
            if code == "DONE" {
                break;
            }
            ep.step_code(&code, &nodes);
        }
    }
    eprintln!("mapped {mapped} of {total}: {missing:#?}");
    assert!(mapped * 100 >= 99 * total, "mapped {mapped} of {total}");
}
