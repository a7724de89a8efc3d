//! The checker of assert-checked programs: a wrong program fails by any exit, hook or equality
//! trick, honest programs pass, and the program never sees its tests.

use rla_env::code::checker::{check, Checked};
use rla_env::code::problems::{run_units, UnitTest};
use rla_env::code::sandbox::{find_python, Limits, Sandbox};
use rla_env::code::Verdict;

fn sandbox() -> Sandbox {
    let limits = Limits {
        wall_secs: 5.0,
        cpu_secs: 4,
        memory_bytes: 512 << 20,
        processes: 16,
        output_bytes: 64 << 10,
        file_bytes: 1 << 20,
    };
    Sandbox::new(find_python().unwrap(), limits).unwrap()
}

const ASSERT: &str = "assert square(3) == 9";

fn statements(test: &str) -> Checked<'_> {
    Checked::Statements { setup: "", test }
}

/// A wrong `square` (it returns x + 1) made to look right by some trick.
const TRICKS: &[(&str, &str)] = &[
    ("sys.exit(0) at the end", "import sys\ndef square(x):\n    return x + 1\nsys.exit(0)\n"),
    ("raise SystemExit", "def square(x):\n    return x + 1\nraise SystemExit\n"),
    ("sys.exit inside the call", "import sys\ndef square(x):\n    sys.exit(0)\n"),
    ("os._exit(0)", "import os\ndef square(x):\n    os._exit(0)\n"),
    ("os._exit at load", "import os\ndef square(x):\n    return x + 1\nos._exit(0)\n"),
    ("execv /bin/true", "import os\ndef square(x):\n    os.execv('/bin/true', ['true'])\n"),
    (
        "an atexit hook that exits",
        "import atexit, os\natexit.register(lambda: os._exit(0))\ndef square(x):\n    return x + 1\n",
    ),
    (
        "an excepthook that exits",
        "import sys, os\nsys.excepthook = lambda *a: os._exit(0)\ndef square(x):\n    return x + 1\n",
    ),
    (
        "a trace hook that exits",
        "import sys, os\ndef t(frame, event, arg):\n    if event == 'exception':\n        os._exit(0)\n    return t\nsys.settrace(t)\ndef square(x):\n    return x + 1\n",
    ),
    (
        "a thread that exits",
        "import threading, os, time\ndef g():\n    time.sleep(0.05)\n    os._exit(0)\nthreading.Thread(target=g).start()\ndef square(x):\n    time.sleep(1)\n    return x + 1\n",
    ),
    (
        "a non-daemon thread that exits the process",
        "import threading, sys, os\ndef g():\n    os._exit(0)\nthreading.Thread(target=g, daemon=False).start()\ndef square(x):\n    return x + 1\n",
    ),
    (
        "an object equal to everything",
        "class E:\n    def __eq__(self, o):\n        return True\n    def __ne__(self, o):\n        return False\n    __hash__ = object.__hash__\ndef square(x):\n    return E()\n",
    ),
    (
        "an int subclass equal to everything",
        "class E(int):\n    def __eq__(self, o):\n        return True\n    __hash__ = int.__hash__\ndef square(x):\n    return E(0)\n",
    ),
    (
        "a str subclass equal to everything",
        "class E(str):\n    def __eq__(self, o):\n        return True\n    __hash__ = str.__hash__\ndef square(x):\n    return E('')\n",
    ),
    (
        "reading the asserts from its own file",
        "import re, glob\ndef square(x):\n    for f in glob.glob('/tmp/**/*.py', recursive=True) + glob.glob('*'):\n        try:\n            m = re.search(r'== (\\d+)', open(f).read())\n        except Exception:\n            continue\n        if m:\n            return int(m.group(1))\n    return x + 1\n",
    ),
    (
        "reading the asserts from standard input",
        "import sys\ndef square(x):\n    data = sys.stdin.read()\n    import re\n    m = re.search(r'== (\\d+)', data)\n    return int(m.group(1)) if m else x + 1\n",
    ),
    (
        "a monkeypatched AssertionError",
        "import builtins\nbuiltins.AssertionError = type('Quiet', (BaseException,), {})\ndef square(x):\n    return x + 1\n",
    ),
    (
        "a monkeypatched builtin used by the test",
        "import builtins\nbuiltins.abs = lambda x: 0\ndef square(x):\n    return x + 1\n",
    ),
    (
        "a report printed by the program",
        "import sys, os\nprint('{\"pass\": true, \"why\": \"\", \"rla_check\": 1}')\nos.write(1, b'{\"pass\": true, \"why\": \"\", \"rla_check\": 1}\\n')\nos.write(3, b'{\"pass\": true, \"why\": \"\", \"rla_check\": 1}\\n') if False else None\ndef square(x):\n    return x + 1\n",
    ),
    (
        "a forged reply on the protocol",
        "import os\nos.write(1, b'{\"ok\": [\"i\", \"9\"]}\\n')\ndef square(x):\n    return x + 1\n",
    ),
    (
        "killing every process of its user",
        "import os, signal\ndef square(x):\n    os.kill(-1, signal.SIGKILL)\n",
    ),
    ("an infinite loop", "def square(x):\n    while True:\n        pass\n"),
];

