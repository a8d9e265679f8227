"""How long a Nagle server's data wait for the client's ACK, kernel against simulator
(``data/kernel6_machine3_ackdelay``, ``tools/ack_delay_sweep.py``).

bbr estimates the bandwidth from the packets each ACK delivers over the time they took, so the
time a super-packet waits for its ACK bounds the estimate, and the estimate sets the pacing rate
(:mod:`models.sim.rules.bbr`).  The sweep captured the cases of
:mod:`models.validation.ccside` with bbr and with reno on both sockets and measured, for every
data segment the server sent, the wait until the client's first ACK that covers it
(:func:`models.measure.streams.ack_delays`), for full segments and for the tails under an MSS that
Nagle holds.  The simulator's run of the same case on this machine's profile
(:data:`~models.validation.ccside.PROFILE`), traced at the server as the capture was, gives the
same waits.

Per case and congestion control the medians over the runs of the kernel's median wait, beside the
simulator's median wait; a test row passes when the simulator's is within :data:`TOL` of the
kernel's.  (A loose tolerance: the capture slows the kernel's loop, and the waits spread over a
factor of five within one run.)

>>> import pandas as pd
>>> df = pd.DataFrame({"link": ["veth-1500"] * 2, "iosize_bytes": [4096] * 2, "qd": [8] * 2,
...                    "cc": ["bbr"] * 2, "full_ack_p50_us": [10.0, 14.0],
...                    "tail_ack_p50_us": [20.0, 30.0]})
>>> kernel_table(df)[["full_ack_p50_us", "tail_ack_p50_us"]].values.tolist()
[[12.0, 25.0]]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from models.validation.ccside import PROFILE, link_mtu, simulated_row, sweep_hz

if TYPE_CHECKING:  # annotations only
    import pandas as pd

__all__ = ["DATASET", "KEY", "TOL", "kernel_table", "simulated_waits", "table", "findings"]

#: The bundled sweep.
DATASET = "kernel6_machine3_ackdelay"
#: The columns that name a row of the comparison.
KEY = ["link", "iosize_bytes", "qd", "cc"]
#: Relative tolerance of a median wait: half of the kernel's (see the module).
TOL = 0.5


def kernel_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per case and congestion control, the median over the runs of each kind's median wait
    (microseconds)."""
    cols = ["full_ack_p50_us", "tail_ack_p50_us"]
    return df.groupby(KEY)[cols].median().reset_index()


def simulated_waits(case: dict[str, Any], profile: Any = None, ops: int = 3000) -> dict:
    """The simulator's median wait of a full segment and of a tail for the ``case`` (``link``,
    ``iosize_bytes``, ``qd``, ``cc``; the sweep's sockets), traced at the server, microseconds
    (``nan`` for a kind it never sends)."""
    import math

    from models import framing
    from models.measure.streams import ack_delays, first_sends, percentile
    from models.sim import hostprofile, simulate
    from models.validation.fidelity import ProfileHost, field_scenario

    host = ProfileHost(profile or hostprofile.shipped(PROFILE))
    hz = sweep_hz(DATASET)
    sc = field_scenario("iscsi_loop", simulated_row(case, case["cc"]), host, hz)
    r = simulate(sc.replace(run={"trace": True, "trace_at": "server", "ops": ops}))
    sent = [(t.time, t.seq, t.end) for t in r.trace if t.direction == "S > C" and t.length]
    acks = [(t.time, t.ack) for t in r.trace if t.direction == "C > S"]
    waits = ack_delays(first_sends(sent), acks, framing.mss(link_mtu(case["link"])))
    out = {}
    for kind in ("full", "tail"):
        w = waits[kind]
        out[f"sim_{kind}_ack_p50_us"] = percentile(w, 0.5) * 1e6 if w else math.nan  # s -> us
    return out


def table(df: pd.DataFrame | None = None, profile: Any = None) -> pd.DataFrame:
    """:func:`kernel_table` of the bundled sweep (or ``df``) with the simulator's medians and,
    per kind, whether the simulator's is within :data:`TOL` of the kernel's."""
    import pandas as pd

    from models import data

    d = data.load(DATASET) if df is None else df
    t = kernel_table(d)
    sims = pd.DataFrame([simulated_waits(c, profile) for c in t.to_dict("records")])
    t = pd.concat([t, sims], axis=1)
    for kind in ("full", "tail"):
        k, s = t[f"{kind}_ack_p50_us"], t[f"sim_{kind}_ack_p50_us"]
        t[f"{kind}_within"] = (s / k - 1.0).abs() <= TOL
    return t


def findings(t: pd.DataFrame) -> dict[str, bool]:
    """What chapter 9 says of :func:`table`'s result, each as a claim that holds or not."""
    bbr = t[t["cc"] == "bbr"]
    return {
        "the simulator ACKs full segments sooner in every case": bool(
            (t["sim_full_ack_p50_us"] < t["full_ack_p50_us"]).all()
        ),
        "under bbr, below the tolerance in every case": bool(
            (bbr["sim_full_ack_p50_us"] < (1.0 - TOL) * bbr["full_ack_p50_us"]).all()
        ),
    }
