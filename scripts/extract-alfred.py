#!/usr/bin/env python3
"""Extracts the household generator's tables from ALFWorld's own data into
crates/rla-env/data/alfred.json.

ALFWorld 0.4.2 ships ALFRED's 120 floor plans (`alfworld/gen/layouts/FloorPlan*-objects.json`: the
classes a floor plan holds; `FloorPlan*-openable.json`: its receptacle instances, each with the pose
the agent takes to reach it) and its tables (`alfworld/gen/constants.py`). The generator needs:

  * per floor plan: its room kind, the object classes it holds and its receptacle instances with
    their poses (receptacles with one pose share one location);
  * which receptacle classes can contain which object classes (`VAL_RECEPTACLE_OBJECTS`), which
    classes are heatable, coolable, cleanable, sliceable, toggleable (`VAL_ACTION_OBJECTS`), which
    receptacles open (`OPENABLE_CLASS_LIST`), which objects are receptacles themselves
    (`MOVABLE_RECEPTACLES`), `MAX_NUM_OF_OBJ_INSTANCES`, every class name (`OBJECTS`);
  * which floor plans are ALFRED's training scenes (`TRAIN_SCENE_NUMBERS`) and which its
    `valid_unseen` scenes (ALFWorld's out-of-distribution split: FloorPlan10, 219, 308 and 424, held
    out of ALFRED's training scenes).

Usage: scripts/extract-alfred.py [--check]   (run with a Python that imports alfworld, e.g.
target/py-venv/bin/python; --check compares the file in the repository with the wheel's data and
exits 1 on any difference, which python/tests/test_alfred_data.py runs).
"""
import argparse
import glob
import importlib.util
import json
import os
import re
import sys

OUT = os.environ.get("ALFRED_JSON") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "rla-env", "data", "alfred.json")

# ALFRED's validation scenes that no training trajectory uses: ALFWorld's `valid_unseen`.
VALID_UNSEEN = [10, 219, 308, 424]
# Receptacles a floor plan names among its classes but whose instances its `-openable.json` does
# not list: they stand in the scene all the same; ALFRED's kitchens have four burners.
IMPLIED_COUNT = {"StoveBurner": 4}
# ALFRED's table of where objects stand (`VAL_RECEPTACLE_OBJECTS`) names no lamp: lamps stand on the
# furniture tops where ALFRED's scenes put them.
LAMP_HOLDERS = ["CoffeeTable", "Desk", "DiningTable", "Dresser", "SideTable", "TVStand"]


def alfworld_root():
    spec = importlib.util.find_spec("alfworld")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("error: this Python cannot import alfworld (use target/py-venv/bin/python after scripts/python-env.sh)")
    return spec.submodule_search_locations[0]


def load_constants(root):
    spec = importlib.util.spec_from_file_location("alfred_constants", os.path.join(root, "gen", "constants.py"))
    c = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(c)
    return c


