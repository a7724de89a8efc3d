"""The desktop's session: the X server, openbox, D-Bus and the accessibility bus, LibreOffice
with its seeded profile and its UNO API (`Office`), and the setup endpoints that work on them:
`POST /setup/open_file`, `/setup/launch`, `/setup/activate_window` and `/setup/reset`."""

import os
import shutil
import socket
import subprocess
import threading
import time
import uuid

import server_actions
from server_accessibility import AtspiBus, document_ready
from server_common import BadRequest, Refused, kill_group, kill_marked, log, write_private
from server_files import vm_path

# LibreOffice's settings, as its registrymodifications.xcu writes them: (path, property, type, value)
PROFILE_ITEMS = [
    # save xlsx without asking whether to keep the format (OSWorld's image sets the same)
    ("/org.openoffice.Office.Common/Save/Document", "WarnAlienFormat", "boolean", "false"),
    ("/org.openoffice.Office.Common/Misc", "ShowTipOfTheDay", "boolean", "false"),
    ("/org.openoffice.Office.Common/Misc", "FirstRun", "boolean", "false"),
    ("/org.openoffice.Office.Common/Misc", "UseLocking", "boolean", "false"),
    ("/org.openoffice.Setup/Office", "ooSetupInstCompleted", "boolean", "true"),
    ("/org.openoffice.Setup/Product", "ooSetupLastVersion", "string", "{version}"),
    ("/org.openoffice.Setup/Product", "LastTimeGetInvolvedShown", "long", "9999999999"),
    ("/org.openoffice.Setup/Product", "LastTimeDonateShown", "long", "9999999999"),
    ("/org.openoffice.Office.Recovery/AutoSave", "Enabled", "boolean", "false"),
    ("/org.openoffice.Office.Recovery/RecoveryInfo", "Enabled", "boolean", "false"),
    # typed text arrives as typed: no completion from the column above, no autocorrection
    ("/org.openoffice.Office.Calc/Input", "AutoInput", "boolean", "false"),
    ("/org.openoffice.Office.Common/AutoCorrect", "CapitalAtStartSentence", "boolean", "false"),
    ("/org.openoffice.Office.Common/AutoCorrect", "TwoCapitalsAtStart", "boolean", "false"),
    ("/org.openoffice.Office.Common/AutoCorrect", "ChangeToBold", "boolean", "false"),
    ("/org.openoffice.Office.Common/AutoCorrect", "ChangeUnderlineWeight", "boolean", "false"),
    ("/org.openoffice.Office.Common/AutoCorrect", "SetInetAttr", "boolean", "false"),
    ("/org.openoffice.Office.Common/AutoCorrect", "ChangeOrdinalNumber", "boolean", "false"),
    ("/org.openoffice.Office.Common/AutoCorrect", "ChangeDash", "boolean", "false"),
    ("/org.openoffice.Office.Common/AutoCorrect", "ReplaceSingleQuote", "boolean", "false"),
    ("/org.openoffice.Office.Common/AutoCorrect", "ReplaceDoubleQuote", "boolean", "false"),
    ("/org.openoffice.Office.Common/AutoCorrect", "UseReplacementTable", "boolean", "false"),
]

OPENBOX_RC = """<?xml version="1.0" encoding="UTF-8"?>
<openbox_config xmlns="http://openbox.org/3.4/rc">
  <focus><focusNew>yes</focusNew><followMouse>no</followMouse></focus>
  <placement><policy>Smart</policy></placement>
  <desktops><number>1</number></desktops>
  <applications>
    <application class="*" type="normal"><maximized>yes</maximized><decor>no</decor><focus>yes</focus></application>
  </applications>
</openbox_config>
"""


FAMILY_LOCAL = 256
FAMILY_WILD = 65535


def xauth_entry(family, address, number, cookie):
    """One entry of an Xauthority file (as `xauth add` writes it) for MIT-MAGIC-COOKIE-1."""
    def field(b):
        return len(b).to_bytes(2, "big") + b

    return (family.to_bytes(2, "big") + field(address) + field(number)
            + field(b"MIT-MAGIC-COOKIE-1") + field(cookie))


