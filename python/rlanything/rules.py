"""The paper's rules on plain numbers: the same functions the Rust trainer applies.

The functions over vectors (``step_rewards``, ``advantages``, ``consistency_advantages``,
``precision``, ``calibration``) take lists or NumPy arrays; given a NumPy array they return one
(``None`` entries — samples that carry no signal — become ``nan``; ``advantages`` of a 2-D
array gives a 2-D array, rows of unequal length padded with ``nan``), otherwise lists with
``None`` where a sample is dropped. The others take numbers (NumPy scalars too).

Names follow the paper: ``outcome`` O ∈ {−1, +1}, ``scores`` S_ij ∈ {−1, 0, +1} (0: the judge's
answer could not be parsed), ``lam`` λ, step reward R_i, ``acc_low``/``acc_high`` α_low/α_high,
``mu`` μ = p₊ + p₋.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

from . import _native

__all__ = [
    "step_reward",
    "step_rewards",
    "advantages",
    "consistency_reward",
    "consistency_advantages",
    "accuracy",
    "in_band",
    "POLICY_BAND",
    "REWARD_BAND",
    "direction",
    "accept",
    "theorem1_bound",
    "ideal_precision",
    "precision",
    "calibration",
    "ppo_token_loss",
    "k3_kl",
]

#: The accuracy band of tasks whose rollouts train the policy, [1/8, 7/8].
POLICY_BAND: Tuple[float, float] = _native.POLICY_BAND
#: The accuracy band of tasks whose steps train the reward model, [0.2, 0.8].
REWARD_BAND: Tuple[float, float] = _native.REWARD_BAND


def _is_array(x: Any) -> bool:
    return type(x).__module__ == "numpy" and hasattr(x, "ndim")


def _floats(x: Sequence[float]) -> List[float]:
    return [float(v) for v in x]


def _array(rows: Any) -> Any:
    import numpy as np

    if rows and isinstance(rows[0], list):
        width = max(len(r) for r in rows)
        out = np.full((len(rows), width), np.nan)
        for j, r in enumerate(rows):
            out[j, :len(r)] = [np.nan if v is None else v for v in r]
        return out
    return np.array([np.nan if v is None else v for v in rows], dtype=float)


def step_reward(outcome: float, scores: Sequence[float], lam: float = 1.0) -> float:
    """``R_i = O + λ·mean_j S_ij`` for one step with verdicts ``scores`` (0 when none)."""
    return _native.step_reward(float(outcome), _floats(scores), float(lam))


def step_rewards(outcome: float, scores: Sequence[Sequence[float]], lam: float = 1.0) -> Any:
    """``R_i`` for every step of one trajectory; ``scores[i]`` holds step i's verdicts."""
    out = _native.step_rewards(float(outcome), [_floats(s) for s in scores], float(lam))
    return _array(out) if _is_array(scores) else out


def advantages(
    rollouts: Sequence[Sequence[float]],
    kind: str = "paper",
    outcomes: Optional[Sequence[float]] = None,
    trajectory_weight: float = 0.5,
) -> Any:
    """Policy advantages of one task: ``rollouts[j][i]`` is R_i of rollout j, standardised over
    the rollouts that reached step i (population std). A group without spread (std ≤ 1e-8) and
    a step reached by one rollout give ``None``: those samples are not trained on.

    ``kind`` is a run config's ``advantage``: ``"paper"`` (the above), ``"keep_finished"`` (a
    rollout that ended before a step stays in its group with its last reward),
    ``"trajectory"`` (each rollout's mean reward, standardised over the rollouts and times
    ``trajectory_weight``, added to every step), ``"judge_centred"`` (the groups whose rollouts
    share one outcome, given in ``outcomes``, mean-centred instead of standardised)."""
    out = _native.advantages(
        [_floats(r) for r in rollouts],
        kind,
        None if outcomes is None else _floats(outcomes),
        float(trajectory_weight),
    )
    if _is_array(rollouts) or (len(rollouts) and _is_array(rollouts[0])):
        return _array(out)
    return out


