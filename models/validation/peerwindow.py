"""The window the peer advertises: what the kernel's first responses show on the loopback row the
best rules ran furthest from, the rule that follows (``Kernel.peer_window``), and what it does on
three machines' runs.

The row (:data:`ROW`: loopback, bbr, a ``TCP_NODELAY`` server and client, QD 32, 64 KiB
responses) runs at 27 k operations/s in the eighth machine's sample and 3.7 times that in the best
rules (:func:`models.validation.machine7.waits_once` on the machine's calibration).  The server's
own readings of its socket before each of its first responses (:data:`DATASET`,
``tools/window_startup.py``) show the kernel's start: responses written and not sent pile up while
the packets in flight stay below the congestion window, so something else holds them, and bbr
leaves its start-up within a few tens of responses.  The simulator's sender had a fixed window
(``KernelProfile.rcv_wnd_max_bytes``): its first responses all left at once, every rate sample was
application-limited and bbr never left its start-up.  The rule: a sender keeps to the window its
peer advertises on each segment, from the handshake's (at most 65535 bytes) on, and a read that
doubles the window sends it at once (``KernelProfile.peer_window``, on a scenario
``Kernel(peer_window=True)``).

:func:`start` holds the model's start on the row, with the rule and without, to the kernel's;
:func:`evaluate` holds the best rules with the rule to the seventh machine's sample (a test:
nothing of its runs was looked at), the eighth's (where the row was looked at) and the sixth
machine's whole field sweep (a test, another kind of virtual machine).
"""

from __future__ import annotations

import functools
from typing import Any

from models.validation import fidelity as FID
from models.validation import heldcall as HC

__all__ = [
    "DATASET",
    "ROW",
    "SITES",
    "ROLES",
    "RULES",
    "WITHIN",
    "role",
    "HELD_RESPONSES",
    "EARLY_RESPONSES",
    "START_OPS",
    "scenario",
    "kernel",
    "model",
    "start",
    "goal_lists",
    "evaluate",
    "findings",
    "numbers",
]

DATASET = "kernel6_machine8_window_startup"
#: The eighth machine's sample row the best rules ran furthest from: (link, server socket mode,
#: client socket mode, QD, response payload bytes).
ROW = ("loopback", "nodelay", "nodelay", 32, 65536)
#: The runs each pair of rules is held to, and what each column is there: both carry the held
#: call's flags, found on the eighth machine's trace (:mod:`models.validation.heldcall`), and the
#: row that led to the peer's window is the eighth's too, so its columns are not a test.
SITES, ROLES = HC.SITES, HC.ROLES  # the sites heldcall's columns come from, alike
#: The best rules with the held call counted once (the fixed window), and with the peer's window.
RULES = ("fixed window", "peer's window")
WITHIN = HC.WITHIN
#: The start's thresholds, set after the kernel's readings were seen (within its first 32
#: responses every draw held 4.5 responses or more unsent with the flight below the congestion
#: window, and 4 of 5 left the start-up by response 34): at least this many responses written and
#: not sent within the first :data:`EARLY_RESPONSES`, and the start-up left by response
#: :data:`EARLY_RESPONSES` + 8 in most draws.
HELD_RESPONSES, EARLY_RESPONSES = 4, 32
#: Operations the model's start runs (its readings are kept up to response EARLY_RESPONSES + 8).
START_OPS = 400


def role(site: str, rule: str) -> str:
    """What the column of ``site`` under ``rule`` is (:data:`ROLES`, alike for both rules).

    >>> role(SITES[0], RULES[1]), role(SITES[1], RULES[1])
    ('test', 'fit')
    """
    return HC.site_role(ROLES, RULES, site, rule)


def _response_bytes() -> int:
    """Bytes of one response on the row: the iSCSI header (the data PDU's) and the payload."""
    from models.framing import ISCSI_HEADER_BYTES

    return ISCSI_HEADER_BYTES + ROW[4]


def scenario(table: str, row: dict[str, Any], host: Any, hz: int) -> Any:
    """:func:`models.validation.field6.softirq_scenario` with the peer's window (a module-level
    function: it pickles)."""
    from models.validation import field6 as F6

    return F6.softirq_scenario(table, row, host, hz).replace(kernel={"peer_window": True})


