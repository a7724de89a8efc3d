//! The real desktop's server keeps what it promises without the desktop itself: its checks are
//! imported from the script `desktop serve-real` runs (Python's standard library only) and tried
//! on a session folder; `serve-real` runs the script it carries, from a folder of its own, and
//! refuses to bind beyond loopback without a key. (`real_desktop.rs` runs the whole desktop.)

use std::path::Path;
use std::process::Command;
mod common;
use common::bin;

/// Runs `body` (Python) after importing the server as `ds` (its entry script, which imports the
/// modules beside it), in `dir`; its standard output.
fn python(dir: &Path, body: &str) -> String {
    let script = rla_desktop::remote::write_server(dir).unwrap();
    let prelude = format!(
        "import importlib.util, json, os, sys, types\n\
         spec = importlib.util.spec_from_file_location('ds', {:?})\n\
         ds = importlib.util.module_from_spec(spec)\n\
         spec.loader.exec_module(ds)\n",
        script.to_str().unwrap()
    );
    let o = Command::new("python3")
        .arg("-c")
        .arg(format!("{prelude}{body}"))
        .current_dir(dir)
        .output()
        .expect("python3 runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// The entry script imports the modules beside it, run from its private folder (mode 0700) with
/// another working folder as `serve-real` runs it, or loaded from elsewhere as
/// `scripts/faults.sh` loads it; it leaves no compiled files in the folder it removes.
#[test]
fn the_entry_script_imports_the_modules_beside_it() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let server = dir.path().join("server");
    std::fs::create_dir(&server).unwrap();
    std::fs::set_permissions(&server, std::fs::Permissions::from_mode(0o700)).unwrap();
    let script = rla_desktop::remote::write_server(&server).unwrap();
    assert_eq!(script, server.join(rla_desktop::remote::SERVER_ENTRY));
    let o = Command::new("python3")
        .arg(&script)
        .arg("--help")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("--remove-script"));
    let o = Command::new("python3")
        .arg("-c")
        .arg(
            "import importlib.util, os, sys\n\
             spec = importlib.util.spec_from_file_location('ds', sys.argv[1])\n\
             ds = importlib.util.module_from_spec(spec)\n\
             spec.loader.exec_module(ds)\n\
             print(os.path.dirname(sys.modules[ds.checked_conversion.__module__].__file__))\n",
        )
        .arg(&script)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        server.to_str().unwrap()
    );
    let mut names: Vec<String> = std::fs::read_dir(&server)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    let mut want: Vec<&str> = rla_desktop::remote::SERVER_FILES
        .iter()
        .map(|(n, _)| *n)
        .collect();
    want.sort_unstable();
    assert_eq!(names, want, "no __pycache__ beside the server");
}

/// What the server makes of each conversion request, on a session folder beside a secret file:
/// `run: ARGV` or `refused: WHY`, one line per request.
const CONVERSIONS: &str = r#"
root = os.path.realpath('session')
s = types.SimpleNamespace(root=root, home=os.path.join(root, 'home'), files=os.path.join(root, 'files'))
for d in (s.home, s.files):
    os.makedirs(d, exist_ok=True)
open(os.path.join(s.files, 'a.xlsx'), 'w').write('x')
open(os.path.join(s.home, 'notes.txt'), 'w').write('x')
open('secret.txt', 'w').write('hunter2')
os.symlink(os.path.realpath('secret.txt'), os.path.join(s.files, 'link.xlsx'))
os.symlink(os.path.realpath('.'), os.path.join(s.home, 'out'))
os.symlink(os.path.realpath('secret.txt'), os.path.join(s.home, 'notes.csv'))
for argv in json.load(sys.stdin):
    try:
        print('run:', json.dumps(ds.checked_conversion(s, argv)))
    except ds.Refused as e:
        print('refused:', e)
"#;

