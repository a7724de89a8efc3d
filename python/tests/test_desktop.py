"""The desktop setting from Python: OSWorld's tree, pyautogui steps and the evaluator."""

import json

import pytest

from rlanything.desktop import Desktop, evaluate, task_specs


def test_the_expert_solves_tasks_and_the_evaluator_scores_one():
    for spec in task_specs("in_domain", 4):
        d = Desktop.from_spec(spec)
        tree, info = d.reset()
        assert tree.startswith("tag\tname\ttext\tclass")
        assert info["instruction"] == d.instruction
        assert json.loads(d.task_json)["instruction"] == d.instruction
        reward, done = 0.0, False
        while not done:
            tree, reward, done, info = d.step(d.expert_action())
            assert info["error"] is None
        assert reward == 1.0 and info["finished"] is True, d.instruction


def test_fail_ends_the_episode_unsolved():
    d = Desktop.from_spec(task_specs("ood", 1)[0])
    d.reset()
    tree, reward, done, info = d.step("FAIL")
    assert (reward, done, info["finished"]) == (0.0, True, False)
    with pytest.raises(ValueError, match="reset"):
        d.step("WAIT")
    d.reset()
    assert not d.done and d.steps == 0


def test_a_bad_action_is_the_steps_error_and_the_step_limit_ends_it():
    d = Desktop.from_spec(task_specs("validation", 1)[0], step_limit=2)
    d.reset()
    tree, reward, done, info = d.step("import os; os.system('rm -rf /')")
    assert info["error"] and not done
    tree, reward, done, info = d.step("WAIT")
    assert done and reward == 0.0


def png_size(png):
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def test_screenshots_and_marks():
    d = Desktop.from_spec(task_specs("train", 1)[0], width=1280, height=720)
    d.reset()
    assert png_size(d.screenshot()) == (1280, 720)
    assert png_size(Desktop.from_spec(task_specs("train", 1)[0]).screenshot()) == (1920, 1080)
    assert d.screenshot(marks=True) != d.screenshot()
    assert d.marks().startswith("[1] ")


def test_the_tree_is_cut_after_tree_tokens_words():
    spec = task_specs("train", 1)[0]
    whole, _ = Desktop.from_spec(spec).reset()
    cut, _ = Desktop.from_spec(spec, tree_tokens=60).reset()
    assert "[...]" not in whole and cut.endswith("[...]")
    assert len(cut.split()) <= 61 < len(whole.split())


def test_bad_specs_are_named():
    with pytest.raises(ValueError, match="desktop spec"):
        Desktop.from_spec({"family": "nope"})
    with pytest.raises(ValueError, match="unknown split"):
        task_specs("test", 1)
    with pytest.raises(ValueError, match="step_limit"):
        Desktop.from_spec(task_specs("train", 1)[0], step_limit=0)


def test_an_exported_task_is_scored_by_its_evaluator(tmp_path):
    spec = task_specs("in_domain", 1)[0]
    task = Desktop.from_spec(spec).export(tmp_path)
    with open(task, encoding="utf-8") as f:
        folder = tmp_path / json.load(f)["id"]
    assert evaluate(task, folder / "start.xlsx") == 0.0
    assert evaluate(task, folder / f"evaluator{spec['variant']}.xlsx") == 1.0
    assert evaluate(task, tmp_path / "missing.xlsx") == 0.0  # nothing saved, as in OSWorld
    with pytest.raises(FileNotFoundError, match="nowhere.json"):
        evaluate(tmp_path / "nowhere.json", folder / "start.xlsx")
