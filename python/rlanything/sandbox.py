"""The coding setting's sandbox: Python programs run under limits and judged on tests.

>>> sb = Sandbox(wall_secs=2.0)
>>> sb.run("print(int(input()) * 2)", stdin="21")["stdout"]
'42\\n'
>>> sb.verdicts(["print(int(input()) + 1)"], [("1", "2"), ("5", "7")])
[['pass', 'fail']]
>>> sb.check_asserts(["def f(x):\n    return x + 1\n"], ["assert f(1) == 2", "assert f(2) == 4"])
[['pass', 'fail']]
"""

from . import _native

__all__ = ["Sandbox", "program_of_answer", "tests_of_answer"]

#: ``Sandbox(*, python=None, wall_secs=5.0, cpu_secs=4, memory_bytes=512 MiB, processes=16,
#: output_bytes=1 MiB, file_bytes=16 MiB)``: ``run(source, stdin="")`` returns a dictionary
#: (``status``, ``code``, ``signal``, ``stdout``, ``stderr``, ``secs``); ``verdicts(programs,
#: tests)`` runs every program on every ``(input, expected output)`` pair in parallel;
#: ``check_asserts(programs, asserts, setup="", entry_point=None)`` checks every program on
#: every assert statement (or HumanEval ``check`` code, with ``entry_point``) in the harness that
#: holds the tests apart from the program, so that no early exit or equality trick passes.
Sandbox = _native.Sandbox
#: The program in a coder's answer (the last fenced python block), or ``None``.
program_of_answer = _native.program_of_answer
#: The ``(input, output)`` tests of a test writer's answer, ``None`` for a broken block.
tests_of_answer = _native.tests_of_answer
