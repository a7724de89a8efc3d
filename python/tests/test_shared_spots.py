"""Games where several receptacles stand at one spot (tests/fixtures/alfworld-shared-spots): their
traces, recorded in ALFWorld 0.4.2's engine with objects moved between the receptacles of a
spot and `look` after the moves, replay exactly through the package's household, through its
drop-in for ``alfworld.agents.environment``, and through ALFWorld's own batch environment."""

import json

import pytest

import rlanything.alfworld.agents.environment as ours
from rlanything.household import Household

from conftest import ROOT, alfworld_config

SHARED_SPOTS = ROOT / "tests" / "fixtures" / "alfworld-shared-spots"


def traces():
    return [(game, trace)
            for game in sorted(p for p in SHARED_SPOTS.iterdir() if (p / "game.tw-pddl").exists())
            for trace in sorted(game.glob("trace-*.jsonl"))]


def read_trace(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def trace_id(case):
    game, trace = case
    return f"{game.name[:2]}-{trace.stem[len('trace-'):]}"


def test_the_fixture_has_three_games_and_looks_that_list_moved_objects():
    cases = traces()
    assert len({game for game, _ in cases}) == 3
    assert len(cases) == 8
    listed = [line["feedback"] for _, trace in cases for line in read_trace(trace)[1:]
              if line["command"] == "look" and "Next to it, you see a" in line["feedback"]]
    assert len(listed) >= 30
    # an object listed once for each receptacle of the spot it was taken from
    assert any("a spraybottle 2, and a spraybottle 2" in f for f in listed)


@pytest.mark.parametrize("case", traces(), ids=trace_id)
def test_every_trace_replays_through_the_household(case):
    game, trace = case
    lines = read_trace(trace)
    env = Household.from_game(game)
    obs, info = env.reset()
    assert obs == lines[0]["initial"]
    assert info["admissible_commands"] == lines[0]["admissible"]
    for k, line in enumerate(lines[1:], 1):
        obs, score, done, info = env.step(line["command"])
        where = f"{trace.name} step {k} ({line['command']!r})"
        assert obs == line["feedback"], where
        assert info["admissible_commands"] == line["admissible"], where
        assert info["won"] is line["won"], where
        assert done is line["done"], where


def replay_batch(environment, game, lines):
    """Plays a trace's commands through an ``AlfredTWEnv`` whose data path holds the one game,
    one at a time and without a step limit, comparing every result with the trace."""
    config = alfworld_config(game, max_steps=0)
    env = environment.get_environment("AlfredTWEnv")(config, "eval_out_of_distribution")
    batch = env.init_env(batch_size=1)
    try:
        obs, infos = batch.reset()
        assert tuple(obs) == (lines[0]["initial"],)
        assert list(infos["admissible_commands"]) == [lines[0]["admissible"]]
        for k, line in enumerate(lines[1:], 1):
            obs, scores, dones, infos = batch.step([line["command"]])
            where = f"{game.name} step {k} ({line['command']!r})"
            assert tuple(obs) == (line["feedback"],), where
            assert list(infos["admissible_commands"]) == [line["admissible"]], where
            assert list(infos["won"]) == [line["won"]], where
            assert tuple(dones) == (line["done"],), where
            assert tuple(scores) == (1 if line["won"] else 0,), where
    finally:
        batch.close()
    return len(lines) - 1


@pytest.mark.parametrize("case", traces(), ids=trace_id)
def test_every_trace_replays_through_the_drop_in(case):
    game, trace = case
    lines = read_trace(trace)
    assert replay_batch(ours, game, lines) == len(lines) - 1 > 0


def test_alfworld_itself_still_gives_the_traces(alfworld_environment):
    """The fixture's check on itself: ALFWorld's own environment, driven as the drop-in is,
    gives every recorded line."""
    for game, trace in traces():
        replay_batch(alfworld_environment, game, read_trace(trace))
