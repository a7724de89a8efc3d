"""A real desktop for the GUI setting: LibreOffice Calc under Xvfb, served over OSWorld's
controller protocol (the endpoints of OSWorld's VM-side server, `desktop_env/server/main.py`).

Started by `rlanything desktop serve-real`; it runs on a Linux machine without a VM:

- an X server (Xvfb) of the configured size, the openbox window manager (every window
  maximised), a D-Bus session with the accessibility bus, and LibreOffice Calc with a profile of
  its own, seeded so that xlsx is saved without the "Keep current format" question and no tip of
  the day, first-start bar or recovery dialog covers the sheet;
- actions (`POST /execute`, `/setup/execute`) run as pyautogui code in this one long-lived
  interpreter, not a new one per action;
- `GET /screenshot` is a PNG of the X screen with the cursor drawn in; `GET /accessibility` is the
  AT-SPI tree as OSWorld's XML (`{"AT": xml}`), Calc's table walked over its showing cells;
- `POST /setup/upload|open_file|launch|activate_window|execute`, `POST /file`, `GET
  /screen_size|platform|cursor_position` as OSWorld's server has them, and one extension,
  `POST /setup/reset`: LibreOffice closed, its profile restored, the uploaded files removed.

Safety: the server binds to 127.0.0.1 unless told otherwise (elsewhere only with
`--api-key-env`: requests must carry the key), and by default runs only pyautogui calls with
literal arguments (and `time.sleep`), checked on the code's syntax tree before it runs, and
conversions of files in its session folder to a fixed list of formats (`checked_conversion`);
its X server takes only clients with its cookie. `--allow-any-code` runs any Python and any
command, as OSWorld's server does, for a machine whose network is trusted.

Stopping it (SIGTERM, SIGINT) ends every process it started: Xvfb, openbox, D-Bus, the
accessibility bus and LibreOffice.
"""

import argparse
import ast
import email.parser
import email.policy
import hmac
import io
import ipaddress
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_BODY = 64 << 20
NS = {
    "st": "https://accessibility.ubuntu.example.org/ns/state",
    "attr": "https://accessibility.ubuntu.example.org/ns/attributes",
    "cp": "https://accessibility.ubuntu.example.org/ns/component",
    "doc": "https://accessibility.ubuntu.example.org/ns/document",
    "docattr": "https://accessibility.ubuntu.example.org/ns/document/attributes",
    "txt": "https://accessibility.ubuntu.example.org/ns/text",
    "val": "https://accessibility.ubuntu.example.org/ns/value",
    "act": "https://accessibility.ubuntu.example.org/ns/action",
}

# pyautogui functions an action may call when any code is not allowed
PYAUTOGUI_CALLS = {
    "click", "doubleClick", "rightClick", "middleClick", "tripleClick", "moveTo", "moveRel",
    "move", "dragTo", "dragRel", "drag", "scroll", "hscroll", "vscroll", "mouseDown", "mouseUp",
    "press", "keyDown", "keyUp", "hotkey", "write", "typewrite", "position", "size", "sleep",
}

# what `libreoffice --convert-to FORMAT` may convert to when any code is not allowed (the part
# of FORMAT before a colon: the output's extension)
CONVERT_FORMATS = {"csv", "xlsx", "xls", "ods", "pdf", "txt", "html", "docx", "doc", "odt", "pptx", "odp"}
# options of a conversion that change nothing but how LibreOffice starts (the server sets its own)
CONVERT_FLAGS = {"--headless", "--norestore", "--nologo", "--nolockcheck", "--nodefault",
                 "--nofirststartwizard", "--invisible"}
# a filter's name (`csv:Text - txt - csv (StarCalc)`) and its options (`44,34,UTF8,1,,0,false`)
CONVERT_FILTER = re.compile(r"[A-Za-z0-9 ()._-]{1,80}")
CONVERT_OPTIONS = re.compile(r"[A-Za-z0-9,._-]{0,200}")

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


def write_private(path, data):
    """Writes `path` readable by this user only (the file replaced, never written through a link)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def is_loopback(host):
    """Whether binding `host` reaches this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class Refused(Exception):
    """A request the server will not run (HTTP 403)."""


class BadRequest(Exception):
    """A malformed request (HTTP 400)."""


def log(msg):
    sys.stderr.write(f"desktop: {msg}\n")
    sys.stderr.flush()


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


class LookAhead:
    """The tree read in the background right after an action, while the client fetches the
    screenshot (an agent's step asks for both): `GET /accessibility` returns it if it comes
    within `FRESH` seconds of the action and nothing else changed the desktop in between;
    any request that may change the desktop first waits for it and drops it."""

    FRESH = 2.0

    def __init__(self, session):
        self.started = time.monotonic()
        self.xml = None
        self.thread = threading.Thread(target=self.run, args=(session,), daemon=True)
        self.thread.start()

    def run(self, s):
        try:
            self.xml = a11y_xml(s.atspi, s.uno)
        except Exception as e:
            log(f"accessibility: the tree read after the action failed ({e}); it is read again when asked for")

    def result(self):
        """The tree, or None when it failed or was asked for too long after the action."""
        asked = time.monotonic()
        self.thread.join()
        return self.xml if asked - self.started < self.FRESH else None


