"""Write the games of tests/fixtures/alfworld-shared-spots and record their traces in ALFWorld's
own engine (alfworld 0.4.2, TextWorld's PDDL backend). In these games several receptacles stand
at one spot (one `loc_bar_…` location named by several `receptacleAtLocation` facts), as ALFRED's
floor plans often have it for shelves, and the traces move objects onto them and `look`.

    scripts/python-env.sh          # once: target/py-venv with alfworld 0.4.2
    target/py-venv/bin/python scripts/record_alfworld_shared_spots.py [OUT_DIR]

OUT_DIR defaults to tests/fixtures/alfworld-shared-spots. The output does not depend on
PYTHONHASHSEED: every random choice comes from a seeded `random.Random`, and the handcoded
expert's use of the global generator is seeded before each expert episode.
"""
import json
import pathlib
import random
import sys

import textworld
from alfworld.agents.environment.alfred_tw_env import (
    AlfredDemangler, AlfredExpert, AlfredExpertType, AlfredInfos)
from alfworld.gen import constants
from alfworld.gen import goal_library

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "alfworld-shared-spots"
ALFWORLD_DATA = pathlib.Path(constants.__file__).resolve().parent.parent / "data"
# the class declarations (`Apple - object`, `AppleType - otype`, `ShelfType - rtype` …) every
# ALFRED problem carries; the same lines as in the development set's games
DECLARATIONS_FROM = ROOT / "tests" / "fixtures" / "alfworld-traces" / "00-pick_and_place_simple-kitchen"

OPENABLE = {"Fridge", "Cabinet", "Microwave", "Drawer", "Safe"}
RECEPTACLE_OBJECTS = {"Bowl", "Cup", "Mug", "Plate", "Pan", "Pot", "Box"}
LAMPS = {"DeskLamp", "FloorLamp"}

