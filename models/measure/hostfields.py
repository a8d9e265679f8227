"""What a host profile takes from the host-cost microbenchmarks
(:func:`models.measure.costs.summarise`'s ``costs``), and a profile moved to another machine by
them.

:func:`measured_costs` gives the fixed costs (the names of :data:`models.kernel.calibrate.COSTS`),
:func:`timer_costs` the pacing timer's and :func:`handoff_byte` a ``send()``'s extra cost per byte
with its reader on another CPU, each as the fields a profile holds (the wake-up benchmarks are
:mod:`models.measure.wakeups`'); :func:`machine_record` is a profile's ``machine`` from the
benchmarks' ``settings``.  :func:`carry_over` moves a profile made on one machine to another by
the difference of the two machines' benchmarks, leaving its fitted costs as they were.
:func:`models.measure.profile.build_profile` fits what the benchmarks cannot measure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from models.sim import hostprofile

from .wakeups import wake_costs

__all__ = [
    "measured_costs",
    "TIMER_BENCHMARKS",
    "TIMER_FIELDS",
    "timer_costs",
    "handoff_byte",
    "recv_byte_ns",
    "TBF_RECORD",
    "TBF_LATE_HOW",
    "tbf_late",
    "machine_record",
    "carry_over",
]


def _finite(x: float) -> float:
    return x if math.isfinite(x) and x > 0 else 0.0


def measured_costs(costs: Mapping[str, Any]) -> dict[str, float]:
    """The fixed costs (seconds, :data:`models.kernel.calibrate.COSTS` names) from a
    :func:`models.measure.costs.summarise` result, and the floor of the work per message.
    A pure ACK's cost (``ack_s``) is among them when the ACK benchmark ran and gave a number."""
    m = costs["send_model"]
    ack = _finite(costs.get("ack", {}).get("cpu_us_per_ack", 0.0))  # none before the benchmark
    return {
        **({"ack_s": ack * 1e-6} if ack else {}),  # us -> s
        **wake_costs(costs["wake"]),
        "send_s": max(m["per_call_us"], 0.0) * 1e-6,  # us -> s
        "gso_s": max(m["per_segment_us"], 0.0) * 1e-6,  # us -> s
        "op_floor_s": costs["recv"]["cpu_us_per_segment"] * 1e-6,  # us -> s
        "send_byte_s": max(m.get("per_byte_ns", 0.0), 0.0) * 1e-9,  # ns -> s
        "recv_byte_s": recv_byte_ns(costs) * 1e-9,  # ns -> s
    }


def _loop(costs: Mapping[str, Any], key: str) -> float:
    """``costs["loop_bytes"][key]`` when the loop benchmark ran and found it above 0, else 0."""
    return _finite(float((costs.get("loop_bytes") or {}).get(key) or 0.0))


def recv_byte_ns(costs: Mapping[str, Any]) -> float:
    """A read's cost per byte, nanoseconds: as the harness's loop pays it (``loop_bytes``, the
    reader on the other CPU from the writer, many responses in flight) when that benchmark ran,
    else a 64 KiB read's beyond small reads (``recv_large``, one thread: the bytes are in its
    cache).  On the seventh machine the two gave 0.075 and 0.019 ns.

    >>> recv_byte_ns({"recv": {"large": {"per_byte_ns": 0.019}}, "loop_bytes": {
    ...     "recv_per_byte_ns": 0.075}}), recv_byte_ns({"recv": {"large": {"per_byte_ns": 0.019}}})
    (0.075, 0.019)
    """
    return _loop(costs, "recv_per_byte_ns") or _finite(
        float(costs["recv"].get("large", {}).get("per_byte_ns", 0.0))
    )


#: The pacing timer's host fields, each with the costs benchmark and key that measure it
#: (microseconds).
TIMER_BENCHMARKS = {
    "timer_arm_cpu_s": ("timer_arm", "arm_us"),
    "timer_fire_cpu_s": ("timer_fire", "fire_us"),
}
#: Those fields, in order.
TIMER_FIELDS = tuple(TIMER_BENCHMARKS)