def kill_group(p):
    try:
        os.killpg(p.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return
    try:
        p.wait(timeout=5)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait(timeout=5)


def kill_marked(marker, only=None):
    """Every process whose environment holds this session's marker (those D-Bus started too)."""
    needle = f"RLA_DESKTOP_SESSION={marker}".encode()
    me = os.getpid()
    for _ in range(2):
        found = []
        for d in os.listdir("/proc"):
            if not d.isdigit() or int(d) == me:
                continue
            try:
                with open(f"/proc/{d}/environ", "rb") as f:
                    if needle not in f.read().split(b"\0"):
                        continue
                if only is not None:
                    with open(f"/proc/{d}/comm") as f:
                        comm = f.read().strip()
                    if not any(comm.startswith(o) for o in only):
                        continue
                os.kill(int(d), signal.SIGKILL)
                found.append(d)
            except (OSError, ProcessLookupError):
                pass
        if not found:
            return
        time.sleep(0.2)


# actions --------------------------------------------------------------------------------
def literal(node):
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(literal(e) for e in node.elts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return literal(node.operand)
    return False


def check_code(code):
    """Only pyautogui calls and time.sleep with literal arguments (and the imports and FAILSAFE
    setting OSWorld's controller puts first); anything else is refused."""
    try:
        tree = ast.parse(code, mode="exec")
    except SyntaxError as e:
        raise BadRequest(f"the code does not parse: {e.msg} (line {e.lineno})")
    for st in tree.body:
        if isinstance(st, ast.Import) and all(a.name in ("pyautogui", "time") and a.asname is None for a in st.names):
            continue
        if (isinstance(st, ast.Assign) and len(st.targets) == 1
                and isinstance(st.targets[0], ast.Attribute)
                and isinstance(st.targets[0].value, ast.Name) and st.targets[0].value.id == "pyautogui"
                and st.targets[0].attr in ("FAILSAFE", "PAUSE") and literal(st.value)):
            continue
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
            f = st.value.func
            if (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
                    and ((f.value.id == "pyautogui" and f.attr in PYAUTOGUI_CALLS)
                         or (f.value.id == "time" and f.attr == "sleep"))
                    and all(literal(a) for a in st.value.args)
                    and all(literal(k.value) and k.arg is not None for k in st.value.keywords)):
                continue
        line = ast.get_source_segment(code, st) or type(st).__name__
        raise Refused(
            f"only pyautogui calls with literal arguments run here, not {line[:120]!r} "
            "(start the server with --allow-any-code to run any Python)"
        )


# an action's time limit: OSWorld's server times a command out at 120 s
ACTION_SECS = 120.0


class ActionTimeout(Exception):
    pass


class Actions:
    """pyautogui, imported once; `write` types `<` with shift and comma (pyautogui's own keysym
    for it types `>` on this keyboard map, the fault OSWorld's controller works around), and
    each mouse button is held down 40 ms. An action runs at most ACTION_SECS: every sleep in it
    (`time.sleep`, pyautogui's PAUSE and durations) is bounded by the action's deadline, and one
    that would run past it ends the action at once with an error, so the desktop is free again.
    pyautogui's settings an action may change (PAUSE, FAILSAFE) are restored by /setup/reset."""

    def __init__(self):
        import pyautogui

        self.pg = pyautogui
        self.restore_settings()
        self.deadline = None
        actions = self

        def sleep(secs):
            secs = float(secs)
            if secs < 0:
                raise ValueError("sleep length must be non-negative")
            if actions.deadline is not None and time.monotonic() + secs > actions.deadline:
                raise ActionTimeout(f"a sleep of {secs:g} s would run the action past its {ACTION_SECS:g} s")
            time.sleep(secs)

        # the `time` an action sees (and pyautogui's own, for PAUSE and durations): its sleep
        # is bounded
        clock = type(time)("time")
        clock.__dict__.update({k: v for k, v in time.__dict__.items() if not k.startswith("__")})
        clock.sleep = sleep
        self.clock = clock
        pyautogui.time = clock
        orig = pyautogui.write

        def write(message, interval=0.0, *a, **kw):
            if not isinstance(message, str):
                return orig(message, interval, *a, **kw)
            parts = message.split("<")
            for i, part in enumerate(parts):
                if i > 0:
                    pyautogui.hotkey("shift", ",")
                if part:
                    orig(part, interval, *a, **kw)

        pyautogui.write = write
        # a press shorter than a few milliseconds is lost on some of Calc's buttons (the sheet
        # tab bar's): each button is held 40 ms, as a hand (or a VM's latency) holds it
        pm = pyautogui.platformModule
        down, up = pm._mouseDown, pm._mouseUp
        pressed = {}

        def mouse_down(x, y, button):
            # the pointer rests a moment where it moved before the button goes down
            time.sleep(0.02)
            down(x, y, button)
            pressed[button] = time.monotonic()

        def mouse_up(x, y, button):
            wait = 0.04 - (time.monotonic() - pressed.pop(button, 0.0))
            if wait > 0:
                time.sleep(wait)
            up(x, y, button)

        pm._mouseDown, pm._mouseUp = mouse_down, mouse_up
        if hasattr(pm, "time"):
            pm.time = clock
        pyautogui.typewrite = write
        import builtins

        real_import = builtins.__import__

        def action_import(name, *a, **kw):
            # `import time` in an action gives it the bounded clock
            return clock if name == "time" else real_import(name, *a, **kw)

        self.ns = {"pyautogui": pyautogui, "time": clock, "__name__": "__action__",
                   "__builtins__": dict(builtins.__dict__, __import__=action_import)}
        # the session's `Office`, to wait for LibreOffice after an action
        self.office = None

    def restore_settings(self):
        """pyautogui's settings as an action finds them after a reset."""
        self.pg.FAILSAFE = False
        self.pg.PAUSE = 0.0

    def run(self, code, allow_any):
        if not allow_any:
            check_code(code)
        out = io.StringIO()
        old = sys.stdout
        sys.stdout = out
        error = None
        self.deadline = time.monotonic() + ACTION_SECS
        try:
            exec(compile(code, "<action>", "exec"), self.ns)
        except Exception as e:
            error = f"{type(e).__name__}: {e}"
        finally:
            sys.stdout = old
            self.deadline = None
        # LibreOffice handles what the action did (and draws it) before the next observation:
        # 20 ms for its main loop to take the input up, then until it has nothing left to do
        # (50 ms in all without LibreOffice's API)
        time.sleep(0.02)
        if not (self.office is not None and self.office.settle()):
            time.sleep(0.03)
        if error is not None:
            return {"status": "error", "output": out.getvalue(), "error": error, "returncode": 1}
        return {"status": "success", "output": out.getvalue(), "error": "", "returncode": 0}


def python_code(command):
    """The code of `["python", "-c", CODE]` (or the same as one shell string), else None."""
    if isinstance(command, str):
        import shlex

        try:
            command = shlex.split(command)
        except ValueError:
            return None
    if (isinstance(command, list) and len(command) == 3 and isinstance(command[0], str)
            and os.path.basename(command[0]).startswith("python") and command[1] == "-c"
            and isinstance(command[2], str)):
        return command[2]
    return None


# observations ---------------------------------------------------------------------------
def screenshot_png(session):
    from PIL import ImageDraw, ImageGrab

    img = ImageGrab.grab(xdisplay=session.env["DISPLAY"])
    try:
        x, y = Actions_singleton.pg.position()
        d = ImageDraw.Draw(img)
        arrow = [(x, y), (x, y + 16), (x + 4, y + 12), (x + 7, y + 19), (x + 9, y + 18),
                 (x + 6, y + 11), (x + 11, y + 11)]
        d.polygon(arrow, fill=(255, 255, 255), outline=(0, 0, 0))
    except Exception:
        pass
    return png_bytes(img)


def png_bytes(img):
    """An RGB image as PNG, its rows unfiltered and deflated fast: a third of the time of
    Pillow's encoder, which tries every row filter (a 1920x1080 desktop: about 20 ms and
    130 KB, against 60 ms and 100 KB)."""
    import struct
    import zlib

    img = img.convert("RGB") if img.mode != "RGB" else img
    w, h = img.size
    raw, stride = img.tobytes(), w * 3
    rows = b"".join(b"\0" + raw[i * stride:(i + 1) * stride] for i in range(h))

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows, 1)) + chunk(b"IEND", b""))


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


