"""``python -m models.measure calibrate``: this machine's host profile.

Three steps, each bounded:

1. the host-cost microbenchmarks (:func:`models.measure.costs.run_costs`): wake-up latency,
   ``send()`` CPU per call and per segment, ``recv()`` CPU per segment;
2. a short kernel sweep (:data:`RUNS`): the iSCSI-like loop on the host loopback, servers with
   ``TCP_NODELAY`` (header and data as two segments) and with ``MSG_MORE`` on the header (one
   segment), QD 1 and 8, 512 B and 4 KiB responses (eight runs; chapter 9's training modes: a
   Nagle server's delayed-ACK stalls say nothing about the host's costs);
3. a fit (:func:`models.kernel.calibrate.fit_costs`) of only what the microbenchmarks cannot
   measure (the work per message, the per-segment cost beyond the measured one, a pure ACK's
   cost and the path latency), each inside its range, to the median operation times of the runs
   without a delayed-ACK stall.  The measured costs are held: the wake-up (pipe median, the
   sleeper on another CPU), the ``send()`` call and the super-packet
   (:mod:`models.sim.hostprofile` says why each maps where it does) and, where the benchmark
   gives one, a pure ACK's cost; the work per message is
   searched no lower than the measured ``recv()`` cost of a segment, since every message is
   read.  A fitted cost that ends at a bound is reported.

The result is a host profile (:mod:`models.sim.hostprofile`, JSON) with the machine's kernel,
HZ, congestion control and the date, for ``python -m models.sim --host FILE`` and
``Scenario(host=...)``.  What it takes from the microbenchmarks as they measured it, and
:func:`carry_over`, are :mod:`models.measure.hostfields`' (their names are importable from here
too).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from models.sim import hostprofile
from models.sim.hostranges import COST_RANGES, CURVE_RANGES
from models.sim.parts import Link

from .calruns import (
    QUICK_WINDOW_S,
    RUNS,
    WINDOW_S,
    busy_record,
    calibration_sweep,
    fit_target,
    smallest_round_trip_us,
    sweep_rows,
)
from .hostfields import (
    TBF_LATE_HOW,
    TIMER_BENCHMARKS,
    TIMER_FIELDS,
    carry_over,
    handoff_byte,
    machine_record,
    measured_costs,
    tbf_late,
    timer_costs,
)
from .wakeups import (
    FAST_FACTOR,
    WAKE_STEPS,
    late_wake_fields,
    one_way_path_s,
    socket_wake_curve,
    socket_waker_curve,
    tcp_waker_curve,
    timer_spread,
    wake_costs,
    wake_curve,
    waker_curve,
)

__all__ = [
    "RUNS",
    "QUICK_WINDOW_S",
    "WINDOW_S",
    "FAST_FACTOR",
    "wake_costs",
    "timer_spread",
    "timer_costs",
    "handoff_byte",
    "TIMER_BENCHMARKS",
    "TIMER_FIELDS",
    "waker_curve",
    "socket_waker_curve",
    "measured_costs",
    "sweep_rows",
    "calibration_sweep",
    "FIT_EVALUATIONS",
    "smallest_round_trip_us",
    "build_profile",
    "fit_target",
    "carry_over",
    "at_bound_lines",
]


#: Bound on the fit's simulations of the training rows (three costs searched: the work per
#: message, the cost per segment, a thread's CPU per wake-up; 300 stopped most fits before the
#: simplex settled).
FIT_EVALUATIONS = 450
#: The flags of :class:`models.sim.parts.Link` (its ``bool`` fields), which :func:`build_profile`
#: may set on the path of every simulation of its fit.
LINK_FLAGS = tuple(f.name for f in dataclasses.fields(Link) if f.type in (bool, "bool"))


def _simulated_median(
    hz: int,
    cpus: int | None = None,
    host: Mapping[str, Any] | None = None,
    link: Mapping[str, Any] | None = None,
) -> Callable[[Mapping[str, Any], Any], float]:
    """The simulator's median operation time of a row, microseconds (its mean, ``QD / IOPS``, for
    a row whose :func:`~models.measure.calruns.fit_target` is ``"mean"``); with ``cpus``, both
    ends on one machine of that many CPUs (:func:`models.kernel.runs.one_machine`), as the
    calibration's loopback runs are; ``host``: ``Host`` fields of both ends besides the costs (a
    measured wake-up curve); ``link``: ``Link`` flags of the path (``freed_on_handover``)."""
    from models.kernel.runs import one_machine, row_scenario, simulate_uncached  # noqa: PLC0415

    def median_us(row: Mapping[str, Any], costs: Any) -> float:
        sc = row_scenario("iscsi_loop", row, costs, hz)
        if cpus:
            sc = sc.replace(link=one_machine(cpus))
        if host:
            sc = sc.replace(client=dict(host), server=dict(host))
        if link:
            sc = sc.replace(link=dict(link))
        got = simulate_uncached(sc)
        if fit_target(row) == "mean":
            return 1e6 * float(row["qd"]) / float(got.iops)  # Little's law, s -> us
        return float(got.p50_us)

    return median_us


class _WithFlags:
    """Fitted costs (anything with ``scenario_options``) whose scenarios set ``Host`` flags (or
    other ``Host`` fields) on both ends: how :func:`build_profile` hands its ``flags`` and its
    ``host`` to a ``median_us`` of the caller's."""

    def __init__(self, costs: Any, flags: Mapping[str, Any]) -> None:
        self._costs = costs
        self._flags = dict(flags)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._costs, name)

    def scenario_options(self) -> dict:
        got = self._costs.scenario_options()
        return {side: {**opts, **self._flags} for side, opts in got.items()}


