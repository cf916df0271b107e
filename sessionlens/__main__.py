"""`python -m sessionlens`: the same CLI."""

import sys

from .cli import main

sys.exit(main())
