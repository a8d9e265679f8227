"""The Linux TCP rules of the simulator, one family per module.

Each family is a small class with a documented interface; a kernel
profile (:mod:`models.sim.kernels`) names the class of each family it
follows.  Adding a rule is one class here plus one profile line.

==========  ===============================  ==========
family      classes                          module
==========  ===============================  ==========
``nagle``   ``MinshallNagle``,               ``nagle``
            ``ClassicNagle``
``ack``     ``LinuxAck``, ``ImmediateAck``;  ``ack``,
            ``AdaptiveAck``                  ``ack_adaptive``
``cork``    ``Cork``, ``Autocork``           ``cork``
``probe``   ``RtoMinProbe``, ``SrttProbe``   ``probe``
``clock``   ``TickClock``, ``WheelClock``    ``clock``
==========  ===============================  ==========

The congestion rule (module ``cc``: ``NoWindow``, ``Reno``; module
``bbr``: ``Bbr``) is chosen by name from ``CONGESTION_CONTROLS``
(``Kernel.congestion_control``, the profile's ``congestion_control``).
``Bbr`` paces at the rate of bbr's model (module ``bbr``), which reads
the delivery-rate samples of module ``rate``.

The receive path (module ``rx``: ``PerWakeup``,
``InterruptModeration``) is a host part rather than a kernel rule:
a host's ``rx_usecs`` chooses its class.

The transmit qdisc of a rate-limited link (module ``qdisc``:
``WatchdogWake``) is a link part: ``Link.watchdog_wake`` turns it on.

Each rule's docstring names the kernel source it follows (torvalds/linux):
the file and the function, e.g. (``net/ipv4/tcp_input.c``,
``tcp_incr_quickack``).  Each class also offers its state to the
fast-forward (:mod:`models.sim.fastforward`), after its rule.
"""

from models.sim.rules.ack import AckPolicy, ImmediateAck, LinuxAck
from models.sim.rules.ack_adaptive import AdaptiveAck
from models.sim.rules.bbr import Bbr
from models.sim.rules.cc import NoWindow, Reno
from models.sim.rules.clock import TickClock, WheelClock
from models.sim.rules.cork import Autocork, Cork
from models.sim.rules.nagle import ClassicNagle, MinshallNagle, NaglePolicy
from models.sim.rules.probe import RtoMinProbe, SrttProbe
from models.sim.rules.rx import InterruptModeration, PerWakeup

#: The congestion controls a scenario may name (``Kernel.congestion_control``);
#: ``"cubic"`` grows as Reno's slow start does while nothing is lost.
CONGESTION_CONTROLS: dict[str, type[NoWindow]] = {
    "none": NoWindow,
    "reno": Reno,
    "cubic": Reno,
    "bbr": Bbr,
}

#: The base class of each family, by the profile field that names it.
FAMILIES = {
    "nagle": NaglePolicy,
    "ack": AckPolicy,
    "cork": Cork,
    "probe": RtoMinProbe,
    "clock": TickClock,
}

__all__ = [
    "FAMILIES",
    "CONGESTION_CONTROLS",
    "NoWindow",
    "Reno",
    "Bbr",
    "NaglePolicy",
    "MinshallNagle",
    "ClassicNagle",
    "AckPolicy",
    "LinuxAck",
    "ImmediateAck",
    "AdaptiveAck",
    "Cork",
    "Autocork",
    "RtoMinProbe",
    "SrttProbe",
    "TickClock",
    "WheelClock",
    "PerWakeup",
    "InterruptModeration",
]