def timer_costs(costs: Mapping[str, Any]) -> dict[str, float]:
    """The pacing timer's two costs from :func:`models.measure.costs.summarise`'s ``costs``, as
    host fields in seconds (``timer_arm_cpu_s``, ``timer_fire_cpu_s``); a cost the benchmark
    did not give (an older program) or found to be nothing is left out.

    >>> timer_costs({"timer_arm": {"arm_us": 5.79}, "timer_fire": {"fire_us": 12.5}})
    {'timer_arm_cpu_s': 5.79e-06, 'timer_fire_cpu_s': 1.25e-05}
    >>> timer_costs({})
    {}
    """
    out = {}
    for field, (name, key) in TIMER_BENCHMARKS.items():
        us = float((costs.get(name) or {}).get(key) or 0.0)
        if us > 0 and math.isfinite(us):
            out[field] = round(us * 1e-6, 12)  # us -> s
    return out


def handoff_byte(costs: Mapping[str, Any]) -> dict[str, float]:
    """What a ``send()`` pays per byte beyond the one-thread benchmark's when its reader runs on
    the other CPU, as the host field ``handoff_byte_cpu_s`` in seconds per byte: as the
    harness's loop pays it (``loop_bytes``' ``send_extra_per_byte_ns``: QD 8, responses of 4-32
    KiB, least squares over the sizes) when that benchmark ran and found the writer dearer, else
    ``large_cross``'s (the same 64 KiB ``send()`` once, the reader spinning on another CPU, so
    no wake-up is in it); left out when neither did.  ``large_cross`` is measured at 64 KiB only
    and taken as a cost per byte: a cost per call of the same size would be dearer than a
    512-byte ``send()`` itself.

    >>> handoff_byte({"large_cross": {"send_extra_per_byte_ns": 0.1073}})
    {'handoff_byte_cpu_s': 1.073e-10}
    >>> handoff_byte({"large_cross": {"send_extra_per_byte_ns": 0.1073},
    ...               "loop_bytes": {"send_extra_per_byte_ns": 0.148}})
    {'handoff_byte_cpu_s': 1.48e-10}
    >>> handoff_byte({"large_cross": {"send_extra_per_byte_ns": -0.01}}), handoff_byte({})
    ({}, {})
    """
    ns = _loop(costs, "send_extra_per_byte_ns") or float(
        (costs.get("large_cross") or {}).get("send_extra_per_byte_ns") or 0.0
    )
    if ns > 0 and math.isfinite(ns):
        return {"handoff_byte_cpu_s": round(ns * 1e-9, 15)}  # ns -> s
    return {}


#: Where ``calibrate`` keeps its measurement of the tbf watchdog among the benchmarks' ``costs``
#: (:func:`models.measure.tbftimer.calibration`).
TBF_RECORD = "tbf_watchdog"
#: A profile's provenance of ``tbf_late_s``.
TBF_LATE_HOW = (
    "measured: the median lateness of a tbf rate limit's watchdog timer, frames waiting for "
    "tokens on a veth pair at 300 Mb/s, the sending CPU idle and busy (tbf_watchdog)"
)


def tbf_late(costs: Mapping[str, Any]) -> dict[str, float]:
    """The tbf watchdog's measured lateness from the benchmarks' ``costs`` (its
    :data:`TBF_RECORD`, which ``calibrate`` adds), as the host field ``tbf_late_s`` in seconds;
    left out when it was not measured (the simulator's wake-up proxy stands in then).

    >>> tbf_late({"tbf_watchdog": {"late_us": 22.4}}), tbf_late({})
    ({'tbf_late_s': 2.24e-05}, {})
    """
    us = float((costs.get(TBF_RECORD) or {}).get("late_us") or 0.0)
    if us > 0 and math.isfinite(us):
        return {"tbf_late_s": round(us * 1e-6, 12)}  # us -> s
    return {}


def machine_record(settings: Mapping[str, Any]) -> dict[str, Any]:
    """A profile's ``machine`` from the microbenchmarks' ``settings``."""
    k = settings["kernel"]
    return {
        "kernel": k["release"],
        "config_hz": k["config_hz"],
        "cpus": k["cpus"],
        "machine": k["machine"],
        "congestion_control": settings["congestion_control"] or "unknown",
        "autocorking": settings["autocorking"],
        "date": settings["date"],
        "load": settings["load"],
    }


