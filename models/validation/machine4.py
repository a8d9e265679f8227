"""A fourth machine: ``calibrate`` as it now stands, held to runs that none of its parts saw.

A fourth machine of the same kind (two vCPUs, kernel 6.18.44 at HZ 250 under bbr; the build
``fc-v595``) was measured in its first quarter hour, with nothing else running: first the repeat
plan's sample pinned a CPU apart (``python -m models.measure sweep --plan repeat --pin apart``,
:data:`DATASET`, as on the third machine), then ``python -m models.measure calibrate --tries 3``
(:data:`PROFILE`: the microbenchmarks, the eight loopback runs and the busy run).  No row of the
sample was fitted.  One thing was changed after the sample had been seen: the first calibration
left the large responses several times too fast, and ``calibrate`` now also holds what the
microbenchmarks measure a ``send()`` to pay per byte when its reader runs on the other CPU
(``Host.handoff_byte_cpu_s``, from ``large_cross``; measured, not fitted); the profile is the
calibration run again after that change.  A second correction came later: the microbenchmark of a
timer's interrupt (``timer_fire``) had read no pause at all on this machine, whose hypervisor
delivers the interrupt a few microseconds early, before the benchmark's window opened; with the
window opened earlier it reads 12-16 us, and the profile now holds the median of four such runs
(``Host.timer_fire_cpu_s``, ``measured.timer_fire_again``; nothing refitted), and the simulator
runs a pacing timer's work on the CPU that armed it (the kernel pins it there).  The same traces
show the client's stack receiving a response, and sending its immediate ACK, on the server's CPU;
the simulator can now send what a receive soft interrupt sends from that interrupt's CPU
(``Link.replies_on_rx_cpu``, off by default: the profiles of the earlier machines were fitted
without it), and the table shows the calibrated profile with it as a row of its own
(:data:`REPLIES`).  Traces of the kernel's ``send()`` (:mod:`models.validation.ownership`) show
a response's data leaving a few microseconds into the call, after its copy, where the simulator lets
it leave at the call's start; :data:`SENT` is the calibration fitted again from its own records
with ``Host.send_cpu_first`` (``tools/refit_profile.py``, :data:`PROFILE_SENT`: nothing measured
again, nothing fitted to the sample), simulated with replies on their CPU too.  The same traces
show most segments reaching a socket waiting in its backlog while its thread is inside a call;
:data:`OWNED` is the calibration fitted again with ``Host.own_socket`` too (:data:`PROFILE_OWNED`,
the same tool and records), simulated with replies on their CPU.  Four host
models meet the sample's unlimited-link rows (:data:`MODELS`):

``calibrated here``
    the fourth machine's own profile, as corrected;
``no cross-CPU copy``
    the same profile without the cross-CPU copy cost (a wrong model: the copy priced as in one
    thread);
``no timer interrupt``
    the same profile without the pacing timer's interrupt (a wrong model: the profile as its
    calibration first wrote it);
``third machine's``
    the third machine's kept profile (:func:`models.validation.ackheld.kept_name`): what a reader
    gets who takes a profile made on another machine of the same kind instead of calibrating;
``third machine's kernel``
    an audit, not a model: the third machine's own runs of the same scenarios
    (:func:`models.validation.machines.kernel_beside`), how far the kernel moved between the two;
``this machine, again``
    an audit: the same sample measured again on the fourth machine right after the calibration
    (:data:`AGAIN`), how far the kernel repeats itself.

:data:`REPLIES` (``calibrated here`` with ``Link.replies_on_rx_cpu``), :data:`SENT` and
:data:`OWNED` are shown after the first row and are not among :data:`MODELS`.

>>> MODELS[0], len(MODELS)
('calibrated here', 6)
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from models.validation.fidelity import IOPS_SHARE, IOPS_TOL, iops_table, simulate_loop

if TYPE_CHECKING:  # annotations only
    import pandas as pd

__all__ = [
    "PREFIX",
    "DATASET",
    "AGAIN",
    "PROFILE",
    "KERNEL",
    "MODELS",
    "COLUMNS",
    "LARGE_BYTES",
    "NEAR_GOAL_PTS",
    "MOVED_PTS",
    "RATIO_STEP",
    "REPLIES",
    "SENT",
    "PROFILE_SENT",
    "OWNED",
    "HANDSHAKE",
    "FREED",
    "FREED_CLOCK",
    "PROFILE_OWNED",
    "ROWS",
    "replies_scenario",
    "clock_scenario",
    "handshake_scenario",
    "freed_scenario",
    "freed_clock_scenario",
    "profiles",
    "summary",
    "Machine4Evaluation",
    "evaluate",
    "findings",
    "numbers",
]

#: The fourth machine's pinned sample (``--prefix``) and its table, named in full so that
#: :mod:`models.validation.coverage` finds the reader.
PREFIX = "kernel6_machine4_apart"
DATASET = "kernel6_machine4_apart_iscsi_loop"
#: The same sample measured again on the same machine after the calibration.
AGAIN = "kernel6_machine4_apart2_iscsi_loop"
#: Its ``calibrate --tries 3`` profile (``data/hosts/<name>.json``).
PROFILE = "kernel6_machine4"
#: Its kernel build, as the profile and the sample record it.
KERNEL = "6.18.44-fc-v595"
#: The models and the audit, in the order the table shows them.
MODELS = (
    "calibrated here",
    "no cross-CPU copy",
    "no timer interrupt",
    "third machine's",
    "third machine's kernel",
    "this machine, again",
)
#: The calibrated profile with what a receive soft interrupt sends leaving from that interrupt's
#: CPU (``Link.replies_on_rx_cpu``).
REPLIES = "replies on their CPU"
#: The calibration fitted again with a segment sent after its ``send()``'s CPU
#: (``tools/refit_profile.py --set send_cpu_first=true``), simulated with replies on their CPU.
SENT = "sent after its CPU, refitted"
#: Its profile (``data/hosts/<name>.json``).
PROFILE_SENT = "kernel6_machine4_sent_after_cpu"
#: The calibration fitted again with a segment sent after its ``send()``'s CPU and with the socket
#: owned by the thread's calls (``--set send_cpu_first=true --set own_socket=true``), simulated
#: with replies on their CPU.
OWNED = "socket owned too, refitted"
#: Its profile (``data/hosts/<name>.json``).
PROFILE_OWNED = "kernel6_machine4_sent_owned"
#: :data:`OWNED` with the handshake's round trip that each side of a process's first connection
#: measured as its first RTT sample (``Host.handshake_rtt``, ``Host.handshake_rtt_s``:
#: :func:`handshake_scenario`; nothing fitted again).
HANDSHAKE = "handshake's sample too"
#: The table's rows, in order.
#: :data:`SENT` with a sent data frame freed as the link takes it (``Link.freed_on_handover``:
#: loopback and veth free it before the sending call returns, so nothing of the socket is in the
#: host when it next writes, as the server's own readings show, and autocorking never holds;
#: nothing fitted again, and nothing to fit: ``tools/refit_profile.py --link
#: freed_on_handover=true`` gives the sent profile's costs again, as the calibration's loopback
#: passes a frame in nanoseconds and no frame of the fit is held when its socket next writes).
FREED = "freed on hand-over too"
#: :data:`FREED` with bbr's pacing clock read after the call's CPU so far on both hosts
#: (``Host.xmit_clock_in_call``: ``tcp_write_xmit`` refreshes its clock after the copy, so a
#: segment that waits behind its predecessor in the same call is paced against a later clock):
#: both rules are the kernel's; nothing fitted again.
FREED_CLOCK = "freed, paced by the call's clock"
#: The table's rows, in order.
ROWS = (MODELS[0], REPLIES, SENT, OWNED, HANDSHAKE, FREED, FREED_CLOCK, *MODELS[1:])
#: Responses of at least this many bytes are the large ones (bytes): where the copies weigh.
LARGE_BYTES = 16384
#: Percentage points within which a share is said to be near the goal's.
NEAR_GOAL_PTS = 5.0
#: Percentage points a share must move (or may move at most, to be left "hardly moved") between
#: two models for the findings to call it a change: a run in the 133 is 0.75 points.
MOVED_PTS = 5.0
#: A median ratio must move by more than this between two models for the findings to call one
#: slower.
RATIO_STEP = 0.05
#: :func:`summary`'s keys and the table's column names.
COLUMNS = {
    "within_pct": f"within {IOPS_TOL:.0%} (%)",
    "median_q1": "median ratio, QD 1",
    "median_q8": "median ratio, QD >= 8",
    "verdicts": "stall verdicts right",
    "held_within_pct": "bbr behind Nagle: within (%)",
    "others_within_pct": "the rest: within (%)",
    "large_within_pct": f"the rest, {LARGE_BYTES // 1024} KiB and more: within (%)",
}


def replies_scenario(table: str, row: dict[str, Any], host: Any, hz: int) -> Any:
    """:func:`~models.validation.fidelity.field_scenario` with ``Link.replies_on_rx_cpu`` (a
    module-level function: it pickles)."""
    from models.validation.fidelity import field_scenario

    return field_scenario(table, row, host, hz).replace(link={"replies_on_rx_cpu": True})


def clock_scenario(table: str, row: dict[str, Any], host: Any, hz: int) -> Any:
    """:func:`replies_scenario` with the pacing clock read after the call's CPU so far on both
    hosts (``Host.xmit_clock_in_call``, which needs ``send_cpu_first``: for :data:`OWNED` and
    :data:`SENT`; a module-level function: it pickles)."""
    on = {"xmit_clock_in_call": True}
    return replies_scenario(table, row, host, hz).replace(client=on, server=on)


def handshake_scenario(table: str, row: dict[str, Any], host: Any, hz: int) -> Any:
    """:func:`replies_scenario` with the handshake's round trip as each end's first RTT sample
    (``Host.handshake_rtt``): the one each side of a process's first connection over the row's
    link measured (``Host.handshake_rtt_s``, :func:`models.validation.handshake.first_rtt_s`);
    a module-level function: it pickles."""
    from models.validation.handshake import first_rtt_s

    link = str(row["link"])
    client, server = ({"handshake_rtt": True, "handshake_rtt_s": first_rtt_s(link, side)}
                      for side in ("client", "server"))  # fmt: skip
    return replies_scenario(table, row, host, hz).replace(client=client, server=server)


def freed_scenario(table: str, row: dict[str, Any], host: Any, hz: int) -> Any:
    """:func:`replies_scenario` with a sent data frame freed as the link takes it
    (``Link.freed_on_handover``; a module-level function: it pickles)."""
    return replies_scenario(table, row, host, hz).replace(link={"freed_on_handover": True})


def freed_clock_scenario(table: str, row: dict[str, Any], host: Any, hz: int) -> Any:
    """:func:`freed_scenario` with the pacing clock read after the call's CPU so far on both
    hosts (``Host.xmit_clock_in_call``, which needs ``send_cpu_first``: for :data:`SENT`'s
    profile; a module-level function: it pickles)."""
    on = {"xmit_clock_in_call": True}
    return freed_scenario(table, row, host, hz).replace(client=on, server=on)


def profiles() -> dict[str, Any]:
    """The host profiles of the first four :data:`MODELS`, by name."""
    from models.sim import hostprofile
    from models.validation.ackheld import kept_name

    own = hostprofile.shipped(PROFILE)
    no_copy = copy.deepcopy(own.to_dict())
    no_copy["host"]["handoff_byte_cpu_s"] = 0.0  # the copy priced as in one thread
    no_timer = copy.deepcopy(own.to_dict())
    no_timer["host"]["timer_fire_cpu_s"] = 0.0  # the interrupt as the first benchmark read it
    made = (own, hostprofile.load(no_copy), hostprofile.load(no_timer))
    return dict(zip(MODELS, (*made, hostprofile.shipped(kept_name()))))


def sent_profile() -> Any:
    """:data:`SENT`'s host profile (:data:`PROFILE_SENT`)."""
    from models.sim import hostprofile

    return hostprofile.shipped(PROFILE_SENT)


