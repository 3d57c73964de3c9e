"""``python -m pg_diag.cli``: the ``pg-diag`` command line."""

import sys

from pg_diag.cli import main

sys.exit(main())