#[test]
fn conversions_stay_in_the_session_folder() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret.txt");
    let secret = secret.to_str().unwrap();
    let csv = "csv:Text - txt - csv (StarCalc):44,34,UTF8,1,,0,false,true,false,false,false,-1";
    // (request, what the answer must hold)
    let cases: Vec<(Vec<&str>, &str)> = vec![
        // OSWorld's own: /home/user is the files folder
        (
            vec![
                "libreoffice",
                "--headless",
                "--convert-to",
                csv,
                "--outdir",
                "/home/user",
                "/home/user/a.xlsx",
            ],
            "run:",
        ),
        (vec!["soffice", "--convert-to", "xlsx", "notes.txt"], "run:"),
        (
            vec!["soffice", "--convert-to", "xlsx", "a.xlsx"],
            "no such file",
        ),
        // a host file, by its path or by a link: never read
        (
            vec!["soffice", "--convert-to", "txt", "--outdir", ".", secret],
            "no such file",
        ),
        (
            vec!["soffice", "--convert-to", "txt", "../../secret.txt"],
            "no such file",
        ),
        (
            vec!["soffice", "--convert-to", "txt", "/home/user/link.xlsx"],
            "outside this desktop's session folder",
        ),
        // the output: a folder outside (by a link), an output file that is a link
        (
            vec![
                "soffice",
                "--convert-to",
                "csv",
                "--outdir",
                "out",
                "a.xlsx",
            ],
            "outside this desktop's session folder",
        ),
        (
            vec!["soffice", "--convert-to", "csv", "notes.txt"],
            "is a link",
        ),
        (
            vec![
                "soffice",
                "--convert-to",
                "csv",
                "--outdir",
                "nowhere",
                "notes.txt",
            ],
            "no such folder",
        ),
        (
            vec!["soffice", "--convert-to", "csv", "/home/user/a.xlsx"],
            "run:",
        ),
        // formats and arguments outside the list
        (
            vec!["soffice", "--convert-to", "pth", "a.xlsx"],
            "files convert here only to",
        ),
        (
            vec!["soffice", "--convert-to", "pth:Text", "a.xlsx"],
            "files convert here only to",
        ),
        (
            vec!["soffice", "--convert-to", "csv:x;rm -rf /:1", "a.xlsx"],
            "not accepted here",
        ),
        (
            vec![
                "soffice",
                "-env:UserInstallation=file:///tmp/x",
                "--convert-to",
                "csv",
                "a.xlsx",
            ],
            "is not passed to a conversion",
        ),
        (
            vec!["soffice", "--convert-to", "csv", "--infilter=x", "a.xlsx"],
            "is not passed to a conversion",
        ),
        (
            vec!["soffice", "--cat", "--convert-to", "csv", "a.xlsx"],
            "is not passed to a conversion",
        ),
        (vec!["soffice", "--convert-to"], "needs a value"),
        (vec!["soffice", "--convert-to", "csv"], "needs a file"),
        (
            vec![
                "soffice",
                "--convert-to",
                "csv",
                "--convert-to",
                "pdf",
                "a.xlsx",
            ],
            "twice",
        ),
    ];
    let requests: Vec<&Vec<&str>> = cases.iter().map(|(r, _)| r).collect();
    let body = CONVERSIONS.replace(
        "json.load(sys.stdin)",
        &format!(
            "json.loads({:?})",
            serde_json::to_string(&requests).unwrap()
        ),
    );
    let out = python(dir.path(), &body);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), cases.len(), "{out}");
    let root = dir.path().canonicalize().unwrap().join("session");
    let files = root.join("files");
    for ((req, want), got) in cases.iter().zip(&lines) {
        assert!(got.contains(want), "{req:?}: {got} (wanted {want:?})");
        if let Some(argv) = got.strip_prefix("run: ") {
            let argv: Vec<String> = serde_json::from_str(argv).unwrap();
            // the soffice on the PATH, its own profile, an output folder and inputs inside
            assert_eq!(argv[0], "soffice", "{req:?}");
            let at = |flag: &str| argv[argv.iter().position(|a| a == flag).unwrap() + 1].clone();
            assert!(Path::new(&at("--outdir")).starts_with(&root), "{argv:?}");
            let input = Path::new(argv.last().unwrap());
            assert!(input.starts_with(&root) && input.is_file(), "{argv:?}");
            assert!(!argv.iter().any(|a| a.contains("secret")), "{argv:?}");
        }
    }
    // the first request's output lands in the files folder (OSWorld's /home/user)
    let first: Vec<String> = serde_json::from_str(lines[0].strip_prefix("run: ").unwrap()).unwrap();
    assert_eq!(Path::new(&first[first.len() - 2]), files);
}

