"""Plays every game folder named on the command line in ALFWorld's own engine (TextWorld's PDDL
backend with ALFWorld's wrappers) with ALFWorld's handcoded expert, at most 200 steps each, and
prints one JSON line a game: {"game", "initial", "admissible", "won", "steps", "error"} (the
feedback after reset and its sorted admissible commands, as the engine gives them)."""
import json
import random
import sys

import textworld
from alfworld.agents.environment.alfred_tw_env import (
    AlfredDemangler, AlfredExpert, AlfredExpertType, AlfredInfos)

for folder in sys.argv[1:]:
    infos = textworld.EnvInfos(won=True, admissible_commands=True, extras=["gamefile", "expert_plan"])
    env = textworld.start(folder + "/game.tw-pddl", request_infos=infos,
                          wrappers=[AlfredDemangler(), AlfredInfos, AlfredExpert(AlfredExpertType.HANDCODED)])
    random.seed(0)
    out = {"game": folder, "won": False, "steps": 0, "error": None}
    try:
        state = env.reset()
        out["initial"] = state.feedback
        out["admissible"] = sorted(state["admissible_commands"])
        done = False
        while not done and out["steps"] < 200:
            state, _, done = env.step(state["extra.expert_plan"][0])
            out["steps"] += 1
        out["won"] = bool(state["won"])
    except Exception as e:  # the expert itself fails on some scenes
        out["error"] = repr(e)[:200]
    env.close()
    print(json.dumps(out), flush=True)
