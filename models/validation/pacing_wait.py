"""A send() that arms bbr's pacing timer, traced call by call on the seventh machine (audits).

The dataset (:data:`DATASET`, ``tools/pacing_wait_trace.py``) holds one row per ``send()`` of a
response's data by the server in the book's loop, the ends a CPU apart, in two scenarios: on veth
at MTU 1500 (16 KiB responses, QD 8, a Nagle client) behind a Nagle and a ``MSG_MORE`` server under
bbr, with the Nagle server under cubic and a ``TCP_NODELAY`` server under bbr as contrasts; and on
the loopback (64 KiB responses, an MSS and 53 bytes, QD 32, ``TCP_NODELAY`` on both ends) under bbr
and cubic; two runs each.  Each row says whether bbr's pacing timer was armed on the server's CPU
during the call, when, for how far ahead, when its soft interrupt ran and when the call returned.
Nothing here is a model: :func:`summary` and :func:`findings` hold the kernel's runs to themselves,
and the rule they support, ``Host.pacing_arm_waits``, is tested against the machine's sample of the
field runs in :mod:`models.validation.machine7`.

>>> t = summary(_example())
>>> row = t.loc[("veth-1500", "nagle", "bbr")]
>>> float(row["armed_pct"]), float(row["fired_in_call_pct"])
(100.0, 100.0)
"""

from __future__ import annotations

from typing import Any

__all__ = ["DATASET", "PACED", "UNPACED", "BY", "summary", "findings", "numbers"]

#: The traced calls (``tools/pacing_wait_trace.py``).
DATASET = "kernel6_machine7_pacing_wait"
#: What names a run's row of :func:`summary`.
BY = ["link", "server_sock_mode", "cc"]
#: The runs whose responses leave a short remainder behind bbr's pacing (a held tail on veth,
#: the second segment on the loopback), and the contrasts of each link: no pacing (cubic), or no
#: held tail (a NODELAY server on veth).
PACED = (
    ("veth-1500", "nagle", "bbr"),
    ("veth-1500", "more", "bbr"),
    ("loopback", "nodelay", "bbr"),
)
UNPACED = (
    ("veth-1500", "nagle", "cubic"),
    ("veth-1500", "nodelay", "bbr"),
    ("loopback", "nodelay", "cubic"),
)
#: The share of armed calls in which the timer must fire before the call returns, and the share
#: of a paced run's calls that must arm it, for :func:`findings` (set after the trace was seen:
#: 98-100 % and 79-88 % there; "most calls", not a bound on the kernel).
FIRED_SHARE, ARMED_SHARE = 0.95, 0.75


def summary(calls: Any = None) -> Any:
    """Per (link, server mode, congestion control): the calls traced, the share that armed the
    timer, the share of those in which it fired before the call returned, and medians (us) of
    the armed calls' length, when they armed it, how far ahead, when it fired after its expiry
    and when the call returned after that; the unarmed calls' median length; the runs' IOPS."""
    from models import data

    d = data.load(DATASET) if calls is None else calls
    armed = d[d["armed"]]
    out = d.groupby(BY).agg(
        calls=("call", "size"), armed_pct=("armed", "mean"), iops=("run_iops", "median")
    )
    out["armed_pct"] *= 100
    a = armed.groupby(BY)
    out["fired_in_call_pct"] = 100 * a["fired_after_expiry_us"].apply(lambda s: s.notna().mean())
    for col in (
        "call_us",
        "arm_at_us",
        "expiry_ahead_us",
        "fired_after_expiry_us",
        "returned_after_fire_us",
    ):
        out[f"armed_{col}"] = a[col].median()
    out["unarmed_call_us"] = d[~d["armed"]].groupby(BY)["call_us"].median()
    return out


def findings(t: Any) -> dict[str, bool]:
    """The chapter's claims about the kernel (audits; each fails on a wrong kernel in
    ``tests/test_pacing_wait.py``):

    * ``short remainders arm``: in the runs of :data:`PACED` at least :data:`ARMED_SHARE` of the
      calls arm the pacing timer, in the contrasts none;
    * ``the call waits``: in at least :data:`FIRED_SHARE` of the armed calls the timer fires
      before the call returns, and an armed call lasts at least five times an unarmed one;
    * ``ahead by little``: the timers are armed for expiries less than the time they then take
      to fire (the wait is the timer's lateness, not the pacing interval);
    * ``pacing costs the rate``: on each link the paced runs go at under half its contrasts'
      rates.
    """
    paced, free = t.loc[list(PACED)], t.loc[list(UNPACED)]
    slower = all(
        float(paced.xs(link, level="link")["iops"].max())
        < 0.5 * float(free.xs(link, level="link")["iops"].min())
        for link in {k[0] for k in PACED}
    )
    return {
        "short remainders arm": bool((paced["armed_pct"] >= 100 * ARMED_SHARE).all())
        and bool((free["armed_pct"] == 0).all()),
        "the call waits": bool((paced["fired_in_call_pct"] >= 100 * FIRED_SHARE).all())
        and bool((paced["armed_call_us"] >= 5 * paced["unarmed_call_us"]).all()),
        "ahead by little": bool(
            (paced["armed_expiry_ahead_us"] < paced["armed_fired_after_expiry_us"]).all()
        ),
        "pacing costs the rate": slower,
    }


def numbers(t: Any) -> dict[str, float]:
    """The numbers the chapter quotes, by name (microseconds, percent, operations/s)."""
    paced, free = t.loc[list(PACED)], t.loc[list(UNPACED)]
    return {
        "pw_armed_lo": float(paced["armed_pct"].min()),
        "pw_fired_lo": float(paced["fired_in_call_pct"].min()),
        "pw_call_lo": float(paced["armed_call_us"].min()),
        "pw_call_hi": float(paced["armed_call_us"].max()),
        "pw_unarmed_hi": float(t["unarmed_call_us"].max()),
        "pw_arm_at": float(paced["armed_arm_at_us"].max()),
        "pw_ahead": float(paced["armed_expiry_ahead_us"].max()),
        "pw_fired_lo_us": float(paced["armed_fired_after_expiry_us"].min()),
        "pw_fired_hi_us": float(paced["armed_fired_after_expiry_us"].max()),
        "pw_returned": float(paced["armed_returned_after_fire_us"].max()),
        "pw_paced_kops": float(paced["iops"].max()) / 1e3,  # operations/s -> thousands
        "pw_free_kops": float(free["iops"].min()) / 1e3,
    }


def _example() -> Any:
    """A paced run's two calls and one of each other run (a doctest's table)."""
    import pandas as pd

    row = dict(call=0, call_us=36.0, armed=True, arm_at_us=2.0, expiry_ahead_us=1.0)
    row.update(fired_after_expiry_us=19.0, returned_after_fire_us=14.0, run_iops=3e4)
    free = dict(call=0, call_us=3.0, armed=False, run_iops=1e5)
    runs = [(k, row) for k in PACED] + [(k, free) for k in UNPACED]
    rows = [dict(zip(BY, k), **r) for k, r in runs]
    rows.append(dict(zip(BY, PACED[0]), **{**row, "call": 1}))
    return pd.DataFrame(rows)
