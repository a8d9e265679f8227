"""``python -m models.sim``: see :mod:`models.sim.cli`."""

import sys

from models.sim.cli import main

if __name__ == "__main__":
    sys.exit(main())
