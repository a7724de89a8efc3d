# The checker's wire: values as plain data, one JSON line a message. Shared by the harness (which
# holds the tests) and the runner (which holds the program); each is its own process.
import json as _json

# The deepest value sent, and the most items a container may hold.
_MAX_DEPTH = 100
_MAX_ITEMS = 1_000_000


class WireError(Exception):
    """A value that cannot be sent as plain data."""


def enc(x, other=None, depth=0):
    """`x` as plain data: exact built-in types only (a subclass is not plain data, so that no
    object's own `__eq__` answers for it); anything else goes to `other`, or is refused."""
    if depth > _MAX_DEPTH:
        raise WireError("a value nested deeper than %d" % _MAX_DEPTH)
    t = type(x)
    if x is None:
        return ["N"]
    if t is bool:
        return ["b", x]
    if t is int:
        return ["i", format(x, "x")]
    if t is float:
        return ["f", x.hex()]
    if t is complex:
        return ["c", x.real.hex(), x.imag.hex()]
    if t is str:
        return ["s", x]
    if t is bytes:
        return ["y", x.hex()]
    if t in (list, tuple, set, frozenset, dict):
        if len(x) > _MAX_ITEMS:
            raise WireError("a container of more than %d items" % _MAX_ITEMS)
        d = depth + 1
        if t is dict:
            return ["d", [[enc(k, other, d), enc(v, other, d)] for k, v in dict.items(x)]]
        tag = {list: "l", tuple: "t", set: "S", frozenset: "F"}[t]
        return [tag, [enc(v, other, d) for v in x]]
    if other is not None:
        return other(x)
    raise WireError("a %s is not plain data" % t.__name__)


def _int(s):
    neg = s.startswith("-")
    v = int(s[1:] if neg else s, 16)
    return -v if neg else v


def dec(v, other, depth=0):
    """Plain data back as values of exact built-in types; tags not plain go to `other`."""
    if depth > _MAX_DEPTH + 1 or type(v) is not list or not v or type(v[0]) is not str:
        raise WireError("malformed value")
    tag = v[0]
    d = depth + 1
    if tag == "N":
        return None
    if tag == "b" and type(v[1]) is bool:
        return v[1]
    if tag == "i":
        return _int(v[1])
    if tag == "f":
        return float.fromhex(v[1])
    if tag == "c":
        return complex(float.fromhex(v[1]), float.fromhex(v[2]))
    if tag == "s" and type(v[1]) is str:
        return v[1]
    if tag == "y":
        return bytes.fromhex(v[1])
    if tag in ("l", "t", "S", "F") and type(v[1]) is list:
        items = [dec(x, other, d) for x in v[1]]
        return {"l": list, "t": tuple, "S": set, "F": frozenset}[tag](items)
    if tag == "d" and type(v[1]) is list:
        return {dec(k, other, d): dec(x, other, d) for k, x in v[1]}
    return other(v)


def send(stream, msg):
    stream.write(_json.dumps(msg, allow_nan=False).encode("utf-8") + b"\n")
    stream.flush()


# The longest message read.
_MAX_LINE = 1 << 26


def receive(stream):
    """The next message, or None at the end of the stream (or a message cut short)."""
    line = stream.readline(_MAX_LINE)
    if not line.endswith(b"\n"):
        return None
    return _json.loads(line)
