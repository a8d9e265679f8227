"""Where a segment waits on one machine: the socket's owner, its backlog, and bbr's long send().

While a thread is inside ``send()`` or ``recv()`` on a socket, Linux queues a segment that
arrives for that socket to its backlog and processes it when the call releases the socket
(``tcp_add_backlog``; ``release_sock``).  The dataset (:data:`DATASET`,
``tools/ownership_trace.py``) traced the fourth machine's kernel in the loop of chapter 9's
pacing section with the two ends pinned a CPU apart (on :data:`LINK`, in :data:`SCENARIO`), a
``MSG_MORE`` and a Nagle server, each under bbr and reno: how long the
server's ``send()`` of a response's data lasted, how much of the time its thread spent in those
calls, how many of the segments each socket processed came from its backlog, and how often bbr's
pacing timer fired.

The simulator processes every segment when it arrives (it has no socket owner), and its ``send()``
takes the thread's transmit CPU and nothing else.  :func:`table` puts beside each traced run what
the simulator does with two host models: the fourth machine's calibrated profile
(:data:`models.validation.machine4.PROFILE`, columns ``sim_``) and the same calibration refitted
with a segment sent after its ``send()``'s CPU, simulated with replies on their CPU
(:data:`models.validation.machine4.SENT`, columns ``sent_``): each model's rate and pacing timers
per operation, and whether its timer class (:func:`models.validation.pacingtimer.classify`, the
test for the third machine's counts too) is the kernel's.  A third model has a socket owner
(``Host.own_socket``): the calibration fitted again with both flags
(:data:`models.validation.machine4.OWNED`, columns ``owned_``), with the shares of segments its
sockets processed from their backlog beside the kernel's.  Nothing of any model was fitted to
these runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from models.measure.netns import LinkSpec

if TYPE_CHECKING:  # annotations only
    import pandas as pd

__all__ = [
    "DATASET",
    "LINK",
    "SCENARIO",
    "KEY",
    "MOST_PCT",
    "SLOWER",
    "COVERED",
    "kernel",
    "table",
    "owner_numbers",
    "send_per_op_us",
    "model_findings",
    "numbers",
    "findings",
]

#: The traced runs (``tools/ownership_trace.py``).
DATASET = "kernel6_machine4_ownership"
#: The traced runs' link (``tools/ownership_trace.py`` runs on it; :func:`table` simulates the
#: pinned sample's rows of its label).
LINK = LinkSpec("veth", mtu=1500)
#: The rest of the traced runs' scenario besides the server's socket mode and the congestion
#: control, in the harness's ``iscsi_loop`` columns (bytes for ``iosize_bytes``).
SCENARIO: dict[str, str | int] = {"client_sock_mode": "nodelay", "qd": 8, "iosize_bytes": 16384}
#: The columns that name a run.
KEY = ["server_sock_mode", "cc"]
#: A share above this many percent is "most".
MOST_PCT = 50.0
#: bbr's ``send()`` of a response's data is called long when it lasts at least this many times
#: reno's for the same server.
SLOWER = 2.0
#: The share of the time per operation bbr adds that its longer ``send()`` must cover for the
#: findings to call the ``send()`` the cause.
COVERED = 2 / 3


def kernel() -> pd.DataFrame:
    """The traced runs, one per (server mode, congestion control)."""
    from models.data import load

    return load(DATASET)


def _row(mode: str, cc: str) -> dict[str, Any]:
    """The pinned sample's row of the traced scenario (:data:`LINK`, :data:`SCENARIO`, ``mode``
    server, ``cc``), or one of its rows with those two changed: the scenario :func:`table`
    simulates."""
    from models.kernel import load_kernel_run
    from models.validation import machine4

    t = load_kernel_run(prefix=machine4.PREFIX).table("iscsi_loop")
    rate = t["rate_limit_bits_per_s"]
    pick = (t["link"] == LINK.label) & (
        rate.isna() if LINK.rate_bits_per_s is None else rate == LINK.rate_bits_per_s
    )
    for column, value in SCENARIO.items():
        pick &= t[column] == value
    same = t[pick & (t["sock_mode"] == mode) & (t["cc"] == cc)]
    base = same if len(same) else t[pick]
    return {**base.iloc[0].to_dict(), "sock_mode": mode, "cc": cc}


def _rate(profile: Any, row: dict[str, Any], hz: int, make: Any) -> float:
    """Operations/s of the scenario ``make`` builds for ``row`` with ``profile``, as chapter 9
    simulates a row (cached)."""
    from models.kernel import simulate_summary
    from models.validation.fidelity import ProfileHost

    return simulate_summary(make("iscsi_loop", row, ProfileHost(profile), hz)).iops


def owner_numbers(profile: Any, row: dict[str, Any], hz: int, make: Any) -> dict[str, float]:
    """From one simulation of the scenario ``make`` builds for ``row`` with ``profile``: its rate
    (``iops``, operations/s); the shares, percent, of the segments the server's socket processed
    and of the data segments the client's socket processed that had waited in the socket's
    backlog (``HostStats.backlogged``: the kernel's ``server_backlog_pct`` and
    ``client_backlog_pct``); and the time the server's thread spent inside ``send()`` calls per
    operation, microseconds (``send_per_op_us``, from ``HostStats.owned_s``, all its calls: the
    kernel's :func:`send_per_op_us` counts the calls of a response's data)."""
    from models.sim import simulate
    from models.validation.fidelity import ProfileHost

    r = simulate(make("iscsi_loop", row, ProfileHost(profile), hz))
    server, client = r.hosts["server"], r.hosts["client"]
    return {
        "iops": float(r.iops),
        "server_backlog_pct": 100.0 * server.backlogged / max(server.received, 1),  # -> percent
        "client_backlog_pct": 100.0 * client.backlogged_data / max(client.received_data, 1),
        "send_per_op_us": 1e6 * server.owned_s / max(r.completed_total, 1),  # s per op -> us
    }


def send_per_op_us(t: pd.DataFrame) -> pd.Series:
    """The kernel's time inside the server's ``send()`` of a response's data per operation,
    microseconds: the share of the window in those calls over the operations in it."""
    return t["send_busy_pct"] / 100 * t["window_ms"] * 1e3 / t["ops"]  # % -> share, ms -> us


def table(profile: Any = None, sent: Any = None, owned: Any = None) -> pd.DataFrame:
    """:func:`kernel` with three models' rate (``sim_iops``, ``sent_iops``, ``owned_iops``) and
    pacing timers per operation (``*_arms_per_op``) on the same scenarios: ``profile`` (default
    the fourth machine's calibrated one) as chapter 9 simulates a pinned run, ``sent`` (default
    :func:`models.validation.machine4.sent_profile`) and ``owned`` (default
    :func:`models.validation.machine4.owned_profile`) with replies on their CPU
    (:func:`models.validation.machine4.replies_scenario`); the classes
    (:func:`models.validation.pacingtimer.classify`) and whether each model's is the kernel's
    (``right``, ``sent_right``, ``owned_right``); ``owned``'s backlog shares and its server's
    time in ``send()`` per operation (:func:`owner_numbers`: ``owned_server_backlog_pct``,
    ``owned_client_backlog_pct``, ``owned_send_per_op_us``) beside the kernel's
    (``send_per_op_us``, :func:`send_per_op_us`)."""
    from models.kernel import load_kernel_run
    from models.sim import hostprofile
    from models.validation import machine4, pacingtimer
    from models.validation.fidelity import field_scenario

    models = {
        "sim": (profile or hostprofile.shipped(machine4.PROFILE), field_scenario),
        "sent": (sent or machine4.sent_profile(), machine4.replies_scenario),
        "owned": (owned or machine4.owned_profile(), machine4.replies_scenario),
    }
    hz = load_kernel_run(prefix=machine4.PREFIX).hz
    t = kernel().copy()
    rows = [_row(r["server_sock_mode"], r["cc"]) for r in t.to_dict("records")]
    t["kernel_class"] = t["pace_kicks_per_op"].map(pacingtimer.classify)
    p, make = models["owned"]
    owner = [owner_numbers(p, r, hz, make) for r in rows]
    for name, (p, make) in models.items():
        if name == "owned":  # (its one simulation gave the rate too)
            t[f"{name}_iops"] = [o["iops"] for o in owner]
        else:
            t[f"{name}_iops"] = [_rate(p, r, hz, make) for r in rows]
        # the timers over pacingtimer.OPS operations (pacingtimer.simulated_arms)
        t[f"{name}_arms_per_op"] = [pacingtimer.simulated_arms(p, r, hz, make=make) for r in rows]
        t[f"{name}_class"] = t[f"{name}_arms_per_op"].map(pacingtimer.classify)
    t["right"] = t["kernel_class"] == t["sim_class"]
    t["sent_right"] = t["kernel_class"] == t["sent_class"]
    t["owned_right"] = t["kernel_class"] == t["owned_class"]
    for key in ("server_backlog_pct", "client_backlog_pct", "send_per_op_us"):
        t[f"owned_{key}"] = [o[key] for o in owner]
    t["send_per_op_us"] = send_per_op_us(t)
    return t


def model_findings(t: pd.DataFrame) -> dict[str, bool]:
    """What the text says of the models in :func:`table` ``t``: the calibrated profile fires
    the pacing timer per operation behind neither server under bbr, where the kernel does; the
    refitted one, sent after its CPU, has the kernel's timer class in every run and its rate
    within :data:`models.validation.fidelity.IOPS_TOL` of the kernel's traced rate in every run;
    the one with a socket owner as well holds what :func:`findings` says of the kernel's
    backlogs (most segments reaching the server wait in its backlog, the client's data wait
    there less under bbr than under reno), and has the kernel's timer class, rate and time in
    ``send()`` per operation (each within :data:`models.validation.fidelity.IOPS_TOL`; its time
    counts every call of the server's, the kernel's the calls of a response's data) in every run.

    >>> import pandas as pd
    >>> t = pd.DataFrame({"cc": ["bbr", "reno"], "iops": [30e3, 80e3],
    ...                   "kernel_class": ["per_op", "seldom"], "sim_class": ["seldom", "seldom"],
    ...                   "sent_right": [True, True], "sent_iops": [33e3, 77e3],
    ...                   "owned_right": [True, True], "owned_iops": [34e3, 85e3],
    ...                   "owned_server_backlog_pct": [81.0, 94.0],
    ...                   "owned_client_backlog_pct": [8.0, 40.0],
    ...                   "send_per_op_us": [26.0, 10.4], "owned_send_per_op_us": [24.5, 10.2]})
    >>> all(model_findings(t).values())
    True
    >>> t.loc[0, "sent_iops"] = 95e3  # the refitted model as fast as the calibrated one
    >>> model_findings(t)["sent after its CPU, every rate is within the tolerance"]
    False
    >>> t["owned_client_backlog_pct"] = [45.0, 40.0]  # the client as often owned under bbr
    >>> model_findings(t)["with a socket owner, the client's data wait less under bbr"]
    False
    """
    from models.validation.fidelity import IOPS_TOL

    bbr, reno = t[t["cc"] == "bbr"], t[t["cc"] == "reno"]
    ratio = t["sent_iops"] / t["iops"]
    owned = t["owned_iops"] / t["iops"]
    in_send = t["owned_send_per_op_us"] / t["send_per_op_us"]
    return {
        "with a socket owner, most segments reaching the server wait in its backlog": bool(
            (t["owned_server_backlog_pct"] > MOST_PCT).all()
        ),
        "with a socket owner, the client's data wait less under bbr": bool(
            bbr["owned_client_backlog_pct"].max() < reno["owned_client_backlog_pct"].min()
        ),
        "with a socket owner, the timer class is the kernel's in every run": bool(
            t["owned_right"].all()
        ),
        "with a socket owner, every rate is within the tolerance": bool(
            ((owned - 1).abs() <= IOPS_TOL).all()
        ),
        "with a socket owner, the server's time in send() is the kernel's in every run": bool(
            ((in_send - 1).abs() <= IOPS_TOL).all()
        ),
        "the calibrated profile fires the timer per operation behind neither server": bool(
            (bbr["kernel_class"] == "per_op").all() and (bbr["sim_class"] != "per_op").all()
        ),
        "sent after its CPU, the timer class is the kernel's in every run": bool(
            t["sent_right"].all()
        ),
        "sent after its CPU, every rate is within the tolerance": bool(
            ((ratio - 1).abs() <= IOPS_TOL).all()
        ),
    }


def _pair(t: pd.DataFrame, mode: str) -> tuple[Any, Any]:
    """The bbr and reno runs of server ``mode``."""
    s = t[t["server_sock_mode"] == mode].set_index("cc")
    return s.loc["bbr"], s.loc["reno"]


def numbers(t: pd.DataFrame) -> dict[str, float]:
    """What the text quotes from :func:`kernel` (or :func:`table`) ``t``: per server mode
    (``more``, ``nagle``) the ``send()`` of a response's data under bbr and reno
    (``{mode}_send_bbr``, ``{mode}_send_reno``, microseconds), the time per operation each
    congestion control gives (``{mode}_op_bbr``, ``{mode}_op_reno``, microseconds, from the
    traced rates), and the share of the time bbr adds that the longer ``send()`` covers
    (``{mode}_covered``); over all runs the lowest and highest share of the server's segments
    processed from its backlog (``backlog_lo``, ``backlog_hi``, percent) and of the client's data
    segments under each congestion control (``client_bbr_hi``, ``client_reno_lo``), the highest
    share of the time the server spent in ``send()`` (``busy_hi``) and the lowest pacing timers
    per operation under bbr (``kicks_lo``)."""
    out: dict[str, float] = {}
    for mode in ("more", "nagle"):
        bbr, reno = _pair(t, mode)
        op_bbr, op_reno = 1e6 / bbr["iops"], 1e6 / reno["iops"]  # operations/s -> us each
        out[f"{mode}_send_bbr"] = float(bbr["send_us_p50"])
        out[f"{mode}_send_reno"] = float(reno["send_us_p50"])
        out[f"{mode}_op_bbr"] = float(op_bbr)
        out[f"{mode}_op_reno"] = float(op_reno)
        out[f"{mode}_covered"] = float(
            (bbr["send_us_p50"] - reno["send_us_p50"]) / (op_bbr - op_reno)
        )
    by_cc = t.set_index("cc")
    out["backlog_lo"] = float(t["server_backlog_pct"].min())
    out["backlog_hi"] = float(t["server_backlog_pct"].max())
    out["client_bbr_hi"] = float(by_cc.loc["bbr", "client_backlog_pct"].max())
    out["client_reno_lo"] = float(by_cc.loc["reno", "client_backlog_pct"].min())
    out["busy_hi"] = float(t["send_busy_pct"].max())
    out["kicks_lo"] = float(by_cc.loc["bbr", "pace_kicks_per_op"].min())
    return out


def findings(t: pd.DataFrame) -> dict[str, bool]:
    """What the text says of :func:`kernel` ``t``, each a claim that holds or not: under either
    congestion control most of the segments reaching the server's socket wait in its backlog
    (above :data:`MOST_PCT`); under bbr the server's ``send()`` of a response's data lasts at least
    :data:`SLOWER` times reno's, and bbr's pacing timer fires about once per operation or more
    (:data:`models.validation.pacingtimer.PER_OP`) and never under reno; that longer ``send()``
    covers at least :data:`COVERED` of the time per operation bbr adds, for both servers; and
    the client's data wait in its backlog less under bbr than under reno (its thread, less busy,
    is less often inside a call when they arrive).

    >>> import pandas as pd
    >>> t = pd.DataFrame({"server_sock_mode": ["more", "more", "nagle", "nagle"],
    ...                   "cc": ["bbr", "reno"] * 2, "iops": [30e3, 80e3, 32e3, 78e3],
    ...                   "send_us_p50": [28.0, 10.0, 30.0, 10.0],
    ...                   "send_busy_pct": [82.0, 78.0, 81.0, 77.0],
    ...                   "server_backlog_pct": [88.0, 76.0, 85.0, 78.0],
    ...                   "client_backlog_pct": [9.0, 62.0, 10.0, 57.0],
    ...                   "pace_kicks_per_op": [0.88, 0.0, 0.89, 0.0]})
    >>> all(findings(t).values())
    True
    >>> t.loc[t.cc == "bbr", "send_us_p50"] = 12.0  # the send() not longer: the claims fail
    >>> f = findings(t)
    >>> f["under bbr the server's send() lasts at least twice reno's"], f[
    ...     "the longer send() covers most of the time bbr adds"]
    (False, False)
    """
    from models.validation.pacingtimer import PER_OP

    n = numbers(t)
    bbr, reno = t[t["cc"] == "bbr"], t[t["cc"] == "reno"]
    return {
        "most segments reaching the server wait in its backlog": bool(
            (t["server_backlog_pct"] > MOST_PCT).all()
        ),
        "under bbr the server's send() lasts at least twice reno's": all(
            n[f"{m}_send_bbr"] >= SLOWER * n[f"{m}_send_reno"] for m in ("more", "nagle")
        ),
        "bbr's pacing timer fires about once per operation, reno's never": bool(
            (bbr["pace_kicks_per_op"] >= PER_OP).all() and (reno["pace_kicks_per_op"] == 0).all()
        ),
        "the longer send() covers most of the time bbr adds": all(
            n[f"{m}_covered"] >= COVERED for m in ("more", "nagle")
        ),
        "the client's data wait in its backlog less under bbr": n["client_bbr_hi"]
        < n["client_reno_lo"],
    }
