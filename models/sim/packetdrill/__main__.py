"""``python -m models.sim.packetdrill FILE_OR_FOLDER... [--profile NAME]
[--tolerance_usecs N] [--trace]``: run packetdrill scripts against the
simulator; see :mod:`models.sim.packetdrill.cli`."""

from models.sim.packetdrill.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
