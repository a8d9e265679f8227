"""A counting-level discrete-event simulator of one TCP connection carrying a closed loop of operations.

It follows every request, response, segment and ACK between an initiator (client) and a server, with
the application threads of Butterfield (2017)'s pipeline and the Linux TCP rules of
``/work/shared/reference/linux-tcp-rules.md`` (Nagle with Minshall's check, TCP_NODELAY, MSG_MORE, the
200 ms probe, autocorking, delayed ACKs with quick-ACK and pingpong modes).

>>> from models.sim import Scenario, simulate
>>> r = simulate(Scenario(qd=1, nodelay="server", ops=200))
>>> r.iops > 3000
True

Modules: :mod:`~models.sim.kernels` (kernel constants with sources), :mod:`~models.sim.scenario`
(parameters and defaults), :mod:`~models.sim.events` (event loop), :mod:`~models.sim.link` (wire and host
paths), :mod:`~models.sim.tcp` (TCP rules), :mod:`~models.sim.app` (threads), :mod:`~models.sim.engine`
(assembly), :mod:`~models.sim.result` (output), :mod:`~models.sim.cli` (command line).
"""

from models.sim.engine import Simulation, run, simulate
from models.sim.kernels import PROFILES, KernelProfile, get_profile
from models.sim.result import Result, TraceRecord, format_trace
from models.sim.scenario import SIDES, Scenario

__all__ = ["Scenario", "Result", "TraceRecord", "Simulation", "simulate", "run", "format_trace",
           "KernelProfile", "PROFILES", "get_profile", "SIDES"]
