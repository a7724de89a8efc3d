"""The household generator's tables (crates/rla-env/data/alfred.json) agree with the alfworld
wheel's own data: ALFRED's floor plans and ALFWorld's constants, as scripts/extract-alfred.py
extracts them."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def test_alfred_json_agrees_with_the_alfworld_wheel():
    pytest.importorskip("alfworld")
    out = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "extract-alfred.py"), "--check"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr + out.stdout
    assert "agrees" in out.stdout
