"""The GUI setting: spreadsheet tasks in OSWorld's formats on a native desktop.

``Desktop.from_spec(spec)`` opens a generated task; ``reset()`` returns ``(tree, info)`` with
OSWorld's linearised accessibility tree, and ``step(code)`` plays pyautogui code (or ``WAIT``,
``DONE``, ``FAIL``) and returns ``(tree, reward, done, info)``; the reward is the task's
evaluator (OSWorld's ``compare_table``) once the episode is done.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List

from . import _native

__all__ = ["Desktop", "task_specs", "evaluate", "SPLITS"]

#: The fixed splits: 230 in-domain and 139 out-of-domain tasks, 140 validation tasks, and the
#: training pool.
SPLITS = ("in_domain", "ood", "validation", "train")

Desktop = _native.Desktop

#: ``evaluate(task, result, expected=[], files=None)``: the score of a result workbook for an
#: OSWorld task file, by the task's evaluator (``compare_table`` / ``compare_csv``); the files its
#: ``http(s)`` URLs name are read from the folder ``files``. ``Desktop.export(folder)`` writes a
#: generated task as such a file with its workbooks.
evaluate = _native.evaluate


def task_specs(split: str, n: int) -> List[Dict[str, Any]]:
    """The first ``n`` task specs of a split (evaluation splits stop at their size)."""
    return json.loads(_native.desktop_task_specs(split, int(n)))
