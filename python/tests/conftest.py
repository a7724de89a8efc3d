import importlib.metadata
import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
#: Twenty ALFWorld games with traces recorded from the real engine.
GAMES = ROOT / "tests" / "fixtures" / "alfworld-traces"


def game_dirs():
    return sorted(p for p in GAMES.iterdir() if (p / "game.tw-pddl").exists())


@pytest.fixture
def alfworld_environment():
    """ALFWorld 0.4.2's own `alfworld.agents.environment`. Where it is not installed the test
    is skipped, unless RLA_REQUIRE_ALFWORLD=1 (as in CI), where that is a failure."""
    required = os.environ.get("RLA_REQUIRE_ALFWORLD") == "1"
    try:
        import alfworld.agents.environment as environment
    except ImportError as e:
        if required:
            pytest.fail(f"alfworld is required here: {e}")
        pytest.skip(f"alfworld is not installed: {e}")
    version = importlib.metadata.version("alfworld")
    if version != "0.4.2":
        message = f"the parity tests are against alfworld 0.4.2, not {version}"
        if required:
            pytest.fail(message)
        pytest.skip(message)
    return environment


def alfworld_config(data_path, max_steps=50, training_method="dagger"):
    """ALFWorld's base configuration, the keys its text environment reads."""
    return {
        "dataset": {
            "data_path": str(data_path),
            "eval_id_data_path": str(data_path),
            "eval_ood_data_path": str(data_path),
            "num_train_games": -1,
            "num_eval_games": -1,
        },
        "env": {
            "type": "AlfredTWEnv",
            "domain_randomization": False,
            "task_types": [1, 2, 3, 4, 5, 6],
            "expert_type": "handcoded",
            "goal_desc_human_anns_prob": 0.0,
        },
        "general": {"training_method": training_method},
        "dagger": {"training": {"max_nb_steps_per_episode": max_steps}},
        "rl": {"training": {"max_nb_steps_per_episode": max_steps}},
    }
