//! The real desktop: `rlanything desktop serve-real` (Xvfb, openbox, D-Bus and the
//! accessibility bus, LibreOffice Calc) driven through OSWorld's protocol by the Rust
//! controller, with the one task runner that also plays the native desktop.
//!
//! Needs what `scripts/desktop-real.sh` installs (the README's test command runs it).

use rla_core::Split;
use rla_desktop::play::runner::{self, Agent, ExpertAgent, Native, Real, Screen};
use rla_desktop::remote::{RemoteDesktop, RemoteError};
use rla_desktop::sheet::xlsx::{self, Stored};
use rla_desktop::tasks::family;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The server, stopped (SIGTERM) when dropped.
struct Server {
    child: Child,
    url: String,
    /// The X display's number.
    display: String,
}

impl Server {
    fn start() -> Server {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
        let python = root.join("target/desktop-venv/bin/python");
        assert!(
            python.exists(),
            "{} is missing: run scripts/desktop-real.sh (scripts/setup-tests.sh runs it)",
            python.display()
        );
        let mut child = Command::new(env!("CARGO_BIN_EXE_rlanything"))
            .args(["desktop", "serve-real", "--port", "0", "--python"])
            .arg(&python)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("serve-real starts");
        let (dtx, drx) = std::sync::mpsc::channel();
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                eprintln!("{line}");
                if let Some(rest) = line.strip_prefix("desktop: X display :") {
                    let _ = dtx.send(rest.split(',').next().unwrap_or("").trim().to_string());
                }
            }
        });
        let (tx, rx) = std::sync::mpsc::channel();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if let Some(u) = line.strip_prefix("listening on ") {
                    let _ = tx.send(u.trim().to_string());
                }
            }
        });
        let url = rx
            .recv_timeout(Duration::from_secs(120))
            .expect("the desktop server says where it listens within 2 minutes");
        let display = drx
            .recv_timeout(Duration::from_secs(10))
            .expect("the desktop server names its X display");
        Server {
            child,
            url,
            display,
        }
    }

    fn remote(&self) -> RemoteDesktop {
        RemoteDesktop::new(&self.url, Duration::from_secs(120)).unwrap()
    }

    fn stop(&mut self) {
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(60) {
            if self.child.try_wait().unwrap().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        panic!("the desktop server did not stop within 60 s of SIGTERM");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            unsafe {
                libc::kill(self.child.id() as i32, libc::SIGTERM);
            }
            let _ = self.child.wait();
        }
    }
}

/// Every process that carries a desktop session's marker in its environment: (pid, command
/// name, marker).
fn marked_processes() -> Vec<(u32, String, Vec<u8>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(env) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        if let Some(m) = env
            .split(|b| *b == 0)
            .find(|v| v.starts_with(b"RLA_DESKTOP_SESSION="))
        {
            let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
            out.push((pid, comm.trim().to_string(), m.to_vec()));
        }
    }
    out
}

