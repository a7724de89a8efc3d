"""The ``rlanything`` command: the project's command line, the same program as the Rust binary
(``cargo install --path crates/rlanything``), run through the extension module.

``pip install .`` puts it on the environment's ``PATH``; ``python -m rlanything`` is the same.
Like the binary, it installs the program's Ctrl-C handler (remove the sandboxes' folders, exit
with status 130): run it as a command rather than from an interpreter that should survive Ctrl-C.
"""

import sys

from . import _native


def main() -> int:
    """Runs ``rlanything`` with this process's arguments and returns its exit status."""
    return _native.cli(["rlanything", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
