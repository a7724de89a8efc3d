//! The generator's tests.

use super::*;
use rla_core::Split;

#[test]
fn tasks_are_valid_osworld_tasks_with_both_evaluators() {
    for f in Family::IN_DOMAIN.iter().chain(&Family::OOD) {
        for objects in 1..=3 {
            let g = generate(&Spec {
                family: *f,
                seed: 7,
                objects,
                variant: 2,
                hints: 1,
                perturb: None,
                world: World::Plain,
            });
            g.task.check().unwrap();
            let back =
                DesktopTask::from_json(&g.task.to_json(), std::path::Path::new("t.json")).unwrap();
            assert_eq!(back, g.task);
            assert_ne!(g.expected["evaluator1"], g.start, "{f:?}");
            assert_ne!(g.expected["evaluator2"], g.expected["evaluator1"], "{f:?}");
            assert!(g.task.instruction.contains("Hint:"));
            let t1 = g.task.switched_to("evaluator1").unwrap();
            assert_eq!(
                t1.current_task.unwrap().keys().next().unwrap(),
                "evaluator1"
            );
        }
    }
}

#[test]
fn rewrites_walk_the_difficulty_ladder_both_ways() {
    let mut s = Spec {
        family: Family::Copy,
        seed: 1,
        objects: 1,
        variant: 1,
        hints: 0,
        perturb: None,
        world: World::Plain,
    };
    let mut steps = 0;
    while let Some((_, h)) = harder(&s) {
        s = h;
        steps += 1;
    }
    assert_eq!((s.variant, s.objects, steps), (2, 3, 3));
    let mut down = 0;
    while let Some((_, e)) = easier(&s) {
        s = e;
        down += 1;
    }
    assert_eq!((s.variant, s.objects, s.hints, down), (1, 1, 2, 5));
}

#[test]
fn splits_are_fixed_sized_and_disjoint_in_families() {
    let a = split(Split::InDomain, 1000);
    let b = split(Split::Ood, 1000);
    assert_eq!((a.len(), b.len()), (230, 139));
    assert_eq!(a, split(Split::InDomain, 230));
    assert!(a.iter().all(|s| Family::IN_DOMAIN.contains(&s.family)));
    assert!(b.iter().all(|s| Family::OOD.contains(&s.family)));
    let v = split(Split::Validation, 140);
    assert!(v.iter().all(|s| !a.iter().any(|x| x.seed == s.seed)));
}
/// The start sheet's header row and key column: where the key header lies.
fn origin(g: &Generated) -> Addr {
    let key = ["Region", "Product", "Store", "Team"];
    *g.start.sheets[0]
        .cells
        .iter()
        .find(|(_, c)| matches!(c, Content::Text(t) if key.contains(&t.as_str())))
        .unwrap()
        .0
}