def consistency_reward(step_reward: float, score: float) -> float:
    """The reward model's raw consistency reward ``R_i·S_ij`` (−2 for an unparsed verdict)."""
    return _native.consistency_reward(float(step_reward), float(score))


def consistency_advantages(step_reward: float, scores: Sequence[float]) -> Any:
    """Advantages of the m judge samples of one step: the raw rewards standardised over the m;
    ``None`` where a sample carries no gradient."""
    out = _native.consistency_advantages_of(float(step_reward), _floats(scores))
    return _array(out) if _is_array(scores) else out


def accuracy(successes: int, rollouts: int) -> float:
    """A task's accuracy: the share of its rollouts that succeeded (0 for none)."""
    return _native.accuracy(int(successes), int(rollouts))


def in_band(acc: float, band: Tuple[float, float] = POLICY_BAND) -> bool:
    """Whether ``band[0] ≤ acc ≤ band[1]``."""
    low, high = band
    return _native.in_band(float(acc), float(low), float(high))


def direction(acc: float, acc_low: float = 0.2, acc_high: float = 0.8) -> str:
    """Which rewrite a task needs: ``"harder"`` when acc > α_high, ``"easier"`` when
    acc ≤ α_low, else ``"keep"``."""
    return _native.direction(float(acc), float(acc_low), float(acc_high))


def accept(direction: str, acc: float, acc_new: float, acc_low: float = 0.2,
           acc_high: float = 0.8) -> bool:
    """Whether a rewrite is accepted: acc' > 0 and, for ``"harder"``, α_low ≤ acc' < acc; for
    ``"easier"``, acc < acc' ≤ α_high."""
    return _native.accept(direction, float(acc), float(acc_new), float(acc_low),
                          float(acc_high))


def theorem1_bound(mu: float, judge_samples: int) -> Optional[float]:
    """Theorem 1's lower bound on reward precision, ``1 − exp(−m(μ−1)²/4)``; ``None`` for
    μ ≤ 1."""
    return _native.theorem1_bound(float(mu), int(judge_samples))


def ideal_precision(p_plus: float, p_minus: float, judge_samples: int) -> float:
    """The exact precision ``P(K + L > m)`` of a judge with independent verdicts."""
    return _native.ideal_precision(float(p_plus), float(p_minus), int(judge_samples))


def precision(positive: Sequence[float], negative: Sequence[float]) -> Optional[Tuple[float, float, int]]:
    """Measured precision ``A = P(S̄⁺ > S̄⁻)`` over all pairs of a positive step's mean score and a
    negative step's: ``(precision, ties, pairs)``, ``None`` if a side is empty."""
    return _native.precision(_floats(positive), _floats(negative))


def calibration(labels: Sequence[bool], scores: Sequence[float]) -> Tuple[Optional[float], Optional[float], Optional[float]]:
    """``(p₊, p₋, μ)`` estimated from verdicts ``scores`` on steps labelled good (True) or bad."""
    return _native.calibration([bool(v) for v in labels], _floats(scores))


def ppo_token_loss(logp: float, logp_old: float, advantage: float,
                   logp_ref: Optional[float] = None, clip_eps: float = 0.2,
                   kl_beta: float = 0.01) -> float:
    """PPO-clip loss of one token plus ``kl_beta`` times the k3 KL to ``logp_ref``."""
    return _native.ppo_token_loss(float(logp), float(logp_old), float(advantage),
                                  None if logp_ref is None else float(logp_ref),
                                  float(clip_eps), float(kl_beta))


def k3_kl(logp: float, logp_ref: float) -> float:
    """The k3 estimate of KL(π‖π_ref) at one token: ``exp(q) − q − 1``, q = logp_ref − logp."""
    return _native.k3(float(logp), float(logp_ref))