def carry_over(profile: Any, costs_result: Mapping[str, Any]) -> dict[str, Any]:
    """``profile`` (a host profile made on another machine, e.g. the book's) moved to the machine of
    ``costs_result`` (:func:`models.measure.costs.run_costs`): each cost the microbenchmarks
    measure (:func:`measured_costs`, the ``Host`` field of :data:`models.kernel.calibrate.FIELDS`)
    moves by the difference between this machine's measurement and the profile's own (its
    ``measured`` record), so a measured cost becomes this machine's and a cost that is measured plus
    fitted keeps its fitted part; the fitted costs, and any cost the profile leaves out, stay as
    they are.  The pacing timer's costs (:func:`timer_costs`), measured alone, are this
    machine's (or left out if it gave none), and so is the tbf watchdog's lateness
    (:func:`tbf_late`).  The machine and the settings are the new
    machine's; ``notes`` says where the rest came from.

    >>> old = {"wake": {"pipe_cross": {"median_us": 40.0}},
    ...        "send_model": {"per_call_us": 0.5, "per_segment_us": 2.0, "per_byte_ns": 0.1},
    ...        "recv": {"cpu_us_per_segment": 1.0}}
    >>> new = {"wake": {"pipe_cross": {"median_us": 25.0}},
    ...        "send_model": {"per_call_us": 0.5, "per_segment_us": 2.5, "per_byte_ns": 0.05},
    ...        "recv": {"cpu_us_per_segment": 0.6}}
    >>> book = {"schema": hostprofile.SCHEMA, "version": 1, "measured": old,
    ...         "machine": {"kernel": "6.1-a", "config_hz": 250, "congestion_control": "bbr",
    ...                     "date": "2026-01-01"},
    ...         "host": {"wake_s": 40e-6, "gso_cpu_s": 2.8e-6, "proc_s": 1.4e-6}}
    >>> settings = {"kernel": {"release": "6.1-b", "config_hz": 250, "cpus": 2,
    ...             "machine": "x86_64"}, "congestion_control": "bbr", "autocorking": "1",
    ...             "date": "2026-02-01", "load": [0.1, 0.1, 0.1]}
    >>> d = carry_over(book, {"costs": new, "settings": settings})
    >>> {k: round(v * 1e6, 3) for k, v in d["host"].items()}  # us; gso keeps its fitted 0.8
    {'wake_s': 25.0, 'gso_cpu_s': 3.3, 'proc_s': 1.4}
    >>> d["machine"]["kernel"], d["notes"][:33]
    ('6.1-b', 'carried over from the profile of ')

    Raises
    ------
    ValueError
        The profile has no ``measured`` record to move from.
    """
    from models.kernel import calibrate  # noqa: PLC0415 - NumPy and SciPy only here

    base = hostprofile.load(profile)
    if "measured" not in base.records:
        raise ValueError(
            "profile: has no 'measured' record (the microbenchmarks it was made with), so its "
            "measured costs cannot be moved to another machine"
        )
    st, c = costs_result["settings"], costs_result["costs"]
    old, new = measured_costs(base.records["measured"]), measured_costs(c)
    host = dict(base.host)
    provenance = dict(base.provenance)
    fast_off = not new["wake_fast_idle_s"]  # this machine's wake-ups show no fast step
    for name, value in new.items():
        field = calibrate.FIELDS.get(name)
        if field is None or field not in host:  # not a Host field, or one the profile leaves out
            continue
        if name not in old:  # the profile fitted it (no measurement to move from): it stays
            continue
        if fast_off and name in ("wake_fast_s", "wake_fast_idle_s"):
            host.pop(field, None)
            provenance[field] = "off: this machine's wake-ups show no fast step"
            continue
        shift = value - old.get(name, 0.0)  # seconds
        host[field] += shift  # a negative result fails validate() below, naming the field
        provenance[field] = (
            f"moved by {shift * 1e6:+.3f} us to this machine's microbenchmarks; was "
            + provenance.get(field, "not set")
        )
    # measured alone, never fitted: this machine's, or none
    alone = {
        **{f: (v, "timer_arm, timer_fire") for f, v in timer_costs(c).items()},
        **{f: (v, TBF_RECORD) for f, v in tbf_late(c).items()},
    }
    for field in (*TIMER_FIELDS, "tbf_late_s"):
        host.pop(field, None)
        provenance.pop(field, None)
        if field in alone:
            host[field], source = alone[field]
            provenance[field] = f"measured on this machine ({source})"
    d = {
        "schema": hostprofile.SCHEMA,
        "version": hostprofile.VERSION,
        "machine": machine_record(st),
        "host": host,
        "provenance": provenance,
        "measured": c,
        "settings": st,
        "notes": (
            f"carried over from the profile of kernel {base.machine['kernel']} "
            f"({base.machine['date']}): its fitted costs as they were, its measured costs moved "
            "to this machine's microbenchmarks"
        ),
    }
    for side in hostprofile.SIDES:
        if getattr(base, side):
            d[side] = dict(getattr(base, side))
    hostprofile.validate(d)
    return d