#[test]
fn each_perturbation_changes_its_one_aspect_and_the_expert_solves_it() {
    let plain = split(Split::InDomain, 24);
    let ood = split(Split::Ood, 10);
    for p in Perturb::ALL {
        assert_eq!(Perturb::parse(p.name()), Ok(p));
        for (a, b) in plain.iter().chain(&ood).zip(
            perturbed(plain.clone(), Some(p))
                .iter()
                .chain(&perturbed(ood.clone(), Some(p))),
        ) {
            let (ga, gb) = (generate(a), generate(b));
            gb.task.check().unwrap();
            assert_ne!(ga.task.id, gb.task.id, "{p:?}");
            let (oa, ob) = (origin(&ga), origin(&gb));
            let headers = |g: &Generated, o: Addr| -> Vec<String> {
                (o.col..o.col + 12)
                    .filter_map(
                        |c| match g.start.sheets[0].cells.get(&Addr::new(o.row, c)) {
                            Some(Content::Text(t)) => Some(t.clone()),
                            _ => None,
                        },
                    )
                    .collect()
            };
            let rows = |g: &Generated, o: Addr| {
                (o.row + 1..o.row + 40)
                    .take_while(|&r| g.start.sheets[0].cells.contains_key(&Addr::new(r, o.col)))
                    .count()
            };
            match p {
                Perturb::ShiftRight => {
                    assert_eq!(oa, Addr::new(0, 0));
                    assert!(ob.row == 0 && (1..=3).contains(&ob.col), "{ob}");
                }
                Perturb::ShiftDown => {
                    assert!(ob.col == 0 && (1..=4).contains(&ob.row), "{ob}")
                }
                Perturb::Gaps => {
                    assert_eq!(ob, Addr::new(2, 0));
                    assert!(gb.start.sheets[0].cells.contains_key(&Addr::new(0, 0)));
                    assert!(!gb.start.sheets[0].cells.keys().any(|x| x.row == 1));
                }
                Perturb::Wide => {
                    let n = headers(&gb, ob).len() - 1;
                    assert!((5..=8).contains(&n), "{n} numeric columns");
                    assert_eq!(headers(&ga, oa)[..4], headers(&gb, ob)[..4]);
                }
                Perturb::Long => {
                    let n = rows(&gb, ob);
                    assert!((7..=30).contains(&n), "{n} rows");
                }
                Perturb::Unlocated => {
                    assert_eq!(ga.start, gb.start);
                    let i = &gb.task.instruction;
                    // no column letters (`E`) or cells (`A1`)
                    let letters = |w: &str| {
                        w.len() <= 3
                            && w.starts_with(|c: char| c.is_ascii_uppercase())
                            && w.chars()
                                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
                    };
                    assert!(
                        !i.split(' ')
                            .any(|w| letters(w.trim_end_matches([',', '.', ';']))),
                        "a column letter: {i}"
                    );
                    assert!(
                        !i.split(' ')
                            .any(|w| w.trim_end_matches([',', '.']).parse::<u32>().is_ok()),
                        "a row number: {i}"
                    );
                }
                Perturb::SwappedNames => {
                    for h in &headers(&gb, ob)[1..] {
                        assert!(NEW_NAMES.contains(&h.as_str()), "{h}");
                    }
                }
            }
            if !matches!(p, Perturb::Wide | Perturb::Long | Perturb::SwappedNames) {
                assert_eq!(rows(&ga, oa), rows(&gb, ob), "{p:?} keeps the rows");
            }
            let ep = crate::tasks::episode::DesktopEpisode::new(gb.clone(), 1920, 1080).unwrap();
            let steps = crate::tasks::expert::solve(&ep).unwrap_or_else(|e| panic!("{p:?}: {e}"));
            assert!(steps.len() <= 31, "{}: {} steps", gb.task.id, steps.len());
        }
    }
    // the plain sheet's tasks keep their files: no perturbation field in them
    assert!(!serde_json::to_string(&plain[0])
        .unwrap()
        .contains("perturb"));
}
#[test]
fn averages_below_row_one_score_from_the_saved_file() {
    // a table below row 1 puts its header among the values pandas reads, so the column is
    // compared unrounded: the expected average must be what a formula's result saves as
    let specs = perturbed(split(Split::InDomain, 230), Some(Perturb::ShiftDown));
    let mut played = 0;
    for s in specs
        .iter()
        .filter(|s| s.family == Family::Total(Agg::Sum) && s.variant == 2)
    {
        let g = generate(s);
        let dir = tempfile::tempdir().unwrap();
        let path = crate::tasks::local::export(&g, dir.path()).unwrap();
        let mut screen = crate::play::runner::Native::new(1920, 1080);
        let mut agent = crate::play::runner::ExpertAgent::new(g, false, (1920, 1080)).unwrap();
        let p = crate::play::runner::play(&mut screen, &path, &mut agent, 30, dir.path()).unwrap();
        assert_eq!(p.score, 1.0, "{:?}", p.steps);
        played += 1;
    }
    assert!(played >= 10, "{played}");
}
#[test]
fn the_sheets_world_names_no_row_and_few_columns_and_the_expert_solves_it() {
    // a cell (`E7`), a lone column letter (`E`) or a number not a threshold ("above 50")
    let cell = |w: &str| {
        let letters = w.chars().take_while(|c| c.is_ascii_uppercase()).count();
        (1..=2).contains(&letters)
            && w.len() > letters
            && w[letters..].chars().all(|c| c.is_ascii_digit())
    };
    let mut steps_needed = vec![];
    for (which, n) in [
        (Split::InDomain, 230),
        (Split::Validation, 140),
        (Split::Ood, 139),
    ] {
        let specs = split_in(World::Sheets, which, n);
        assert_eq!(specs.len(), n);
        let (mut lettered, mut total) = (0, 0);
        for s in &specs {
            let g = generate(s);
            g.task.check().unwrap();
            let i = &g.task.instruction;
            let words: Vec<&str> = i
                .split([' ', ',', '.', ';', '(', ')', ':'])
                .filter(|w| !w.is_empty())
                .collect();
            for (k, w) in words.iter().enumerate() {
                assert!(!cell(w), "a cell in {i}");
                if w.parse::<u32>().is_ok() {
                    assert_eq!(k.checked_sub(1).map(|p| words[p]), Some("above"), "{i}");
                }
            }
            assert!(!i.contains(" row 1") && !i.contains("in row"), "{i}");
            total += 1;
            if words.windows(2).any(|p| {
                matches!(p[0], "column" | "columns")
                    && p[1].len() <= 2
                    && p[1].chars().all(|c| c.is_ascii_uppercase())
            }) {
                lettered += 1;
            }
            let ep = crate::tasks::episode::DesktopEpisode::new(g.clone(), 1920, 1080).unwrap();
            let plan =
                crate::tasks::expert::solve(&ep).unwrap_or_else(|e| panic!("{}: {e}", g.task.id));
            steps_needed.push(plan.len() - 1);
            if which == Split::Ood {
                assert_eq!(s.world, World::HeldOut);
                assert!(Family::OOD.contains(&s.family));
            } else {
                assert_eq!(s.world, World::Sheets);
                assert!(Family::SHEETS_IN_DOMAIN.contains(&s.family));
            }
        }
        assert!(
            4 * lettered <= total,
            "{lettered} of {total} name a column letter"
        );
    }
    let within = |k: usize| steps_needed.iter().filter(|&&s| s <= k).count();
    let n = steps_needed.len();
    eprintln!(
        "expert plans within 15 steps: {} of {n}; 20: {}; 30: {}",
        within(15),
        within(20),
        within(30)
    );
    assert!(
        within(20) * 100 >= 95 * n,
        "{} of {n} within 20 steps",
        within(20)
    );
}