def owned_profile() -> Any:
    """:data:`OWNED`'s host profile (:data:`PROFILE_OWNED`)."""
    from models.sim import hostprofile

    return hostprofile.shipped(PROFILE_OWNED)


def summary(table: pd.DataFrame) -> dict[str, Any]:
    """One evaluated table's numbers (:func:`evaluate`'s ``tables``): the share of its IOPS rows
    within :data:`IOPS_TOL` (percent), the median ratio of model to kernel at QD 1 and at QD 8
    and above, the test rows' stall verdicts right (``"right/rows"``), and the share within for
    the runs under bbr whose server lets Nagle hold data
    (:func:`models.validation.machines.bbr_held`), for the rest, and for the rest's responses of
    :data:`LARGE_BYTES` and more."""
    from models.validation import ackheld
    from models.validation.machines import bbr_held

    base = ackheld.summary(table)
    io = iops_table(table)
    held = bbr_held(io)
    large = ~held & (io["iosize_bytes"] >= LARGE_BYTES)
    return {
        "within_pct": base["within_pct"],
        "median_q1": base["median_q1"],
        "median_q8": base["median_q8"],
        "verdicts": f"{base['verdicts_right']}/{base['test_rows']}",
        "held_within_pct": float(io.loc[held, "within"].mean() * 100),
        "others_within_pct": float(io.loc[~held, "within"].mean() * 100),
        "large_within_pct": float(io.loc[large, "within"].mean() * 100),
    }