def col_name(c):
    s = ""
    c += 1
    while c:
        c, r = divmod(c - 1, 26)
        s = chr(65 + r) + s
    return s


class Node:
    """An element of the tree's XML (ElementTree's serialiser took a quarter of the time)."""

    __slots__ = ("tag", "attrs", "text", "children")

    def __init__(self, tag, attrs):
        self.tag, self.attrs, self.text, self.children = tag, attrs, None, []


def _esc_text(t):
    return t.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _esc_attr(t):
    return (_esc_text(t).replace('"', "&quot;").replace("\n", "&#10;").replace("\r", "&#13;")
            .replace("\t", "&#09;"))


def to_xml(root):
    """The XML of `root`, whose attribute names carry the prefixes of `NS` (declared on it)."""
    out = []

    def put(n, decl):
        out.append("<" + n.tag + decl)
        for k, v in n.attrs.items():
            out.append(f' {k}="{_esc_attr(v)}"')
        if n.text is None and not n.children:
            out.append(" />")
            return
        out.append(">")
        if n.text:
            out.append(_esc_text(n.text))
        for c in n.children:
            put(c, "")
        out.append(f"</{n.tag}>")

    put(root, "".join(f' xmlns:{p}="{NS[p]}"' for p in ("st", "attr", "cp")))
    return "".join(out)


# AT-SPI's replies read straight from their D-Bus values (GLib's `unpack` is several times
# slower, and the tree reads some 1,400 of them)
def _unpack(v):
    return v.unpack()[0]


def _ints(v):
    a = v.get_child_value(0)
    return [a.get_child_value(i).get_uint32() for i in range(a.n_children())]


def _ref(x):
    return (x.get_child_value(0).get_string(), x.get_child_value(1).get_string())


def _refs(v):
    a = v.get_child_value(0)
    return [_ref(a.get_child_value(i)) for i in range(a.n_children())]


def _prop(v):
    x = v.get_child_value(0).get_variant()
    t = x.get_type_string()
    return x.get_string() if t == "s" else x.get_int32() if t == "i" else x.unpack()


def _rect(v):
    e = v.get_child_value(0)
    return tuple(e.get_child_value(i).get_int32() for i in range(4))


DECODE = {
    "GetState": _ints,
    "GetRole": lambda v: v.get_child_value(0).get_uint32(),
    "Get": _prop,
    "GetInterfaces": lambda v: v.get_child_value(0).get_strv(),
    "GetExtents": _rect,
    "GetChildren": _refs,
    "GetText": lambda v: v.get_child_value(0).get_string(),
    "GetAccessibleAtPoint": lambda v: _ref(v.get_child_value(0)),
    "GetAccessibleAt": lambda v: _ref(v.get_child_value(0)),
    "GetChildAtIndex": lambda v: _ref(v.get_child_value(0)),
    "GetIndexInParent": lambda v: v.get_child_value(0).get_int32(),
    "GetRowAtIndex": lambda v: v.get_child_value(0).get_int32(),
    "GetColumnAtIndex": lambda v: v.get_child_value(0).get_int32(),
}


