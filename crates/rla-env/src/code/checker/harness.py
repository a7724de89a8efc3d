# The checker's harness: the tests' side. It holds the tests, runs them in its own process and
# decides the verdict. The program lives in another process (the runner), in a run of its own:
# every name the tests use and do not define is the program's, reached through a `Remote` that
# asks the runner and gets plain data back. Values are compared here, as exact built-in types,
# so no object of the program answers a comparison. The report is written only after every
# check ran; an empty or cut-short report is a failure.
import ast
import builtins
import json
import os
import sys


class ProgramEnded(Exception):
    """The program's process ended, or answered out of protocol."""


_requests = None
_replies = None


def _ask(msg):
    try:
        send(_requests, msg)
        rep = receive(_replies)
    except (OSError, ValueError) as e:
        raise ProgramEnded("the program's process is gone (%s)" % e)
    if type(rep) is not dict:
        raise ProgramEnded("the program's process ended")
    if "err" in rep:
        err = rep["err"]
        name, text = (err[0], err[1]) if type(err) is list and len(err) == 2 else ("Exception", "")
        name, text = str(name), str(text)
        cls = getattr(builtins, name, None)
        if isinstance(cls, type) and issubclass(cls, Exception) and cls is not StopIteration:
            raise cls(text)
        raise RuntimeError("%s: %s" % (name, text))
    if "ok" not in rep:
        raise ProgramEnded("the program answered out of protocol")
    return rep["ok"]


def _value(v):
    return dec(v, _remote)


def _remote(v):
    if v[0] == "h" and type(v[1]) is int:
        return Remote(v[1])
    if v[0] == "m" and type(v[1]) is int and len(v) == 3:
        name = v[2]
        if type(name) is str and name.split(".")[0] in getattr(sys, "stdlib_module_names", ()):
            # a standard module the program imported: the harness's own copy, never the
            # program's (which it could have changed)
            import importlib

            return importlib.import_module(name)
        return Remote(v[1])
    raise WireError("malformed value")


def _arg(x):
    def other(o):
        if type(o) is Remote:
            return ["h", object.__getattribute__(o, "_h")]
        raise WireError("a %s cannot be passed to the program" % type(o).__name__)

    return enc(x, other)


class Remote:
    """An object of the program's: it can be called, its attributes read, its items listed; it
    cannot be compared, hashed or taken as true or false, since only plain data is judged."""

    __slots__ = ("_h",)

    def __init__(self, h):
        object.__setattr__(self, "_h", h)

    def _target(self):
        return ["h", object.__getattribute__(self, "_h")]

    def __call__(self, *args, **kwargs):
        return _value(_ask({"op": "call", "target": self._target(),
                            "args": [_arg(a) for a in args],
                            "kwargs": [[k, _arg(v)] for k, v in kwargs.items()]}))

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _value(_ask({"op": "getattr", "target": self._target(), "name": name}))

    def __iter__(self):
        return iter(_value(_ask({"op": "iter", "target": self._target()})))

    def __len__(self):
        n = _value(_ask({"op": "len", "target": self._target()}))
        if type(n) is not int:
            raise TypeError("len() of a program's object is not an int")
        return n

    def __getitem__(self, key):
        return _value(_ask({"op": "getitem", "target": self._target(), "key": _arg(key)}))

    def _refuse(self, *args):
        raise TypeError("the program gave an object that is not plain data")

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _refuse
    __bool__ = __hash__ = __contains__ = __int__ = __float__ = __index__ = _refuse
    __str__ = __format__ = _refuse

    def __repr__(self):
        return "<an object of the program>"


def _free_names(tree):
    """Names the tests read and never bind: the program's (or built-ins)."""
    bound, read = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                bound.add((a.asname or a.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound.update(node.names)
        elif hasattr(ast, "MatchAs") and isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
    return sorted(n for n in read - bound if not hasattr(builtins, n))


def _main():
    global _requests, _replies
    payload = json.loads(sys.stdin.buffer.read())
    report = os.fdopen(os.dup(1), "w")
    # what the tests print goes to standard error; the report alone goes to standard output
    os.dup2(2, 1)
    replies_fd, requests_fd = (int(f) for f in os.environ["RLA_FDS"].split())
    _replies = os.fdopen(replies_fd, "rb")
    _requests = os.fdopen(requests_fd, "wb")
    kind = payload["kind"]
    code = payload["setup"] + "\n" + payload["test"] + "\n"
    extra = [payload["entry_point"]] if kind == "check" else []
    verdict = {"pass": False, "why": ""}
    try:
        tree = ast.parse(code, "<tests>")
        g = {"__name__": "__tests__", "__builtins__": builtins}
        asked = sorted(set(_free_names(tree)) | set(extra))
        if asked:
            got = _ask({"op": "names", "names": asked})
            if type(got) is not dict:
                raise ProgramEnded("the program answered out of protocol")
            for n in asked:
                if n in got:
                    g[n] = _value(got[n])
        exec(compile(tree, "<tests>", "exec"), g)
        if kind == "check":
            entry = payload["entry_point"]
            if entry not in g:
                raise NameError("the program defines no %s" % entry)
            g["check"](g[entry])
        verdict = {"pass": True, "why": ""}
    except ProgramEnded as e:
        verdict = {"pass": False, "why": "ended", "detail": str(e)[:500]}
    except MemoryError:
        verdict = {"pass": False, "why": "memory", "detail": ""}
    except BaseException as e:
        try:
            detail = "%s: %s" % (type(e).__name__, str(e)[:500])
        except BaseException:
            detail = type(e).__name__
        verdict = {"pass": False, "why": "failed", "detail": detail}
    verdict["rla_check"] = 1
    report.write(json.dumps(verdict) + "\n")
    report.flush()
    os._exit(0)


_main()