@dataclass(frozen=True)
class Machine4Evaluation:
    """:func:`evaluate`'s result: ``table``, one row per entry of :data:`MODELS` with
    :func:`summary`'s numbers; ``tables``, the evaluated tables by the same names; ``profiles``,
    :func:`profiles`."""

    table: Any
    tables: dict
    profiles: dict


def evaluate(processes: int | None = None) -> Machine4Evaluation:
    """Every model of :data:`MODELS` held to the sample's unlimited-link rows (the field roles and
    tolerance, :func:`~models.validation.fidelity.simulate_loop`), and the audits beside them."""
    import pandas as pd

    from models import data
    from models.kernel import load_kernel_run
    from models.validation.ackheld import DATASET as THIRD
    from models.validation.ackheld import unlimited
    from models.validation.machines import kernel_beside

    run = load_kernel_run(prefix=PREFIX)
    models = profiles()
    tables = {
        name: simulate_loop(run, p, processes=processes, rows=unlimited)
        for name, p in models.items()
    }
    here = run.table("iscsi_loop")
    mine = here[unlimited(here)]
    tables[REPLIES] = simulate_loop(
        run, models[MODELS[0]], processes=processes, rows=unlimited, scenario=replies_scenario
    )
    tables[SENT] = simulate_loop(
        run, sent_profile(), processes=processes, rows=unlimited, scenario=replies_scenario
    )
    tables[OWNED] = simulate_loop(
        run, owned_profile(), processes=processes, rows=unlimited, scenario=replies_scenario
    )
    tables[HANDSHAKE] = simulate_loop(
        run, owned_profile(), processes=processes, rows=unlimited, scenario=handshake_scenario
    )
    tables[FREED] = simulate_loop(
        run, sent_profile(), processes=processes, rows=unlimited, scenario=freed_scenario
    )
    tables[FREED_CLOCK] = simulate_loop(
        run, sent_profile(), processes=processes, rows=unlimited, scenario=freed_clock_scenario
    )
    tables[MODELS[4]] = kernel_beside(mine, data.load(THIRD))
    tables[MODELS[5]] = kernel_beside(mine, data.load(AGAIN))
    table = pd.DataFrame({name: summary(t) for name, t in tables.items()}).T
    return Machine4Evaluation(table.loc[list(ROWS)], tables, models)


