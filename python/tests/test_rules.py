"""The rules agree with the Rust tests' hand-computed vectors."""

import math

import pytest

from rlanything import rules


def close(a, b, tol=1e-12):
    return abs(a - b) < tol


def test_step_reward_worked_example():
    # paper, ALFWorld, m = 3
    assert rules.step_reward(1, [1, 1, 1]) == 2.0
    assert rules.step_reward(-1, [1, 1, 1]) == 0.0
    assert close(rules.step_reward(1, [1, 1, -1]), 4 / 3)
    assert rules.step_reward(1, [1, -1, 0], lam=0.0) == 1.0  # outcome-only
    assert rules.step_reward(-1, []) == -1.0
    assert rules.step_rewards(1, [[1, 1, 1], [-1, -1, -1]]) == [2.0, 0.0]


def test_advantage_kinds_as_the_run_config_names_them():
    # a winner that finished after one step, two losers of three (outcome rewards)
    rollouts = [[1.0], [-1.0, -1.0, -1.0], [-1.0, -1.0, -1.0]]
    paper = rules.advantages(rollouts)
    assert paper[1][1] is None  # only losers reach step 1: no credit
    s = (8 / 9) ** 0.5
    t = rules.advantages(rollouts, kind="trajectory")
    assert abs(t[1][1] - 0.5 * (-2 / 3) / s) < 1e-12
    assert abs(rules.advantages(rollouts, kind="trajectory", trajectory_weight=1.0)[1][2] - (-2 / 3) / s) < 1e-12
    k = rules.advantages(rollouts, kind="keep_finished")
    assert k[1][2] is not None and k[1][2] < 0
    # five losers, one verdict of three flipped on the first: centred, not scaled by a tiny σ
    r = [[-4 / 3]] + [[-2.0]] * 4
    c = rules.advantages(r, kind="judge_centred", outcomes=[-1.0] * 5)
    assert abs(c[0][0] - 8 / 15) < 1e-12 and abs(c[1][0] + 2 / 15) < 1e-12
    assert abs(rules.advantages(r)[0][0] - 2.0) < 1e-12
    with pytest.raises(ValueError, match="outcomes"):
        rules.advantages(r, kind="judge_centred")
    with pytest.raises(ValueError, match="5 outcomes for 2 rollouts"):
        rules.advantages([[1.0], [0.0]], kind="judge_centred", outcomes=[1.0] * 5)
    with pytest.raises(ValueError, match="kind"):
        rules.advantages(r, kind="grpo")
    with pytest.raises(ValueError, match="trajectory_weight"):
        rules.advantages(r, kind="trajectory", trajectory_weight=0.0)


def test_advantages_hand_computed_groups():
    a = rules.advantages([[2.0, 2.0, 1.0], [0.0, 0.0], [1.0]])
    s = math.sqrt(2 / 3)  # step 0: [2, 0, 1], mean 1, var 2/3
    assert close(a[0][0], 1 / s) and close(a[1][0], -1 / s) and a[2][0] == 0.0
    assert a[0][1] == 1.0 and a[1][1] == -1.0  # step 1: [2, 0]
    assert a[0][2] is None  # step 2: one rollout, dropped
    assert rules.advantages([[1.0, 1.0], [1.0, 1.0]]) == [[None, None], [None, None]]


def test_consistency_hand_computed():
    assert rules.consistency_reward(2.0, 1) == 2.0
    assert rules.consistency_reward(2.0, -1) == -2.0
    assert close(rules.consistency_reward(-1 / 3, -1), 1 / 3)
    assert rules.consistency_reward(1.5, 0) == -2.0  # unparsed
    # O = +1, verdicts [+1, +1, -1]: R = 4/3, raw [4/3, 4/3, -4/3], std 8√2/9
    r = rules.step_reward(1, [1, 1, -1])
    a = rules.consistency_advantages(r, [1, 1, -1])
    s = 8 * math.sqrt(2) / 9
    assert close(a[0], (8 / 9) / s) and close(a[2], -(16 / 9) / s)
    assert rules.consistency_advantages(2.0, [1, 1, 1]) == [None, None, None]
    a = rules.consistency_advantages(2 / 3, [1, -1, 0])  # the exact-zero sample is skipped
    assert a[0] > 0 and a[1] is None and a[2] < 0