/// A session with a key answers only requests that carry it; loopback is told apart.
#[test]
fn a_desktop_with_a_key_answers_only_requests_that_carry_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = python(
        dir.path(),
        r#"
import threading, urllib.request, urllib.error
from http.server import ThreadingHTTPServer
s = types.SimpleNamespace(api_key='k3y', lock=threading.Lock(), ahead=None)
httpd = ThreadingHTTPServer(('127.0.0.1', 0), ds.Handler)
httpd.session = s
threading.Thread(target=httpd.serve_forever, daemon=True).start()
url = f'http://127.0.0.1:{httpd.server_address[1]}/platform'
for key in (None, 'Bearer wrong', 'Bearer k3y'):
    req = urllib.request.Request(url, headers={'Authorization': key} if key else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            print(r.status, r.read().decode())
    except urllib.error.HTTPError as e:
        print(e.code, json.loads(e.read())['message'])
httpd.shutdown()
print([ds.is_loopback(h) for h in ('127.0.0.1', 'localhost', '::1', '0.0.0.0', '192.168.1.2', 'example.org')])
print(ds.exposure('0.0.0.0:5000', False))
print(ds.exposure('0.0.0.0:5000', True))
"#,
    );
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("401 ") && lines[0].contains("Bearer"),
        "{out}"
    );
    assert!(lines[1].starts_with("401 "), "{out}");
    assert_eq!(lines[2], "200 Linux", "{out}");
    assert_eq!(lines[3], "[True, True, True, False, False, False]", "{out}");
    // what a server bound beyond loopback says it hands over (it prints this once it listens)
    assert!(lines[4].contains("0.0.0.0:5000") && lines[4].contains("mouse and keyboard"));
    assert!(lines[5].contains("any Python and any command"), "{out}");
}