def _given_host(host: Mapping[str, Any] | None, fitted: Iterable[str]) -> dict[str, Any]:
    """:func:`build_profile`'s ``host``, checked: ``Host`` fields a profile may set, none of them
    a cost the fit searches or holds (``fitted``, its ``Host`` names).

    >>> _given_host({"timer_fire_cpu_s": 2e-5}, ["proc_s"])
    {'timer_fire_cpu_s': 2e-05}
    >>> _given_host({"proc_s": 1e-6}, ["proc_s"])
    Traceback (most recent call last):
    ...
    ValueError: host: ['proc_s'] are costs the fit searches or holds; give them by costs_result
    """
    given = dict(host or {})
    known = {*COST_RANGES, *CURVE_RANGES, *hostprofile.FLAGS}
    unknown = sorted(set(given) - known)
    if unknown:
        raise ValueError(f"host: {unknown} are not Host fields a profile may set")
    held = sorted(set(given) & set(fitted))
    if held:
        raise ValueError(
            f"host: {held} are costs the fit searches or holds; give them by costs_result"
        )
    return given


def _given_link(link: Mapping[str, Any] | None) -> dict[str, bool]:
    """:func:`build_profile`'s ``link``, checked: flags of :class:`models.sim.parts.Link` (its
    ``bool`` fields), each ``True`` or ``False``.

    >>> _given_link({"freed_on_handover": True})
    {'freed_on_handover': True}
    >>> _given_link({"mtu": 1500})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: link: ['mtu'] are not Link flags; known: [...]
    """
    given = dict(link or {})
    unknown = sorted(set(given) - set(LINK_FLAGS))
    if unknown:
        raise ValueError(f"link: {unknown} are not Link flags; known: {sorted(LINK_FLAGS)}")
    bad = {k: v for k, v in given.items() if not isinstance(v, bool)}
    if bad:
        raise ValueError(f"link: {bad} must be true or false")
    return given


def _bound_note(fit: Any, name: str) -> str:
    bound = dict(fit.at_bound).get(name)
    return f", at the {bound} bound of its range" if bound else ""


