"""``AlfredTWEnv`` over the native household, with ALFWorld 0.4.2's interface and behaviour."""

from __future__ import annotations

import io
import json
import os
import random
import sys
import textwrap
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from .... import _native

__all__ = ["AlfredTWEnv", "AlfredBatchEnv", "TASK_TYPES"]

#: ALFWorld's task types by the numbers its configuration lists in ``env.task_types``.
TASK_TYPES = {
    1: "pick_and_place_simple",
    2: "look_at_obj_in_light",
    3: "pick_clean_then_place_in_recep",
    4: "pick_heat_then_place_in_recep",
    5: "pick_cool_then_place_in_recep",
    6: "pick_two_obj_and_place",
}

_DATA_KEYS = {
    "train": "data_path",
    "eval_in_distribution": "eval_id_data_path",
    "eval_out_of_distribution": "eval_ood_data_path",
}


def _get(config: Dict[str, Any], *keys: str, default: Any = KeyError) -> Any:
    node: Any = config
    for i, k in enumerate(keys):
        if not isinstance(node, dict) or k not in node:
            if default is KeyError:
                raise KeyError(f"config: missing {'.'.join(keys[:i + 1])}")
            return default
        node = node[k]
    return node


class AlfredTWEnv:
    """ALFWorld's text environment: ``AlfredTWEnv(config, train_eval)`` collects the game
    folders under the configured data path (those with ``traj_data.json`` whose task type is
    in ``env.task_types`` and a solvable ``game.tw-pddl``, skipping ``movable`` and ``Sliced``
    paths, as ALFWorld does), and ``init_env(batch_size)`` returns the batch environment."""

    def __init__(self, config: Dict[str, Any], train_eval: str = "train"):
        if train_eval not in _DATA_KEYS:
            raise ValueError(
                f"train_eval {train_eval!r}: one of {', '.join(_DATA_KEYS)}")
        self.config = config
        self.train_eval = train_eval
        self.collect_game_files()

    def collect_game_files(self, verbose: bool = False) -> None:
        key = _DATA_KEYS[self.train_eval]
        data_path = os.path.expandvars(_get(self.config, "dataset", key))
        if not os.path.isdir(data_path):
            raise FileNotFoundError(f"config: dataset.{key} = {data_path!r} is not a folder")
        task_types = [TASK_TYPES[t] for t in _get(self.config, "env", "task_types")
                      if t in TASK_TYPES]
        self.game_files: List[str] = []
        for root, _dirs, files in os.walk(data_path, topdown=False):
            if "traj_data.json" not in files:
                continue
            if "movable" in root or "Sliced" in root:
                continue
            with open(os.path.join(root, "traj_data.json"), encoding="utf-8") as f:
                traj = json.load(f)
            if traj.get("task_type") not in task_types:
                continue
            game = os.path.join(root, "game.tw-pddl")
            if not os.path.exists(game):
                continue
            with open(game, encoding="utf-8") as f:
                if not json.load(f).get("solvable", False):
                    continue
            self.game_files.append(game)
        limit = _get(self.config, "dataset",
                     "num_train_games" if self.train_eval == "train" else "num_eval_games",
                     default=-1)
        if limit > 0:
            self.game_files = self.game_files[:limit]
        self.num_games = len(self.game_files)
        if verbose:
            print(f"Overall we have {self.num_games} games in split={self.train_eval}")

    def max_steps(self) -> Optional[int]:
        """The episode's step limit from the configuration; 0 or ``None`` is none, as in
        textworld."""
        method = _get(self.config, "general", "training_method")
        if method == "dagger":
            return _get(self.config, "dagger", "training", "max_nb_steps_per_episode")
        if method == "dqn":
            return _get(self.config, "rl", "training", "max_nb_steps_per_episode")
        raise NotImplementedError(f"general.training_method {method!r}: dagger or dqn")

    def init_env(self, batch_size: int) -> "AlfredBatchEnv":
        if self.num_games == 0:
            raise ValueError(f"no games found for {self.train_eval}")
        if self.train_eval == "train" and _get(self.config, "env", "domain_randomization",
                                               default=False):
            raise NotImplementedError(
                "env.domain_randomization = True (object names shuffled): not supported; "
                "set it to False")
        expert = None
        if (self.train_eval == "train"
                and _get(self.config, "general", "training_method") == "dagger"):
            expert = _get(self.config, "env", "expert_type", default="handcoded")
            if expert not in ("handcoded", "planner"):
                raise ValueError(f"env.expert_type {expert!r}: handcoded or planner")
        return AlfredBatchEnv(self.game_files, batch_size, self.max_steps(), expert)


def _shuffled_cycle(files: List[str], rng: Any) -> Iterator[str]:
    order = list(files)
    while True:
        rng.shuffle(order)
        yield from order


class _NumpyOrder:
    """The game order of textworld's batch environment: NumPy's ``RandomState`` shuffles, or
    Python's ``random`` where NumPy is not installed (then the order differs from ALFWorld's)."""

    def __init__(self, seed: int):
        try:
            import numpy as np
        except ImportError:
            self._rng: Any = random.Random(seed)
        else:
            self._rng = np.random.RandomState(seed)

    def shuffle(self, xs: List[str]) -> None:
        self._rng.shuffle(xs)


