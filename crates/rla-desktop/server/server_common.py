"""What the desktop server's modules share: its log, the errors a request ends with (each one
an HTTP status), private files, and ending the processes it started."""

import os
import signal
import subprocess
import sys
import time


class Refused(Exception):
    """A request the server will not run (HTTP 403)."""


class BadRequest(Exception):
    """A malformed request (HTTP 400)."""


def log(msg):
    sys.stderr.write(f"desktop: {msg}\n")
    sys.stderr.flush()


class TooLarge(Exception):
    pass


def write_private(path, data):
    """Writes `path` readable by this user only (the file replaced, never written through a link)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


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
