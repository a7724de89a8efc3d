"""A drop-in for ALFWorld's text environment, played by the native household.

Code written for ALFWorld switches by changing one import::

    import alfworld.agents.environment as environment              # before
    import rlanything.alfworld.agents.environment as environment   # after

``environment.get_environment("AlfredTWEnv")(config, train_eval)`` reads the same configuration
keys, finds the same game folders, and ``init_env(batch_size)`` returns an environment whose
``seed``, ``reset`` and ``step`` return what ALFWorld's (textworld's batch environment) returns:
the same observations, admissible commands, scores, dones and info keys, in the same game order.
"""
