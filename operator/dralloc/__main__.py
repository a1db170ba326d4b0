"""`python -m dralloc` is the same as the `dralloc` console script."""

import sys

from dralloc import cli

sys.exit(cli.main())