class AtspiBus:
    """The server's own connections for AT-SPI's calls (ordinary D-Bus method calls of its
    interfaces): to the accessibility bus, and straight to each application that offers a
    connection of its own (`GetApplicationBusAddress`, as libatspi uses it), which halves a
    call's cost. Calls are sent many at a time and their replies collected, so the application
    answers them back to back where one call at a time would wait a round trip for each: the
    tree of LibreOffice's window takes some 1,400 calls."""

    TIMEOUT_MS = 5000

    def __init__(self):
        self.conn = None
        self.peers = {}
        # (bus name, path) -> (role, interfaces): what never changes in an object
        self.fixed = {}

    def connection(self):
        from gi.repository import Gio

        if self.conn is None or self.conn.is_closed():
            session = Gio.bus_get_sync(Gio.BusType.SESSION, None)
            addr = session.call_sync("org.a11y.Bus", "/org/a11y/bus", "org.a11y.Bus", "GetAddress",
                                     None, None, 0, self.TIMEOUT_MS, None).unpack()[0]
            flags = (Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT
                     | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION)
            self.conn = Gio.DBusConnection.new_for_address_sync(addr, flags, None, None)
            self.peers = {}
            self.fixed = {}
        if len(self.fixed) > 200000:
            self.fixed = {}
        return self.conn

    def peer(self, app):
        """The application's own connection (its root's ref `app`), or None."""
        from gi.repository import Gio

        name = app[0]
        c = self.peers.get(name)
        if c is not None and not c.is_closed():
            return c
        self.peers.pop(name, None)
        try:
            addr = self.connection().call_sync(
                name, app[1], "org.a11y.atspi.Application", "GetApplicationBusAddress", None,
                None, 0, self.TIMEOUT_MS, None).unpack()[0]
            if addr:
                c = Gio.DBusConnection.new_for_address_sync(
                    addr, Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT, None, None)
                self.peers[name] = c
                return c
        except Exception:
            pass
        return None

    def many(self, calls):
        """`calls`: (ref, interface, method, arguments or None), ref being (bus name, object
        path), or None for no call; the replies' first values, in order, None where a call
        failed (or was None)."""
        from gi.repository import GLib

        out = [None] * len(calls)
        if not calls:
            return out
        conn = self.connection()
        ctx = GLib.MainContext.new()
        ctx.push_thread_default()
        left = [len(calls)]

        def done(c, res, i):
            try:
                v = c.call_finish(res)
                out[i] = DECODE.get(calls[i][2], _unpack)(v)
            except Exception:
                pass
            left[0] -= 1

        try:
            for i, call in enumerate(calls):
                if call is None:
                    left[0] -= 1
                    continue
                (name, path), iface, method, args = call
                peer = self.peers.get(name)
                if peer is not None and not peer.is_closed():
                    c, name = peer, None
                else:
                    c = conn
                c.call(name, path, iface if "." in iface else "org.a11y.atspi." + iface,
                       method, args, None, 0, self.TIMEOUT_MS, None, done, i)
            while left[0] > 0:
                ctx.iteration(True)
        finally:
            ctx.pop_thread_default()
        return out


