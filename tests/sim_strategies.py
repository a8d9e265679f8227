"""Hypothesis strategies for simulator scenarios, generated from the
scenario's field declarations (:mod:`models.sim.params`).

Every field of every part is drawn from its ``Spec.sample``: a
:class:`~models.sim.params.Between` range, a
:class:`~models.sim.params.OneOf` set, or one of the named strategies in
:data:`NAMED`.  A field whose sample cannot be drawn raises ``KeyError``
here, so a new field without a sample fails the property tests
(``tests/test_sim_properties.py::test_every_field_has_a_strategy``).
Rules across fields are kept by drawing those fields together:
a setup request and response are given together, and ``legs`` or
``messages`` (which replaces ``legs``) replaces the request and response
writes.
"""

from __future__ import annotations

import dataclasses

from hypothesis import strategies as st

from models import framing
from models.sim import PARTS, Result, Scenario, get_profile
from models.sim.params import Between, OneOf, Spec

_sizes = st.lists(st.integers(1, 4000), min_size=1, max_size=3).map(tuple)
_leg = st.lists(st.integers(1, 3000), min_size=1, max_size=3).map(tuple)


@st.composite
def _messages(draw) -> tuple:
    """An exchange of two to six messages, each released by an earlier
    message of the other side (a client message may wait for nothing),
    at least one from the server."""
    out = [("C>S", draw(_leg), None)]
    for _ in range(1, draw(st.integers(2, 6))):
        side = draw(st.sampled_from(("C>S", "S>C")))
        other = [j for j, m in enumerate(out) if m[0] != side]
        options = other + ([None] if side == "C>S" else [])
        out.append((side, draw(_leg), draw(st.sampled_from(options)) if options else None))
    if all(m[0] == "C>S" for m in out):
        out.append(("S>C", draw(_leg), len(out) - 1))
    return tuple(out)


#: Strategies named by a field's ``sample``.
NAMED = {
    "sizes": _sizes,
    "legs": st.one_of(
        st.just(()),
        st.lists(_leg, min_size=2, max_size=6).map(lambda legs: tuple(legs[: len(legs) // 2 * 2])),
    ),
    "messages": st.one_of(st.just(()), st.just(()), _messages()),
    "setup": st.one_of(st.just(()), st.just((8,))),
    "bucket": st.one_of(st.none(), st.integers(1, 4)),  # frames, see below
    "tick_phase": st.one_of(st.none(), st.floats(0, 0.999)),  # of a tick
}


def field_strategy(spec: Spec) -> st.SearchStrategy:
    """The strategy of one field."""
    s = spec.sample
    if isinstance(s, Between):
        if spec.kind in ("count", "bytes"):
            return st.integers(s.low, s.high)
        return st.floats(s.low, s.high, allow_nan=False)
    if isinstance(s, OneOf):
        return st.sampled_from(s.values)
    return NAMED[s]


def _draw_part(draw, cls) -> dict:
    return {name: draw(field_strategy(spec)) for name, spec in cls.specs().items()}


@st.composite
def scenarios(draw, **fixed) -> Scenario:
    """A random scenario; ``fixed`` overrides parts' fields
    (``run={"check": True}``)."""
    parts = {name: _draw_part(draw, cls) for name, cls in PARTS.items()}
    wl = parts["workload"]
    if draw(st.booleans()):  # a setup exchange, or none
        wl["setup_request_writes"] = wl["setup_response_writes"] = (8,)
    else:
        wl["setup_request_writes"] = wl["setup_response_writes"] = ()
    if wl["messages"]:  # messages replace legs
        wl["legs"] = ()
    if wl["legs"] or wl["messages"]:  # they replace request/response
        wl["request_writes"], wl["response_writes"] = (48,), (48, 512)
    link = parts["link"]
    if link["bucket_bytes"] is not None:  # whole frames of this MTU
        link["bucket_bytes"] *= framing.bucket_bytes(framing.mss(link["mtu"]))
    if link["wake_preempt"]:  # one shared CPU
        link["shared_cpus"] = 1
    for host in (parts["client"], parts["server"]):
        if host["xmit_clock_in_call"]:  # (a clock after the call's CPU so far)
            host["send_cpu_first"] = True
        if host["handshake_rtt_s"]:  # (a measured round trip as the handshake's sample)
            host["handshake_rtt"] = True
        if not (host["wake_fast_idle_s"] or host["wake_curve_s"]):  # (late against a fast one)
            host["wake_late_share"] = 0.0
    k = parts["kernel"]
    if k["tick_phase_s"] is not None:  # a fraction of the tick
        hz = k["hz"] or get_profile(k["profile"]).hz
        k["tick_phase_s"] = k["tick_phase_s"] / hz
    for name, changes in fixed.items():
        parts[name].update(changes)
    for host in (parts["client"], parts["server"]):
        if not host["wake_late_share"]:  # (what a late wake-up takes, with late ones only)
            host["wake_late_s"] = 0.0
    return Scenario(**parts)


#: Result fields that say how a run was computed, not what it computed:
#: they differ between the fast-forward and running every event.
HOW_RUN = (
    "scenario",
    "events",
    "wall_time_s",
    "skipped_ops",
    "cycle_ops",
    "fast_forward_off_reason",
)


def _same(a, b) -> bool:
    return a == b or repr(a) == repr(b)  # repr: NaN equals NaN, floats exactly


def assert_same_numbers(a: Result, b: Result) -> None:
    """Every result field of ``a`` and ``b`` is the same, bit for bit,
    but those in :data:`HOW_RUN`; so is every number of ``to_dict()``."""
    names = [f.name for f in dataclasses.fields(Result)]
    assert set(HOW_RUN) <= set(names)
    for name in names:
        if name not in HOW_RUN:
            x, y = getattr(a, name), getattr(b, name)
            assert _same(x, y), (name, x, y)
    da, db = a.to_dict(), b.to_dict()
    assert da.keys() == db.keys()
    for key in da:
        if key not in HOW_RUN:
            assert _same(da[key], db[key]), (key, da[key], db[key])