def room_of(n):
    return {0: "kitchen", 2: "livingroom", 3: "bedroom", 4: "bathroom"}[n // 100]


def tables(root):
    c = load_constants(root)
    canon = {o.lower(): o for o in c.OBJECTS}
    sliced = re.compile(r"Sliced$")
    can_contain = {
        r: sorted({canon.get(o.lower(), o) for o in objs if not sliced.search(o)})
        for r, objs in c.VAL_RECEPTACLE_OBJECTS.items()
    }
    static = set(c.VAL_RECEPTACLE_OBJECTS) - set(c.MOVABLE_RECEPTACLES)
    lamps = sorted(o for o in c.VAL_ACTION_OBJECTS["Toggleable"] if o.endswith("Lamp"))
    placeable = {o for objs in can_contain.values() for o in objs}
    props = {}
    for o in sorted(placeable | set(lamps)):
        p = []
        if o in placeable and o not in static and o not in lamps:
            p.append("pickupable")
        if o in c.MOVABLE_RECEPTACLES:
            p.append("isReceptacleObject")
        for key, name in [("Cleanable", "cleanable"), ("Heatable", "heatable"), ("Coolable", "coolable"),
                          ("Sliceable", "sliceable"), ("Toggleable", "toggleable")]:
            if o in c.VAL_ACTION_OBJECTS[key]:
                p.append(name)
        if p:
            props[o] = sorted(p)
    openable = sorted(r for r in c.OPENABLE_CLASS_LIST if r in static)
    plans = {}
    layouts = os.path.join(root, "gen", "layouts")
    for f in sorted(glob.glob(os.path.join(layouts, "FloorPlan*-objects.json")),
                    key=lambda p: int(re.search(r"FloorPlan(\d+)-", p).group(1))):
        n = int(re.search(r"FloorPlan(\d+)-", f).group(1))
        with open(f) as fh:
            classes = sorted({canon.get(o.lower(), o) for o in json.load(fh)})
        with open(os.path.join(layouts, "FloorPlan%d-openable.json" % n)) as fh:
            openable_json = json.load(fh)
        receps = []
        for key, pose in sorted(openable_json.items()):
            parts = key.split("|")
            cls = parts[-1] if len(parts) > 4 else parts[0]
            x, z, rot, hor = pose
            receps.append([cls, [int(round(x / 0.25)), int(round(z / 0.25)), int(round(rot / 90)) % 4, int(hor)]])
        listed = {r[0] for r in receps}
        implied = sorted(r for r in classes if r in static and r not in listed and r not in ("Sink", "Bathtub"))
        plans[str(n)] = {
            "room": room_of(n),
            "objects": [o for o in classes if o in props],
            "receptacles": receps,
            "implied": {r: IMPLIED_COUNT.get(r, 1) for r in implied},
        }
    rooms = {"Kitchen": "kitchen", "LivingRoom": "livingroom", "Bedroom": "bedroom", "Bathroom": "bathroom"}
    goals_valid = {g: sorted(rooms[r] for r in rs) for g, rs in c.GOALS_VALID.items()
                   if g != "pick_and_place_with_movable_recep"}
    unseen = list(VALID_UNSEEN)
    train = sorted(n for n in c.TRAIN_SCENE_NUMBERS if n not in unseen)
    return {
        "source": "alfworld 0.4.2: gen/layouts/FloorPlan*-objects.json, FloorPlan*-openable.json, gen/constants.py "
                  "(written by scripts/extract-alfred.py)",
        "max_instances": c.MAX_NUM_OF_OBJ_INSTANCES,
        "train_floor_plans": train,
        "unseen_floor_plans": unseen,
        "classes": sorted(set(c.OBJECTS) | set(c.RECEPTACLES)),
        "can_contain": can_contain,
        "props": props,
        "openable": openable,
        "lamp_holders": LAMP_HOLDERS,
        "goals_valid": goals_valid,
        "floor_plans": plans,
    }


def render(data):
    """One line a table entry and a floor plan, so that a change reads as a short diff."""
    def one(v):
        return json.dumps(v, sort_keys=True, separators=(", ", ": "))
    lines = ["{"]
    keys = sorted(data)
    for i, k in enumerate(keys):
        v = data[k]
        end = "," if i + 1 < len(keys) else ""
        if isinstance(v, dict) and v:
            lines.append(" %s: {" % json.dumps(k))
            sub = sorted(v, key=lambda x: (len(x), x)) if k == "floor_plans" else sorted(v)
            for j, sk in enumerate(sub):
                lines.append("  %s: %s%s" % (json.dumps(sk), one(v[sk]), "," if j + 1 < len(sub) else ""))
            lines.append(" }" + end)
        else:
            lines.append(" %s: %s%s" % (json.dumps(k), one(v), end))
    lines.append("}")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare the repository's file with the wheel's data")
    args = ap.parse_args()
    data = tables(alfworld_root())
    text = render(data)
    if args.check:
        with open(OUT) as fh:
            have = fh.read()
        if have != text:
            sys.exit("error: %s differs from the alfworld wheel's data; run scripts/extract-alfred.py" % OUT)
        print("alfred.json agrees with the alfworld wheel")
        return
    tmp = OUT + ".tmp"
    with open(tmp, "w") as fh:
        fh.write(text)
    os.replace(tmp, OUT)
    print("wrote %s: %d floor plans" % (OUT, len(data["floor_plans"])))


if __name__ == "__main__":
    main()
