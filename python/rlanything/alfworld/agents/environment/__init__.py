"""Mirrors ``alfworld.agents.environment``: ``get_environment`` and ``AlfredTWEnv``."""

from .alfred_tw_env import AlfredTWEnv, AlfredBatchEnv, TASK_TYPES

__all__ = ["get_environment", "AlfredTWEnv", "AlfredBatchEnv", "TASK_TYPES"]


def get_environment(env_type: str):
    """The environment class for ``env_type``. Only the text environment, ``"AlfredTWEnv"``,
    is played natively; ALFWorld's THOR environments need its 3D simulator."""
    if env_type == "AlfredTWEnv":
        return AlfredTWEnv
    if env_type in ("AlfredThorEnv", "AlfredHybrid"):
        raise NotImplementedError(
            f"{env_type} needs ALFWorld's THOR simulator; rlanything plays the text "
            "environment, AlfredTWEnv")
    raise NotImplementedError(f"unknown environment type {env_type!r}")
