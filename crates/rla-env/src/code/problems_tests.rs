use super::*;

fn write(name: &str, text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join(name);
    std::fs::write(&p, text).unwrap();
    (d, p)
}

#[test]
fn reads_the_references_two_methods() {
    let (_d, p) = write(
        "cc.json",
        r#"[{"question": "Add.", "test_input": ["1 2\n", "3 4\n"], "test_output": ["3\n", "7\n"], "test_method": "stdio", "test_time_limit": 1},
            {"question": "Write f.", "test_input": [], "test_output": [], "test_method": "function", "test_list": ["assert f(1) == 2", "assert f(2) == 3"], "test_time_limit": 2, "extra": "kept out"},
            {"question": "Too few.", "test_input": ["1"], "test_output": ["1"]}]"#,
    );
    let set = load(&p, 2).unwrap();
    assert_eq!(set.format, Format::Reference);
    assert_eq!(set.skipped, 1);
    assert_eq!(set.problems.len(), 2);
    assert_eq!(set.problems[0].id, "cc-0");
    assert_eq!(set.problems[0].time_limit, Some(1.0));
    assert_eq!(set.problems[0].unit_tests().len(), 2);
    assert!(matches!(set.problems[1].checks, Checks::Asserts { .. }));
    assert_eq!(set.problems[1].num_tests(), 2);
    assert!(set.problems[1].tester_prompt().contains("assert"));
}