def kernel(readings: Any = None) -> Any:
    """Per draw of :data:`DATASET`, over the readings before the first :data:`EARLY_RESPONSES`
    responses and at the last of them: the most bytes written and not sent, in responses; the
    same over the readings whose packets in flight were below the congestion window (so not held
    by it); how many readings had the flight at the window; and the first response whose reading
    has left bbr's start-up (NaN if none of the kept readings has)."""
    import pandas as pd

    from models import data
    from models.sim.rules.bbr_model import HIGH_GAIN

    d = data.load(DATASET) if readings is None else readings
    size = _response_bytes()
    rows = {}
    for draw, g in d.groupby("draw"):
        early = g[g["op"] <= EARLY_RESPONSES]
        below = early[early["unacked"] < early["cwnd"]]
        # bbr's gain in its start-up (x256, bbr_high_gain): a reading with another (and a mode
        # set: not 0) has left it
        gain = g["pacing_gain_x256"]
        left = g[(gain != HIGH_GAIN) & (gain > 0)]
        rows[draw] = {
            "held_responses": float(early["notsent_bytes"].max()) / size,
            "held_below_cwnd": float(below["notsent_bytes"].max()) / size if len(below) else 0.0,
            "at_cwnd": int(len(early) - len(below)),
            "left_startup_at": float(left["op"].min()) if len(left) else float("nan"),
        }
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("draw")


