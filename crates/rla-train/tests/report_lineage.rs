//! The report's accepted rewrites by iteration, read from a run's lineage.

use rla_train::report::accepted_by_iteration;

fn line(
    iteration: usize,
    accepted: bool,
    direction: &str,
    what: &str,
    before: f64,
    after: f64,
) -> String {
    serde_json::json!({
        "id": format!("t~{iteration}"),
        "parent": "t",
        "direction": direction,
        "perturbation": what,
        "critique": null,
        "acc_before": before,
        "acc_after": after,
        "accepted": accepted,
        "iteration": iteration,
        "task": {"anything": "a setting's task"},
    })
    .to_string()
}

#[test]
fn accepted_rewrites_are_shown_by_iteration_with_the_policys_success_on_them() {
    let lineage = [
        line(2, true, "harder", "hide targets: drawer 7", 1.0, 0.5),
        line(
            2,
            false,
            "harder",
            "escalate: pick_two_obj_and_place",
            0.875,
            0.0,
        ),
        line(
            5,
            true,
            "harder",
            "escalate: pick_heat_then_place_in_recep",
            0.75,
            0.25,
        ),
        line(5, true, "easier", "hint added", 0.0, 0.5),
        line(5, true, "harder", "hide targets: cabinet 3", 1.0, 0.75),
        line(6, false, "easier", "hint added", 0.0, 0.0),
    ]
    .join("\n");
    let t = accepted_by_iteration(&lineage).unwrap().unwrap();
    let rows: Vec<&str> = t.lines().skip(2).collect();
    assert_eq!(
        rows,
        [
            "| 2 | 2 | 1 (1 / 0) | 1.000 → 0.500 | hide targets ×1 |",
            "| 5 | 3 | 3 (2 / 1) | 0.583 → 0.500 | escalate ×1, hide targets ×1, hint added ×1 |",
            "| 6 | 1 | 0 (0 / 0) | — | — |",
        ],
        "{t}"
    );
    assert_eq!(accepted_by_iteration("").unwrap(), None);
    let bad = format!(
        "{}\n{{\"iteration\": 3}}\n",
        line(1, true, "harder", "x", 1.0, 0.5)
    );
    let e = accepted_by_iteration(&bad).unwrap_err().to_string();
    assert!(e.contains("line 2"), "{e}");
}