/// A fake Python for `serve-real`: passes its import check, then records what it was asked to
/// run, the script's content and its folder's (`folder/`), and exits.
fn fake_python(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("python");
    std::fs::write(
        &p,
        format!(
            "#!/bin/sh\n[ \"$1\" = -c ] && exit 0\nprintf '%s\\n' \"$@\" >{0}/args\ncat \"$1\" >{0}/script\n\
             stat -c %a \"$(dirname \"$1\")\" >{0}/mode\ncp -R \"$(dirname \"$1\")\" {0}/folder\n",
            dir.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    p
}

/// `serve-real` used to run `$TMPDIR/rlanything-desktop-server-<hash>.py` if it was there: a
/// file planted under that name by another user now never runs; the script is written afresh
/// into a folder of its own, mode 0700.
#[test]
fn serve_real_runs_its_own_script_never_a_planted_one() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let digest = {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        rla_desktop::remote::SERVER_FILES.hash(&mut h);
        h.finish()
    };
    let planted = tmp.join(format!("rlanything-desktop-server-{digest:016x}.py"));
    std::fs::write(&planted, "print('planted')\n").unwrap();
    let python = fake_python(dir.path());
    let o = bin()
        .args(["desktop", "serve-real", "--port", "0", "--python"])
        .arg(&python)
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let script = std::fs::read_to_string(dir.path().join("script")).unwrap();
    let files = rla_desktop::remote::SERVER_FILES;
    assert_eq!(
        (rla_desktop::remote::SERVER_ENTRY, script.as_str()),
        files[0],
        "a planted script ran"
    );
    // the modules it imports lie beside it, the server's own, and nothing else
    let folder = dir.path().join("folder");
    let mut names: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    let mut want: Vec<&str> = files.iter().map(|(n, _)| *n).collect();
    want.sort_unstable();
    assert_eq!(names, want);
    for (name, text) in files {
        assert_eq!(
            std::fs::read_to_string(folder.join(name)).unwrap(),
            *text,
            "{name}"
        );
    }
    let args = std::fs::read_to_string(dir.path().join("args")).unwrap();
    let path = Path::new(args.lines().next().unwrap());
    assert_ne!(path, planted);
    assert!(path.starts_with(&tmp), "{path:?}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("mode"))
            .unwrap()
            .trim(),
        "700"
    );
    assert!(args.lines().any(|a| a == "--remove-script"), "{args}");
}

/// Bound beyond loopback, `serve-real` and `serve` need a key (what they then expose is printed;
/// `serve` prints it before it loads the model, the desktop once it listens).
#[test]
fn servers_beyond_loopback_need_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let python = fake_python(dir.path());
    let o = bin()
        .args(["desktop", "serve-real", "--host", "0.0.0.0", "--python"])
        .arg(&python)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--api-key-env"), "{err}");
    assert!(!dir.path().join("args").exists(), "the server started");
    let o = bin()
        .args(["desktop", "serve-real", "--host", "0.0.0.0", "--python"])
        .arg(&python)
        .args(["--api-key-env", "RLA_TEST_DESKTOP_KEY"])
        .env("RLA_TEST_DESKTOP_KEY", "k3y")
        .env("TMPDIR", dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let args = std::fs::read_to_string(dir.path().join("args")).unwrap();
    assert!(args.contains("RLA_TEST_DESKTOP_KEY"), "{args}");
    let o = bin()
        .args(["serve", "--model", "no-such-model", "--host", "0.0.0.0"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--api-key-env"), "{err}");
    let o = bin()
        .args(["serve", "--model", "no-such-model", "--host", "0.0.0.0"])
        .args(["--api-key-env", "RLA_TEST_SERVE_KEY"])
        .env("RLA_TEST_SERVE_KEY", "k3y")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("beyond this machine") && err.contains("/update_weights_from_disk"),
        "{err}"
    );
    assert!(
        err.contains("no-such-model"),
        "then the model is loaded: {err}"
    );
}

/// pyautogui stand-in for the tests that need no display: its settings, and calls that pause
/// as pyautogui's do (`time.sleep(PAUSE)` on its module's `time`).
const FAKE_PYAUTOGUI: &str = r#"
import sys, time, types
pg = types.ModuleType('pyautogui')
pg.FAILSAFE, pg.PAUSE, pg.time = True, 0.1, time
pg.platformModule = types.SimpleNamespace(_mouseDown=lambda *a: None, _mouseUp=lambda *a: None)
pg.write = lambda *a, **k: None
pg.moveTo = lambda *a, **k: pg.time.sleep(pg.PAUSE)
sys.modules['pyautogui'] = pg
"#;

/// An action that sleeps past OSWorld's 120 s ends at once with an error (the desktop's lock is
/// free again), `import time` in it included; /setup/reset restores pyautogui's PAUSE.
#[test]
fn an_action_runs_at_most_120_s_and_reset_restores_pyautogui() {
    let dir = tempfile::tempdir().unwrap();
    let out = python(
        dir.path(),
        &format!(
            "{FAKE_PYAUTOGUI}{}",
            r#"
import threading
a = ds.Actions()
ds.server_actions.Actions_singleton = a
for code in ("time.sleep(100000)", "import time\ntime.sleep(100000)",
             "import pyautogui\npyautogui.PAUSE = 100000\npyautogui.moveTo(1, 1)"):
    got = {}
    t = threading.Thread(target=lambda: got.update(a.run(code, True)), daemon=True)
    t.start()
    t.join(20)
    print('still running' if t.is_alive() else got['status'] + ' | ' + got['error'])
    a.pg.PAUSE = 0.0
print(a.run("time.sleep(0.01)", False)['status'])
a.run("import pyautogui\npyautogui.PAUSE = 3", False)
print('PAUSE before reset', a.pg.PAUSE)
class H:
    def json_body(self): return {}
    def reply(self, code, body): print('reset', code)
s = types.SimpleNamespace(close_office=lambda: None, restore_profile=lambda: None,
                          uploaded=[], width=100, height=100)
ds.r_reset(H(), s)
print('PAUSE after reset', a.pg.PAUSE)
"#
        ),
    );
    let lines: Vec<&str> = out.lines().collect();
    for l in &lines[..3] {
        assert!(
            l.starts_with("error | ActionTimeout") && l.contains("past its 120 s"),
            "{out}"
        );
    }
    assert_eq!(lines[3], "success", "{out}");
    assert_eq!(lines[4], "PAUSE before reset 3", "{out}");
    assert_eq!(lines[5], "reset 200", "{out}");
    assert_eq!(lines[6], "PAUSE after reset 0.0", "{out}");
}

/// `/file`'s form as a JSON list (or not JSON) is a 400 naming what was wrong, not a 500.
#[test]
fn a_file_form_that_is_not_an_object_is_a_bad_request() {
    let dir = tempfile::tempdir().unwrap();
    let out = python(
        dir.path(),
        r#"
import threading, urllib.request, urllib.error
from http.server import ThreadingHTTPServer
root = os.path.realpath('session')
s = types.SimpleNamespace(api_key=None, lock=threading.Lock(), ahead=None, root=root,
                          home=os.path.join(root, 'home'), files=os.path.join(root, 'files'))
httpd = ThreadingHTTPServer(('127.0.0.1', 0), ds.Handler)
httpd.session = s
threading.Thread(target=httpd.serve_forever, daemon=True).start()
url = f'http://127.0.0.1:{httpd.server_address[1]}/file'
for body in (b'["file_path"]', b'{"file_path": '):
    req = urllib.request.Request(url, data=body, headers={'Content-Type': 'application/json'})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            print(r.status)
    except urllib.error.HTTPError as e:
        print(e.code, json.loads(e.read())['message'])
httpd.shutdown()
"#,
    );
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("400 ") && lines[0].contains("JSON object"),
        "{out}"
    );
    assert!(
        lines[1].starts_with("400 ") && lines[1].contains("not JSON"),
        "{out}"
    );
}