def test_bands_and_adaptation():
    assert rules.accuracy(3, 8) == 0.375 and rules.accuracy(0, 0) == 0.0
    assert rules.in_band(0.125) and rules.in_band(0.875) and not rules.in_band(1.0)
    assert rules.in_band(0.2, rules.REWARD_BAND) and not rules.in_band(0.1, rules.REWARD_BAND)
    assert [rules.direction(x) for x in (1.0, 0.875, 0.8, 0.5, 0.2, 0.0)] == [
        "harder", "harder", "keep", "keep", "easier", "easier"]
    assert rules.accept("harder", 1.0, 0.5)
    assert not rules.accept("harder", 1.0, 0.1)  # overshoots the band
    assert not rules.accept("harder", 0.9, 0.9)  # not harder
    assert rules.accept("easier", 0.0, 0.5)
    assert not rules.accept("easier", 0.0, 0.0)  # acc' must be > 0
    assert not rules.accept("easier", 0.1, 0.9)  # overshoots
    assert not rules.accept("keep", 0.5, 0.6)
    assert rules.direction(0.7, acc_low=0.1, acc_high=0.6) == "harder"


def test_theorem1_and_precision():
    assert rules.theorem1_bound(1.0, 3) is None and rules.theorem1_bound(0.7, 3) is None
    assert close(rules.theorem1_bound(1.4, 3), 1 - math.exp(-0.12))
    assert close(rules.theorem1_bound(2.0, 4), 1 - math.exp(-1))
    assert close(rules.ideal_precision(1.0, 1.0, 3), 1.0)
    assert close(rules.ideal_precision(0.5, 0.5, 1), 0.25)  # K + L > 1: both right
    p = rules.precision([1.0, 0.0], [0.0, -1.0])
    assert p == (0.75, 0.25, 4)
    assert rules.precision([], [1.0]) is None
    assert rules.calibration([True, True, False, False], [1, 0, -1, 1]) == (0.5, 0.5, 1.0)


def test_ppo_and_kl():
    assert rules.k3_kl(-1.0, -1.0) == 0.0
    assert close(rules.k3_kl(0.0, -1.0), math.exp(-1) + 1 - 1)
    # ratio 1: the loss is -A; clipped above 1 + eps for a positive advantage
    assert close(rules.ppo_token_loss(-1.0, -1.0, 2.0, kl_beta=0.0), -2.0)
    assert close(rules.ppo_token_loss(0.0, -1.0, 1.0, kl_beta=0.0), -1.2)
    assert close(rules.ppo_token_loss(-1.0, -1.0, 1.0, logp_ref=0.0, kl_beta=0.5),
                 -1.0 + 0.5 * rules.k3_kl(-1.0, 0.0))


def test_numpy_in_numpy_out():
    np = pytest.importorskip("numpy")
    a = rules.advantages(np.array([[2.0, 2.0], [0.0, 0.0]]))
    assert isinstance(a, np.ndarray) and a.tolist() == [[1.0, 1.0], [-1.0, -1.0]]
    ragged = rules.advantages([np.array([2.0, 2.0, 1.0]), np.array([0.0, 0.0]), np.array([1.0])])
    assert ragged.shape == (3, 3) and np.isnan(ragged[0, 2]) and np.isnan(ragged[1, 2])
    c = rules.consistency_advantages(2.0, np.array([1, 1, 1]))
    assert isinstance(c, np.ndarray) and np.isnan(c).all()
    assert rules.step_reward(np.float64(1), np.array([1, -1, 1])) == pytest.approx(4 / 3)


def test_bad_values_are_named():
    with pytest.raises(ValueError, match="judge verdict 2"):
        rules.step_reward(1, [2])
    with pytest.raises(ValueError, match="acc_low"):
        rules.direction(0.5, acc_low=0.9, acc_high=0.8)
    with pytest.raises(ValueError, match='direction "sideways"'):
        rules.accept("sideways", 0.5, 0.5)
    with pytest.raises(ValueError, match="acc_new"):
        rules.accept("harder", 0.5, 1.5)
    with pytest.raises(ValueError, match="rollouts\\[1\\]\\[0\\]"):
        rules.advantages([[1.0], [float("nan")]])
    with pytest.raises(ValueError, match="3 successes out of 2"):
        rules.accuracy(3, 2)
    with pytest.raises(ValueError, match="judge_samples = 0"):
        rules.theorem1_bound(1.5, 0)
    with pytest.raises(ValueError, match="judge_samples = 0"):
        rules.ideal_precision(0.5, 0.5, 0)
    with pytest.raises(ValueError, match="2 labels for 1 verdicts"):
        rules.calibration([True, False], [1])