# Each game: receptacles (key, ALFRED class, spot), objects (key, class, receptacle key), the
# task, and a scripted probe: commands with `{key}` standing for display names; a command
# starting with `!` is meant to fail ("Nothing happens.").
GAMES = [
    {
        "folder": "00-three-shelves-bathroom",
        "room": "bathroom",
        "seed": 6401,
        "receptacles": [
            ("shelf_a", "Shelf", "wall"), ("shelf_b", "Shelf", "wall"), ("shelf_c", "Shelf", "wall"),
            ("shelf_d", "Shelf", "corner"), ("toilet", "Toilet", "toilet"),
            ("sink", "SinkBasin", "sink"), ("counter", "CounterTop", "counter"),
            ("cabinet_a", "Cabinet", "cabinet_a"), ("cabinet_b", "Cabinet", "cabinet_b"),
            ("drawer", "Drawer", "drawer"), ("garbage", "GarbageCan", "garbage"),
            ("towelholder", "TowelHolder", "towelholder"), ("tphanger", "ToiletPaperHanger", "tphanger"),
        ],
        "objects": [
            ("spray_a", "SprayBottle", "shelf_a"), ("spray_b", "SprayBottle", "cabinet_a"),
            ("sponge_a", "DishSponge", "shelf_b"), ("sponge_b", "DishSponge", "counter"),
            ("soap_a", "SoapBar", "shelf_c"), ("soap_b", "SoapBar", "sink"),
            ("candle", "Candle", "shelf_d"), ("cloth", "Cloth", "drawer"),
            ("paper", "ToiletPaper", "tphanger"), ("soapbottle", "SoapBottle", "toilet"),
        ],
        "task": {"task_type": "pick_and_place_simple", "object_target": "Cloth",
                 "parent_target": "Cabinet"},
        "probe": [
            "look", "go to {shelf_a}", "look", "examine {shelf_b}", "examine {shelf_c}",
            "take {spray_a} from {shelf_a}", "look", "move {spray_a} to {shelf_b}", "look",
            "take {sponge_a} from {shelf_b}", "move {sponge_a} to {shelf_c}", "look",
            "take {spray_a} from {shelf_b}", "move {spray_a} to {shelf_c}", "look",
            "examine {shelf_c}", "take {spray_a} from {shelf_c}", "move {spray_a} to {shelf_a}",
            "look", "take {soap_a} from {shelf_c}", "move {soap_a} to {shelf_c}", "look",
            "go to {shelf_d}", "look", "take {candle} from {shelf_d}", "move {candle} to {shelf_d}",
            "look", "take {candle} from {shelf_d}", "go to {shelf_c}", "look",
            "move {candle} to {shelf_b}", "look", "go to {toilet}", "look",
            "take {soapbottle} from {toilet}", "move {soapbottle} to {toilet}", "look",
            "take {soapbottle} from {toilet}", "go to {shelf_b}", "move {soapbottle} to {shelf_a}",
            "look", "take {sponge_a} from {shelf_c}", "look", "inventory", "go to {shelf_d}",
            "move {sponge_a} to {shelf_d}", "look", "go to {shelf_a}", "look",
            "!go to {shelf_b}", "take {spray_a} from {shelf_a}", "go to {counter}",
            "move {spray_a} to {counter}", "look", "take {sponge_b} from {counter}",
            "go to {shelf_a}", "move {sponge_b} to {shelf_b}", "look",
            "go to {drawer}", "open {drawer}", "take {cloth} from {drawer}", "look",
            "go to {cabinet_a}", "open {cabinet_a}", "move {cloth} to {cabinet_a}",
        ],
    },
    {
        "folder": "01-two-shelves-livingroom",
        "room": "livingroom",
        "seed": 6402,
        "receptacles": [
            ("shelf_a", "Shelf", "alcove"), ("shelf_b", "Shelf", "alcove"), ("shelf_c", "Shelf", "wall"),
            ("sofa", "Sofa", "sofa"), ("armchair", "ArmChair", "armchair"),
            ("coffeetable", "CoffeeTable", "coffeetable"), ("sidetable", "SideTable", "corner"),
            ("drawer", "Drawer", "corner"), ("tvstand", "TVStand", "tvstand"),
            ("garbage", "GarbageCan", "garbage"),
        ],
        "objects": [
            ("statue_a", "Statue", "shelf_a"), ("statue_b", "Statue", "shelf_c"),
            ("statue_c", "Statue", "coffeetable"), ("vase_a", "Vase", "shelf_b"),
            ("vase_b", "Vase", "sidetable"), ("book", "Book", "sofa"),
            ("keychain", "KeyChain", "drawer"), ("remote", "RemoteControl", "armchair"),
            ("card", "CreditCard", "tvstand"), ("watch", "Watch", "coffeetable"),
        ],
        "task": {"task_type": "pick_and_place_simple", "object_target": "RemoteControl",
                 "parent_target": "Sofa"},
        "probe": [
            "go to {shelf_b}", "look", "take {statue_a} from {shelf_a}", "look",
            "move {statue_a} to {shelf_b}", "look", "examine {shelf_a}", "examine {shelf_b}",
            "take {vase_a} from {shelf_b}", "move {vase_a} to {shelf_a}", "look",
            "take {statue_a} from {shelf_b}", "move {statue_a} to {shelf_a}", "look",
            "go to {shelf_c}", "look", "take {statue_b} from {shelf_c}", "go to {shelf_a}", "look",
            "move {statue_b} to {shelf_b}", "look", "go to {coffeetable}",
            "take {statue_c} from {coffeetable}", "move {statue_c} to {coffeetable}", "look",
            "take {watch} from {coffeetable}", "go to {sidetable}", "look",
            "move {watch} to {sidetable}", "look", "take {vase_b} from {sidetable}",
            "!move {vase_b} to {drawer}", "open {drawer}", "look", "move {vase_b} to {sidetable}",
            "look", "take {keychain} from {drawer}", "inventory", "move {keychain} to {sidetable}",
            "look", "take {watch} from {sidetable}", "move {watch} to {drawer}", "look",
            "close {drawer}", "look", "go to {sofa}", "look", "go to {drawer}", "look",
            "go to {shelf_b}", "take {statue_b} from {shelf_b}", "move {statue_b} to {shelf_b}",
            "look", "go to {armchair}", "take {remote} from {armchair}", "go to {sofa}",
            "move {remote} to {sofa}",
        ],
    },
    {
        "folder": "02-desk-and-drawers-bedroom",
        "room": "bedroom",
        "seed": 6403,
        "receptacles": [
            ("desk", "Desk", "desk"), ("drawer_a", "Drawer", "desk"), ("drawer_b", "Drawer", "desk"),
            ("drawer_c", "Drawer", "dresser"), ("dresser", "Dresser", "dresser"),
            ("shelf", "Shelf", "shelf"), ("bed", "Bed", "bed"), ("sidetable", "SideTable", "sidetable"),
            ("garbage", "GarbageCan", "garbage"), ("hamper", "LaundryHamper", "hamper"),
        ],
        "objects": [
            ("lamp", "DeskLamp", "desk"), ("cd_a", "CD", "drawer_a"), ("cd_b", "CD", "shelf"),
            ("pen", "Pen", "desk"), ("pencil", "Pencil", "drawer_b"), ("phone", "CellPhone", "bed"),
            ("book", "Book", "bed"), ("clock", "AlarmClock", "sidetable"),
            ("keychain", "KeyChain", "dresser"), ("card", "CreditCard", "drawer_c"),
        ],
        "task": {"task_type": "look_at_obj_in_light", "object_target": "CD",
                 "toggle_target": "DeskLamp"},
        "probe": [
            "go to {desk}", "look", "open {drawer_a}", "take {cd_a} from {drawer_a}", "look",
            "move {cd_a} to {desk}", "look", "take {pen} from {desk}", "move {pen} to {drawer_a}",
            "look", "close {drawer_a}", "look", "examine {drawer_a}", "open {drawer_b}",
            "take {pencil} from {drawer_b}", "move {pencil} to {drawer_b}", "look",
            "take {pencil} from {drawer_b}", "move {pencil} to {desk}", "look",
            "take {cd_a} from {desk}", "move {cd_a} to {drawer_b}", "look",
            "take {pencil} from {desk}", "go to {dresser}", "look", "move {pencil} to {dresser}",
            "look", "open {drawer_c}", "take {card} from {drawer_c}", "move {card} to {dresser}",
            "look", "take {keychain} from {dresser}", "move {keychain} to {drawer_c}", "look",
            "go to {bed}", "take {phone} from {bed}", "look", "move {phone} to {bed}", "look",
            "go to {desk}", "use {lamp}", "look", "take {cd_a} from {drawer_b}",
        ],
    },
]


