# The checker's runner: the program's side. It loads the program and answers the harness's
# requests (a name's value, a call, an attribute, the items of an iterable) with plain data, or
# with a handle for an object that is not plain data. It never sees a test: only the names the
# tests use and the arguments they pass. What it answers is the program's behaviour; it decides
# no verdict, and nothing it does, ending early included, can make the harness report a pass.
import builtins as _builtins
import os as _os
import sys as _sys


def _serve(program):
    requests = _os.fdopen(_os.dup(0), "rb")
    replies = _os.fdopen(_os.dup(1), "wb")
    # the program's own reads find nothing and its prints go to standard error
    null = _os.open("/dev/null", _os.O_RDONLY)
    _os.dup2(null, 0)
    _os.close(null)
    _os.dup2(2, 1)
    objects = []

    def handle(x):
        if len(objects) >= 100_000:
            raise WireError("more than 100000 objects")
        objects.append(x)
        if type(x) is type(_os):
            # a module by its name: the harness uses its own copy of a standard one
            return ["m", len(objects) - 1, str(getattr(x, "__name__", ""))]
        return ["h", len(objects) - 1]

    def ref(v):
        if v[0] in ("h", "m") and type(v[1]) is int and 0 <= v[1] < len(objects):
            return objects[v[1]]
        raise WireError("malformed value")

    ns = {"__name__": "__main__", "__builtins__": _builtins}
    loaded = None
    try:
        exec(compile(program, "program.py", "exec"), ns)
    except BaseException as e:  # the program's own end (SystemExit included) is an error
        loaded = e
    while True:
        req = receive(requests)
        if req is None:
            return
        try:
            if loaded is not None:
                raise loaded
            op = req["op"]
            if op == "names":
                out = {}
                for n in req["names"]:
                    if n in ns:
                        out[n] = enc(ns[n], handle)
                reply = {"ok": out}
            else:
                target = ref(req["target"])
                if op == "call":
                    args = [dec(a, ref) for a in req["args"]]
                    kwargs = {k: dec(a, ref) for k, a in req["kwargs"]}
                    value = target(*args, **kwargs)
                elif op == "getattr":
                    value = getattr(target, req["name"])
                elif op == "iter":
                    value = []
                    for item in target:
                        if len(value) >= 1_000_000:
                            raise WireError("more than 1000000 items")
                        value.append(item)
                elif op == "len":
                    value = len(target)
                elif op == "getitem":
                    value = target[dec(req["key"], ref)]
                else:
                    raise WireError("unknown request")
                reply = {"ok": enc(value, handle)}
        except BaseException as e:
            try:
                reply = {"err": [type(e).__name__, str(e)[:2000]]}
            except BaseException:
                reply = {"err": ["Exception", "an error that cannot be shown"]}
        try:
            send(replies, reply)
        except BaseException:
            send(replies, {"err": ["Exception", "a reply that cannot be sent"]})


_serve(PROGRAM)
