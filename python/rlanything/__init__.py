"""RLAnything from Python: the fast household, the paper's rules, the sandbox and the desktop.

Submodules:

- :mod:`rlanything.household` — ALFWorld's game files played natively (``Household``,
  ``HouseholdBatch``, ``TextEnv``, task specs and the fixed evaluation splits);
- :mod:`rlanything.alfworld` — a drop-in for ``alfworld.agents.environment`` over the household;
- :mod:`rlanything.rules` — the paper's rules: step rewards, advantages, consistency, bands,
  adaptation, Theorem 1;
- :mod:`rlanything.sandbox` — Python programs run under limits and judged on tests;
- :mod:`rlanything.desktop` — the GUI setting's spreadsheet tasks in OSWorld's formats.
"""

from . import desktop, household, rules, sandbox

__version__ = "0.1.0"
__all__ = ["desktop", "household", "rules", "sandbox", "__version__"]
