"""`python -m dralloc` is the same as the `dralloc` console script."""

import sys

from dralloc.cli import main

sys.exit(main())
