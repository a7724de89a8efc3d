"""The household: ALFWorld's text games played natively.

``Household.from_game(DIR)`` loads an ALFWorld game folder (``game.tw-pddl`` and
``traj_data.json``) and plays it with ALFWorld's text, admissible commands and scores;
``Household.from_spec`` builds a generated task. ``HouseholdBatch`` steps many households on Rust
threads; ``TextEnv`` wraps one in the Gymnasium interface.
"""

from __future__ import annotations

import json
import os
import random
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _native

__all__ = [
    "Household",
    "HouseholdBatch",
    "TextEnv",
    "batch_of_games",
    "batch_of_specs",
    "train_specs",
    "eval_specs",
    "write_game",
    "SPLITS",
]

#: The fixed evaluation splits: 140 in-domain, 134 out-of-distribution, 140 validation tasks.
SPLITS = ("in_domain", "ood", "validation")

Spec = Dict[str, Any]

#: One household episode. ``Household.from_game(DIR)`` loads an ALFWorld game folder,
#: ``Household.from_spec(spec)`` a generated task; ``reset()`` returns ``(observation, info)``
#: and ``step(command)`` returns ``(observation, score, done, info)``, ``info`` holding
#: ``admissible_commands``, ``won``, ``steps`` and ``gamefile``.
Household = _native.Household

#: Many households stepped together on Rust threads: ``reset()`` returns ``(observations,
#: infos)`` and ``step(commands)`` returns ``(observations, scores, dones, infos)``, ``infos`` a
#: dictionary of lists as ALFWorld's batch environment returns them.
HouseholdBatch = _native.HouseholdBatch


def batch_of_games(paths: Sequence[Union[str, os.PathLike]],
                   step_limit: Optional[int] = None) -> HouseholdBatch:
    """A batch over game folders."""
    return HouseholdBatch([Household.from_game(p, step_limit) for p in paths])


def batch_of_specs(specs: Sequence[Union[Spec, str]]) -> HouseholdBatch:
    """A batch over generated tasks."""
    return HouseholdBatch([Household.from_spec(s) for s in specs])


def train_specs(n: int, seed: int = 0) -> List[Spec]:
    """``n`` training task specs drawn with ``seed`` (the same as the Rust trainer's)."""
    return json.loads(_native.train_task_specs(n, seed))


def eval_specs(split: str) -> List[Spec]:
    """The fixed evaluation split ``"in_domain"``, ``"ood"`` or ``"validation"``."""
    return json.loads(_native.eval_task_specs(split))


def write_game(spec: Union[Spec, str], folder: Union[str, os.PathLike]) -> str:
    """Writes a generated task as an ALFWorld game folder (``game.tw-pddl`` and
    ``traj_data.json``), which ALFWorld's own engine can play too. Returns the folder."""
    game, traj = _native.game_files_of_spec(spec)
    os.makedirs(folder, exist_ok=True)
    for name, text in (("game.tw-pddl", game), ("traj_data.json", traj)):
        path = os.path.join(folder, name)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    return os.fspath(folder)


class TextEnv:
    """The household in the style of Gymnasium's interface (it does not need Gymnasium).

    Each ``reset`` draws one of ``games`` (paths of game folders, specs, or ``Household``
    objects) with the environment's own random generator, seeded by ``reset(seed=…)``;
    ``step(action)`` returns ``(observation, reward, terminated, truncated, info)``: ``reward``
    is 1.0 on the step that wins, ``terminated`` means won, ``truncated`` that the steps ran out
    first (``max_steps``, or a generated task's own ``step_limit``). ``info`` holds the
    household's keys and ``task``.
    """

    metadata: Dict[str, Any] = {"render_modes": ["ansi"]}

    def __init__(self, games: Sequence[Union[str, os.PathLike, Spec, Household]],
                 max_steps: Optional[int] = 50, render_mode: Optional[str] = None):
        if not games:
            raise ValueError("TextEnv needs at least one game")
        if max_steps is not None and max_steps < 1:
            raise ValueError(f"max_steps = {max_steps}: must be at least 1")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode {render_mode!r}: only 'ansi' is supported")
        self._games = [self._load(g) for g in games]
        self.max_steps = max_steps
        self.render_mode = render_mode
        self._rng = random.Random()
        self.env: Optional[Household] = None
        self._last = ""

    @staticmethod
    def _load(g: Any) -> Household:
        if isinstance(g, Household):
            return g.copy()
        if isinstance(g, dict):
            return Household.from_spec(g)
        return Household.from_game(g)

    def reset(self, *, seed: Optional[int] = None,
              options: Optional[Dict[str, Any]] = None) -> Tuple[str, Dict[str, Any]]:
        """Starts an episode; ``options={"game": i}`` picks game ``i`` instead of drawing."""
        if seed is not None:
            self._rng.seed(seed)
        i = (options or {}).get("game")
        if i is None:
            i = self._rng.randrange(len(self._games))
        elif not (isinstance(i, int) and 0 <= i < len(self._games)):
            raise ValueError(f"options['game'] = {i!r}: an index below {len(self._games)}")
        self.env = self._games[i].copy()
        obs, info = self.env.reset()
        info["task"] = self.env.task
        self._last = obs
        return obs, info

    def step(self, action: str) -> Tuple[str, float, bool, bool, Dict[str, Any]]:
        if self.env is None:
            raise RuntimeError("call reset() before step()")
        was_won = self.env.won
        obs, score, done, info = self.env.step(action)
        info["task"] = self.env.task
        terminated = bool(info["won"])
        truncated = (not terminated and self.max_steps is not None
                     and info["steps"] >= self.max_steps) or (done and not terminated)
        self._last = obs
        reward = 1.0 if terminated and not was_won else 0.0
        return obs, reward, terminated, truncated, info

    def render(self) -> Optional[str]:
        return self._last if self.render_mode == "ansi" else None

    def close(self) -> None:
        self.env = None
