"""``python -m rlanything``: the ``rlanything`` command line."""

import sys

from .cli import main

sys.exit(main())