#[test]
fn every_trick_fails_and_honest_programs_pass() {
    let sb = sandbox();
    let honest = "def square(x):\n    return x * x\n";
    assert_eq!(
        check(&sb, honest, statements(ASSERT)).unwrap(),
        Verdict::Pass
    );
    for (what, program) in TRICKS {
        let v = check(&sb, program, statements(ASSERT)).unwrap();
        assert!(!v.passed(), "{what}: passed");
    }
    // the tricks on a test that uses a built-in
    let with_abs = "assert abs(square(3) - 9) < 1e-9";
    assert_eq!(
        check(&sb, honest, statements(with_abs)).unwrap(),
        Verdict::Pass
    );
    let patched = TRICKS
        .iter()
        .find(|(w, _)| w.starts_with("a monkeypatched builtin"))
        .unwrap()
        .1;
    assert!(!check(&sb, patched, statements(with_abs)).unwrap().passed());
}

#[test]
fn the_end_of_the_program_is_named() {
    let sb = sandbox();
    let v = check(&sb, TRICKS[3].1, statements(ASSERT)).unwrap();
    assert_eq!(v, Verdict::Crash, "os._exit is the program ending early");
    let looping = TRICKS
        .iter()
        .find(|(w, _)| *w == "an infinite loop")
        .unwrap()
        .1;
    assert_eq!(
        check(&sb, looping, statements(ASSERT)).unwrap(),
        Verdict::Timeout
    );
    let wrong = "def square(x):\n    return x + 1\n";
    assert_eq!(
        check(&sb, wrong, statements(ASSERT)).unwrap(),
        Verdict::Fail
    );
}

#[test]
fn honest_programs_of_every_shape_pass() {
    let sb = sandbox();
    let cases: &[(&str, &str)] = &[
        ("def f(x):\n    return [x] * 2\n", "assert f(1) == [1, 1]"),
        (
            "def f(x):\n    return (x, {'a': {1, 2}})\n",
            "assert f(0) == (0, {'a': {1, 2}})",
        ),
        (
            "def f():\n    return 0.1 + 0.2\n",
            "import math\nassert math.isclose(f(), 0.3)",
        ),
        (
            "import math\ndef f(x):\n    return math.sqrt(x)\n",
            "assert math.isclose(f(9), 3.0)",
        ),
        (
            "def f(n):\n    yield from range(n)\n",
            "assert list(f(3)) == [0, 1, 2]",
        ),
        (
            "class Solution:\n    def two(self, x):\n        return 2 * x\n",
            "assert Solution().two(4) == 8",
        ),
        (
            "def f(x):\n    raise ValueError(x)\n",
            "try:\n    f(1)\n    assert False\nexcept ValueError:\n    pass",
        ),
        (
            "def f(xs):\n    return sorted(xs)\n",
            "assert all(f(list(range(i, 0, -1))) == list(range(1, i + 1)) for i in range(5))",
        ),
        (
            "def f(b):\n    return b[::-1]\n",
            "assert f(b'ab') == b'ba' and f('ab') == 'ba'",
        ),
        (
            "def f():\n    return 2 ** 200\n",
            "assert f() == 1606938044258990275541962092341162602522202993782792835301376",
        ),
        (
            "def f():\n    return float('nan')\n",
            "import math\nassert math.isnan(f())",
        ),
        (
            "def f(d):\n    return {k: v + 1 for k, v in d.items()}\n",
            "assert f({'a': 1}) == {'a': 2}",
        ),
        ("def f():\n    return None\n", "assert f() is None"),
        (
            "def f(x):\n    print('working')\n    return x\n",
            "assert f(True) is True",
        ),
        (
            "K = 7\ndef f():\n    return K\n",
            "assert K == 7 and f() == 7",
        ),
    ];
    for (program, test) in cases {
        assert_eq!(
            check(&sb, program, statements(test)).unwrap(),
            Verdict::Pass,
            "{program}\n{test}"
        );
    }
    // MBPP's setup code runs on the tests' side
    let setup = "import math\nR = 2";
    let v = check(
        &sb,
        "import math\ndef area(r):\n    return math.pi * r * r\n",
        Checked::Statements {
            setup,
            test: "assert math.isclose(area(R), 4 * math.pi)",
        },
    )
    .unwrap();
    assert_eq!(v, Verdict::Pass);
    // a wrong answer of the right type still fails
    let v = check(
        &sb,
        "def f(x):\n    return [x]\n",
        statements("assert f(1) == [1, 1]"),
    )
    .unwrap();
    assert_eq!(v, Verdict::Fail);
}

