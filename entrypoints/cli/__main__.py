"""``python -m strongroom.entrypoints.cli``."""

import sys

from strongroom.entrypoints.cli import main

sys.exit(main())
