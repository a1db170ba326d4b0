"""`python -m dralloc.sandbox` runs the sandbox API server (see `dralloc.sandbox.cli`)."""

import sys

from dralloc.sandbox import cli

sys.exit(cli.main())