def a11y_xml(bus, office=None):
    """The AT-SPI tree as OSWorld's XML: every showing node (closed menus are not opened), with
    its states, attributes, screen position and size and text; Calc's table as its showing
    cells, row by row, their texts read where `office` (an `Office`) says a cell holds something.
    `bus`: an `AtspiBus`. The tree is read level by level, each level's calls sent together."""
    import gi

    gi.require_version("Atspi", "2.0")
    from gi.repository import Atspi, GLib

    st_ns, cp_ns, attr_ns = "st:", "cp:", "attr:"
    names = {}
    for i in range(64):
        try:
            n = Atspi.StateType(i).value_name
        except ValueError:
            continue
        if n.startswith("ATSPI_STATE_") and n != "ATSPI_STATE_LAST_DEFINED":
            names[i] = n[len("ATSPI_STATE_"):].lower()
    SHOWING, VISIBLE = int(Atspi.StateType.SHOWING), int(Atspi.StateType.VISIBLE)
    MANAGES = int(Atspi.StateType.MANAGES_DESCENDANTS)
    SCREEN = GLib.Variant("(u)", (int(Atspi.CoordType.SCREEN),))
    WHOLE = GLib.Variant("(ii)", (0, -1))

    def bits(st):
        return [i for i in range(64) if (st[i // 32] >> (i % 32)) & 1] if st else []

    def role_name(v):
        try:
            return Atspi.role_get_name(Atspi.Role(v))
        except (ValueError, TypeError):
            return None

    props = {n: GLib.Variant("(ss)", ("org.a11y.atspi.Accessible", n)) for n in ("Name", "ChildCount")}

    def prop(ref, name):
        return (ref, "org.freedesktop.DBus.Properties", "Get", props[name])

    def ints(*xs):
        return GLib.Variant.new_tuple(*(GLib.Variant.new_int32(x) for x in xs))

    class Rec:
        __slots__ = ("ref", "depth", "states", "role", "name", "attrs", "ifaces", "ext",
                     "count", "text", "children", "kids", "table")

        def __init__(self, ref, depth, states):
            self.ref, self.depth, self.states = ref, depth, states
            self.children, self.kids, self.text, self.table = [], None, None, False

    def showing(refs, depth):
        """The records of the refs whose objects are showing."""
        sts = bus.many([(r, "Accessible", "GetState", None) for r in refs])
        return [Rec(r, depth, bits(s)) for r, s in zip(refs, sts) if s and SHOWING in bits(s)]

    def collect(level):
        """Reads a level's records whole, then the next level's, until none is left."""
        while level:
            # an object's role and interfaces never change: asked once (`bus.fixed`)
            got = bus.many([c for r in level for c in (
                None if r.ref in bus.fixed else (r.ref, "Accessible", "GetRole", None),
                None if r.ref in bus.fixed else (r.ref, "Accessible", "GetInterfaces", None),
                prop(r.ref, "Name"), (r.ref, "Accessible", "GetAttributes", None),
                (r.ref, "Component", "GetExtents", SCREEN),
                # an object that manages its descendants may have millions (Calc's table): it
                # is counted before its children are asked for; the others are asked at once
                prop(r.ref, "ChildCount") if MANAGES in r.states else None)])
            kept = []
            for k, r in enumerate(level):
                role, ifaces, name, attrs, ext, count = got[6 * k: 6 * k + 6]
                if r.ref in bus.fixed:
                    role, ifaces = bus.fixed[r.ref]
                elif role is not None and ifaces is not None:
                    bus.fixed[r.ref] = (role, ifaces)
                r.role = role_name(role) if role is not None else None
                if r.role is None or name is None or ifaces is None:
                    r.role = None  # unreadable: left out, as its parent's walk leaves it out
                    continue
                r.name, r.attrs, r.ext = name, attrs or {}, ext
                r.count = (count or 0) if MANAGES in r.states else 1
                r.ifaces = [i[len("org.a11y.atspi."):] if i.startswith("org.a11y.atspi.") else i for i in ifaces]
                if "Component" not in r.ifaces:
                    r.ext = None
                kept.append(r)
            texts = [r for r in kept if "Text" in r.ifaces]
            walk = []
            for r in kept:
                if r.depth >= 50:
                    continue
                if r.role == "table" and r.count > 100000:
                    r.table = True
                elif r.count > 0:
                    walk.append(r)
            got = bus.many([(r.ref, "Text", "GetText", WHOLE) for r in texts]
                           + [(r.ref, "Accessible", "GetChildren", None) for r in walk if r.count <= 1024]
                           + [(r.ref, "Accessible", "GetChildAtIndex", ints(i))
                              for r in walk if r.count > 1024 for i in range(1024)])
            for r, t in zip(texts, got):
                if t:
                    r.text = t.replace("\ufffc", "").replace("\ufffd", "")
            rest = got[len(texts):]
            small = [r for r in walk if r.count <= 1024]
            for r, kids in zip(small, rest):
                r.kids = [tuple(k) for k in (kids or [])][:1024]
            rest = rest[len(small):]
            for n, r in enumerate(r for r in walk if r.count > 1024):
                r.kids = [tuple(k) for k in rest[1024 * n: 1024 * (n + 1)] if k]
            # a closed menu's items are not showing: its first item is asked first, and the
            # others only when that one shows
            menus = [r for r in walk if r.role == "menu" and r.kids]
            probes = showing([r.kids[0] for r in menus], 0)
            open_menus = {p.ref for p in probes}
            nxt_refs, owners = [], []
            for r in walk:
                if r.kids and (r.role != "menu" or r.kids[0] in open_menus):
                    for k in r.kids:
                        nxt_refs.append(k)
                        owners.append(r)
            sts = bus.many([(k, "Accessible", "GetState", None) for k in nxt_refs])
            level = []
            for k, owner, s in zip(nxt_refs, owners, sts):
                b = bits(s)
                if s and SHOWING in b:
                    rec = Rec(k, owner.depth + 1, b)
                    owner.children.append(rec)
                    level.append(rec)

    def element(r, off):
        """The node's XML element, and whether GTK draws it (else LibreOffice's own toolkit
        does) and where it truly is: LibreOffice reports its own widgets' positions from the
        top-left of its root pane, not of the screen, so `off` (the root pane's true origin)
        is added to them; GTK's widgets report screen positions."""
        attrs = {"name": r.name or ""}
        for i in r.states:
            if i in names:
                attrs[st_ns + names[i]] = "true"
        gtk = False
        for k, v in r.attrs.items():
            if k:
                attrs[attr_ns + k] = v
                gtk |= k == "toolkit"
        origin = None
        if r.ext is not None:
            x, y, w, h = r.ext
            dx, dy = (0, 0) if gtk else off
            origin = (x + dx, y + dy, x, y)
            if VISIBLE in r.states and SHOWING in r.states:
                attrs[cp_ns + "screencoord"] = f"({x + dx}, {y + dy})"
                attrs[cp_ns + "size"] = f"({w}, {h})"
        el = Node(r.role.replace(" ", "-") or "unknown", attrs)
        if r.text:
            el.text = r.text
        return el, gtk, origin

    def table(r, el, off):
        """Calc's table: its showing cells, row by row (positions from the first row and column)."""
        if r.ext is None or r.ext[2] <= 0 or r.ext[3] <= 0:
            return
        x, y, w, h = r.ext
        at = lambda px, py: (r.ref, "Component", "GetAccessibleAtPoint",
                             GLib.Variant("(iiu)", (px, py, int(Atspi.CoordType.SCREEN))))
        a, b = bus.many([at(x + 1, y + 1), at(x + w - 2, y + h - 2)])
        if not a or not b:
            return
        a, b = tuple(a), tuple(b)
        ia, ib, sa = bus.many([(a, "Accessible", "GetIndexInParent", None),
                               (b, "Accessible", "GetIndexInParent", None),
                               (a, "Accessible", "GetState", None)])
        if ia is None or ib is None:
            return
        idx = lambda m, i: (r.ref, "Table", m, ints(i))
        r0, c0, r1, c1 = bus.many([idx("GetRowAtIndex", ia), idx("GetColumnAtIndex", ia),
                                   idx("GetRowAtIndex", ib), idx("GetColumnAtIndex", ib)])
        if None in (r0, c0, r1, c1):
            return
        cell = lambda rr, c: (r.ref, "Table", "GetAccessibleAt", ints(rr, c))
        refs = bus.many([cell(r0, c) for c in range(c0, c1 + 1)] + [cell(rr, c0) for rr in range(r0, r1 + 1)])
        exts = bus.many([(tuple(k), "Component", "GetExtents", SCREEN) if k else None for k in refs])
        if None in exts:
            return
        cols, rows = exts[: c1 - c0 + 1], exts[c1 - c0 + 1:]
        common = {st_ns + names[i]: "true" for i in bits(sa) if i in names
                  and names[i] not in ("focused", "selected", "active")}
        # the table's name is "Sheet " and the sheet's name
        sheet = r.name[len("Sheet "):] if r.name.startswith("Sheet ") else r.name
        filled = office.filled(sheet, r0, c0, r1, c1) if office is not None else None
        grid = [(rr, c) for rr in range(r0, r1 + 1) for c in range(c0, c1 + 1)
                if filled is None or (rr, c) in filled]
        refs = bus.many([cell(rr, c) for rr, c in grid])
        got = bus.many([(tuple(k), "Text", "GetText", WHOLE) if k else None for k in refs])
        texts = {g: t for g, t in zip(grid, got) if t}
        for i, rr in enumerate(range(r0, r1 + 1)):
            for j, c in enumerate(range(c0, c1 + 1)):
                attrs = {"name": f"{col_name(c)}{rr + 1}"}
                attrs.update(common)
                attrs[cp_ns + "screencoord"] = f"({cols[j][0] + off[0]}, {rows[i][1] + off[1]})"
                attrs[cp_ns + "size"] = f"({cols[j][2]}, {rows[i][3]})"
                ce = Node("table-cell", attrs)
                el.children.append(ce)
                text = texts.get((rr, c))
                if text:
                    ce.text = text

    def build(r, off, parent):
        """`parent`: the parent's (true x, true y, drawn by GTK)."""
        el, gtk, origin = element(r, off)
        if r.depth >= 50:
            return el
        if not gtk and r.role == "root pane" and parent is not None and parent[2] and origin is not None:
            # LibreOffice's root inside a GTK container: its own widgets are placed from here
            off = (parent[0] - origin[2], parent[1] - origin[3])
            el.attrs[cp_ns + "screencoord"] = f"({parent[0]}, {parent[1]})"
        if r.table:
            table(r, el, off)
            return el
        here = (origin[0], origin[1], gtk) if origin is not None else parent
        for c in r.children:
            if c.role is not None:
                el.children.append(build(c, off, here))
        return el

    registry = ("org.a11y.atspi.Registry", "/org/a11y/atspi/accessible/root")
    apps = [tuple(a) for a in (bus.many([(registry, "Accessible", "GetChildren", None)])[0] or [])]
    got = bus.many([c for a in apps for c in (prop(a, "Name"), (a, "Accessible", "GetChildren", None))])
    root = Node("desktop-frame", {"name": "main"})
    windows = []
    for k, a in enumerate(apps):
        bus.peer(a)
        name, kids = got[2 * k], got[2 * k + 1]
        if kids is None:
            log("accessibility: an application's tree could not be read")
            continue
        el = Node("application", {"name": name or ""})
        root.children.append(el)
        windows.append((el, showing([tuple(w) for w in kids], 2)))
    collect([w for _, ws in windows for w in ws])
    for el, ws in windows:
        for w in ws:
            if w.role is not None:
                el.children.append(build(w, (0, 0), None))
    return to_xml(root)


Actions_singleton = None


# HTTP -----------------------------------------------------------------------------------
class Handler(BaseHTTPRequestHandler):
    server_version = "rlanything-desktop/1"
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        if os.environ.get("RLA_DESKTOP_LOG"):
            log(fmt % args)

    def reply(self, code, body, ctype="application/json"):
        if not isinstance(body, (bytes, bytearray)):
            body = json.dumps(body).encode() if ctype == "application/json" else str(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def read_body(self):
        """The request's body, read whole before the request is handled (so that a handler
        that does not read it leaves nothing on a kept-alive connection)."""
        n = self.headers.get("Content-Length")
        if n is None:
            if self.headers.get("Transfer-Encoding"):
                self.close_connection = True
                raise BadRequest("send a Content-Length (chunked bodies are not read)")
            return b""
        try:
            n = int(n)
        except ValueError:
            self.close_connection = True
            raise BadRequest("Content-Length is not a number")
        if n < 0 or n > MAX_BODY:
            self.close_connection = True
            raise TooLarge(f"the body is {n} bytes; at most {MAX_BODY} are read")
        return self.rfile.read(n)

    def body(self):
        return self.raw_body

    def json_body(self):
        raw = self.body()
        try:
            v = json.loads(raw or b"{}")
        except (ValueError, UnicodeDecodeError) as e:
            raise BadRequest(f"the body is not JSON: {e}")
        if not isinstance(v, dict):
            raise BadRequest("the body must be a JSON object")
        return v

    def form_body(self):
        raw = self.body()
        ctype = self.headers.get("Content-Type", "")
        if ctype.startswith("multipart/form-data"):
            msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
                b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + raw
            )
            if not msg.is_multipart():
                raise BadRequest("the multipart body could not be read")
            fields = {}
            for part in msg.iter_parts():
                name = part.get_param("name", header="content-disposition")
                if name:
                    fields[name] = part.get_payload(decode=True) or b""
            return fields
        if ctype.startswith("application/json"):
            try:
                v = json.loads(raw or b"{}")
            except (ValueError, UnicodeDecodeError) as e:
                raise BadRequest(f"the body is not JSON: {e}")
            if not isinstance(v, dict):
                raise BadRequest("the form must be a JSON object of fields")
            return {k: str(x).encode() for k, x in v.items()}
        return {k: v[0].encode() for k, v in urllib.parse.parse_qs(raw.decode("utf-8", "replace")).items()}

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")

    def handle_any(self, method):
        key = self.server.session.api_key
        if key is not None:
            got = self.headers.get("Authorization", "")
            if not hmac.compare_digest(got.encode(), f"Bearer {key}".encode()):
                self.close_connection = True
                return self.reply(401, {"status": "error", "message": "this desktop takes only requests with "
                                        "`Authorization: Bearer <key>` (the key its --api-key-env names)"})
        try:
            self.raw_body = self.read_body()
        except BadRequest as e:
            return self.reply(400, {"status": "error", "message": str(e)})
        except TooLarge as e:
            return self.reply(413, {"status": "error", "message": str(e)})
        path = urllib.parse.urlparse(self.path).path.rstrip("/") or "/"
        route = ROUTES.get((method, path))
        if route is None:
            known = sorted(p for (m, p) in ROUTES if m == method)
            other = "POST" if method == "GET" else "GET"
            if (other, path) in ROUTES:
                return self.reply(405, {"status": "error", "message": f"{path} takes {other}, not {method}"})
            return self.reply(404, {"status": "error", "message": f"no endpoint {method} {path}; {method} serves {', '.join(known)}"})
        s = self.server.session
        if not s.lock.acquire(timeout=120):
            return self.reply(503, {"status": "error", "message": "the desktop is busy with another request"})
        try:
            if s.ahead is not None and (method, path) not in OBSERVING:
                # this request may change the desktop: the tree read ahead is dropped
                ahead, s.ahead = s.ahead, None
                ahead.thread.join()
            route(self, s)
        except BadRequest as e:
            self.reply(400, {"status": "error", "message": str(e)})
        except Refused as e:
            self.reply(403, {"status": "error", "message": str(e)})
        except TooLarge as e:
            self.reply(413, {"status": "error", "message": str(e)})
        except Exception as e:
            log(traceback.format_exc())
            self.reply(500, {"status": "error", "message": f"{type(e).__name__}: {e}"})
        finally:
            s.lock.release()


class TooLarge(Exception):
    pass


def r_platform(h, s):
    h.reply(200, "Linux", "text/plain")


def r_screen_size(h, s):
    h.reply(200, {"width": s.width, "height": s.height})


def r_cursor(h, s):
    x, y = Actions_singleton.pg.position()
    h.reply(200, [int(x), int(y)])


def r_screenshot(h, s):
    h.reply(200, screenshot_png(s), "image/png")


def r_accessibility(h, s):
    # extension: `?cells=atspi` reads every cell's text over AT-SPI (as OSWorld's server does)
    query = urllib.parse.parse_qs(urllib.parse.urlparse(h.path).query)
    atspi_only = query.get("cells") == ["atspi"]
    ahead, s.ahead = s.ahead, None
    x = ahead.result() if ahead is not None and not atspi_only else None
    if x is None:
        x = a11y_xml(s.atspi, None if atspi_only else s.uno)
    h.reply(200, {"AT": x})


def r_execute(h, s):
    body = h.json_body()
    command = body.get("command")
    if command is None:
        raise BadRequest("`command` is missing")
    code = python_code(command)
    if code is not None:
        out = Actions_singleton.run(code, s.allow_any_code)
        s.ahead = LookAhead(s)
        return h.reply(200, out)
    argv = command
    if isinstance(command, str):
        import shlex

        argv = shlex.split(command)
    if not (isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv)):
        raise BadRequest("`command` must be a list of strings or a string")
    if not s.allow_any_code:
        if not (os.path.basename(argv[0]) in ("libreoffice", "soffice") and "--convert-to" in argv):
            raise Refused(
                f"{argv[0]!r} does not run here: only `python -c <pyautogui code>` and "
                "`libreoffice --convert-to …` do (start the server with --allow-any-code to run any command)"
            )
        argv = checked_conversion(s, argv)
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=s.env,
                           shell=bool(body.get("shell")) and s.allow_any_code, cwd=s.home)
    except FileNotFoundError:
        return h.reply(200, {"status": "error", "output": "", "error": f"{argv[0]}: not found", "returncode": 127})
    except subprocess.TimeoutExpired:
        return h.reply(200, {"status": "error", "output": "", "error": "timed out after 120 s", "returncode": -1})
    h.reply(200, {"status": "success" if p.returncode == 0 else "error", "output": p.stdout,
                  "error": p.stderr, "returncode": p.returncode})


def vm_path(s, path):
    """Where a path of the VM's file system lives here: its own path when under this desktop's
    home or files folder, else the same name under the files folder (OSWorld's
    `/home/user/x.xlsx` is `files/x.xlsx`). The path, links resolved, must lie in one of the two."""
    if not path:
        raise BadRequest("`file_path` is missing")
    p = os.path.abspath(os.path.join(s.home, path))
    if not any(p.startswith(base + os.sep) for base in (s.home, s.files)):
        p = os.path.join(s.files, os.path.basename(p))
    return inside_session(s, p, path)


def vm_dir(s, path):
    """Where a folder of the VM's file system lives here: itself when it is this desktop's home
    or files folder or lies under one, else the files folder (OSWorld's `/home/user`)."""
    p = os.path.abspath(os.path.join(s.home, path))
    if not any(p == base or p.startswith(base + os.sep) for base in (s.home, s.files)):
        p = s.files
    return inside_session(s, p, path)


def inside_session(s, p, asked):
    """`p` with every link resolved, if that lies in the home or files folder; else refused."""
    real = os.path.realpath(p)
    for base in (s.home, s.files):
        b = os.path.realpath(base)
        if real == b or real.startswith(b + os.sep):
            return real
    raise Refused(f"{asked!r} resolves to {real}, outside this desktop's session folder")


def checked_conversion(s, argv):
    """The command that runs `libreoffice --convert-to FORMAT [--outdir DIR] FILE…` when any code
    is not allowed, or Refused: FORMAT's extension from CONVERT_FORMATS (a filter name and its
    options of plain characters may follow), every FILE an existing file and DIR an existing
    folder inside this desktop's session folder (links resolved, OSWorld's paths mapped as
    `vm_path` maps them), the output file no link; flags that only change how LibreOffice starts
    are dropped, and anything else is refused. The command runs the `soffice` on the PATH with a
    profile of its own."""
    fmt, outdir, files = None, None, []
    args = list(argv[1:])
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        name, eq, value = a.partition("=")
        if name in ("--convert-to", "--outdir") and a.startswith("--"):
            if not eq:
                if i >= len(args):
                    raise Refused(f"{name} needs a value")
                value = args[i]
                i += 1
            if name == "--convert-to":
                if fmt is not None:
                    raise Refused("--convert-to is given twice")
                fmt = value
            else:
                if outdir is not None:
                    raise Refused("--outdir is given twice")
                outdir = value
        elif a in CONVERT_FLAGS:
            continue
        elif a.startswith("-"):
            raise Refused(
                f"{a!r} is not passed to a conversion here: only --convert-to FORMAT, --outdir DIR, "
                "files and --headless (start the server with --allow-any-code to run any command)"
            )
        else:
            files.append(a)
    if fmt is None:
        raise Refused("a conversion needs --convert-to FORMAT")
    ext, _, rest = fmt.partition(":")
    filt, _, options = rest.partition(":")
    if ext.lower() not in CONVERT_FORMATS:
        raise Refused(
            f"--convert-to {ext!r}: files convert here only to {', '.join(sorted(CONVERT_FORMATS))}"
        )
    if (rest and not CONVERT_FILTER.fullmatch(filt)) or not CONVERT_OPTIONS.fullmatch(options):
        raise Refused(f"--convert-to {fmt!r}: the filter or its options hold characters not accepted here")
    if not files:
        raise Refused("a conversion needs a file to convert")
    out = vm_dir(s, outdir) if outdir is not None else inside_session(s, s.home, ".")
    if not os.path.isdir(out):
        raise Refused(f"--outdir {outdir!r}: no such folder")
    inputs = []
    for f in files:
        p = vm_path(s, f)
        if not os.path.isfile(p):
            raise Refused(f"{f!r}: no such file in this desktop's session folder")
        target = os.path.join(out, os.path.splitext(os.path.basename(p))[0] + "." + ext.lower())
        if os.path.islink(target):
            raise Refused(f"the output {target} is a link")
        inputs.append(p)
    return ["soffice", "--headless", "--norestore",
            f"-env:UserInstallation=file://{s.root}/convert-profile",
            "--convert-to", fmt, "--outdir", out] + inputs


def r_upload(h, s):
    form = h.form_body()
    path, data = form.get("file_path"), form.get("file_data")
    if path is None or data is None:
        raise BadRequest("the form needs `file_path` and `file_data`")
    dest = vm_path(s, path.decode())
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    tmp = dest + ".part"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, dest)
    s.uploaded.add(dest)
    h.reply(200, "File uploaded", "text/plain")