class Session:
    """The X server, window manager, D-Bus, accessibility bus and LibreOffice of one desktop."""

    def __init__(self, width, height, root, allow_any_code, api_key=None):
        self.width, self.height = width, height
        self.root = root
        self.allow_any_code = allow_any_code
        self.api_key = api_key
        self.marker = uuid.uuid4().hex
        # LibreOffice listens here for its own API (UNO): the tree reads cell texts through it
        self.uno_pipe = f"rla-desktop-{self.marker}"
        self.uno = Office(self.uno_pipe)
        self.atspi = AtspiBus()
        self.ahead = None
        self.procs = []
        self.office = None
        self.uploaded = set()
        self.lock = threading.Lock()
        self.home = os.path.join(root, "home")
        self.files = os.path.join(root, "files")
        os.makedirs(self.home, exist_ok=True)
        os.makedirs(self.files, exist_ok=True)
        self.profile = os.path.join(root, "profile")
        self.pristine = os.path.join(root, "profile-pristine")
        self.env = dict(os.environ)
        self.env.update(
            {
                "RLA_DESKTOP_SESSION": self.marker,
                "HOME": self.home,
                "XAUTHORITY": os.path.join(root, "Xauthority"),
                "GTK_MODULES": "gail:atk-bridge",
                "NO_AT_BRIDGE": "0",
                "SAL_USE_VCLPLUGIN": "gtk3",
                "LANG": "C.UTF-8",
                "LC_ALL": "C.UTF-8",
            }
        )
        # the X server's cookie: clients without it (other users' programs, a sandboxed
        # program reaching /tmp/.X11-unix) cannot open the display
        self.cookie = os.urandom(16)
        self.server_auth = os.path.join(root, "Xvfb.auth")
        write_private(self.server_auth, xauth_entry(FAMILY_WILD, b"", b"", self.cookie))
        write_private(self.env["XAUTHORITY"], b"")

    # processes --------------------------------------------------------------------------
    def spawn(self, args, **kw):
        p = subprocess.Popen(
            args,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=kw.pop("stdout", subprocess.DEVNULL),
            stderr=kw.pop("stderr", subprocess.DEVNULL),
            start_new_session=True,
            **kw,
        )
        self.procs.append(p)
        return p

    def start(self):
        for tool in ("Xvfb", "openbox", "dbus-daemon", "soffice", "wmctrl"):
            if shutil.which(tool) is None:
                raise SystemExit(
                    f"desktop: {tool} is not installed (apt-get install xvfb openbox dbus-x11 "
                    "at-spi2-core libreoffice-calc libreoffice-gtk3 wmctrl python3-pyatspi python3-uno python3-tk)"
                )
        r, w = os.pipe()
        self.spawn(
            ["Xvfb", "-displayfd", str(w), "-screen", "0", f"{self.width}x{self.height}x24",
             "-nolisten", "tcp", "-noreset", "-auth", self.server_auth],
            pass_fds=(w,),
        )
        os.close(w)
        num = b""
        deadline = time.time() + 30
        while not num.endswith(b"\n"):
            if time.time() > deadline:
                raise SystemExit("desktop: Xvfb did not start in 30 s")
            chunk = os.read(r, 16)
            if not chunk:
                raise SystemExit("desktop: Xvfb exited at start")
            num += chunk
        os.close(r)
        num = num.decode().strip()
        # libX11 and xcb (LibreOffice, openbox, wmctrl) take the wildcard entry; python-xlib
        # (pyautogui) looks for this host's name and the display's number
        write_private(
            self.env["XAUTHORITY"],
            xauth_entry(FAMILY_LOCAL, socket.gethostname().encode(), num.encode(), self.cookie)
            + xauth_entry(FAMILY_WILD, b"", num.encode(), self.cookie),
        )
        self.env["DISPLAY"] = f":{num}"
        os.environ["DISPLAY"] = self.env["DISPLAY"]
        os.environ["XAUTHORITY"] = self.env["XAUTHORITY"]
        # no key repeats: a key held past the repeat delay (the machine busy between pyautogui's
        # press and release) would type its character twice
        from Xlib import X
        from Xlib.display import Display

        d = Display(self.env["DISPLAY"])
        d.change_keyboard_control(auto_repeat_mode=X.AutoRepeatModeOff)
        d.sync()
        d.close()
        bus = self.spawn(
            ["dbus-daemon", "--session", "--nofork", "--print-address=1"],
            stdout=subprocess.PIPE,
        )
        addr = bus.stdout.readline().decode().strip()
        if not addr:
            raise SystemExit("desktop: the D-Bus session did not start")
        self.env["DBUS_SESSION_BUS_ADDRESS"] = addr
        os.environ["DBUS_SESSION_BUS_ADDRESS"] = addr
        launcher = "/usr/libexec/at-spi-bus-launcher"
        if os.path.exists(launcher):
            self.spawn([launcher, "--launch-immediately"])
        rc = os.path.join(self.root, "openbox-rc.xml")
        with open(rc, "w") as f:
            f.write(OPENBOX_RC)
        self.spawn(["openbox", "--config-file", rc])
        self.seed_profile()
        time.sleep(0.5)
        log(f"X display {self.env['DISPLAY']}, {self.width}x{self.height}")

    def seed_profile(self):
        version = "7.4"
        try:
            out = subprocess.run(["soffice", "--version"], capture_output=True, text=True,
                                 timeout=30, env=self.env).stdout.split()
            version = ".".join(out[1].split(".")[:2])
        except Exception:
            pass
        user = os.path.join(self.pristine, "user")
        os.makedirs(user, exist_ok=True)
        items = "\n".join(
            f'<item oor:path="{p}"><prop oor:name="{n}" oor:op="fuse"><value>{v.format(version=version)}</value></prop></item>'
            for p, n, _t, v in PROFILE_ITEMS
        )
        xcu = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            '<oor:items xmlns:oor="http://openoffice.org/2001/registry" '
            'xmlns:xs="http://www.w3.org/2001/XMLSchema" '
            'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n'
            f"{items}\n</oor:items>\n"
        )
        with open(os.path.join(user, "registrymodifications.xcu"), "w") as f:
            f.write(xcu)
        self.restore_profile()

    def restore_profile(self):
        shutil.rmtree(self.profile, ignore_errors=True)
        shutil.copytree(self.pristine, self.profile)

    def close_office(self):
        if self.office is not None:
            kill_group(self.office)
            self.office = None
        kill_marked(self.marker, only=("soffice", "oosplash"))

    def open_office(self, path=None):
        """LibreOffice with this desktop's profile; Calc's start centre, or the file."""
        if self.office is not None and self.office.poll() is not None:
            self.office = None
        args = ["soffice", f"-env:UserInstallation=file://{self.profile}", "--norestore",
                "--nologo", "--nodefault" if path is None else "--calc",
                f"--accept=pipe,name={self.uno_pipe};urp;StarOffice.ComponentContext"]
        if path is not None:
            args.append(path)
        p = subprocess.Popen(args, env=self.env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=self.office is None)
        if self.office is None:
            self.office = p
        else:
            # a second soffice hands the file to the running one and exits
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                kill_group(p)

    def stop(self):
        self.close_office()
        for p in reversed(self.procs):
            kill_group(p)
        kill_marked(self.marker)

    # windows --------------------------------------------------------------------------
    def windows(self):
        out = subprocess.run(["wmctrl", "-l", "-x"], capture_output=True, text=True,
                             env=self.env, timeout=10).stdout
        wins = []
        for line in out.splitlines():
            parts = line.split(None, 4)
            if len(parts) >= 4:
                title = parts[4] if len(parts) == 5 else ""
                wins.append((parts[0], parts[2], title))
        return wins

    def wait_window(self, name, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            for wid, cls, title in self.windows():
                if name in title:
                    return wid, title
            time.sleep(0.1)
        return None


class Office:
    """LibreOffice's own API (UNO), over the pipe the session's LibreOffice listens on:
    - `settle`: waits until LibreOffice has handled every event an action caused (the input,
      the dialog it closed and what that dialog then did, the repaint), as LibreOffice's own
      UI tests do, so that the observation after an action shows its effect;
    - `filled`: which cells of a range hold something, in two calls, so that the tree reads the
      texts of those cells alone over AT-SPI instead of every showing cell's (two calls a cell,
      most of them empty).
    Without python3-uno, or without a LibreOffice to answer, both return None: the server then
    waits a fixed 50 ms after an action and reads every showing cell."""

    # com.sun.star.sheet.CellFlags: VALUE | DATETIME | STRING | FORMULA
    CONTENT = 1 | 2 | 4 | 16

    def __init__(self, pipe):
        self.pipe = pipe
        self.desktop = self.toolkit = None
        self.missing = False

    def connect(self):
        import uno

        local = uno.getComponentContext()
        resolver = local.ServiceManager.createInstanceWithContext(
            "com.sun.star.bridge.UnoUrlResolver", local)
        ctx = resolver.resolve(f"uno:pipe,name={self.pipe};urp;StarOffice.ComponentContext")
        self.desktop = ctx.ServiceManager.createInstanceWithContext("com.sun.star.frame.Desktop", ctx)
        self.toolkit = ctx.ServiceManager.createInstanceWithContext("com.sun.star.awt.Toolkit", ctx)

    def ask(self, question):
        """`question()` over a live connection (made again once if LibreOffice restarted: a
        reset, a crash), or None."""
        if self.missing:
            return None
        for attempt in range(2):
            try:
                if self.desktop is None:
                    self.connect()
                return question()
            except ImportError:
                log("python3-uno is not installed: the server waits 50 ms after an action, and "
                    "the tree reads every showing cell's text")
                self.missing = True
                return None
            except Exception:
                self.desktop = self.toolkit = None
        return None

    def settle(self):
        """True once LibreOffice has no event left to handle; None without an answer."""
        def idle():
            self.toolkit.processEventsToIdle()
            return True

        return self.ask(idle)

    def filled(self, sheet, r0, c0, r1, c1):
        """The (row, column) of the cells with content among rows r0..=r1 and columns c0..=c1
        of the sheet named `sheet` of the document on screen, or None."""
        def cells():
            doc = self.desktop.getCurrentComponent()
            if doc is None or not hasattr(doc, "getSheets"):
                return None
            active = doc.getCurrentController().getActiveSheet()
            if active.getName() != sheet:
                return None
            found = active.getCellRangeByPosition(c0, r0, c1, r1).queryContentCells(self.CONTENT)
            return {(r, c) for a in found.getRangeAddresses()
                    for r in range(a.StartRow, a.EndRow + 1)
                    for c in range(a.StartColumn, a.EndColumn + 1)}

        return self.ask(cells)


def r_open_file(h, s):
    body = h.json_body()
    path = body.get("path")
    if not isinstance(path, str) or not path:
        raise BadRequest("`path` is missing")
    p = vm_path(s, path)
    if not os.path.exists(p):
        return h.reply(404, {"status": "error", "message": f"{path}: no such file"})
    s.open_office(p)
    name = os.path.basename(p)
    found = s.wait_window(name, float(body.get("timeout", 60)))
    if found is None:
        return h.reply(500, {"status": "error", "message": f"no window named {name} appeared in time"})
    # the window is there; the document takes input once its sheet is in the accessibility tree
    deadline = time.time() + 20
    while not document_ready(found[1]) and time.time() < deadline:
        time.sleep(0.1)
    time.sleep(0.2)
    h.reply(200, f"{path} opened successfully", "text/plain")


def r_launch(h, s):
    body = h.json_body()
    command = body.get("command")
    import shlex

    argv = shlex.split(command) if isinstance(command, str) else command
    if not (isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv)):
        raise BadRequest("`command` must be a list of strings or a string")
    prog = os.path.basename(argv[0])
    if prog in ("libreoffice", "soffice") and not s.allow_any_code:
        files = [a for a in argv[1:] if not a.startswith("-")]
        s.open_office(vm_path(s, files[0]) if files else None)
        return h.reply(200, f"{prog} launched successfully", "text/plain")
    if not s.allow_any_code:
        raise Refused(f"{argv[0]!r} is not launched here: only libreoffice is (start the server with --allow-any-code to launch anything)")
    s.spawn(argv)
    h.reply(200, f"{prog} launched successfully", "text/plain")