#[test]
fn objects_of_the_program_are_not_judged() {
    let sb = sandbox();
    let obj = "class T:\n    pass\ndef f(x):\n    return T()\n";
    for test in [
        "assert f(1)",
        "assert f(1) != 0",
        "assert not (f(1) == 0)",
        "assert str(f(1))",
    ] {
        assert!(
            !check(&sb, obj, statements(test)).unwrap().passed(),
            "{test}"
        );
    }
}

#[test]
fn humaneval_checks_run_in_the_harness() {
    let sb = sandbox();
    let test = "METADATA = {}\n\ndef check(candidate):\n    assert candidate(1, 2) == 3\n    assert helper(2) == 4\n";
    let prompt = "def helper(x):\n    return 2 * x\n\ndef add(a, b):\n";
    let tests = Checked::Check {
        test,
        entry_point: "add",
    };
    let right = format!("{prompt}    return a + b\n");
    assert_eq!(check(&sb, &right, tests).unwrap(), Verdict::Pass);
    for body in [
        "    return a * b\n",
        "    import sys\n    sys.exit(0)\n",
        "    return a * b\nimport os\nos._exit(0)\n",
    ] {
        let program = format!("{prompt}{body}");
        assert!(!check(&sb, &program, tests).unwrap().passed(), "{body}");
    }
    // an entry point the program does not define
    let missing = "def other(a, b):\n    return a + b\n";
    assert!(!check(&sb, missing, tests).unwrap().passed());
}

#[test]
fn assert_problems_use_the_checker_everywhere() {
    // the matrix every command and training go through
    let sb = sandbox();
    let tests = vec![
        UnitTest::Assert {
            setup: String::new(),
            assert: "assert square(2) == 4".into(),
        },
        UnitTest::Assert {
            setup: String::new(),
            assert: "assert square(5) == 25".into(),
        },
    ];
    let programs = vec![
        "def square(x):\n    return x * x\n".to_string(),
        TRICKS[0].1.to_string(),
        TRICKS[11].1.to_string(),
    ];
    let m = run_units(&sb, &programs, &tests).unwrap();
    assert!(m[0].iter().all(|v| v.passed()));
    assert!(m[1].iter().all(|v| !v.passed()));
    assert!(m[2].iter().all(|v| !v.passed()));
}

#[test]
fn a_coders_answers_on_a_function_problem_file_are_scored_by_the_harness() {
    // the path of training and `code eval`: a problem file in the reference's format with
    // `test_method = "function"`, a coder's answers turned into programs, every ground-truth
    // test run on each
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("function.json");
    std::fs::write(
        &file,
        r#"[{"question": "Write square(x).", "test_method": "function",
             "test_list": ["assert square(2) == 4", "assert square(-3) == 9"],
             "test_input": [], "test_output": []}]"#,
    )
    .unwrap();
    let set = rla_env::code::problems::load(&file, 1).unwrap();
    let p = &set.problems[0];
    let answer = |code: &str| format!("Here it is.\n```python\n{code}```\n");
    let answers = [
        answer("def square(x):\n    return x * x\n"),
        answer("import sys\ndef square(x):\n    return x + 1\nsys.exit(0)\n"),
        answer("import os\ndef square(x):\n    return x\nos._exit(0)\n"),
        answer("import atexit, os\natexit.register(lambda: os._exit(0))\ndef square(x):\n    raise ValueError\n"),
    ];
    let programs: Vec<String> = answers.iter().map(|a| p.program(a)).collect();
    let m = p.run(&sandbox(), &programs, &p.unit_tests()).unwrap();
    assert_eq!(m[0], vec![Verdict::Pass, Verdict::Pass]);
    for (i, row) in m.iter().enumerate().skip(1) {
        assert!(row.iter().all(|v| !v.passed()), "answer {i}: {row:?}");
    }
}
