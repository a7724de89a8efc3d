"""The household through the package: ALFWorld's recorded traces, the expert, batches, specs."""

import copy
import json
import pickle
import random

import pytest

from rlanything.household import (
    Household,
    HouseholdBatch,
    TextEnv,
    batch_of_games,
    eval_specs,
    train_specs,
    write_game,
)

from conftest import GAMES, game_dirs


def read_trace(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.mark.parametrize("game", game_dirs(), ids=lambda p: p.name[:2])
def test_every_recorded_trace_replays_exactly(game):
    """The traces were recorded from ALFWorld's engine: every observation, admissible list,
    `won` and `done` is the same through the package."""
    for trace in sorted(game.glob("trace-*.jsonl")):
        lines = read_trace(trace)
        env = Household.from_game(game)
        obs, info = env.reset()
        assert obs == lines[0]["initial"], trace.name
        assert info["admissible_commands"] == lines[0]["admissible"], trace.name
        assert info["won"] is lines[0]["won"]
        for k, line in enumerate(lines[1:], 1):
            obs, score, done, info = env.step(line["command"])
            where = f"{trace.name} step {k} ({line['command']!r})"
            assert obs == line["feedback"], where
            assert info["admissible_commands"] == line["admissible"], where
            assert info["won"] is line["won"], where
            assert done is line["done"], where
            assert score == (1.0 if line["won"] else 0.0), where
            assert info["steps"] == k


def test_the_expert_wins_every_game_and_labels_its_steps_as_progress():
    for game in game_dirs():
        env = Household.from_game(game)
        env.reset()
        plan = env.expert_plan()
        assert plan, game.name
        for command in plan:
            assert env.oracle_label(command), (game.name, command)
            env.step(command)
        assert env.won, game.name
        assert env.expert_plan() == []


def test_oracle_labels_a_useless_step_as_no_progress():
    env = Household.from_game(game_dirs()[0])
    env.reset()
    assert not env.oracle_label("inventory")
    assert not env.oracle_label("fly to the moon")


@pytest.mark.parametrize("size", [6, 130])  # one thread, and rayon's threads
def test_a_batch_steps_as_its_households_do_one_by_one(size):
    games = (game_dirs() * 7)[:size]
    batch = batch_of_games(games, step_limit=30)
    singles = [Household.from_game(g, 30) for g in games]
    obs, infos = batch.reset()
    assert obs == [s.reset()[0] for s in singles]
    rng = random.Random(7)
    for _ in range(30):
        commands = [rng.choice(a) for a in infos["admissible_commands"]]
        commands[0] = None  # a skipped household does not move
        obs, scores, dones, infos = batch.step(commands)
        assert obs[0] is None
        for i, c in enumerate(commands[1:], 1):
            o, s, d, info = singles[i].step(c)
            assert (obs[i], scores[i], dones[i]) == (o, s, d)
            assert infos["admissible_commands"][i] == info["admissible_commands"]
            assert infos["won"][i] == info["won"]
    assert infos["steps"][0] == 0


def test_a_step_limit_ends_the_episode():
    env = Household.from_game(game_dirs()[0], step_limit=3)
    env.reset()
    dones = [env.step("look")[2] for _ in range(3)]
    assert dones == [False, False, True]


def test_generated_tasks_play_and_the_expert_solves_them():
    specs = train_specs(5, seed=3)
    assert specs == train_specs(5, seed=3)
    assert specs != train_specs(5, seed=4)
    for spec in specs:
        env = Household.from_spec(spec)
        assert env.spec == spec
        obs, info = env.reset()
        assert obs.startswith("-= Welcome to TextWorld, ALFRED! =-")
        for command in env.expert_plan():
            obs, score, done, info = env.step(command)
        assert score == 1.0 and done and info["won"]


def test_the_evaluation_splits_have_alfworlds_sizes():
    assert len(eval_specs("in_domain")) == 140
    assert len(eval_specs("ood")) == 134
    assert len(eval_specs("validation")) == 500
    with pytest.raises(ValueError, match="unknown split"):
        eval_specs("test")


def test_a_written_game_folder_plays_as_the_spec(tmp_path):
    spec = train_specs(1, seed=11)[0]
    folder = write_game(spec, tmp_path / "game")
    a, b = Household.from_game(folder), Household.from_spec(spec)
    assert a.reset()[0] == b.reset()[0]
    for command in b.expert_plan():
        assert a.step(command)[:3] == b.step(command)[:3]


def test_text_env_follows_gymnasiums_interface():
    env = TextEnv(game_dirs(), max_steps=4)
    obs, info = env.reset(seed=1)
    assert "Your task is to:" in obs and info["task"]
    drawn = []
    for seed in range(8):  # the seed decides the game
        env.reset(seed=seed)
        first = env.env.gamefile
        env.reset(seed=seed)
        assert env.env.gamefile == first
        drawn.append(first)
    assert len(set(drawn)) > 2
    env.reset(options={"game": 2})
    plan = env.env.expert_plan()
    obs, reward, terminated, truncated, info = env.step(plan[0])
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert info["task"] == env.env.task
    for _ in range(3):
        obs, reward, terminated, truncated, info = env.step("look")
    assert truncated and not terminated
    env = TextEnv([game_dirs()[0]], max_steps=None)
    env.reset()
    for command in env.env.expert_plan():
        obs, reward, terminated, truncated, info = env.step(command)
    assert (reward, terminated, truncated) == (1.0, True, False)


def test_bad_input_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere"):
        Household.from_game(tmp_path / "nowhere")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "game.tw-pddl").write_text('{"pddl_problem": "(define", "grammar": "x"}')
    with pytest.raises(ValueError, match="game.tw-pddl"):
        Household.from_game(bad)
    spec = dict(train_specs(1, seed=0)[0], object="Spaceship")
    with pytest.raises(ValueError, match="object"):
        Household.from_spec(spec)
    with pytest.raises(ValueError, match="task spec"):
        Household.from_spec({"id": "x"})
    with pytest.raises(ValueError, match="at most 1000000 specs"):
        train_specs(10**12)
    with pytest.raises(ValueError, match="step_limit"):
        Household.from_game(game_dirs()[0], step_limit=0)
    batch = HouseholdBatch([Household.from_game(game_dirs()[0])])
    with pytest.raises(ValueError, match="2 commands for 1 households"):
        batch.step(["look", "look"])
    with pytest.raises(ValueError):
        HouseholdBatch([])
    with pytest.raises(ValueError, match="at least one game"):
        TextEnv([])
    with pytest.raises(ValueError, match="an index below 1"):
        TextEnv([game_dirs()[0]]).reset(options={"game": -1})


