"""Actions: pyautogui code run in this one interpreter (`Actions`), checked first when any code
is not allowed (`check_code`: pyautogui calls with literal arguments only), `POST /execute` and
`/setup/execute`, and what pyautogui shows: the cursor's position and the screenshot."""

import ast
import io
import os
import subprocess
import sys
import time

from server_accessibility import LookAhead
from server_common import BadRequest, Refused
from server_files import checked_conversion

# pyautogui functions an action may call when any code is not allowed
PYAUTOGUI_CALLS = {
    "click", "doubleClick", "rightClick", "middleClick", "tripleClick", "moveTo", "moveRel",
    "move", "dragTo", "dragRel", "drag", "scroll", "hscroll", "vscroll", "mouseDown", "mouseUp",
    "press", "keyDown", "keyUp", "hotkey", "write", "typewrite", "position", "size", "sleep",
}


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


# the one `Actions` (set by `main` once the X display is up)
Actions_singleton = None


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


def r_cursor(h, s):
    x, y = Actions_singleton.pg.position()
    h.reply(200, [int(x), int(y)])


def r_screenshot(h, s):
    h.reply(200, screenshot_png(s), "image/png")


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
