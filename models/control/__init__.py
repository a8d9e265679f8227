"""Closed-loop throttling (chapter 10): packet-delay throttles, EWMA smoothing, the thesis's PID, the plant.

* :mod:`models.control.throttle` -- rate of a queue-depth-limited initiator under added packet delay.
* :mod:`models.control.ewma` -- exponential smoothing of the measured wait time.
* :mod:`models.control.pid` -- the single-sided velocity-form PID controller.
* :mod:`models.control.plant` -- a shared disk group with throttled writers and a fixed-rate reader.
* :mod:`models.control.loop` -- the sampled closed loop tying them together.
* :mod:`models.control.thesis` -- Bjørgeengen's (2010) numbers, its assumed iSCSI session and delay ladders,
  the recomputed overhead test, and the calibrated plant.
"""

from .ewma import Ewma
from .pid import VelocityPID, throttle_steps
from .plant import SharedDiskPlant, calibrate
from .throttle import DelayThrottle, rate_under_delay

__all__ = [
    "Ewma",
    "VelocityPID",
    "throttle_steps",
    "SharedDiskPlant",
    "calibrate",
    "DelayThrottle",
    "rate_under_delay",
]