def r_file(h, s):
    form = h.form_body()
    path = form.get("file_path")
    if path is None:
        raise BadRequest("the form needs `file_path`")
    p = vm_path(s, path.decode())
    if not os.path.isfile(p):
        return h.reply(404, {"status": "error", "message": f"{path.decode()}: no such file"})
    with open(p, "rb") as f:
        h.reply(200, f.read(), "application/octet-stream")


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


def document_ready(title):
    """Whether the window titled `title` shows a document (a spreadsheet's table, a text)."""
    import gi

    gi.require_version("Atspi", "2.0")
    from gi.repository import Atspi

    A = Atspi.Accessible

    def find(node, depth):
        role = A.get_role_name(node)
        if role in ("table", "document spreadsheet", "document text", "document presentation"):
            return True
        if depth > 8:
            return False
        for i in range(min(A.get_child_count(node), 64)):
            ch = A.get_child_at_index(node, i)
            if ch is not None and A.get_state_set(ch).contains(Atspi.StateType.SHOWING) and find(ch, depth + 1):
                return True
        return False

    try:
        desktop = Atspi.get_desktop(0)
        for i in range(A.get_child_count(desktop)):
            app = A.get_child_at_index(desktop, i)
            for j in range(A.get_child_count(app) if app is not None else 0):
                w = A.get_child_at_index(app, j)
                if w is not None and A.get_name(w) == title and find(w, 0):
                    return True
    except Exception:
        return False
    return False


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
    Actions_singleton.restore_settings()
    Actions_singleton.pg.moveTo(s.width // 2, s.height // 2)
    h.reply(200, {"status": "success"})


ROUTES = {
    ("GET", "/platform"): r_platform,
    ("GET", "/screen_size"): r_screen_size,
    ("POST", "/screen_size"): r_screen_size,
    ("GET", "/cursor_position"): r_cursor,
    ("GET", "/screenshot"): r_screenshot,
    ("GET", "/accessibility"): r_accessibility,
    ("POST", "/execute"): r_execute,
    ("POST", "/setup/execute"): r_execute,
    ("POST", "/setup/upload"): r_upload,
    ("POST", "/setup/open_file"): r_open_file,
    ("POST", "/setup/launch"): r_launch,
    ("POST", "/setup/activate_window"): r_activate,
    ("POST", "/setup/reset"): r_reset,
    ("POST", "/file"): r_file,
}


# requests that only look (the tree read ahead after an action stays valid across them)
OBSERVING = {("GET", "/accessibility"), ("GET", "/screenshot"), ("GET", "/screen_size"),
             ("POST", "/screen_size"), ("GET", "/platform"), ("GET", "/cursor_position")}


def exposure(host, allow_any_code):
    """What binding `host` (beyond loopback) hands to whoever reaches the port with the key."""
    what = ("runs any Python and any command it is sent, as this user (--allow-any-code)"
            if allow_any_code else
            "drives this desktop's mouse and keyboard (pyautogui), uploads, reads and converts "
            "files in its session folder, and opens them in LibreOffice")
    return f"listening on {host}, beyond this machine: whoever reaches the port with the key {what}"


def main():
    global Actions_singleton
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=5000)
    ap.add_argument("--screen", default="1920x1080")
    ap.add_argument("--allow-any-code", action="store_true")
    ap.add_argument("--root", help="the session's folder (default: a new temporary one)")
    ap.add_argument("--api-key-env", help="take only requests with `Authorization: Bearer <key>`, "
                    "the key read from this environment variable (needed beyond loopback)")
    ap.add_argument("--remove-script", action="store_true",
                    help="remove this script and its (private) folder when the server stops")
    a = ap.parse_args()
    key = None
    if a.api_key_env:
        key = os.environ.get(a.api_key_env)
        if not key:
            raise SystemExit(f"desktop: --api-key-env: the environment variable {a.api_key_env} is not set")
    if not is_loopback(a.host):
        if key is None:
            raise SystemExit(
                f"desktop: --host {a.host} is reachable beyond this machine: give --api-key-env VAR "
                "(requests must then carry `Authorization: Bearer <key>`), or bind 127.0.0.1"
            )
    try:
        w, hgt = (int(x) for x in a.screen.lower().split("x"))
    except ValueError:
        raise SystemExit(f"desktop: --screen {a.screen!r}: expected WIDTHxHEIGHT")
    root = a.root or tempfile.mkdtemp(prefix="rla-desktop-")
    session = Session(w, hgt, root, a.allow_any_code, key)

    stopping = threading.Event()

    def on_signal(sig, frame):
        # the first signal stops the server; a second one, while it cleans up, is ignored so
        # that the cleanup ends every process it started
        if stopping.is_set():
            return
        stopping.set()
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        session.start()
        Actions_singleton = Actions()
        Actions_singleton.office = session.uno
        httpd = ThreadingHTTPServer((a.host, a.port), Handler)
        httpd.daemon_threads = True
        httpd.session = session
        log(f"serving on http://{a.host}:{httpd.server_address[1]}")
        if not is_loopback(a.host):
            log(exposure(f"{a.host}:{httpd.server_address[1]}", a.allow_any_code))
        print(f"listening on http://{a.host}:{httpd.server_address[1]}", flush=True)
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        session.stop()
        if a.root is None:
            shutil.rmtree(root, ignore_errors=True)
        if a.remove_script:
            try:
                os.remove(os.path.abspath(__file__))
                os.rmdir(os.path.dirname(os.path.abspath(__file__)))
            except OSError:
                pass
        log("stopped; every process it started has ended")


if __name__ == "__main__":
    main()