def coordinate(v):
    """ALFRED's mangled number: -0.63 is `_minus_00_dot_63`."""
    sign = "minus" if v < 0 else "plus"
    whole, frac = divmod(round(abs(v) * 100), 100)
    return f"_{sign}_{whole:02d}_dot_{frac:02d}"


def integer(v):
    return f"_minus_{-v}" if v < 0 else str(v)


def identifier(cls, rng):
    xyz = "_bar_".join(coordinate(rng.uniform(-4, 4)) for _ in range(3))
    ident = f"{cls}_bar_{xyz}"
    if cls == "SinkBasin":
        ident = f"Sink_bar_{xyz}_bar_SinkBasin"
    return ident


def location(rng):
    x, z = rng.randint(-15, 15), rng.randint(-15, 15)
    return f"loc_bar_{integer(x)}_bar_{integer(z)}_bar_{rng.randint(0, 3)}_bar_{rng.choice([0, 15, 30, 45, 60])}"


def declarations():
    """The class declarations of the development set's problems, in their order."""
    problem = json.loads((DECLARATIONS_FROM / "game.tw-pddl").read_text())["pddl_problem"]
    body = problem.split("(:objects", 1)[1].split("(:init", 1)[0]
    lines = []
    for line in body.splitlines():
        name = line.strip()
        if name.endswith(("- object", "- otype", "- rtype")) and "_bar_" not in name:
            lines.append(line)
    return lines