def r_activate(h, s):
    body = h.json_body()
    name = body.get("window_name")
    if not isinstance(name, str) or not name:
        raise BadRequest("`window_name` is missing")
    strict = bool(body.get("strict", False))
    by_class = bool(body.get("by_class", False))
    for wid, cls, title in s.windows():
        hay = cls if by_class else title
        if (hay == name) if strict else (name in hay):
            subprocess.run(["wmctrl", "-i", "-a", wid], env=s.env, timeout=10)
            time.sleep(0.1)
            return h.reply(200, "Window activated successfully", "text/plain")
    h.reply(404, {"status": "error", "message": f"no window named {name!r}"})


def r_reset(h, s):
    """The extension: LibreOffice closed, its profile restored, uploaded files removed (the
    controller then uploads and opens the next task's file)."""
    h.json_body()  # a body that is not JSON is a 400 here too
    s.close_office()
    s.restore_profile()
    for f in list(s.uploaded):
        try:
            os.remove(f)
        except OSError:
            pass
    s.uploaded.clear()
    # an action may have set pyautogui.PAUSE = 3 (or FAILSAFE): the next task starts without it
    server_actions.Actions_singleton.restore_settings()
    server_actions.Actions_singleton.pg.moveTo(s.width // 2, s.height // 2)
    h.reply(200, {"status": "success"})
