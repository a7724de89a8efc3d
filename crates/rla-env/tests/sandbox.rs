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
    // a wall-clock limit no duration holds (it panicked in Duration::from_secs_f64)
    for wall_secs in [1e20, 1e6] {
        let far = Limits {
            wall_secs,
            ..Limits::default()
        };
        let e = Sandbox::new(find_python().unwrap(), far).unwrap_err();
        assert!(e.to_string().contains("at most 86400"), "{e}");
    }
    let e = Sandbox::new("/nonexistent/python".into(), Limits::default()).unwrap_err();
    assert!(e.to_string().contains("/nonexistent/python"), "{e}");
}

/// Processes whose command line contains `marker` (other than this test process).
fn processes_with(marker: &str) -> Vec<String> {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter(|e| e.file_name().to_str() != Some(me.as_str()))
        .filter_map(|e| {
            let c = std::fs::read(e.path().join("cmdline")).ok()?;
            let c = String::from_utf8_lossy(&c).replace('\0', " ");
            c.contains(marker).then_some(c)
        })
        .collect()
}

/// A program that starts a detached child (fork + setsid) which keeps standard output open, then
/// answers correctly: the harness returns at once with the answer, and the child does not outlive
/// the run — next to honest programs in the same batch.
#[cfg(target_os = "linux")]
#[test]
fn detached_children_neither_hang_the_harness_nor_survive() {
    let sb = sandbox();
    assert!(
        sb.isolation().pid_namespace,
        "PID namespaces are available on this machine's kernel: {:?}",
        sb.isolation()
    );
    let marker = format!("rla-detached-{}", std::process::id());
    let detached = format!(
        "import os, sys\n\
         if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        \
         os.execv('/bin/sh', ['sh', '-c', 'sleep 120; echo {marker}'])\n    os._exit(0)\n\
         a, b = map(int, input().split())\nprint(a + b)\nsys.stdout.flush()\n"
    );
    let programs = vec![
        ECHO_SUM.to_string(),
        detached.clone(),
        ECHO_SUM.to_string(),
        detached.clone(),
    ];
    let tests = vec![tc("1 2\n", "3\n"), tc("5 5\n", "10\n")];
    let start = Instant::now();
    let m = run_matrix(&sb, &programs, &tests).unwrap();
    let secs = start.elapsed().as_secs_f64();
    for row in &m {
        assert_eq!(row, &vec![Verdict::Pass, Verdict::Pass], "{m:?}");
    }
    // well inside one wall-clock limit per test, not a wait on the child's sleep
    assert!(secs < 2.0 * sb.limits().wall_secs, "batch took {secs:.1}s");
    std::thread::sleep(std::time::Duration::from_millis(200));
    let left = processes_with(&marker);
    assert!(left.is_empty(), "descendants outlived the run: {left:?}");
    // the same with a program that also outlives the wall clock itself
    let r = sb
        .run_python(
            &format!(
                "import os, time\n\
                 if os.fork() == 0:\n    os.setsid()\n    \
                 os.execv('/bin/sh', ['sh', '-c', 'sleep 120; echo {marker}'])\n\
                 print('started', flush=True)\ntime.sleep(60)\n"
            ),
            b"",
        )
        .unwrap();
    assert_eq!(r.status, Status::Timeout);
    assert!(r.stdout.contains("started"), "{r:?}");
    assert!(r.secs < sb.limits().wall_secs + 1.5, "{r:?}");
    std::thread::sleep(std::time::Duration::from_millis(200));
    let left = processes_with(&marker);
    assert!(left.is_empty(), "descendants outlived the run: {left:?}");
}

/// The CPU limit still reads as a timeout when the program is its namespace's init.
#[test]
fn cpu_limit_is_a_timeout() {
    let limits = Limits {
        wall_secs: 20.0,
        cpu_secs: 1,
        ..Limits::default()
    };
    let sb = Sandbox::new(find_python().unwrap(), limits).unwrap();
    let r = sb.run_python("while True:\n    pass\n", b"").unwrap();
    assert_eq!(r.status, Status::Timeout, "{r:?}");
    assert!(r.secs < 10.0, "{r:?}");
    // an ordinary exit code passes through the keeper unchanged
    let r = sb.run_python("raise SystemExit(7)\n", b"").unwrap();
    assert_eq!((r.status, r.code), (Status::Crash, Some(7)), "{r:?}");
    let r = sb.run_python(
        "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n",
        b"",
    );
    let r = r.unwrap();
    assert_eq!(r.status, Status::Crash, "{r:?}");
}

/// A descriptor the harness's caller left open (as a shell's `exec 7<>secret` does) never
/// reaches the program: it can neither read the host file through it nor overwrite it.
#[test]
fn descriptors_left_open_by_the_caller_do_not_reach_the_program() {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    let sb = sandbox();
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "hunter2").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let path = std::ffi::CString::new(secret.as_os_str().as_bytes()).unwrap();
    // opened without O_CLOEXEC, as a shell leaves it
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDWR) };
    assert!(fd > 2, "open: {}", std::io::Error::last_os_error());
    let r = sb.run_python(
        "import os\nseen = []\nfor fd in range(3, 4096):\n    try:\n        os.lseek(fd, 0, 0)\n        \
         seen.append(os.read(fd, 64))\n        os.write(fd, b'pwned')\n    except OSError:\n        \
         pass\nprint('readable:', seen)\n",
        b"",
    );
    unsafe { libc::close(fd) };
    let r = r.unwrap();
    assert_eq!(r.status, Status::Exited, "{r:?}");
    assert!(r.stdout.starts_with("readable:"), "{r:?}");
    assert!(!r.stdout.contains("hunter2"), "{}", r.stdout);
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "hunter2");
}

/// A unix socket anyone may connect to, outside the program's folder (as an X server's
/// `/tmp/.X11-unix/X0` is), is not reached: the network namespace and Landlock do not cover
/// pathname sockets, the seccomp filter refuses the socket. A socket pair still works.
#[cfg(target_os = "linux")]
#[test]
fn unix_sockets_outside_the_folder_are_not_reached() {
    use std::os::unix::fs::PermissionsExt;
    let sb = sandbox();
    assert!(
        sb.isolation().unix_sockets_denied,
        "seccomp filters are available on this machine's kernel: {:?}",
        sb.isolation()
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = dir.path().join("X0");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
    listener.set_nonblocking(true).unwrap();
    let r = sb
        .run_python(
            &format!(
                "import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect({:?})\n\
                 s.sendall(b'hello')\nprint('connected')\n",
                path.to_str().unwrap()
            ),
            b"",
        )
        .unwrap();
    let reached = listener.accept().is_ok();
    assert!(!reached, "the program connected: {r:?}");
    assert_eq!(r.status, Status::Crash, "{r:?}");
    assert!(r.stderr.contains("PermissionError"), "{}", r.stderr);
    let r = sb
        .run_python(
            "import socket\na, b = socket.socketpair()\na.sendall(b'x')\nprint(b.recv(1))\n",
            b"",
        )
        .unwrap();
    assert_eq!(r.status, Status::Exited, "{r:?}");
    assert_eq!(r.stdout.trim(), "b'x'");
}