def findings(table: pd.DataFrame) -> dict[str, bool]:
    """What chapter 9 says about :func:`evaluate`'s table, each a claim that holds or not.

    >>> import pandas as pd
    >>> t = pd.DataFrame({"within_pct": [60.2, 72.9, 75.2, 60.9, 60.2, 79.7, 78.9, 44.4, 54.1,
    ...                                  42.1, 60.2, 82.0],
    ...                   "median_q1": [1.01, 1.01, 0.88, 0.89, 0.89, 0.88, 0.88, 1.0, 1.01, 1.10,
    ...                                 1.01, 1.0],
    ...                   "held_within_pct": [43.1, 51.7, 65.5, 53.4, 55.2, 82.8, 75.9, 32.8, 27.6,
    ...                                       27.6, 60.3, 81.0],
    ...                   "others_within_pct": [73.3, 89.3, 82.7, 66.7, 68.0, 77.3, 81.3, 53.3,
    ...                                         74.7, 53.3, 60.0, 82.7],
    ...                   "large_within_pct": [73.3, 86.7, 76.7, 63.3, 60.0, 63.3, 73.3, 43.3,
    ...                                        76.7, 33.3, 33.3, 83.3],
    ...                   "verdicts": ["140/143"] * 12},
    ...                  index=list(ROWS))
    >>> all(findings(t).values())
    True
    >>> t.loc["no cross-CPU copy", "large_within_pct"] = 73.3  # a copy cost that changes nothing
    >>> t.loc["no timer interrupt", "held_within_pct"] = 43.1  # an interrupt that changes nothing
    >>> [k for k, v in findings(t).items() if not v]  # doctest: +NORMALIZE_WHITESPACE
    ['without the cross-CPU copy the large responses miss more',
     'without the timer interrupt the runs under bbr behind Nagle miss more']
    """
    own, no_copy, no_timer, third, kernel3, again = (table.loc[m] for m in MODELS)
    replies, sent, owned = table.loc[REPLIES], table.loc[SENT], table.loc[OWNED]
    shake, freed, fclock = table.loc[HANDSHAKE], table.loc[FREED], table.loc[FREED_CLOCK]
    return {
        "the calibrated profile beats the third machine's": own.within_pct > third.within_pct,
        "without the cross-CPU copy the large responses miss more": no_copy.large_within_pct
        < own.large_within_pct,
        "without the timer interrupt the runs under bbr behind Nagle miss more": (
            no_timer.held_within_pct < own.held_within_pct
        ),
        "the timer interrupt hardly moves the rest": abs(
            no_timer.others_within_pct - own.others_within_pct
        )
        < MOVED_PTS,
        "QD 1 is within the tolerance at its median": abs(own.median_q1 - 1) <= IOPS_TOL,
        "the rest, not bbr behind Nagle, is where it is nearest": own.others_within_pct
        > own.held_within_pct,
        "with replies on their CPU more runs are within": replies.within_pct
        > own.within_pct + MOVED_PTS,
        "with replies on their CPU the rest meets the goal's share": replies.others_within_pct
        >= IOPS_SHARE * 100,
        "with replies on their CPU it still does not reach the goal's share": replies.within_pct
        < IOPS_SHARE * 100,
        "sent after its CPU, the runs under bbr behind Nagle are within more often": (
            sent.held_within_pct > replies.held_within_pct + MOVED_PTS
        ),
        "sent after its CPU, the rest is within less often, still at the goal's share": (
            IOPS_SHARE * 100 <= sent.others_within_pct < replies.others_within_pct
        ),
        "sent after its CPU, QD 1 is slower, still within the tolerance": (
            1 - IOPS_TOL <= sent.median_q1 < replies.median_q1 - RATIO_STEP
        ),
        "with a socket owner too, fewer runs are within than sent after its CPU alone": (
            owned.within_pct < sent.within_pct - MOVED_PTS
        ),
        "with a socket owner too, the runs under bbr behind Nagle are not within more often": (
            owned.held_within_pct <= sent.held_within_pct
        ),
        "with the first connection's handshake too, about as many within, no verdict moves": (
            abs(shake.within_pct - owned.within_pct) < MOVED_PTS
            and shake.verdicts == owned.verdicts
        ),
        "freed on hand-over, more runs are within than sent after its CPU alone": (
            freed.within_pct > sent.within_pct
        ),
        "freed on hand-over, the runs under bbr behind Nagle gain most, the large lose": (
            freed.held_within_pct > sent.held_within_pct + MOVED_PTS
            and freed.large_within_pct < sent.large_within_pct
        ),
        "freed on hand-over, the share within is near the goal's": abs(
            freed.within_pct - IOPS_SHARE * 100
        )
        < NEAR_GOAL_PTS,
        "paced by the call's clock too, the large responses are within more often than freed": (
            fclock.large_within_pct > freed.large_within_pct + MOVED_PTS
        ),
        "paced by the call's clock too, the rest meets the goal's share": fclock.others_within_pct
        >= IOPS_SHARE * 100,
        "paced by the call's clock too, the runs under bbr behind Nagle lose": (
            fclock.held_within_pct < freed.held_within_pct - MOVED_PTS
        ),
        "paced by the call's clock too, the share within stays near the goal's, no verdict moves": (
            abs(fclock.within_pct - IOPS_SHARE * 100) < NEAR_GOAL_PTS
            and fclock.verdicts == freed.verdicts
        ),
        "it does not reach the goal's share": own.within_pct < IOPS_SHARE * 100,
        "the kernel measured again agrees with itself more often than any model": again.within_pct
        > table.loc[
            [*MODELS[:4], REPLIES, SENT, OWNED, HANDSHAKE, FREED, FREED_CLOCK], "within_pct"
        ].max(),
        "another machine's kernel agrees with this one less often than it does with itself": (
            kernel3.within_pct < again.within_pct
        ),
        "the other machine's profile does worse than that machine's kernel": third.within_pct
        < kernel3.within_pct,
        "the kernel measured again is near the goal's share": abs(
            again.within_pct - IOPS_SHARE * 100
        )
        < NEAR_GOAL_PTS,
        "behind Nagle under bbr the kernel repeats itself more often than the model meets it": (
            again.held_within_pct > own.held_within_pct + MOVED_PTS
        ),
    }