def problem(game, index):
    """The PDDL problem, laid out as the development set's games are."""
    rng = random.Random(game["seed"])
    used = set()

    def unique(make):
        while True:
            v = make()
            if v not in used:
                used.add(v)
                return v

    spots = {}
    for _, _, spot in game["receptacles"]:
        if spot not in spots:
            spots[spot] = unique(lambda: location(rng))
    start = unique(lambda: location(rng))
    recs = {key: (cls, unique(lambda: identifier(cls, rng)), spots[spot])
            for key, cls, spot in game["receptacles"]}
    objs = {key: (cls, unique(lambda: identifier(cls, rng)), rec)
            for key, cls, rec in game["objects"]}

    rtypes = sorted({cls for cls, _, _ in recs.values()})
    otypes = sorted({cls for cls, _, _ in objs.values()})
    objects = ["        agent1 - agent"] + declarations()
    objects += [f"        {ident} - receptacle" for _, ident, _ in recs.values()]
    objects += [f"        {ident} - object" for _, ident, _ in objs.values()]
    objects += [f"        {loc} - location" for loc in list(spots.values()) + [start]]
    init = []
    for rt in rtypes:
        for ot in otypes:
            if ot in constants.VAL_RECEPTACLE_OBJECTS.get(rt, ()):
                init.append(f"(canContain {rt}Type {ot}Type)")
    for cls, ident, loc in recs.values():
        init.append(f"(receptacleType {ident} {cls}Type)")
        init.append(f"(receptacleAtLocation {ident} {loc})")
        if cls in OPENABLE:
            init.append(f"(openable {ident})")
    init.append(f"(atLocation agent1 {start})")
    for cls, ident, rec in objs.values():
        init.append(f"(objectType {ident} {cls}Type)")
        if cls in LAMPS:
            init.append(f"(toggleable {ident})")
        else:
            init.append(f"(pickupable {ident})")
        for prop in ("Cleanable", "Heatable", "Coolable", "Sliceable"):
            if cls in constants.VAL_ACTION_OBJECTS[prop]:
                init.append(f"({prop.lower()} {ident})")
        if cls in RECEPTACLE_OBJECTS:
            init.append(f"(isReceptacleObject {ident})")
        _, rec_ident, rec_loc = recs[rec]
        init.append(f"(inReceptacle {ident} {rec_ident})")
        init.append(f"(objectAtLocation {ident} {rec_loc})")
    params = dict(obj=game["task"]["object_target"], recep=game["task"].get("parent_target", ""),
                  toggle=game["task"].get("toggle_target", ""), mrecep="")
    goal = goal_library.gdict[game["task"]["task_type"]]["pddl"].format(**params).replace("#", "-")
    text = f"(define (problem shared_spots_{index})\n(:domain alfred)\n(:objects\n"
    text += "\n".join(objects) + "\n        )\n(:init\n"
    text += "\n".join("        " + f for f in init) + "\n        )\n" + goal + "\n"
    return text, recs, objs


def traj_data(game):
    t = game["task"]
    return {
        "task_type": t["task_type"],
        "pddl_params": {
            "object_target": t["object_target"],
            "parent_target": t.get("parent_target", ""),
            "toggle_target": t.get("toggle_target", ""),
            "mrecep_target": "",
            "object_sliced": False,
        },
    }


def write_game(game, index, folder):
    folder.mkdir(parents=True, exist_ok=True)
    pddl, recs, objs = problem(game, index)
    traj = traj_data(game)
    # one of the goal's two sentences, as ALFWorld's add_task_to_grammar picks it, but seeded
    templates = goal_library.gdict[traj["task_type"]]["templates"]
    p = traj["pddl_params"]
    sentence = random.Random(game["seed"]).choice(templates).format(
        obj=p["object_target"].lower(), recep=p["parent_target"].lower(),
        toggle=p["toggle_target"].lower(), mrecep="")
    grammar = (ALFWORLD_DATA / "alfred.twl2").read_text().replace("UNKNOWN GOAL", sentence)
    data = {
        "pddl_domain": (ALFWORLD_DATA / "alfred.pddl").read_text(),
        "grammar": grammar,
        "pddl_problem": pddl,
        "solvable": True,
    }
    (folder / "game.tw-pddl").write_text(json.dumps(data))
    (folder / "traj_data.json").write_text(json.dumps(traj, indent=2) + "\n")
    return sentence, recs, objs


def start(game_file, expert=False):
    if expert:
        infos = textworld.EnvInfos(won=True, admissible_commands=True, extras=["gamefile", "expert_plan"])
        wrappers = [AlfredDemangler(), AlfredInfos, AlfredExpert(AlfredExpertType.HANDCODED)]
    else:
        infos = textworld.EnvInfos(won=True, admissible_commands=True, extras=["gamefile"])
        wrappers = [AlfredDemangler(), AlfredInfos]
    return textworld.start(str(game_file), request_infos=infos, wrappers=wrappers)


class Recorder:
    def __init__(self, env):
        self.env = env
        self.state = env.reset()
        self.lines = [{"initial": self.state.feedback,
                       "admissible": list(self.state["admissible_commands"]),
                       "won": bool(self.state["won"])}]
        self.done = False

    def step(self, command):
        self.state, _, done = self.env.step(command)
        self.done = bool(done)
        self.lines.append({"command": command, "feedback": self.state.feedback,
                           "admissible": list(self.state["admissible_commands"]),
                           "won": bool(self.state["won"]), "done": bool(done)})
        return self.state.feedback

    def write(self, path):
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines))
        self.env.close()


def display_names(state):
    return {ident: info.name for ident, info in state["_entity_infos"].items()}