def test_the_searching_expert_wins_by_what_it_sees():
    won = 0
    for game in game_dirs():
        env = Household.from_game(game)
        env.reset()
        for _ in range(100):
            command = env.expert_next()
            if command is None:
                break
            assert command in env.admissible_commands
            env.step(command)
        won += env.won
        assert env.expert_next() is None or not env.won
    assert won == len(game_dirs())


def test_a_batch_plans_as_its_households_do():
    games = game_dirs()[:4]
    batch = batch_of_games(games)
    batch.reset()
    batch.step(["look", "inventory", "go to cabinet 1", "look"])
    envs = batch.envs
    assert batch.expert_plans() == [e.expert_plan() for e in envs]
    assert batch.expert_next() == [e.expert_next() for e in envs]


def test_households_pickle_and_deep_copy_in_their_state(tmp_path):
    for env in (Household.from_game(game_dirs()[3], step_limit=30),
                Household.from_spec(train_specs(1, seed=9)[0])):
        env.reset()
        for command in env.expert_plan()[:3] + ["fly to the moon"]:
            env.step(command)
        for twin in (pickle.loads(pickle.dumps(env)), copy.deepcopy(env)):
            assert (twin.steps, twin.won, twin.admissible_commands) == (
                env.steps, env.won, env.admissible_commands)
            assert twin.expert_plan() == env.expert_plan()
            assert twin.step("look")[0] == env.copy().step("look")[0]
        assert pickle.loads(pickle.dumps(env)).spec == env.spec
