"""``python -m models.data``: see :mod:`models.data.cli`."""

import sys

from .cli import main

if __name__ == "__main__":  # pragma: no cover - exercised through the command line
    sys.exit(main())
