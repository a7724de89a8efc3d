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

The code lies in modules beside this script: `server_common` (the log, errors, processes),
`server_session` (the X server, window manager, D-Bus, LibreOffice; the setup endpoints),
`server_actions` (pyautogui and its code checks; `/execute`, the cursor, the screenshot),
`server_accessibility` (the AT-SPI tree) and `server_files` (the session folder's files, path
confinement, conversions; `/setup/upload`, `/file`).
"""

import argparse
import email.parser
import email.policy
import hmac
import ipaddress
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import traceback
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# the modules beside this script: imported from its own folder (also when it is loaded from
# elsewhere), and never compiled into a __pycache__ there (the folder is removed when it stops)
HERE = os.path.dirname(os.path.abspath(__file__))
MODULES = ("server_common.py", "server_accessibility.py", "server_files.py", "server_actions.py",
           "server_session.py")
sys.dont_write_bytecode = True
if sys.path[:1] != [HERE]:
    sys.path.insert(0, HERE)

import server_actions  # noqa: E402
from server_accessibility import r_accessibility  # noqa: E402
from server_actions import Actions, r_cursor, r_execute, r_screenshot  # noqa: E402
from server_common import BadRequest, Refused, TooLarge, log  # noqa: E402
from server_files import checked_conversion, r_file, r_upload  # noqa: E402
from server_session import Session, r_activate, r_launch, r_open_file, r_reset  # noqa: E402

# what the checks of this server reach through this module
__all__ = ["Actions", "BadRequest", "Handler", "Refused", "checked_conversion", "exposure",
           "is_loopback", "main", "r_reset", "server_actions"]

MAX_BODY = 64 << 20


def is_loopback(host):
    """Whether binding `host` reaches this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


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


def r_platform(h, s):
    h.reply(200, "Linux", "text/plain")


def r_screen_size(h, s):
    h.reply(200, {"width": s.width, "height": s.height})


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
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=5000)
    ap.add_argument("--screen", default="1920x1080")
    ap.add_argument("--allow-any-code", action="store_true")
    ap.add_argument("--root", help="the session's folder (default: a new temporary one)")
    ap.add_argument("--api-key-env", help="take only requests with `Authorization: Bearer <key>`, "
                    "the key read from this environment variable (needed beyond loopback)")
    ap.add_argument("--remove-script", action="store_true",
                    help="remove this script, its modules and its (private) folder when the server stops")
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
        server_actions.Actions_singleton = Actions()
        server_actions.Actions_singleton.office = session.uno
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
                for name in (os.path.basename(os.path.abspath(__file__)),) + MODULES:
                    os.remove(os.path.join(HERE, name))
                os.rmdir(HERE)
            except OSError:
                pass
        log("stopped; every process it started has ended")


if __name__ == "__main__":
    main()
