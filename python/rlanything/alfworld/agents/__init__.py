"""Mirrors ``alfworld.agents``: see :mod:`rlanything.alfworld.agents.environment`."""
