"""The desktop's accessibility tree: AT-SPI read over its D-Bus calls (`AtspiBus`), written as
OSWorld's XML (`a11y_xml`), read ahead after an action (`LookAhead`), `GET /accessibility`,
and whether a window shows its document yet (`document_ready`)."""

import threading
import time
import urllib.parse

from server_common import log

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


def r_accessibility(h, s):
    # extension: `?cells=atspi` reads every cell's text over AT-SPI (as OSWorld's server does)
    query = urllib.parse.parse_qs(urllib.parse.urlparse(h.path).query)
    atspi_only = query.get("cells") == ["atspi"]
    ahead, s.ahead = s.ahead, None
    x = ahead.result() if ahead is not None and not atspi_only else None
    if x is None:
        x = a11y_xml(s.atspi, None if atspi_only else s.uno)
    h.reply(200, {"AT": x})
