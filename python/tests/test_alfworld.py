"""The package against ALFWorld 0.4.2's own engine: the same game files, the same commands, the
same text, admissible lists, scores and dones, through the drop-in batch environment."""

import random

import pytest

import rlanything.alfworld.agents.environment as ours
from rlanything.household import Household, train_specs, write_game

from conftest import GAMES, alfworld_config, game_dirs


def play_both(theirs_module, data_path, train_eval, batch_size, episodes, steps, max_steps,
              seed=0, rng_seed=0, skip=0):
    """Plays the same commands through both environments; returns the number of steps
    compared."""
    config = alfworld_config(data_path, max_steps=max_steps)
    real = theirs_module.get_environment("AlfredTWEnv")(config, train_eval=train_eval)
    mine = ours.get_environment("AlfredTWEnv")(config, train_eval=train_eval)
    assert mine.game_files == real.game_files
    a, b = real.init_env(batch_size=batch_size), mine.init_env(batch_size=batch_size)
    a.seed(seed)
    b.seed(seed)
    a.skip(skip)
    b.skip(skip)
    rng = random.Random(rng_seed)
    compared = 0
    try:
        for _ in range(episodes):
            ra, rb = a.reset(), b.reset()
            assert tuple(ra[0]) == rb[0]
            for key in ("won", "admissible_commands", "extra.gamefile"):
                assert ra[1][key] == rb[1][key], key
            if "extra.expert_plan" in ra[1]:  # both experts say "look" first
                assert ra[1]["extra.expert_plan"] == rb[1]["extra.expert_plan"]
            infos = rb[1]
            for _ in range(steps):
                commands = [rng.choice(adm + ["fly to the moon"])
                            for adm in infos["admissible_commands"]]
                sa, sb = a.step(commands), b.step(commands)
                assert tuple(sa[0]) == sb[0], commands
                assert tuple(sa[1]) == sb[1], commands
                assert tuple(sa[2]) == sb[2], commands
                assert sa[3]["won"] == sb[3]["won"]
                assert sa[3]["admissible_commands"] == sb[3]["admissible_commands"]
                assert sa[3]["extra.gamefile"] == sb[3]["extra.gamefile"]
                assert a.render(mode="text") == b.render(mode="text")
                infos = sb[3]
                compared += 1
    finally:
        a.close()
        b.close()
    return compared


def test_the_same_games_play_the_same_through_alfworld_and_the_package(alfworld_environment):
    # every game once (the seeded order is ALFWorld's), random and invalid commands, past the
    # step limit
    n = play_both(alfworld_environment, GAMES, "eval_out_of_distribution", batch_size=1,
                  episodes=len(game_dirs()), steps=12, max_steps=10)
    assert n == len(game_dirs()) * 12


def test_a_batch_of_two_in_training_mode_after_skipping_games(alfworld_environment):
    n = play_both(alfworld_environment, GAMES, "train", batch_size=2, episodes=3, steps=8,
                  max_steps=50, seed=5, rng_seed=1, skip=3)
    assert n == 24


def test_a_generated_task_is_a_game_alfworld_plays(alfworld_environment, tmp_path):
    for i, spec in enumerate(train_specs(3, seed=21)):
        write_game(spec, tmp_path / f"g{i}")
    n = play_both(alfworld_environment, tmp_path, "eval_in_distribution", batch_size=1,
                  episodes=3, steps=10, max_steps=50, rng_seed=3)
    assert n == 30
    # and the expert's plan wins there too
    env = Household.from_game(tmp_path / "g0")
    env.reset()
    config = alfworld_config(tmp_path / "g0")
    real = alfworld_environment.get_environment("AlfredTWEnv")(config, "eval_in_distribution")
    e = real.init_env(batch_size=1)
    e.reset()
    for command in env.expert_plan():
        obs, scores, dones, infos = e.step([command])
    e.close()
    assert scores == (1,) and dones == (True,)


def test_the_adapter_reads_alfworlds_configuration(tmp_path):
    config = alfworld_config(GAMES, max_steps=5)
    config["env"]["task_types"] = [2]
    env = ours.get_environment("AlfredTWEnv")(config, train_eval="train")
    assert env.num_games == 4 and all("look_at_obj" in g for g in env.game_files)
    config["dataset"]["num_train_games"] = 2
    assert ours.AlfredTWEnv(config, "train").num_games == 2
    batch = ours.AlfredTWEnv(alfworld_config(GAMES, max_steps=5), "train").init_env(2)
    obs, infos = batch.reset()
    assert set(infos) == {"won", "admissible_commands", "extra.gamefile", "extra.expert_plan"}
    for _ in range(5):
        obs, scores, dones, infos = batch.step(["look", "look"])
    assert dones == (True, True) and scores == (0, 0)
    assert infos["extra.gamefile"] == [None, None]
    # in DAgger training the expert's next command comes with every step; following it wins
    expert = ours.AlfredTWEnv(alfworld_config(GAMES, max_steps=60), "train").init_env(1)
    obs, infos = expert.reset()
    for _ in range(60):
        obs, scores, dones, infos = expert.step([infos["extra.expert_plan"][0][0]])
        if dones[0]:
            break
    assert scores == (1,) and infos["won"] == [True]
    assert infos["extra.expert_plan"] == [["look"]]
    # the planner expert gives the whole shortest plan, from the reset on
    config = alfworld_config(GAMES, max_steps=60)
    config["env"]["expert_type"] = "planner"
    planner = ours.AlfredTWEnv(config, "train").init_env(1)
    obs, infos = planner.reset()
    plan = infos["extra.expert_plan"][0]
    for command in plan:
        obs, scores, dones, infos = planner.step([command])
    assert scores == (1,) and len(plan) > 1
    config["env"]["expert_type"] = "oracle"
    with pytest.raises(ValueError, match="expert_type"):
        ours.AlfredTWEnv(config, "train").init_env(1)
    config = alfworld_config(GAMES, max_steps=0)  # 0: no step limit, as in textworld
    config["env"]["task_types"] = [1, 7]  # an unknown type is ignored, as in ALFWorld
    unlimited = ours.AlfredTWEnv(config, "eval_in_distribution")
    assert unlimited.num_games == 4
    e = unlimited.init_env(1)
    e.reset()
    assert not any(e.step(["look"])[2][0] for _ in range(80))
    config = alfworld_config(GAMES)
    config["env"]["domain_randomization"] = True
    with pytest.raises(NotImplementedError, match="domain_randomization"):
        ours.AlfredTWEnv(config, "train").init_env(1)
    with pytest.raises(TypeError, match="string"):
        batch.step([None, "look"])
    with pytest.raises(AssertionError, match="list of commands"):
        batch.step("look")
    with pytest.raises(NotImplementedError, match="THOR"):
        ours.get_environment("AlfredThorEnv")
    with pytest.raises(ValueError, match="train_eval"):
        ours.AlfredTWEnv(config, "test")
    with pytest.raises(KeyError, match="dataset.eval_ood_data_path"):
        ours.AlfredTWEnv({"dataset": {}, "env": {"task_types": [1]}}, "eval_out_of_distribution")
    with pytest.raises(FileNotFoundError, match="missing"):
        ours.AlfredTWEnv(alfworld_config(tmp_path / "missing"), "train")
