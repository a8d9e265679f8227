"""packetdrill scripts run against the simulator's TCP rules.

packetdrill (google/packetdrill) tests a kernel's TCP with timed scripts:
system calls on a local socket, segments a fake peer injects (``<``) and
segments the kernel must send (``>``), each at a time.  This package runs
scripts in that syntax against the simulator instead of a kernel: the
local socket is a simulated :class:`~models.sim.endpoint.Endpoint` with a
kernel profile's rules (:mod:`models.sim.kernels`), so the same script
states a Linux rule and checks that the simulator follows it.

* ``models.sim.packetdrill.parser``: the supported subset of the
  syntax (``parse_script``, ``ScriptError``);
* ``models.sim.packetdrill.runner``: driving the endpoint
  (``run_script``, ``run_file``, ``Outcome``);
* ``models.sim.packetdrill.known``: scripts where the simulator is
  known to disagree with Linux, and why (``KNOWN_DISAGREEMENTS``);
* ``python -m models.sim.packetdrill FILE_OR_FOLDER...``: the command line;
* ``scripts/``: this project's scripts, one Linux behaviour each, with the
  kernel function that implements it in the header.

Standard library only, like the rest of :mod:`models.sim`.

>>> from models.sim.packetdrill import SCRIPTS_DIR, run_file
>>> out = run_file(SCRIPTS_DIR / "nagle_holds_small_segment.pkt")
>>> out.passed
True
"""

from pathlib import Path

from models.sim.packetdrill.known import KNOWN_DISAGREEMENTS
from models.sim.packetdrill.parser import Script, ScriptError, parse_file, parse_script
from models.sim.packetdrill.runner import (
    DEFAULT_TOLERANCE_USECS,
    Mismatch,
    Outcome,
    run_file,
    run_script,
)

#: The folder of this project's scripts.
SCRIPTS_DIR = Path(__file__).resolve().parent / "scripts"

__all__ = [
    "DEFAULT_TOLERANCE_USECS",
    "KNOWN_DISAGREEMENTS",
    "Mismatch",
    "Outcome",
    "SCRIPTS_DIR",
    "Script",
    "ScriptError",
    "parse_file",
    "parse_script",
    "run_file",
    "run_script",
]
