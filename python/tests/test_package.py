"""The package as installed: its stubs name exactly what the extension module has."""

import ast
import importlib.metadata
import pathlib

import rlanything
from rlanything import _native


def stub_names():
    path = pathlib.Path(rlanything.__file__).with_name("_native.pyi")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top, members = set(), {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            top.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            top.add(node.target.id)
        if isinstance(node, ast.ClassDef):
            members[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
    return top, members


def test_the_stubs_match_the_extension_module():
    top, members = stub_names()
    public = {n for n in dir(_native) if not n.startswith("_")}
    assert top - {"_Path", "_Spec"} == public
    for cls, names in members.items():
        have = {n for n in dir(getattr(_native, cls)) if not n.startswith("_") or n in names}
        assert names - {"__init__"} <= have, cls
        assert {n for n in have if not n.startswith("_")} <= names, cls


def test_the_package_is_typed_and_versioned():
    root = pathlib.Path(rlanything.__file__).parent
    assert (root / "py.typed").exists()
    assert rlanything.__version__ == importlib.metadata.version("rlanything")


def test_the_readme_agent_loop_runs(monkeypatch, capsys):
    root = pathlib.Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## From Python"):]
    code = section[section.index("```python\n") + len("```python\n"):]
    code = code[:code.index("```")]
    assert len([line for line in code.splitlines() if line.strip()]) <= 10
    monkeypatch.chdir(root)
    scope = {}
    exec(compile(code, "README.md", "exec"), scope)
    env = scope["env"]
    assert env.steps >= 1 and capsys.readouterr().out.strip()


def test_the_command_line_runs_through_the_extension(capfd):
    from rlanything import cli

    assert _native.cli(["rlanything", "--version"]) == 0
    assert capfd.readouterr().out.strip() == f"rlanything {rlanything.__version__}"
    assert _native.cli(["rlanything", "theory", "--mu", "1.2", "--m", "3"]) == 0
    assert "1.2" in capfd.readouterr().out
    # arguments it refuses: clap's message and status 2, and the interpreter goes on
    assert _native.cli(["rlanything", "no-such-command"]) == 2
    assert "no-such-command" in capfd.readouterr().err
    # an error of the command itself: status 1 and the cause named
    assert _native.cli(["rlanything", "report", "/no/such/run"]) == 1
    assert "/no/such/run" in capfd.readouterr().err
    assert callable(cli.main)


def test_the_rlanything_console_script_is_declared():
    eps = importlib.metadata.entry_points()
    scripts = eps.select(group="console_scripts") if hasattr(eps, "select") else eps["console_scripts"]
    assert {e.name: e.value for e in scripts}.get("rlanything") == "rlanything.cli:main"