def _provenance(name: str, fit: Any, how: dict[str, str]) -> str:
    if name in how:
        return how[name]
    bound = dict(fit.at_bound).get(name)
    return "fitted" + (f", at the {bound} bound of its range" if bound else "")


def build_profile(
    costs_result: Mapping[str, Any],
    rows: list[dict[str, Any]],
    median_us: Callable[[Mapping[str, Any], Any], float] | None = None,
    max_evaluations: int = FIT_EVALUATIONS,
    target: str = "median",
    training: str | None = None,
    fit_wake_cpu: bool = False,
    busy_repeats: list[dict[str, Any]] | None = None,
    flags: Mapping[str, bool] | None = None,
    host: Mapping[str, Any] | None = None,
    link: Mapping[str, bool] | None = None,
) -> dict[str, Any]:
    """The host profile (a JSON object, validated) from the microbenchmarks and the sweep rows.

    Parameters
    ----------
    costs_result
        :func:`models.measure.costs.run_costs`'s result (``settings`` and ``costs``).
    rows
        ``iscsi_loop`` rows (:func:`sweep_rows`); those with a delayed-ACK stall are not fitted.
    median_us
        ``median_us(row, costs)``, the model's median operation time of a row, microseconds, or
        its mean for a row fitted by its rate (:func:`~models.measure.calruns.fit_target`;
        default: the simulator's, at the machine's HZ).
    max_evaluations
        Bound on the fit's simulations of the training rows.
    target
        ``"median"``: each row's median operation time (``lat_p50_us``) is fitted, and
        ``median_us`` gives the model's; ``"mean"``: its mean operation time by Little's law
        (``1e6 * qd / iops``, what its IOPS says), and ``median_us`` gives the model's mean.
    training
        Where the rows came from, recorded in the profile's ``fit`` (default: this machine's
        calibration sweep).
    fit_wake_cpu
        Also fit a thread's CPU per wake-up (``wake_cpu_s``, inside
        :data:`models.kernel.calibrate.RANGES`' ``wcpu_s``): with a run whose server's CPU sets
        the rate among ``rows`` (:data:`~models.measure.calruns.BUSY_RUNS`) the fit can tell it
        from the work per message; without one it cannot.
    busy_repeats
        The busy runs' repeats (:func:`~models.measure.calruns.calibration_sweep`), recorded in
        the profile's ``measured.busy_runs`` with the date, kernel and load of ``costs_result``.
    flags
        ``Host`` flags (``models.sim.hostprofile.FLAGS``, e.g. ``send_cpu_first``) set on both
        ends of every simulation of the fit and in the profile: the costs are fitted under the
        mechanisms the profile will be simulated with (default: none).
    host
        Other ``Host`` fields (profile units: seconds, curves of ``[idle, latency]`` seconds) on
        both ends of every simulation of the fit and in the profile, over those this function
        takes from ``costs_result``: e.g. a timer cost measured after the calibration
        (``tools/refit_profile.py``'s ``--keep``).  Never a cost the fit searches or holds
        (:data:`models.kernel.calibrate.FIELDS`); default: none.
    link
        Flags of the path (:data:`LINK_FLAGS`, e.g. ``freed_on_handover``) in every simulation of
        the fit, recorded in the profile's ``fit.link``: a profile keeps ``Host`` fields only, so
        whoever simulates with it sets these on the link themselves.  Only with the simulator's
        ``median_us`` (a caller's builds its own scenarios); default: none.

    Raises
    ------
    ValueError
        No row without a stall to fit, a ``flags``, ``host`` or ``link`` name the fit does not
        take, ``link`` with a caller's ``median_us``, or a profile value outside its range.
    """
    from models.kernel import calibrate  # noqa: PLC0415 - NumPy and SciPy only here
    from models.kernel.runs import STALL_SHARE_PCT  # noqa: PLC0415

    flags = dict(flags or {})
    unknown = sorted(set(flags) - set(hostprofile.FLAGS))
    if unknown:
        raise ValueError(f"flags: {unknown} are not Host flags; known: {list(hostprofile.FLAGS)}")
    given_host = _given_host(host, calibrate.FIELDS.values())
    given_link = _given_link(link)
    if given_link and median_us is not None:
        raise ValueError("link: only the simulator's median_us takes Link flags; got a caller's")
    st, c = costs_result["settings"], costs_result["costs"]
    hz = st["kernel"]["config_hz"] or 250  # ticks per second; 250 if the config is unreadable
    train = [r for r in rows if float(r["stalled_pct"]) < STALL_SHARE_PCT]
    if not train:
        raise ValueError("rows: every run stalled; nothing to fit the host costs to")
    fixed = measured_costs(c)
    floor = fixed.pop("op_floor_s")
    curve = wake_curve(c["wake"])
    # With the socket wake-up measured and the kernel's smallest round trip known, the path is
    # held at half that round trip and the wake-ups are the socket's: the fit no longer
    # stretches the path to stand in for a dearer wake-up than a pipe's.
    trip = smallest_round_trip_us(rows)
    path = one_way_path_s(trip)
    socket = socket_wake_curve(c["wake"]) if path is not None else ()
    if socket and path is not None:
        curve = socket
        fixed["path_s"] = path
    spread = timer_spread(c["wake"])
    # the share of brief-idle wake-ups as slow as the curve's last point, and what a late one
    # takes, where they can be told
    late_fields, late_how = late_wake_fields(c["wake"]) if socket else ({}, {})
    # the TCP waker measured at every gap, or else the ping-pong's waker timing setting the
    # level of the pipe's waker curve, when measured
    waker_tcp = tcp_waker_curve(c["wake"])
    waker_socket = socket_waker_curve(c["wake"])
    waker = waker_socket or waker_curve(c["wake"])
    timers = timer_costs(c)
    cross = handoff_byte(c)
    if curve:  # the measured curve decides every wake-up: its steps are not set
        for name in WAKE_STEPS:
            fixed.pop(name, None)
    ranges = dict(calibrate.RANGES)
    op = ranges["op_s"]
    ranges["op_s"] = dataclasses.replace(
        op, lo_s=min(max(op.lo_s, floor), op.hi_s), source=op.source + "; no lower than recv()"
    )
    start = {k: min(max(v, ranges[k].lo_s), ranges[k].hi_s) for k, v in calibrate.START.items()}
    if target not in ("median", "mean"):
        raise ValueError(f"target must be 'median' or 'mean', got {target!r}")
    if target == "mean" and median_us is None:
        raise ValueError("target='mean' needs median_us: the model's mean operation time")
    if (flags or given_host) and median_us is not None:  # the caller's scenarios take them
        given = median_us  # from the costs

        def median_us(row: Mapping[str, Any], costs: Any) -> float:
            return given(row, _WithFlags(costs, {**flags, **given_host}))

    def mean(r: Mapping[str, Any]) -> bool:
        return target == "mean" or fit_target(r) == "mean"

    def measured(r: Mapping[str, Any]) -> float:
        if mean(r):
            return 1e6 * float(r["qd"]) / float(r["iops"])  # Little's law, s -> us
        return float(r["lat_p50_us"])

    fit = calibrate.fit_costs(
        train,
        median_us
        or _simulated_median(
            int(hz),
            st["kernel"].get("cpus"),
            {
                **({"wake_curve_s": curve} if curve else {}),
                **({"timer_spread_s": spread} if spread else {}),
                **late_fields,
                **({"waker_curve_s": waker} if waker else {}),
                **timers,
                **cross,
                **flags,
                **given_host,
            }
            or None,
            given_link or None,
        ),
        start=start,
        max_evaluations=max_evaluations,
        fixed=fixed,
        ranges=ranges,
        measured_us=measured,
        also=("wcpu_s",) if fit_wake_cpu else (),
    )
    fields = fit.costs.host_fields()
    if curve:
        fields["wake_curve_s"] = [list(p) for p in curve]
    if spread:
        fields["timer_spread_s"] = spread
    fields.update(late_fields)
    if waker:
        fields["waker_curve_s"] = [list(p) for p in waker]
    fields.update(timers)
    fields.update(cross)
    fields.update(tbf_late(c))  # no tbf in the fit's loopback runs: it only joins the profile
    fields.update(flags)
    fields.update(given_host)
    how = {
        "handoff_byte_cpu_s": "measured: what a send() costs per byte more in the harness's "
        "loop on two CPUs (QD 8, responses of 4-32 KiB) than in one thread (loop_bytes)"
        if "loop_bytes" in c
        else "measured: what a 64 KiB send() costs per byte more with its "
        "reader spinning on the other CPU than in one thread (large_cross)",
        "timer_arm_cpu_s": "measured: timerfd_settime() arming a timer that becomes the CPU's "
        "next event less one that does not (timer_arm)",
        "timer_fire_cpu_s": "measured: the longest pause of a thread spinning on the clock while "
        "its timer fires, less the longest without a timer (timer_fire)",
        "wake_curve_s": "measured: median pipe wake-up of a thread on another CPU after each "
        "idle gap, 2 us to 40 ms (cross_by_gap and cross_by_long_gap); it decides every "
        "wake-up, wake_s stays for what else stands in for a wake-up"
        if not socket
        else "measured: median wake-up of a thread in poll() on a loopback TCP socket, woken "
        "from another CPU after each idle gap of 2 us to 1.28 ms (tcp_by_gap), moved to read "
        "at the ping-pong's idle gap what a wake-up adds to its round trip (pingpong); the "
        "pipe's after longer gaps (cross_by_long_gap), if measured; it decides every wake-up, "
        "wake_s stays for what else stands in for a wake-up",
        "waker_curve_s": "measured: the median of the waker's pipe write() after each idle gap "
        "of the sleeper's CPU, less its median after the shortest gap (cross_by_gap and "
        "cross_by_long_gap)"
        if not waker_socket
        else "measured: the median of the waker's pipe write() after each idle gap of the "
        "sleeper's CPU (cross_by_gap and cross_by_long_gap), moved to read at the ping-pong's "
        "idle gap what the wake-up adds to its requester's send() (pingpong's waker_us: "
        "responder asleep in poll() less spinning)"
        if not waker_tcp
        else "measured: the median of the waker's send() on a loopback TCP socket after each "
        "idle gap of the sleeper's CPU with the sleeper in poll(), less its median with the "
        "sleeper spinning on a non-blocking peek (tcp_by_gap, the waker spinning through the "
        "gap; tcp_by_long_gap, the waker asleep through it)",
        "timer_spread_s": "measured: the 90th percentile less the median of the pipe wake-ups "
        "of a thread on another CPU after the longest idle gap (cross_by_long_gap)",
        "wake_s": "measured: median pipe wake-up of a thread on another CPU "
        "(python -m models.measure costs), after the longest idle gap when gaps were measured",
        "wake_fast_s": "measured: median pipe wake-up of a thread on another CPU after the "
        "shortest idle gap",
        "wake_fast_idle_s": "measured: between the last idle gap whose wake-up was still fast "
        "and the next",
        "send_cpu_s": "measured: send() CPU per call, least squares over five sizes",
        "gso_cpu_s": "measured: send() CPU per loopback segment (one super-packet, both stacks)",
        "softirq_s": "fixed: 0 on loopback (the sender's CPU runs the receiving stack)",
        "send_byte_cpu_s": "measured: send() CPU per byte, least squares over five sizes",
        "recv_byte_cpu_s": "measured: recv() CPU per byte in the harness's loop on two CPUs "
        "(QD 8, responses of 4-32 KiB), beyond its calls at a small read's cost (loop_bytes)"
        if "loop_bytes" in c
        else "measured: recv() CPU per byte of a 64 KiB read beyond small reads",
        "tbf_late_s": TBF_LATE_HOW,
        "send_cpu_first": "set: the fit's simulations and the profile's send a thread's "
        "segment after its send()'s CPU up to it",
    }
    how.update(late_how)
    if socket:
        how["path_s"] = (
            f"measured: half the kernel's smallest round trip on the sweep's runs "
            f"(tcpi_min_rtt {trip:g} us), split evenly between the two ends"
        )
    if "ack_s" in fixed:
        how["ack_cpu_s"] = (
            "measured: CPU of a pure ACK sent and processed on loopback (one thread), the "
            "difference of TCP_QUICKACK 2 and 0 batches per ACK"
        )
    how.update(
        {f: "given: in every simulation of the fit (build_profile's host)" for f in given_host}
    )
    names = {v: k for k, v in calibrate.FIELDS.items()}
    provenance = {f: how.get(f) or _provenance(names.get(f, "path_s"), fit, how) for f in fields}
    # On the loopback a segment is one super-packet (its MSS is about 64 KiB), so the fitted
    # per-segment cost is per super-packet: it joins gso_cpu_s, and tx_cpu_s (software
    # segmentation, per MSS on the wire) is 0, as on every link with TSO/GSO offload (veth too).
    tx_fit = fields.get("tx_cpu_s", 0.0)
    fields["gso_cpu_s"] = fields.get("gso_cpu_s", 0.0) + tx_fit
    fields["tx_cpu_s"] = 0.0
    provenance["gso_cpu_s"] = (
        f"measured + fitted: send() CPU per loopback segment ({fixed['gso_s'] * 1e6:.3f} us) plus "
        f"the fitted per-segment cost ({tx_fit * 1e6:.3f} us; on the loopback a segment is one "
        f"super-packet){_bound_note(fit, 'tx_s')}"
    )
    provenance["tx_cpu_s"] = (
        "fixed: 0, no software segmentation on links with TSO/GSO offload (loopback, veth); "
        "the fitted per-segment cost is in gso_cpu_s"
    )
    rows_out = [
        {
            "sock_mode": r["sock_mode"],
            **({"client_sock_mode": r["client_sock_mode"]} if "client_sock_mode" in r else {}),
            "qd": r["qd"],
            "iosize_bytes": r["iosize_bytes"],
            f"measured_{'mean' if mean(r) else 'p50'}_us": measured(r),
            f"model_{'mean' if mean(r) else 'p50'}_us": measured(r) * math.exp(res),
        }
        for r, res in zip(train, fit.residuals)
    ]
    d = {
        "schema": hostprofile.SCHEMA,
        "version": hostprofile.VERSION,
        "machine": machine_record(st),
        "host": fields,
        "provenance": provenance,
        "measured": {
            **c,
            **({"busy_runs": busy_record(st, busy_repeats)} if busy_repeats else {}),
        },
        "fit": {
            "fixed": list(fit.fixed),
            "fitted": list(fit.fitted),
            "at_bound": [list(b) for b in fit.at_bound],
            "ranges_s": {n: [ranges[n].lo_s, ranges[n].hi_s] for n in fit.fitted},
            "loss": fit.loss,
            "evaluations": fit.evaluations,
            "target": f"{target} operation time",
            "training": training or "this machine's calibration sweep (RUNS)",
            "training_rows": rows_out,
            "stalled_rows": len(rows) - len(train),
            **({"kernel_min_rtt_us": trip} if trip is not None else {}),
            **({"link": given_link} if given_link else {}),
        },
        "settings": st,
    }
    hostprofile.validate(d)  # a value outside its plausible range is an error, not a profile
    return d


def at_bound_lines(profile: Mapping[str, Any]) -> list[str]:
    """One line per fitted cost that ended at a bound of its range."""
    return [
        f"{name} ended at the {side} bound of its range "
        f"[{profile['fit']['ranges_s'][name][0]:g}, {profile['fit']['ranges_s'][name][1]:g}] s"
        for name, side in profile["fit"]["at_bound"]
    ]
