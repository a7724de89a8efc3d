//! The sandbox contains hostile programs: each gets its verdict, the harness survives, and the
//! other programs' results are unaffected.

use rla_env::code::sandbox::{find_python, Limits, Sandbox, Status};
use rla_env::code::{run_matrix, TestCase, Verdict};
use std::time::Instant;

fn sandbox() -> Sandbox {
    let limits = Limits {
        wall_secs: 3.0,
        cpu_secs: 2,
        memory_bytes: 256 << 20,
        processes: 8,
        output_bytes: 64 << 10,
        file_bytes: 1 << 20,
    };
    Sandbox::new(find_python().unwrap(), limits).unwrap()
}

const ECHO_SUM: &str = "a, b = map(int, input().split())\nprint(a + b)\n";

fn tc(i: &str, o: &str) -> TestCase {
    TestCase {
        input: i.into(),
        output: o.into(),
    }
}

#[test]
fn ordinary_programs_pass_and_fail() {
    let sb = sandbox();
    let tests = vec![tc("1 2\n", "3\n"), tc("5 5\n", "10\n")];
    let wrong = "a, b = map(int, input().split())\nprint(a - b)\n";
    let crash = "raise SystemExit(3)\n";
    let m = run_matrix(
        &sb,
        &[ECHO_SUM.to_string(), wrong.to_string(), crash.to_string()],
        &tests,
    )
    .unwrap();
    assert_eq!(m[0], vec![Verdict::Pass, Verdict::Pass]);
    assert_eq!(m[1], vec![Verdict::Fail, Verdict::Fail]);
    assert_eq!(m[2], vec![Verdict::Crash, Verdict::Crash]);
    let r = sb.run_python("import sys; print(1/0)", b"").unwrap();
    assert_eq!(r.status, Status::Crash);
    assert!(r.stderr.contains("ZeroDivisionError"), "{}", r.stderr);
}

/// Each hostile program with the verdict it must get.
fn hostile(
    secret: &std::path::Path,
    outside: &std::path::Path,
) -> Vec<(&'static str, String, Verdict)> {
    vec![
        ("infinite loop", "while True:\n    pass\n".into(), Verdict::Timeout),
        (
            "sleeps past the wall clock",
            "import time\ntime.sleep(60)\n".into(),
            Verdict::Timeout,
        ),
        (
            "fork bomb",
            "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n".into(),
            Verdict::Timeout,
        ),
        (
            "allocates far beyond the memory limit",
            "x = bytearray(4 << 30)\nprint(len(x))\n".into(),
            Verdict::Memory,
        ),
        (
            "prints gigabytes",
            "import sys\nb = 'x' * (1 << 20)\nwhile True:\n    sys.stdout.write(b)\n".into(),
            Verdict::OutputLimit,
        ),
        (
            "writes outside its working directory",
            format!(
                "open({:?}, 'w').write('pwned')\nprint('wrote')\n",
                outside.to_str().unwrap()
            ),
            Verdict::Crash,
        ),
        (
            "opens a network socket",
            "import socket\ns = socket.create_connection(('1.1.1.1', 80), timeout=1)\nprint('connected')\n"
                .into(),
            Verdict::Crash,
        ),
        (
            "reads a secret outside its working directory",
            format!("print(open({:?}).read())\n", secret.to_str().unwrap()),
            Verdict::Crash,
        ),
        (
            "never reads its input",
            "print(3)\n".into(),
            Verdict::Pass,
        ),
    ]
}

#[test]
fn hostile_programs_are_contained() {
    let sb = sandbox();
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("id_rsa");
    std::fs::write(&secret, "-----BEGIN OPENSSH PRIVATE KEY----- hunter2").unwrap();
    std::fs::set_permissions(&secret, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let outside = dir.path().join("outside.txt");
    let cases = hostile(&secret, &outside);
    // the hostile programs, plus honest ones interleaved: all run in parallel
    let mut programs: Vec<String> = Vec::new();
    for (_, p, _) in &cases {
        programs.push(p.clone());
        programs.push(ECHO_SUM.to_string());
    }
    let tests = vec![tc("1 2\n", "3\n")];
    let start = Instant::now();
    let m = run_matrix(&sb, &programs, &tests).unwrap();
    let secs = start.elapsed().as_secs_f64();
    for (k, (name, src, want)) in cases.iter().enumerate() {
        if m[2 * k][0] != *want {
            let again = sb.run_python(src, b"1 2\n").unwrap();
            panic!("{name}: {:?}, want {want:?}; alone: {again:?}", m[2 * k][0]);
        }
        assert_eq!(
            m[2 * k + 1][0],
            Verdict::Pass,
            "honest program next to {name}"
        );
    }
    assert!(
        !outside.exists(),
        "a file was written outside the working directory"
    );
    // the machine stayed responsive: the whole batch ends within a few wall-clock limits
    assert!(secs < 60.0, "batch took {secs:.1}s");
    // a fork bomb leaves no process behind
    let r = sb
        .run_python(
            "import os\nfor _ in range(3):\n    os.fork()\nprint('x')\n",
            b"",
        )
        .unwrap();
    assert!(r.stdout.contains('x'));
    // and the secret's content never appears
    let r = sb
        .run_python(
            &format!("print(open({:?}).read())", secret.to_str().unwrap()),
            b"",
        )
        .unwrap();
    assert!(!r.stdout.contains("hunter2"), "{}", r.stdout);
}

#[test]
fn working_directories_are_fresh_and_removed() {
    let sb = sandbox();
    let r = sb
        .run_python(
            "import os\nprint(sorted(os.listdir('.')))\nopen('scratch.txt', 'w').write('ok')\nprint(os.getcwd())\n",
            b"",
        )
        .unwrap();
    assert_eq!(r.status, Status::Exited, "{}", r.stderr);
    let mut lines = r.stdout.lines();
    assert_eq!(lines.next().unwrap(), "['main.py']");
    let cwd = lines.next().unwrap();
    assert!(!std::path::Path::new(cwd).exists(), "{cwd} was not removed");
}

#[test]
fn impossible_limits_are_named() {
    let bad = Limits {
        cpu_secs: 0,
        ..Limits::default()
    };
    let e = Sandbox::new(find_python().unwrap(), bad).unwrap_err();
    assert!(e.to_string().contains("cpu_secs"), "{e}");
    let e = Sandbox::new("/nonexistent/python".into(), Limits::default()).unwrap_err();
    assert!(e.to_string().contains("/nonexistent/python"), "{e}");
}
