#!/usr/bin/env python3
"""Steps per second of the household through the Python package, one game and batched, against
ALFWorld 0.4.2's own engine on the same game, in one run.

    target/py-venv/bin/python benchmarks/python_household.py [--game DIR] [--steps N]

Both play random admissible commands (the same seeded choice rule), episodes of `--episode`
steps, resets included; ALFWorld through `AlfredTWEnv.init_env(batch_size=1)`, as verl-agent
runs it in each of its workers.
"""

import argparse
import os
import pathlib
import platform
import random
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python" / "tests"))


def play(reset, step, steps, episode, rng):
    """Random admissible commands; returns steps/s."""
    t = time.perf_counter()
    done_steps = 0
    while done_steps < steps:
        adm = reset()
        for _ in range(episode):
            adm, done = step([rng.choice(a) for a in adm])
            done_steps += 1
            if done or done_steps >= steps:
                break
    return done_steps / (time.perf_counter() - t)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--game", default=str(ROOT / "tests/fixtures/alfworld-traces/"
                                                  "00-pick_and_place_simple-kitchen"))
    ap.add_argument("--steps", type=int, default=200_000, help="steps of the package's runs")
    ap.add_argument("--alfworld-steps", type=int, default=300)
    ap.add_argument("--episode", type=int, default=50)
    ap.add_argument("--batch", type=int, default=256)
    args = ap.parse_args()

    from rlanything.household import Household, HouseholdBatch

    rows = []
    env = Household.from_game(args.game, args.episode)

    def reset1():
        return [env.reset()[1]["admissible_commands"]]

    def step1(commands):
        _, _, done, info = env.step(commands[0])
        return [info["admissible_commands"]], done

    rows.append(("rlanything, one game", play(reset1, step1, args.steps, args.episode,
                                              random.Random(0))))

    batch = HouseholdBatch([Household.from_game(args.game, args.episode)] * args.batch)

    def resetb():
        return batch.reset()[1]["admissible_commands"]

    def stepb(commands):
        _, _, dones, infos = batch.step(commands)
        return infos["admissible_commands"], all(dones)

    sps = play(resetb, stepb, args.steps // args.batch, args.episode, random.Random(0))
    rows.append((f"rlanything, batch of {args.batch} ({os.cpu_count()} cores)", sps * args.batch))

    try:
        import alfworld.agents.environment as environment
        from conftest import alfworld_config
    except ImportError as e:
        print(f"(alfworld is not installed: {e}; scripts/python-tests.sh installs it)")
        environment = None
    if environment is not None:
        config = alfworld_config(args.game, max_steps=args.episode)
        real = environment.get_environment("AlfredTWEnv")(config, "eval_out_of_distribution")
        alf = real.init_env(batch_size=1)

        def reseta():
            return alf.reset()[1]["admissible_commands"]

        def stepa(commands):
            _, _, dones, infos = alf.step(commands)
            return infos["admissible_commands"], dones[0]

        rows.append(("alfworld 0.4.2 (textworld), one game",
                     play(reseta, stepa, args.alfworld_steps, args.episode, random.Random(0))))
        alf.close()

    print(f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"game {pathlib.Path(args.game).name}, episodes of {args.episode} steps")
    print(f"{'':44} {'steps/s':>12}")
    for name, sps in rows:
        print(f"{name:44} {sps:12,.0f}")
    if environment is not None:
        base = rows[-1][1]
        for name, sps in rows[:-1]:
            print(f"{name}: {sps / base:,.0f}× alfworld")


if __name__ == "__main__":
    main()