def numbers(ev: Machine4Evaluation) -> dict[str, float]:
    """The numbers chapter 9 quotes (percent, ratios, runs, nanoseconds per byte)."""
    t = ev.table
    own = ev.profiles[MODELS[0]]
    from models.validation.machines import bbr_held

    io = iops_table(ev.tables[MODELS[0]])
    held = bbr_held(io)
    busy = own.records["measured"]["busy_runs"]["repeats"]
    fire_runs = own.records["measured"]["timer_fire_again"]["runs"]
    return {
        "rows": len(io),
        "large_kib": LARGE_BYTES // 1024,  # bytes -> KiB
        "goal_pct": IOPS_SHARE * 100,  # share -> percent
        "held_n": int(held.sum()),
        "misses": int((~io["within"]).sum()),
        "held_misses": int((~io.loc[held, "within"]).sum()),
        "cross_ns": own.host["handoff_byte_cpu_s"] * 1e9,  # s -> ns per byte
        "fire_us": own.host["timer_fire_cpu_s"] * 1e6,  # s -> us
        "fire_lo_us": min(r["fire_us"] for r in fire_runs),
        "fire_hi_us": max(r["fire_us"] for r in fire_runs),
        "fire_first_us": own.records["measured"]["timer_fire"]["fire_us"],
        "send_byte_ns": own.host["send_byte_cpu_s"] * 1e9,  # s -> ns per byte
        "busy_lo_k": min(r["iops"] for r in busy) / 1e3,  # operations/s -> thousands
        "busy_hi_k": max(r["iops"] for r in busy) / 1e3,
        **{
            f"{key}_{suffix}": float(t.loc[name][key])
            for suffix, name in (
                *((str(i), m) for i, m in enumerate(MODELS)),
                ("rx", REPLIES),
                ("sent", SENT),
                ("owned", OWNED),
                ("hs", HANDSHAKE),
                ("freed", FREED),
                ("fclock", FREED_CLOCK),
            )
            for key in (
                "median_q1",
                "within_pct",
                "large_within_pct",
                "held_within_pct",
                "others_within_pct",
                "median_q8",
            )
        },
        # the refits' losses, and the share within (percent) of the runs under bbr behind a
        # MSG_MORE server with TCP_NODELAY, where the socket owner loses most
        "sent_loss": sent_profile().records["fit"]["loss"],
        "owned_loss": owned_profile().records["fit"]["loss"],
        "more_nodelay_n": len(_more_nodelay(iops_table(ev.tables[OWNED]))),
        **{
            f"{suffix}_more_nodelay_pct": 100.0
            * float(_more_nodelay(iops_table(ev.tables[name]))["within"].mean())
            for suffix, name in (("sent", SENT), ("owned", OWNED))
        },
    }


def _more_nodelay(io: pd.DataFrame) -> pd.DataFrame:
    """The rows under bbr behind a server that sends with ``MSG_MORE`` and ``TCP_NODELAY``."""
    return io[(io["cc"] == "bbr") & (io["sock_mode"] == "more_nodelay")]