def record_probe(game, game_file, recs, objs, out):
    r = Recorder(start(game_file))
    names = display_names(r.state)
    keys = {key: names[ident.lower()] for key, (_, ident, _) in {**recs, **objs}.items()}
    for step in game["probe"]:
        invalid = step.startswith("!")
        command = step.lstrip("!").format(**keys)
        feedback = r.step(command)
        if (feedback == "Nothing happens.") != invalid:
            raise SystemExit(f"{game['folder']}: probe step {command!r} gave {feedback!r}")
        if r.done and step is not game["probe"][-1]:
            raise SystemExit(f"{game['folder']}: the probe won early, at {command!r}")
    r.write(out)
    return len(r.lines) - 1, r.done


def record_random(game, game_file, recs, seed, steps, out):
    """Seeded random admissible commands: a verb first (`go to` mostly a receptacle at a shared
    spot), then a command with that verb; a few invalid commands among them."""
    rng = random.Random(seed)
    r = Recorder(start(game_file))
    names = display_names(r.state)
    spot_count = {}
    for _, _, loc in recs.values():
        spot_count[loc] = spot_count.get(loc, 0) + 1
    shared = {names[ident.lower()] for _, ident, loc in recs.values() if spot_count[loc] > 1}
    weight = {"look": 1.5, "take": 1.5, "move": 1.5, "go": 1.0, "help": 0.05, "inventory": 0.3}
    odd = ["look ", "Look", "fly to the moon", ""]
    for k in range(steps):
        if r.done:
            break
        if k % 15 == 7:
            r.step(odd[(k // 15) % len(odd)])
            continue
        admissible = r.state["admissible_commands"]
        verbs = sorted({c.split()[0] for c in admissible})
        verb = rng.choices(verbs, weights=[weight.get(v, 0.5) for v in verbs])[0]
        options = [c for c in admissible if c.split()[0] == verb]
        if verb == "go":
            near = [c for c in options if c[len("go to "):] in shared]
            if near and rng.random() < 0.6:
                options = near
        r.step(rng.choice(options))
    r.write(out)
    return len(r.lines) - 1, r.done


def record_expert(game_file, seed, out):
    """ALFWorld's handcoded expert to the end (at most 200 steps); `None` where the expert
    itself fails (it raises on some scenes)."""
    env = start(game_file, expert=True)
    random.seed(seed)
    r = Recorder(env)
    try:
        for _ in range(200):
            if r.done:
                break
            r.step(r.state["extra.expert_plan"][0])
    except IndexError as e:
        env.close()
        return None, f"the handcoded expert raised IndexError ({e}) after {len(r.lines) - 1} steps"
    r.write(out)
    return len(r.lines) - 1, r.done


def main():
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    index = []
    for i, game in enumerate(GAMES):
        folder = out / game["folder"]
        sentence, recs, objs = write_game(game, i, folder)
        game_file = folder / "game.tw-pddl"
        episodes = {}
        n, won = record_probe(game, game_file, recs, objs, folder / "trace-probe.jsonl")
        episodes["probe"] = {"file": "trace-probe.jsonl", "steps": n, "won": won}
        seed = game["seed"] * 10 + 1
        n, won = record_random(game, game_file, recs, seed, 80, folder / "trace-random.jsonl")
        episodes["random"] = {"file": "trace-random.jsonl", "seed": seed, "steps": n, "won": won}
        seed = game["seed"] * 10 + 2
        n, won = record_expert(game_file, seed, folder / "trace-expert.jsonl")
        if n is None:
            episodes["expert"] = {"file": None, "global_random_seed": seed, "failed": won}
        else:
            episodes["expert"] = {"file": "trace-expert.jsonl", "global_random_seed": seed,
                                  "steps": n, "won": won}
        spots = {}
        for key, _, spot in game["receptacles"]:
            spots.setdefault(spot, []).append(key)
        names = display_names(start(game_file).reset())
        # each shared spot's receptacles in the order `look` names them
        shared = [[names[recs[k][1].lower()] for k in sorted(keys, key=lambda k: recs[k][1].lower())]
                  for keys in spots.values() if len(keys) > 1]
        meta = {"index": i, "room": game["room"], **traj_data(game), "task_desc": sentence,
                "seed": game["seed"], "shared_location": shared, "episodes": episodes}
        (folder / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
        index.append({"folder": game["folder"], "room": game["room"], "task_desc": sentence,
                      "shared_location": shared,
                      "steps": {k: v["steps"] for k, v in episodes.items() if v["file"]}})
        print(game["folder"], json.dumps(episodes))
    (out / "index.json").write_text(json.dumps(index, indent=2) + "\n")


if __name__ == "__main__":
    main()
