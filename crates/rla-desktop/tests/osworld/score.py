"""Scores spreadsheet results with OSWorld's own evaluators (desktop-env 1.0.2's
`desktop_env/evaluators/metrics/table.py`), for the conformance test of rla-desktop's.

Reads a JSON list of cases `{"func": "compare_table" | "compare_csv", "result": path or null,
"expected": path, list of paths or null, "options": {...}}` on stdin and prints one JSON list:
each case's score, or `{"error": "..."}` where OSWorld raises.

The package's `metrics/__init__.py` imports every metric (torch, easyocr, …), so the two files
are loaded directly, under their own module names.
"""
import importlib.util
import json
import logging
import os
import sys
import types

logging.disable(logging.CRITICAL)


def load_metrics():
    spec = importlib.util.find_spec("desktop_env")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("desktop-env is not installed: pip install -r crates/rla-desktop/tests/osworld/requirements.txt")
    root = list(spec.submodule_search_locations)[0]
    for name, sub in [
        ("desktop_env", ""),
        ("desktop_env.evaluators", "evaluators"),
        ("desktop_env.evaluators.metrics", os.path.join("evaluators", "metrics")),
    ]:
        m = types.ModuleType(name)
        m.__path__ = [os.path.join(root, sub)]
        sys.modules[name] = m
    mods = {}
    for name in ["utils", "table"]:
        full = "desktop_env.evaluators.metrics." + name
        s = importlib.util.spec_from_file_location(full, os.path.join(root, "evaluators", "metrics", name + ".py"))
        m = importlib.util.module_from_spec(s)
        sys.modules[full] = m
        s.loader.exec_module(m)
        mods[name] = m
    return mods["table"]


def main():
    table = load_metrics()
    cases = json.load(sys.stdin)
    out = []
    for c in cases:
        f = getattr(table, c["func"])
        try:
            if c["func"] == "compare_csv":
                score = f(c["result"], c["expected"], **c.get("options", {}))
            else:
                score = f(c["result"], c["expected"], **c.get("options", {}))
            out.append(float(score))
        except Exception as e:  # OSWorld raises
            out.append({"error": f"{type(e).__name__}: {e}"})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
