"""`python -m threadlab` is the same as the `threadlab` command."""

import sys

from threadlab.cli import main

sys.exit(main())