class AlfredBatchEnv:
    """What ``AlfredTWEnv.init_env`` returns: ``batch_size`` games at a time, stepped together.
    Observations, scores and dones are tuples; ``infos`` is a dictionary of lists with ``won``,
    ``admissible_commands`` and ``extra.gamefile`` (the game's path after ``reset``, ``None``
    after a step, as in ALFWorld). In DAgger training ``extra.expert_plan`` comes too: for the
    ``planner`` expert the shortest plan, for the ``handcoded`` one ``["look"]`` after a reset
    and then the next command of an expert that, like ALFWorld's, knows only what the episode
    has shown (it may search the receptacles in another order than ALFWorld's). A slot whose
    episode is done repeats its last result until the next ``reset``."""

    def __init__(self, game_files: Sequence[str], batch_size: int, max_steps: Optional[int],
                 expert: Optional[str] = None):
        if batch_size < 1:
            raise ValueError(f"batch_size = {batch_size}: must be at least 1")
        self.gamefiles = list(game_files)
        self.batch_size = batch_size
        self.max_steps = max_steps or None
        self.expert = expert
        self._loaded: Dict[str, Any] = {}
        self._batch: Optional[Any] = None
        self._last_obs: List[str] = []
        self._last_commands: List[Optional[str]] = []
        self.seed(1234)

    def seed(self, seed: Optional[int] = None) -> List[Optional[int]]:
        """Sets the order the games are played in (ALFWorld's: shuffled, reshuffled each pass)."""
        self._cycle = _shuffled_cycle(self.gamefiles, _NumpyOrder(seed))
        return [seed]

    def _household(self, path: str) -> Any:
        if path not in self._loaded:
            self._loaded[path] = _native.Household.from_game(path, self.max_steps)
        return self._loaded[path]

    def _infos(self, infos: Dict[str, list], gamefiles: List[Optional[str]],
               after_reset: bool) -> Dict[str, list]:
        out = {
            "won": infos["won"],
            "admissible_commands": infos["admissible_commands"],
            "extra.gamefile": gamefiles,
        }
        if self.expert == "planner":
            out["extra.expert_plan"] = [p or [] for p in self._batch.expert_plans()]
        elif self.expert == "handcoded":
            nexts = [None] * self.batch_size if after_reset else self._batch.expert_next()
            out["extra.expert_plan"] = [
                [c] if c is not None and c in adm else ["look"]
                for c, adm in zip(nexts, infos["admissible_commands"])]
        return out

    def reset(self) -> Tuple[Tuple[str, ...], Dict[str, list]]:
        current = [next(self._cycle) for _ in range(self.batch_size)]
        self._batch = _native.HouseholdBatch([self._household(p) for p in current])
        obs, infos = self._batch.reset()
        self._dones = [False] * self.batch_size
        self._last_obs = list(obs)
        self._last_scores = [0] * self.batch_size
        self._last_commands = [None] * self.batch_size
        return tuple(obs), self._infos(infos, current, after_reset=True)

    def step(self, commands: Sequence[str]):
        if not isinstance(commands, (list, tuple)):
            raise AssertionError("Expected a list of commands.")
        if self._batch is None:
            raise RuntimeError("call reset() before step()")
        if len(commands) != self.batch_size:
            raise ValueError(f"{len(commands)} commands for a batch of {self.batch_size}")
        for c in commands:
            if not isinstance(c, str):
                raise TypeError(f"a command must be a string, not {type(c).__name__}")
        self._last_commands = list(commands)
        live = [None if d else c for c, d in zip(commands, self._dones)]
        obs, scores, dones, infos = self._batch.step(live)
        for i, o in enumerate(obs):
            if o is not None:
                self._last_obs[i] = o
                self._last_scores[i] = int(scores[i])
                self._dones[i] = bool(dones[i])
        infos = self._infos(infos, [None] * self.batch_size, after_reset=False)
        return (tuple(self._last_obs), tuple(self._last_scores), tuple(self._dones), infos)

    def close(self) -> None:
        self._batch = None

    def skip(self, nb_games: int = 1) -> None:
        """Skips games in the order they are played."""
        for _ in range(nb_games):
            next(self._cycle)

    def render(self, mode: str = "human") -> Any:
        """Each slot's last command (``> command``) and observation, slots separated by
        ``-----``, as textworld renders them: printed in ``"human"`` mode (paragraphs wrapped
        at 80 columns, without textworld's colour), returned as a string in ``"text"`` mode and as a ``StringIO`` in
        ``"ansi"`` mode."""
        if mode not in ("human", "text", "ansi"):
            raise ValueError(f"render mode {mode!r}: human, text or ansi")
        parts = []
        for command, ob in zip(self._last_commands, self._last_obs):
            msg = ob.rstrip() + "\n"
            if command is not None:
                msg = "> " + command + "\n" + msg
            if mode == "human":
                msg = "\n".join("\n".join(textwrap.wrap(p, width=80)) for p in msg.split("\n"))
            parts.append(msg)
        text = "\n-----\n".join(parts) + "\n"
        if mode == "text":
            return text
        if mode == "ansi":
            return io.StringIO(text)
        sys.stdout.write(text)
        return None