@functools.lru_cache(maxsize=2)
def model(peer_window: bool) -> dict[str, float]:
    """The best rules' start on :data:`ROW` on the eighth machine's calibration (:data:`START_OPS`
    operations, event by event): the most bytes written and not sent at a ``send()`` within the
    first :data:`EARLY_RESPONSES` responses, in responses; the first response written after bbr
    left its start-up (NaN if it never did); the run's rate (operations/s)."""
    from models.sim import hostprofile
    from models.sim.engine import Simulation
    from models.validation import field6 as F6
    from models.validation import machine7 as M7
    from models.validation import machine8 as M8

    row, hz = M7.sample_row(*ROW, prefix=M8.PREFIX)
    host = FID.ProfileHost(M7.waits_once(hostprofile.shipped(M8.PROFILE)))
    sc = F6.softirq_scenario("iscsi_loop", row, host, hz)
    sc = sc.replace(
        kernel={"peer_window": peer_window},
        run={"ops": START_OPS, "warmup_ops": 0, "fast_forward": False},
    )
    sim = Simulation(sc)
    cc = sim.server_ep.sender.cc
    cc.writes, cc.model.trace = [], []
    result = sim.run()
    size = _response_bytes()
    # responses written before each send(): write_seq counts from 1 (seq numbers)
    writes = [(t, unsent, (seq - 1) // size) for t, unsent, seq in cc.writes]
    held = max(u for _, u, n in writes if n <= EARLY_RESPONSES) / size
    left = next((e[4] for e in cc.model.trace if e[2] != "startup"), None)
    # (NaN too if it left after the last write)
    after = [n for t, _, n in writes if left is not None and t >= left]
    at = float(after[0]) if after else float("nan")
    return {"held_responses": held, "left_startup_at": at, "iops": result.iops}


def start() -> Any:
    """The kernel's start (every draw) and the model's with and without the peer's window, one
    row each: the most responses held unsent early, and the response by which bbr had left its
    start-up (NaN: not within the readings kept, or never)."""
    import pandas as pd

    k = kernel()
    cols = ["held_responses", "left_startup_at"]
    rows = {f"kernel, draw {d}": k.loc[d, cols] for d in k.index}
    for rule, on in zip(RULES, (False, True), strict=True):
        m = model(on)
        rows[f"model, {rule}"] = pd.Series(
            {"held_responses": m["held_responses"], "left_startup_at": m["left_startup_at"]}
        )
    return pd.DataFrame(rows).T


@functools.lru_cache(maxsize=1)
def _sixth(processes: int) -> tuple:
    """The sixth machine's sweep under the best rules counted once, with the peer's window."""
    from models.kernel import load_kernel_run
    from models.sim import hostprofile
    from models.validation import field6 as F6
    from models.validation import flory as FL
    from models.validation import machine7 as M7

    run = load_kernel_run(prefix=F6.PREFIX)
    profile = hostprofile.shipped(F6.PROFILE_WAKER).with_host(
        pacing_arm_waits=True, **M7.ONCE_FLAGS
    )
    _, _, lists = FL.models_on_sweep(run, {RULES[1]: (profile, scenario)}, processes)
    return tuple(lists[RULES[1]])


def goal_lists(processes: int | None = None) -> dict[tuple[str, str], list]:
    """The field evaluation's goals for each site and rule ``(site, rule)``; the fixed window's
    columns are :mod:`models.validation.heldcall`'s (the same models, from its cached runs)."""
    from models.sim import hostprofile
    from models.validation import machine7 as M7
    from models.validation import machine8 as M8

    n = FID.workers() if processes is None else processes
    fixed, peer = RULES
    held = HC.goal_lists(processes)
    out = {(site, fixed): held[(site, HC.RULES[1])] for site in SITES}
    for site, m in ((SITES[0], M7), (SITES[1], M8)):
        profile = M7.waits_once(hostprofile.shipped(m.PROFILE))
        out[(site, peer)] = FID.goals(HC.sample_table(m.PREFIX, profile, n, scenario))
    out[(SITES[2], peer)] = list(_sixth(n))
    return out


def evaluate(processes: int | None = None) -> Any:
    """:func:`goal_lists` as a table: one row per goal, one column per ``(site, rule)``."""
    return HC.goal_table(goal_lists(processes))


def findings(k: Any, st: Any, goals: Any) -> dict[str, bool]:
    """The chapter's claims (each fails on a wrong world in ``tests/test_peerwindow.py``):

    * ``the kernel holds its first responses``: in every draw at least :data:`HELD_RESPONSES`
      responses wait unsent within the first :data:`EARLY_RESPONSES` at a reading whose packets in
      flight are below the congestion window (it is not that window that holds them);
    * ``the kernel leaves its start-up early``: in most draws by response :data:`EARLY_RESPONSES`
      + 8;
    * ``so does the model, with the peer's window only``: with it, the model holds as many and
      leaves its start-up as early; with the fixed window it holds less than one response and
      never leaves it;
    * ``no site worse, the same verdicts``: on each of the three sites the rule puts at least as
      many rows within the tolerance and gives the same stall verdicts.
    """
    fixed, peer = RULES
    last = EARLY_RESPONSES + 8
    left = k["left_startup_at"]
    with_w, without = st.loc[f"model, {peer}"], st.loc[f"model, {fixed}"]
    return {
        "the kernel holds its first responses": bool(
            (k["held_below_cwnd"] >= HELD_RESPONSES).all()
        ),
        "the kernel leaves its start-up early": bool((left <= last).sum() * 2 > len(k)),
        "so does the model, with the peer's window only": bool(
            with_w["held_responses"] >= HELD_RESPONSES
            and with_w["left_startup_at"] <= last
            and without["held_responses"] < 1
            and not without["left_startup_at"] <= last
        ),
        "no site worse, the same verdicts": all(
            HC.within_share(goals, s, peer) >= HC.within_share(goals, s, fixed)
            and goals.at["stall verdicts", (s, peer)] == goals.at["stall verdicts", (s, fixed)]
            for s in SITES
        ),
    }


def numbers(k: Any, st: Any, goals: Any) -> dict[str, float]:
    """The numbers the chapter quotes, by name (responses, operations/s, %)."""
    from models.validation import machine7 as M7
    from models.validation import machine8 as M8

    fixed, peer = RULES
    row, _ = M7.sample_row(*ROW, prefix=M8.PREFIX)
    out = {
        "pw_held_lo": float(k["held_below_cwnd"].min()),
        "pw_held_hi": float(k["held_below_cwnd"].max()),
        "pw_at_cwnd_hi": int(k["at_cwnd"].max()),
        "pw_left_by": EARLY_RESPONSES + 8,
        "pw_left_n": int((k["left_startup_at"] <= EARLY_RESPONSES + 8).sum()),
        "pw_draws": len(k),
        "pw_model_held": float(st.at[f"model, {peer}", "held_responses"]),
        "pw_model_left": float(st.at[f"model, {peer}", "left_startup_at"]),
        "pw_kernel_iops": float(row["iops"]),
        "pw_fixed_ratio": model(False)["iops"] / float(row["iops"]),
        "pw_peer_ratio": model(True)["iops"] / float(row["iops"]),
    }
    for i, site in enumerate(SITES):
        for rule, tag in ((fixed, "f"), (peer, "p")):
            out[f"pw_{i}{tag}_within"] = HC.within_share(goals, site, rule)
    return out
