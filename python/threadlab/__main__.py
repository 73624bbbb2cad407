"""`python -m threadlab` is the same as the `threadlab` command."""

import sys

from threadlab.launch import main

sys.exit(main())
