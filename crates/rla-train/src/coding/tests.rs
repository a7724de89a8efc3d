use super::*;

#[test]
fn a_rewrite_needs_a_statement_and_enough_tests_that_all_parse() {
    let t = |i: &str, o: &str| {
        format!("**Test Input:**\n```\n{i}\n```\n**Test Output:**\n```\n{o}\n```\n")
    };
    let good = format!(
        "Thinking.\n**Problem:** Print x + 1.\n\n{}{}",
        t("1", "2"),
        t("5", "6")
    );
    let r = parse_rewrite(&good, 2).unwrap();
    assert_eq!(r.statement, "Print x + 1.");
    assert_eq!(r.tests.len(), 2);
    assert_eq!(r.tests[1].output, "6\n");
    // too few tests, a broken test, no statement
    assert!(parse_rewrite(&good, 3).is_none());
    let broken = format!(
        "**Problem:** P\n{}**Test Input:**\n```\n1\n```\n",
        t("1", "2")
    );
    assert!(parse_rewrite(&broken, 1).is_none());
    assert!(parse_rewrite(&t("1", "2"), 1).is_none());
    assert!(parse_rewrite(&format!("**Problem:**\n{}", t("1", "2")), 1).is_none());
}

#[test]
fn pool_tasks_keep_the_chains_shape_and_hold_file_problems() {
    let spec = rla_env::code::family::generate(1, 2, 5).remove(0);
    let chain = CodeTask {
        id: "c".into(),
        parent: None,
        source: CodeSource::Chain { spec: spec.clone() },
    };
    let v = serde_json::to_value(&chain).unwrap();
    // a chain is stored as before: {id, parent, spec}
    assert!(v.get("spec").is_some() && v.get("problem").is_none());
    assert_eq!(serde_json::from_value::<CodeTask>(v).unwrap(), chain);
    let file = CodeTask {
        id: "f".into(),
        parent: Some("c".into()),
        source: CodeSource::File {
            problem: spec.problem("f", 4).into(),
        },
    };
    let back: CodeTask = serde_json::from_str(&serde_json::to_string(&file).unwrap()).unwrap();
    assert_eq!(back, file);
    assert_eq!(back.problem(6).unit_tests().len(), 4);
    assert_eq!(chain.problem(6).unit_tests().len(), 6);
}