/// The parent of a process.
fn parent(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid …`; comm may hold spaces
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

impl Server {
    /// The markers of this server's session (other tests' servers run beside it).
    fn markers(&self) -> std::collections::HashSet<Vec<u8>> {
        let root = self.child.id();
        marked_processes()
            .into_iter()
            .filter(|(pid, _, _)| {
                let mut p = Some(*pid);
                for _ in 0..64 {
                    match p {
                        Some(x) if x == root => return true,
                        Some(x) if x > 1 => p = parent(x),
                        _ => return false,
                    }
                }
                false
            })
            .map(|(_, _, m)| m)
            .collect()
    }
}

/// The processes of the sessions whose markers are `markers`.
fn session_processes(markers: &std::collections::HashSet<Vec<u8>>) -> Vec<(u32, String)> {
    marked_processes()
        .into_iter()
        .filter(|(_, _, m)| markers.contains(m))
        .map(|(p, c, _)| (p, c))
        .collect()
}

/// One raw HTTP request; the status line's code and the body.
fn raw(url: &str, request: &[u8]) -> (u16, String) {
    let addr = url.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    s.write_all(request).unwrap();
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|x| x.1)
        .unwrap_or("")
        .to_string();
    (code, body)
}

/// Whether the X server on `:display` lets a client in without a cookie (the X11 connection
/// setup with no authorisation; the answer's first byte is 1 for success).
fn x_admits_without_a_cookie(display: &str) -> bool {
    let mut s =
        std::os::unix::net::UnixStream::connect(format!("/tmp/.X11-unix/X{display}")).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // little-endian, protocol 11.0, no authorisation name or data
    s.write_all(&[b'l', 0, 11, 0, 0, 0, 0, 0, 0, 0, 0, 0])
        .unwrap();
    let mut first = [0u8; 1];
    s.read_exact(&mut first).unwrap();
    first[0] == 1
}

fn same(a: &Stored, b: &Stored) -> bool {
    match (a, b) {
        (Stored::Number(x), Stored::Number(y)) => (x - y).abs() <= 1e-9 * x.abs().max(1.0),
        _ => a == b,
    }
}

/// Two result files hold the same sheets and the same cell values.
fn same_values(a: &Path, b: &Path) -> Result<(), String> {
    let (x, y) = (
        xlsx::cached(a).map_err(|e| e.to_string())?,
        xlsx::cached(b).map_err(|e| e.to_string())?,
    );
    let names = |s: &[xlsx::StoredSheet]| s.iter().map(|s| s.name.clone()).collect::<Vec<_>>();
    if names(&x) != names(&y) {
        return Err(format!("sheets {:?} against {:?}", names(&x), names(&y)));
    }
    for (s, t) in x.iter().zip(&y) {
        let (p, q): (
            std::collections::BTreeMap<_, _>,
            std::collections::BTreeMap<_, _>,
        ) = (
            s.cells.iter().cloned().collect(),
            t.cells.iter().cloned().collect(),
        );
        let keys: std::collections::BTreeSet<_> = p.keys().chain(q.keys()).collect();
        for k in keys {
            match (p.get(k), q.get(k)) {
                (Some(p), Some(q)) if same(p, q) => {}
                (p, q) => return Err(format!("{}!{k}: {p:?} against {q:?}", s.name)),
            }
        }
    }
    Ok(())
}

/// The tasks of the test: the first ten of each fixed split, every family among them.
fn tasks() -> Vec<family::Spec> {
    let mut v = family::split(Split::InDomain, 10);
    v.extend(family::split(Split::Ood, 10));
    v
}

fn real(server: &Server) -> Real {
    Real {
        remote: server.remote(),
        reset: true,
        cache: None,
    }
}

/// Plays the expert of a generated task's file on a screen; (score, result file).
fn expert_on(
    screen: &mut dyn Screen,
    g: &family::Generated,
    dir: &Path,
    real: bool,
) -> (f64, PathBuf) {
    std::fs::create_dir_all(dir).unwrap();
    let task = rla_desktop::tasks::local::export(g, dir).unwrap();
    let mut agent = ExpertAgent::new(g.clone(), real, (1920, 1080)).unwrap();
    let p = runner::play(screen, &task, &mut agent, 60, dir)
        .unwrap_or_else(|e| panic!("{} ({}): {e}", g.task.id, g.spec.family.name()));
    if p.score != 1.0 {
        eprintln!(
            "{} ({}) scored {}; its steps:",
            g.task.id,
            g.spec.family.name(),
            p.score
        );
        for (code, err) in &p.steps {
            eprintln!("  {code} {}", err.as_deref().unwrap_or(""));
        }
    }
    (p.score, p.result.expect("a result file"))
}

#[test]
fn the_real_desktop_runs_osworld_tasks_through_its_protocol() {
    let mut server = Server::start();
    let remote = server.remote();
    let tmp = tempfile::tempdir().unwrap();
    assert_eq!(remote.screen_size().unwrap(), (1920, 1080));

    // --- bad input: clear errors, nothing run -------------------------------------------
    let (code, body) = raw(
        &server.url,
        b"GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(code, 404, "{body}");
    assert!(
        body.contains("/screenshot"),
        "an unknown endpoint lists the known ones: {body}"
    );
    let (code, body) = raw(
        &server.url,
        b"GET /execute HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(code, 405, "{body}");
    let (code, body) = raw(
        &server.url,
        b"POST /execute HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 7\r\nConnection: close\r\n\r\n{nope}}",
    );
    assert_eq!(code, 400, "{body}");
    let (code, body) = raw(
        &server.url,
        b"POST /setup/upload HTTP/1.1\r\nHost: x\r\nContent-Length: 900000000\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(code, 413, "{body}");
    let canary = tmp.path().join("canary");
    for hostile in [
        format!("import os; os.system('touch {}')", canary.display()),
        format!("pyautogui.write(open('{}').read())", canary.display()),
        "__import__('os').system('true')".to_string(),
    ] {
        match remote.execute(&hostile) {
            Err(RemoteError::Status {
                status: 403,
                message,
                ..
            }) => {
                assert!(message.contains("pyautogui"), "{message}")
            }
            other => panic!("{hostile:?} was not refused: {other:?}"),
        }
    }
    match remote.setup_execute(
        &serde_json::json!(["bash", "-c", format!("touch {}", canary.display())]),
        false,
    ) {
        Err(RemoteError::Status { status: 403, .. }) => {}
        other => panic!("a shell command was not refused: {other:?}"),
    }
    assert!(!canary.exists(), "refused code ran");

    // --- conversions stay in the session folder; the X server wants its cookie -----------
    let secret = tmp.path().join("secret.txt");
    std::fs::write(&secret, "hunter2").unwrap();
    let outside = tmp.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    remote.upload("/home/user/t.csv", b"a,b\n1,2\n").unwrap();
    for (argv, why) in [
        (
            serde_json::json!(["soffice", "--convert-to", "txt", "--outdir", ".", secret]),
            "no such file",
        ),
        (
            serde_json::json!(["soffice", "--convert-to", "pth", "/home/user/t.csv"]),
            "convert here only to",
        ),
        (
            serde_json::json!([
                "/bin/sh/soffice",
                "--convert-to",
                "csv",
                "-env:A=b",
                "/home/user/t.csv"
            ]),
            "is not passed",
        ),
    ] {
        match remote.setup_execute(&argv, false) {
            Err(RemoteError::Status {
                status: 403,
                message,
                ..
            }) => assert!(message.contains(why), "{argv}: {message}"),
            other => panic!("{argv} was not refused: {other:?}"),
        }
    }
    // an output folder outside is OSWorld's /home/user, the session's files folder
    let done = remote
        .setup_execute(
            &serde_json::json!([
                "libreoffice",
                "--headless",
                "--convert-to",
                "xlsx",
                "--outdir",
                outside,
                "/home/user/t.csv"
            ]),
            false,
        )
        .unwrap();
    assert_eq!(done.status, "success", "{done:?}");
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    assert!(remote.file("/home/user/t.xlsx").unwrap().is_some());
    assert!(!x_admits_without_a_cookie(&server.display));
    assert!(remote
        .file("/home/user/no-such-file.xlsx")
        .unwrap()
        .is_none());

    // --- the expert of every family, on both desktops: the same scores and saved cells ---
    let specs = tasks();
    let families: std::collections::BTreeSet<String> =
        specs.iter().map(|s| s.family.name()).collect();
    assert!(
        families.len() >= 9,
        "every family is in the sample: {families:?}"
    );
    let mut real_screen = real(&server);
    let t = Instant::now();
    for (i, spec) in specs.iter().enumerate() {
        let g = family::generate(spec);
        let (ns, nres) = expert_on(
            &mut Native::new(1920, 1080),
            &g,
            &tmp.path().join(format!("n{i}")),
            false,
        );
        let (rs, rres) = expert_on(
            &mut real_screen,
            &g,
            &tmp.path().join(format!("r{i}")),
            true,
        );
        assert_eq!(ns, 1.0, "{} ({}) natively", g.task.id, spec.family.name());
        assert_eq!(
            rs,
            1.0,
            "{} ({}) on LibreOffice",
            g.task.id,
            spec.family.name()
        );
        if let Err(e) = same_values(&nres, &rres) {
            panic!(
                "{} ({}): the saved files differ: {e}",
                g.task.id,
                spec.family.name()
            );
        }
    }
    eprintln!(
        "{} expert episodes on LibreOffice in {:.0} s",
        specs.len(),
        t.elapsed().as_secs_f64()
    );

    // --- the observation: the sheet's cells with their positions, a screenshot of the file ---
    let g = family::generate(&specs[0]);
    let dir = tmp.path().join("obs");
    std::fs::create_dir_all(&dir).unwrap();
    let task_path = rla_desktop::tasks::local::export(&g, &dir).unwrap();
    let task = rla_desktop::osworld::task::DesktopTask::load(&task_path).unwrap();
    real_screen.set_up(&task, &task_path).unwrap();
    let obs = real_screen.observe().unwrap();
    let a1 = obs
        .nodes
        .iter()
        .find(|n| n.tag == "table-cell" && n.name == "A1")
        .expect("the agent's tree holds cell A1");
    let want = g.start.sheets[0].cells[&rla_desktop::sheet::addr::Addr::new(0, 0)].input_text();
    assert_eq!(a1.text, want);
    assert!(
        a1.rect.w > 0 && a1.rect.h > 0 && a1.rect.y > 50,
        "{:?}",
        a1.rect
    );
    let cells = obs.nodes.iter().filter(|n| n.tag == "table-cell").count();
    assert!(cells > 100, "the visible cells are in the tree ({cells})");
    assert!(
        obs.elements
            .iter()
            .any(|e| e.node.tag == "frame" && e.node.name.contains(&g.file)),
        "the window is titled with the file"
    );
    // the server asks LibreOffice which cells hold something and reads only their texts over
    // AT-SPI; read every cell over AT-SPI instead, the tree is the same
    let (code, body) = raw(
        &server.url,
        b"GET /accessibility?cells=atspi HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(code, 200);
    let every_cell: serde_json::Value = serde_json::from_str(&body).unwrap();
    let every_cell = every_cell["AT"].as_str().unwrap().to_string();
    assert!(
        want.is_empty() || every_cell.contains(&format!(">{want}</table-cell>")),
        "cell A1's text {want:?} is in the tree"
    );
    assert_eq!(remote.accessibility().unwrap(), every_cell);
    let png = real_screen.screenshot().unwrap();
    let img = image_size_and_variety(&png);
    assert_eq!((img.0, img.1), (1920, 1080));
    assert!(
        img.2 > 16,
        "the screenshot shows more than a blank screen ({} colours)",
        img.2
    );

    // --- `<` in a formula arrives as typed ----------------------------------------------
    let h2 = obs
        .nodes
        .iter()
        .find(|n| n.tag == "table-cell" && n.name == "H2")
        .unwrap();
    let (x, y) = h2.rect.center();
    for step in [
        format!("pyautogui.click({x}, {y})"),
        "pyautogui.write('=IF(1<2;\"lt\";\"ge\")\\n')".into(),
    ] {
        assert_eq!(real_screen.act(&step, &obs).unwrap(), None, "{step}");
    }
    // the tree read ahead after the action (while a client fetches the screenshot) shows what
    // the action did, and its cells are those of the tree read afresh (toolbar buttons'
    // states follow LibreOffice's own update timer, a few tenths of a second later)
    let _ = real_screen.screenshot().unwrap();
    let cells = |xml: &str| -> Vec<(String, String, (i32, i32))> {
        rla_desktop::remote::tree::agent_view(xml)
            .unwrap()
            .into_iter()
            .filter(|n| n.tag == "table-cell")
            .map(|n| (n.name.clone(), n.text.clone(), n.rect.center()))
            .collect()
    };
    let ahead = cells(&remote.accessibility().unwrap());
    let h2_text = ahead.iter().find(|c| c.0 == "H2").map(|c| c.1.as_str());
    assert_eq!(h2_text, Some("lt"));
    assert_eq!(cells(&remote.accessibility().unwrap()), ahead);
    real_screen
        .post_config(task.evaluator.postconfig.as_deref().unwrap())
        .unwrap();
    let saved = dir.join("lt.xlsx");
    assert!(real_screen
        .fetch(&format!("/home/user/{}", g.file), &saved)
        .unwrap());
    let book = xlsx::open(&saved).unwrap();
    let h2 = &book.sheets[0].cells[&rla_desktop::sheet::addr::Addr::new(1, 7)];
    assert_eq!(h2.input_text(), "=IF(1<2,\"lt\",\"ge\")");
    let stored = xlsx::cached(&saved).unwrap();
    let h2 = stored[0]
        .cells
        .iter()
        .find(|(a, _)| *a == rla_desktop::sheet::addr::Addr::new(1, 7));
    assert_eq!(h2.map(|x| &x.1), Some(&Stored::Text("lt".into())));

    // --- a wrong edit scores 0; an unsaved right one scores 0 -----------------------------
    real_screen.set_up(&task, &task_path).unwrap();
    let obs = real_screen.observe().unwrap();
    let b2 = obs
        .nodes
        .iter()
        .find(|n| n.tag == "table-cell" && n.name == "B2")
        .unwrap();
    let (x, y) = b2.rect.center();
    real_screen
        .act(
            &format!("pyautogui.click({x}, {y}); pyautogui.write('oops\\n')"),
            &obs,
        )
        .unwrap();
    let (score, _) = runner::score_on(&mut real_screen, &task, &task_path, &dir).unwrap();
    assert_eq!(score, 0.0, "a wrong edit, saved");
    real_screen.set_up(&task, &task_path).unwrap();
    let mut agent = ExpertAgent::new(g.clone(), true, (1920, 1080)).unwrap();
    for _ in 0..60 {
        let obs = real_screen.observe().unwrap();
        let step = agent.next(&obs).unwrap();
        if step == "DONE" {
            break;
        }
        assert_eq!(real_screen.act(&step, &obs).unwrap(), None, "{step}");
    }
    let unsaved = dir.join("unsaved.xlsx");
    assert!(real_screen
        .fetch(&format!("/home/user/{}", g.file), &unsaved)
        .unwrap());
    assert_eq!(
        rla_desktop::tasks::local::score(&task_path, None, &unsaved, &[]).unwrap(),
        0.0,
        "edited, not saved"
    );
    let (score, _) = runner::score_on(&mut real_screen, &task, &task_path, &dir).unwrap();
    assert_eq!(score, 1.0, "the same edits, saved by the postconfig");

    // --- LibreOffice crashes; the next reset recovers --------------------------------------
    let markers = server.markers();
    assert!(!markers.is_empty(), "the server's session is marked");
    let office: Vec<u32> = session_processes(&markers)
        .into_iter()
        .filter(|(_, c)| c.starts_with("soffice"))
        .map(|(p, _)| p)
        .collect();
    assert!(!office.is_empty(), "LibreOffice runs in the session");
    for p in office {
        unsafe {
            libc::kill(p as i32, libc::SIGKILL);
        }
    }
    let g = family::generate(&specs[1]);
    let (s, _) = expert_on(&mut real_screen, &g, &tmp.path().join("after-crash"), true);
    assert_eq!(s, 1.0, "after LibreOffice was killed");

    // --- stopping leaves nothing behind --------------------------------------------------
    let markers = server.markers();
    let before = session_processes(&markers);
    assert!(before.iter().any(|(_, c)| c == "Xvfb"), "{before:?}");
    server.stop();
    std::thread::sleep(Duration::from_millis(500));
    let left = session_processes(&markers);
    assert!(left.is_empty(), "processes left after SIGTERM: {left:?}");
}

/// A PNG's width, height and number of distinct colours in its top half (8-bit RGB or RGBA).
fn image_size_and_variety(png_bytes: &[u8]) -> (u32, u32, usize) {
    let dec = png::Decoder::new(std::io::Cursor::new(png_bytes));
    let mut r = dec.read_info().unwrap();
    let mut buf = vec![0; r.output_buffer_size()];
    let info = r.next_frame(&mut buf).unwrap();
    let ch = info.color_type.samples();
    let mut colours = std::collections::HashSet::new();
    for px in buf[..info.buffer_size() / 2].chunks(ch).step_by(7) {
        colours.insert(px[..3].to_vec());
        if colours.len() > 1000 {
            break;
        }
    }
    (info.width, info.height, colours.len())
}

/// The tiny policy's summary of a screen without the items of an open menu (each application
/// lists its own) and, with `cursor` false, without the cursor: LibreOffice keeps each sheet's
/// cursor, the native desktop puts it at A1 when a sheet is shown again.
fn sheet_part(summary: &str, cursor: bool) -> String {
    summary
        .split(" | ")
        .filter(|p| !p.starts_with("item "))
        .map(|p| match (cursor, p.split_once(" cursor ")) {
            (false, Some((sheet, _))) => sheet.to_string(),
            _ => p.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

/// Plays the expert of a generated task on the real desktop, and after each of its steps reads
/// the tiny summary off the real tree and off the native mirror; returns how many states agreed.
fn summaries_agree(server: &Server, g: &family::Generated, dir: &Path) -> usize {
    use rla_desktop::play::tiny;
    use rla_desktop::remote::expert::RealExpert;
    std::fs::create_dir_all(dir).unwrap();
    let path = rla_desktop::tasks::local::export(g, dir).unwrap();
    let task = rla_desktop::osworld::task::DesktopTask::load(&path).unwrap();
    let mut screen = real(server);
    screen.set_up(&task, &path).unwrap();
    let mut ex = RealExpert::new(g.clone(), 1920, 1080).unwrap();
    let mut agreed = 0;
    // the sheets shown so far, and whether one was shown again
    let (mut shown, mut again) = (vec![0usize], false);
    for _ in 0..120 {
        let mut obs = screen.observe().unwrap();
        let s = ex.mirror.desktop.sheet;
        if shown.last() != Some(&s) {
            again |= shown.contains(&s);
            shown.push(s);
        }
        if ex.idle() {
            let native = tiny::observation(
                &ex.mirror.desktop,
                &ex.mirror.tree(tiny::TREE),
                tiny::Summary::default(),
            );
            // the application may take a moment to show a step: read it again until it agrees
            // (a window still drawing may not read at all yet)
            let read = |o: &runner::Observation| {
                tiny::observation_of_tree(&o.elements, tiny::Summary::default())
                    .unwrap_or_else(|e| e)
            };
            let mut seen = read(&obs);
            for _ in 0..15 {
                if sheet_part(&seen, !again) == sheet_part(&native, !again) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(400));
                obs = screen.observe().unwrap();
                seen = read(&obs);
            }
            assert_eq!(
                sheet_part(&seen, !again),
                sheet_part(&native, !again),
                "{}: after the expert's step {}",
                g.task.id,
                ex.mirror.steps
            );
            agreed += 1;
        }
        let code = ex.next(&obs.elements).unwrap();
        if code == "DONE" {
            return agreed;
        }
        screen.act(&code, &obs).unwrap();
    }
    panic!("{}: the expert did not finish", g.task.id)
}

#[test]
fn the_tiny_summary_reads_the_same_off_both_desktops() {
    let server = Server::start();
    let tmp = tempfile::tempdir().unwrap();
    let mut states = 0;
    for world in [family::World::Plain, family::World::Sheets] {
        for (i, spec) in family::split_in(world, Split::InDomain, 4)
            .iter()
            .enumerate()
        {
            let g = family::generate(spec);
            states += summaries_agree(&server, &g, &tmp.path().join(format!("{world:?}-{i}")));
        }
    }
    assert!(states >= 16, "{states} states compared");
}

#[test]
fn the_desktop_base_trains_on_two_real_desktops_and_resumes_after_a_kill() {
    let (a, mut b) = (Server::start(), Server::start());
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let models = root.join("models/desktop");
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("real.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"seed = 1
setting = "desktop"
mode = "full"
iterations = 2
pool_size = 4
tasks_per_iteration = 2
rollouts_per_task = 2
judge_samples = 2
update_epochs = 1

[desktop]
train_step_limit = 6
eval_step_limit = 6
history = 6
desktops = ["{}", "{}"]

[policy]
path = "{}"
lr = 1e-4
micro_batch = 8
max_new_tokens = 16

[reward]
path = "{}"
lr = 2e-4
micro_batch = 8
max_new_tokens = 16

[eval]
in_domain = 2
ood = 0
validation = 0
every = 2
"#,
            a.url,
            b.url,
            models.join("policy").display(),
            models.join("reward").display()
        ),
    )
    .unwrap();
    let run = dir.path().join("run");
    let train = || {
        Command::new(env!("CARGO_BIN_EXE_rlanything"))
            .args(["train", "--quiet", "--config"])
            .arg(&cfg)
            .arg("--run")
            .arg(&run)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    // killed in its first iteration, then resumed: no iteration is lost
    let mut first = train();
    let t = Instant::now();
    while !run.join("metrics.jsonl").exists() && t.elapsed() < Duration::from_secs(300) {
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(3));
    first.kill().unwrap();
    first.wait().unwrap();
    let out = train().wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metrics: Vec<serde_json::Value> = std::fs::read_to_string(run.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(metrics.len(), 3, "{metrics:?}");
    // the episodes were played on both desktops
    let played = &metrics.last().unwrap()["setting"]["desktop_episodes"];
    for s in [&a, &b] {
        assert!(played[&s.url].as_u64().unwrap_or(0) > 0, "{played}");
    }
    assert!(
        metrics[2]["eval_in_domain"].as_f64().is_some(),
        "{:?}",
        metrics[2]
    );

    // a desktop that stops mid-run costs no iteration: its episodes go to the other
    let run2 = dir.path().join("run2");
    let second = Command::new(env!("CARGO_BIN_EXE_rlanything"))
        .args(["train", "--quiet", "--config"])
        .arg(&cfg)
        .arg("--run")
        .arg(&run2)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while !run2.join("metrics.jsonl").exists() && t.elapsed() < Duration::from_secs(300) {
        std::thread::sleep(Duration::from_millis(200));
    }
    b.stop();
    let out = second.wait_with_output().unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert!(log.contains("marked down"), "{log}");
    let lines = std::fs::read_to_string(run2.join("metrics.jsonl")).unwrap();
    assert_eq!(lines.lines().count(), 3, "{lines}");
    let last: serde_json::Value = serde_json::from_str(lines.lines().last().unwrap()).unwrap();
    assert!(
        last["setting"]["desktop_episodes"][&a.url]
            .as_u64()
            .unwrap()
            > 0,
        "{last}"
    );
    assert_eq!(a.remote().screen_size().unwrap(), (1920, 1080));

    // the bench steps the first desktop alone, then two side by side
    let c = Server::start();
    let out = Command::new(env!("CARGO_BIN_EXE_rlanything"))
        .args([
            "desktop",
            "bench",
            "--steps",
            "4",
            "--desktop",
            &a.url,
            "--desktop",
            &c.url,
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for k in [1, 2] {
        assert!(
            text.lines()
                .any(|l| l.starts_with(&format!("{k} desktop(s), 4 steps each"))
                    && l.ends_with("steps/s")),
            "{text}"
        );
    }
}
