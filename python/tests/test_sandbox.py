"""The sandbox from Python: runs, verdicts, limits, hostile programs."""

import threading

import pytest

from rlanything import sandbox
from rlanything.sandbox import Sandbox


@pytest.fixture(scope="module")
def sb():
    return Sandbox(wall_secs=2.0, cpu_secs=2)


def test_a_program_reads_its_input_and_prints(sb):
    r = sb.run("import sys\nprint(sum(map(int, sys.stdin.read().split())))", stdin="1 2 3")
    assert r["status"] == "exited" and r["code"] == 0 and r["stdout"] == "6\n"


def test_verdicts_on_tests(sb):
    programs = ["print(int(input()) + 1)", "print(int(input()) * 2)", "raise SystemExit(3)",
                "while True: pass"]
    tests = [("1", "2"), ("2", "3")]
    assert sb.verdicts(programs, tests) == [
        ["pass", "pass"], ["pass", "fail"], ["crash", "crash"], ["timeout", "timeout"]]
    assert sb.verdicts(programs, []) == [[], [], [], []]


def test_asserts_are_checked_apart_from_the_program(sb):
    honest = "def square(x):\n    return x * x\n"
    tricks = [
        "import sys\ndef square(x):\n    return x + 1\nsys.exit(0)\n",
        "import os\ndef square(x):\n    os._exit(0)\n",
        "class E:\n    def __eq__(self, o):\n        return True\ndef square(x):\n    return E()\n",
    ]
    got = sb.check_asserts([honest] + tricks, ["assert square(3) == 9"])
    assert got[0] == ["pass"]
    assert all(row[0] != "pass" for row in got[1:])
    check = "def check(candidate):\n    assert candidate(2) == 4\n"
    got = sb.check_asserts([honest, tricks[0]], [check], entry_point="square")
    assert got[0] == ["pass"] and got[1] != ["pass"]


def test_limits_hold(sb):
    assert sb.run("while True: pass")["status"] == "timeout"
    assert sb.run("x = bytearray(2 << 30)")["status"] in ("memory", "crash")
    assert Sandbox(output_bytes=1000).run("print('x' * 5000)")["status"] == "output-limit"
    r = sb.run("import os, sys; os.kill(os.getpid(), 9)")
    assert r["status"] == "crash" and r["signal"] == 9
    assert sb.limits["wall_secs"] == 2.0 and sb.limits["cpu_secs"] == 2


def test_a_detached_child_does_not_hang_the_run(sb):
    # the program starts a daemonised grandchild that keeps stdout open, then exits
    code = ("import os, time\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            "    time.sleep(60)\n"
            "print('parent done')\n")
    r = sb.run(code)
    assert r["stdout"] == "parent done\n"
    assert r["secs"] < 30


def test_one_sandbox_serves_several_threads(sb):
    out = [None] * 4

    def work(i):
        out[i] = sb.run(f"print({i} * {i})")["stdout"]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == ["0\n", "1\n", "4\n", "9\n"]


def test_answers_are_parsed():
    assert sandbox.program_of_answer("Here:\n```python\nprint(1)\n```\n") == "print(1)\n"
    assert sandbox.program_of_answer("   ") is None
    answer = ("**Test Input:**\n```input\n1\n```\n**Test Output:**\n```output\n2\n```\n"
              "**Test Input:**\n```input\n3\n```\n")
    assert sandbox.tests_of_answer(answer) == [("1\n", "2\n"), None]


def test_bad_limits_are_named():
    with pytest.raises(ValueError, match="wall_secs"):
        Sandbox(wall_secs=0.0)
    with pytest.raises(ValueError, match="memory_bytes"):
        Sandbox(memory_bytes=1 << 20)
    with pytest.raises(ValueError, match="does not exist"):
        Sandbox(python="/nowhere/python3")


def test_each_limit_changes_what_a_program_may_do():
    big_file = "open('big', 'wb').write(b'x' * (2 << 20))\nprint('wrote')"
    assert Sandbox().run(big_file)["status"] == "exited"
    assert Sandbox(file_bytes=1 << 20).run(big_file)["status"] == "crash"
    alloc = "x = bytearray(100 << 20)\nprint(len(x))"
    assert Sandbox().run(alloc)["status"] == "exited"
    assert Sandbox(memory_bytes=64 << 20).run(alloc)["status"] in ("memory", "crash")
    nap = "import time\ntime.sleep(2)\nprint('awake')"
    assert Sandbox(wall_secs=5.0).run(nap)["status"] == "exited"
    assert Sandbox(wall_secs=0.5).run(nap)["status"] == "timeout"
    spin = "while True: pass"
    assert Sandbox(wall_secs=30.0, cpu_secs=1).run(spin)["status"] == "timeout"


def test_the_process_limit(sb):
    if not sb.isolation["own_uid"]:
        pytest.skip("programs run under this user, whose other processes count too")
    forks = ("import os, time\n"
             "for _ in range(6):\n"
             "    if os.fork() == 0:\n"
             "        time.sleep(0.5)\n"
             "        os._exit(0)\n"
             "print('forked')\n")
    assert Sandbox(processes=16).run(forks)["stdout"] == "forked\n"
    assert Sandbox(processes=3).run(forks)["status"] == "crash"