#[test]
fn malformed_records_are_named() {
    let cases = [
        (
            r#"[{"question": "q", "test_input": ["1"], "test_output": []}]"#,
            "record 1, test_output",
        ),
        (
            r#"[{"question": "q", "test_method": "interactive"}]"#,
            "test_method",
        ),
        (r#"[{"question": 3}]"#, "record 1, question"),
        (
            r#"[{"question": "q", "test_input": ["1"], "test_output": ["1"], "test_time_limit": -1}]"#,
            "test_time_limit",
        ),
        (r#"[{"foo": 1}]"#, "neither"),
        (r#"[1]"#, "not a JSON object"),
        (
            r#"[{"question": "q", "test_input": ["1"], "test_output": ["1"]}, {"statement": "s", "tests": [], "id": "a"}]"#,
            "record 2",
        ),
        (
            "{\"prompt\": \"p\", \"entry_point\": \"f\", \"test\": \"t\", \"task_id\": \"x\"}",
            "line 1, canonical_solution",
        ),
        (
            r#"{"id": "a", "statement": "s", "tests": [{"input": "1"}]}"#,
            "line 1, tests[0].output",
        ),
        (
            r#"[{"question": "q", "test_input": ["1", 2], "test_output": ["1", "2"]}]"#,
            "test_input[1]",
        ),
        ("[", "JSON list"),
        ("", "no problem"),
    ];
    for (text, want) in cases {
        let (_d, p) = write("bad.json", text);
        let e = load(&p, 1).unwrap_err().to_string();
        assert!(e.contains(want) && e.contains("bad.json"), "{text}: {e}");
    }
    let (_d, p) = write(
        "dup.jsonl",
        "{\"id\": \"a\", \"statement\": \"s\", \"tests\": [{\"input\": \"1\", \"output\": \"1\"}]}\n{\"id\": \"a\", \"statement\": \"t\", \"tests\": [{\"input\": \"1\", \"output\": \"1\"}]}\n",
    );
    assert!(load(&p, 1).unwrap_err().to_string().contains("line 2, id"));
}

#[test]
fn reads_mbpp_and_humaneval_records() {
    let (_d, p) = write(
        "mbpp.jsonl",
        "{\"task_id\": 11, \"text\": \"Remove x.\", \"code\": \"def f(a):\\n    return a\", \"test_list\": [\"assert f(1) == 1\"], \"test_setup_code\": \"\", \"challenge_test_list\": []}\n",
    );
    let set = load(&p, 1).unwrap();
    assert_eq!(set.format, Format::Mbpp);
    assert_eq!(set.problems[0].id, "mbpp-11");
    assert!(set.problems[0].statement.contains("assert f(1) == 1"));
    let (_d, p) = write(
        "he.jsonl",
        "{\"task_id\": \"HumanEval/0\", \"prompt\": \"def f(a):\\n    \\\"\\\"\\\"Doc.\\\"\\\"\\\"\\n\", \"canonical_solution\": \"    return a\\n\", \"test\": \"def check(c):\\n    assert c(1) == 1\\n    assert c(2) == 2\\n\", \"entry_point\": \"f\"}\n",
    );
    let set = load(&p, 1).unwrap();
    assert_eq!(set.format, Format::HumanEval);
    let he = &set.problems[0];
    assert_eq!(he.num_tests(), 2);
    // a body follows the prompt as it stands; a fenced whole function after a newline
    assert_eq!(
        he.program("    return a\n"),
        "def f(a):\n    \"\"\"Doc.\"\"\"\n    return a\n"
    );
    assert!(he
        .program("```python\ndef f(a):\n    return a\n```")
        .ends_with("\"\"\"Doc.\"\"\"\n\ndef f(a):\n    return a\n"));
}

#[test]
fn asserts_are_read_from_fences_or_lines() {
    assert_eq!(
        parse_asserts("x\n```python\nassert f(1) == 2\nprint(3)\n  assert(f(0))\n```"),
        vec!["assert f(1) == 2", "assert(f(0))"]
    );
    assert_eq!(
        parse_asserts("assert g() == 1\nno"),
        vec!["assert g() == 1"]
    );
    assert!(parse_asserts("nothing").is_empty());
}

#[test]
fn programs_are_checked_by_each_method_in_the_sandbox() {
    let sb = Sandbox::with_limits(Default::default()).unwrap();
    let to_bool = |m: Vec<Vec<Verdict>>| {
        m.into_iter()
            .map(|r| r.into_iter().map(Verdict::passed).collect::<Vec<_>>())
            .collect::<Vec<_>>()
    };
    // asserts: the right function passes both, the wrong one the first only
    let f = FileProblem {
        id: "f".into(),
        statement: "f".into(),
        checks: Checks::Asserts {
            asserts: vec!["assert f(0) == 1".into(), "assert f(2) == 3".into()],
            setup: "import math".into(),
        },
        time_limit: None,
        solution: None,
    };
    let progs = vec![
        f.program("```python\ndef f(x):\n    return x + 1\n```"),
        f.program("```python\ndef f(x):\n    return 1\n```"),
    ];
    assert_eq!(
        to_bool(f.run(&sb, &progs, &f.unit_tests()).unwrap()),
        vec![vec![true, true], vec![true, false]]
    );
    // generated asserts run the same way
    let gen: Vec<UnitTest> = f
        .parse_generated("```python\nassert f(5) == 6\n```")
        .into_iter()
        .flatten()
        .collect();
    assert_eq!(
        to_bool(f.run(&sb, &progs, &gen).unwrap()),
        vec![vec![true], vec![false]]
    );
    // HumanEval: the canonical body after the prompt passes, another fails
    let he = FileProblem {
        id: "he".into(),
        statement: "p".into(),
        checks: Checks::Completion {
            prompt: "def add(a, b):\n    \"\"\"Adds.\"\"\"\n".into(),
            test: "def check(c):\n    assert c(1, 2) == 3\n".into(),
            entry_point: "add".into(),
        },
        time_limit: None,
        solution: None,
    };
    let progs = vec![
        he.program("    return a + b\n"),
        he.program("    return a - b\n"),
    ];
    assert_eq!(
        to_bool(he.run(&sb, &progs, &he.unit_tests()).unwrap()),
        vec![vec![true], vec![false]]
    );
    // the problem's time limit lowers the sandbox's
    let slow = FileProblem {
        id: "s".into(),
        statement: "s".into(),
        checks: Checks::Stdio {
            tests: vec![TestCase {
                input: "".into(),
                output: "1".into(),
            }],
        },
        time_limit: Some(0.5),
        solution: None,
    };
    let m = slow
        .run(
            &sb,
            &["import time\ntime.sleep(2)\nprint(1)".into()],
            &slow.unit_tests(),
        )
        .unwrap();
    assert_eq!(m[0][0], Verdict::Timeout);
    assert_eq!(slow.sandbox(&sb).limits().wall_secs, 0.5);
}

fn gzip(members: &[&[u8]]) -> Vec<u8> {
    use std::io::Write;
    let mut out = Vec::new();
    for m in members {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(m).unwrap();
        out.extend(e.finish().unwrap());
    }
    out
}

#[test]
fn a_list_of_millions_of_empty_records_is_refused_as_it_is_read() {
    // small gzips of lists of 1.5 million records, read one record at a time: `{}` is refused
    // at the first, records without tests (skipped) at the record bound, never held whole
    let d = tempfile::tempdir().unwrap();
    for (record, said) in [
        (&b"{}"[..], "record 1: neither the reference's format"),
        (
            b"{\"question\": \"\"}",
            "JSON list: more than 1000000 records",
        ),
    ] {
        let mut text = b"[".to_vec();
        for _ in 0..1_500_000 {
            text.extend_from_slice(record);
            text.push(b',');
        }
        text.extend_from_slice(record);
        text.push(b']');
        let p = d.path().join("bomb.json.gz");
        std::fs::write(&p, gzip(&[&text])).unwrap();
        assert!(std::fs::metadata(&p).unwrap().len() < 100_000);
        let e = load(&p, 1).unwrap_err().to_string();
        assert!(e.contains("bomb.json.gz") && e.contains(said), "{e}");
    }
}

#[test]
fn a_record_of_millions_of_values_is_refused_as_it_is_parsed() {
    let inputs = vec!["\"\""; MAX_RECORD_VALUES + 10].join(",");
    let (_d, p) = write(
        "wide.json",
        &format!(r#"[{{"question": "q", "test_input": [{inputs}], "test_output": []}}]"#),
    );
    let e = load(&p, 1).unwrap_err().to_string();
    assert!(
        e.contains("wide.json") && e.contains("more than 1048576 JSON values"),
        "{e}"
    );
    // as JSON lines too
    let (_d, p) = write(
        "wide.jsonl",
        &format!(r#"{{"question": "q", "test_input": [{inputs}], "test_output": []}}"#),
    );
    let e = load(&p, 1).unwrap_err().to_string();
    assert!(e.contains("line 1") && e.contains("JSON values"), "{e}");
}

#[test]
fn a_problem_with_more_tests_than_the_bound_is_named() {
    let tests: Vec<String> = (0..MAX_TESTS + 1)
        .map(|i| format!(r#"{{"input": "{i}", "output": "{i}"}}"#))
        .collect();
    let (_d, p) = write(
        "many.jsonl",
        &format!(
            "{{\"id\": \"small\", \"statement\": \"s\", \"tests\": [{}]}}\n{{\"id\": \"huge\", \"statement\": \"s\", \"tests\": [{}]}}\n",
            tests[..2].join(","),
            tests.join(",")
        ),
    );
    let e = load(&p, 1).unwrap_err().to_string();
    assert!(
        e.contains("line 2 (\"huge\")") && e.contains("1001 tests, more than the 1000"),
        "{e}"
    );
    // a larger bound reads it
    assert_eq!(
        load_bounded(&p, 1, MAX_TESTS + 1).unwrap().problems[1].num_tests(),
        MAX_TESTS + 1
    );
}

#[test]
fn every_member_of_a_gzip_is_read() {
    let a = br#"{"id": "a", "statement": "s", "tests": [{"input": "1", "output": "1"}]}
"#;
    let b = br#"{"id": "b", "statement": "s", "tests": [{"input": "2", "output": "2"}]}
"#;
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("two.jsonl.gz");
    std::fs::write(&p, gzip(&[a, b])).unwrap();
    let ids: Vec<String> = load(&p, 1)
        .unwrap()
        .problems
        .into_iter()
        .map(|p| p.id)
        .collect();
    assert_eq!(ids, ["a", "b"]);
}

#[test]
fn a_problem_file_that_is_not_a_regular_file_says_so() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("zero.json");
    std::os::unix::fs::symlink("/dev/zero", &p).unwrap();
    let e = load(&p, 1).unwrap_err().to_string();
    assert!(e.contains("a device, not a regular file"), "{e}");
}
