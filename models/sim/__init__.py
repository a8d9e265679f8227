"""A counting-level discrete-event simulator of one TCP connection
carrying a closed loop of operations.

It follows every ``send()``, segment and ACK between an initiator
(client) and a server, with the application threads of Butterfield
(2017)'s pipeline and the Linux TCP rules (chapter 6 cites each one's
kernel source) as pluggable rule classes
(:mod:`models.sim.rules`) chosen by a kernel profile
(:mod:`models.sim.kernels`).  Standard library only: the same code runs
in CPython and in the reader's browser.

>>> from models.sim import Scenario, simulate
>>> r = simulate(Scenario(server={"nodelay": True}, run={"ops": 200}))
>>> r.iops > 3000
True

Modules: :mod:`~models.sim.scenario` (the composed scenario),
``models.sim.parts`` (its parts and their defaults),
:mod:`~models.sim.params` (field declarations), :mod:`~models.sim.kernels`
(profiles), :mod:`~models.sim.rules` (the TCP rules),
:mod:`~models.sim.sender`, :mod:`~models.sim.receiver`,
:mod:`~models.sim.endpoint`, :mod:`~models.sim.link` (one direction of
the path), :mod:`~models.sim.app` and :mod:`~models.sim.ends` (the threads),
:mod:`~models.sim.exchange` (an operation's messages),
:mod:`~models.sim.cpu` (the threads' CPUs),
:mod:`~models.sim.events` (event loop), :mod:`~models.sim.fastforward`
(fast-forward over exact repeats, and the state protocol every part
offers it), :mod:`~models.sim.engine`, :mod:`~models.sim.result`,
:mod:`~models.sim.explain` (which limit binds),
:mod:`~models.rng` (NumPy's generator in pure Python),
:mod:`~models.sim.cli`.
"""

from models.sim.engine import Simulation, run, simulate
from models.sim.kernels import PROFILES, KernelProfile, get_profile, register_profile
from models.sim.result import DirectionStats, HostStats, Result, TraceRecord, format_trace
from models.sim.scenario import (
    BUTTERFIELD_CLIENT,
    BUTTERFIELD_SERVER,
    PARTS,
    Host,
    Kernel,
    Link,
    Run,
    Scenario,
    Workload,
)

__all__ = [
    "Scenario",
    "Workload",
    "Link",
    "Host",
    "Kernel",
    "Run",
    "PARTS",
    "BUTTERFIELD_SERVER",
    "BUTTERFIELD_CLIENT",
    "Result",
    "DirectionStats",
    "HostStats",
    "TraceRecord",
    "Simulation",
    "simulate",
    "run",
    "format_trace",
    "KernelProfile",
    "PROFILES",
    "get_profile",
    "register_profile",
]
