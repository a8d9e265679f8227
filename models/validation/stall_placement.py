"""Where the two ends run decides how deep a Nagle server keeps stalling
(``data/kernel6_stall_placement``, ``tools/stall_placement_sweep.py``).

The field sweep's Nagle servers on the loopback and at MTU 9000 kept stalling at queue depths where
the simulator, whose two ends each have a CPU (:func:`models.kernel.runs.one_machine`), stops.  The
sweep runs those configurations (server header and data in two ``send()`` calls under Nagle; the
client with Nagle and with TCP_NODELAY; 512 B and 4 KiB; QD 2 to 64) with both processes pinned
to one CPU (``same``), each on a CPU of its own (``apart``), and unpinned (``none``).

A configuration *stalls* in one placement when every run of it did (at least
:data:`~models.kernel.STALL_SHARE_PCT` % of its operations over 20 ms) and does not when none
did; when its runs disagree, the kernel decided a race both ways (an audit row that fails).
Each verdict is held against one model, chosen by the placement before any result:

* ``apart``: the simulator as the field evaluation runs it (shipped profile, a CPU for each end,
  :func:`models.validation.fidelity.field_scenario`): tests;
* ``same`` and ``none``: Butterfield (2017)'s bound (:func:`models.kernel.runs.stall_possible`),
  which says a stall is possible while the whole queue's responses fit behind one short segment:
  tests.  Unpinned, the scheduler keeps two processes that wake each other on one CPU (a wake-up
  goes to the waker's CPU), so ``none`` is held to the one-CPU model.

A verdict is a number here, 1 (stalls) or 0, and the tolerance is none: it must match.

The simulator has a machine of one CPU too (:data:`ONE_CPU_LINK`): a thread keeps the CPU from
its wake-up until it blocks, so the server woken by the client's first request runs only when the
client has written the rest.  Its largest stalling QD on one CPU is held to the kernel's runs
pinned to one CPU, per link, client and size (:func:`one_cpu_rows`): right for every NODELAY
client, wrong for three of the four Nagle-client groups (:data:`ONE_CPU_FAILING`).

>>> import pandas as pd
>>> df = pd.DataFrame({"link": ["loopback"] * 4, "client_sock_mode": ["nagle"] * 4,
...                    "iosize_bytes": [512] * 4, "qd": [8] * 4,
...                    "pin": ["same", "same", "apart", "apart"],
...                    "stalled_pct": [40.0, 55.0, 0.0, 30.0]})
>>> kernel_verdicts(df).loc[("loopback", "nagle", 512, 8), ["same", "apart"]].tolist()
['stalls', 'mixed']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from models.validation import Comparison, comparisons

if TYPE_CHECKING:  # annotations only
    import pandas as pd

__all__ = [
    "DATASET",
    "KEY",
    "mtu_bytes",
    "MODEL",
    "KNOWN_FAILING",
    "kernel_verdicts",
    "stall_bound",
    "bound_verdicts",
    "deepest",
    "field_verdicts",
    "simulated_verdicts",
    "verdict_table",
    "verdict_rows",
    "stall_placement_comparisons",
    "ONE_CPU_LINK",
    "ONE_CPU_FAILING",
    "ONE_CPU",
    "MACHINE4_DATASET",
    "PREEMPT_LINK",
    "one_cpu_right",
    "one_cpu_rows",
    "field_row",
    "PREEMPT_DATASET",
    "SELDOM",
    "OFTEN",
    "preemption",
    "preemption_findings",
]

#: The bundled sweep.
DATASET = "kernel6_stall_placement"
#: What sets a configuration, as the sweep's columns name it.
KEY = ["link", "client_sock_mode", "iosize_bytes", "qd"]


def mtu_bytes(link: str) -> int:
    """The IP MTU of a link the harness labels ``link`` (bytes): the loopback's is the largest
    (:data:`models.framing.MAX_MTU`), a veth pair's is in its label
    (:attr:`models.measure.netns.LinkSpec.label`, ``veth-MTU...``).

    >>> mtu_bytes("loopback"), mtu_bytes("veth-9000"), mtu_bytes("veth-1500-1g")
    (65536, 9000, 1500)
    """
    from models import framing

    if link == "loopback":
        return framing.MAX_MTU
    kind, _, rest = link.partition("-")
    if kind != "veth" or not rest.split("-")[0].isdigit():
        raise ValueError(
            f"link must be 'loopback' or a veth label such as 'veth-9000', got {link!r}"
        )
    return int(rest.split("-")[0])


#: The simulator's machine of one CPU, as ``Link`` options over
#: :func:`models.validation.fidelity.field_scenario`'s: both threads and the receive soft interrupts
#: share the CPU, and a thread keeps it from its wake-up until it blocks (``Link.run_to_block``, the
#: kernel's fair scheduler with its wake-up preemption left out), so a server woken by the client's
#: first request waits while the client writes the rest.
ONE_CPU_LINK = {"shared_cpus": 1, "run_to_block": True}

#: The scheduler trace of the loop pinned to one CPU (``tools/preempt_trace.py``): for each
#: ``send()`` that woke the other end, whether that end then preempted the caller.
PREEMPT_DATASET = "kernel6_machine4_preempt"
#: Shares of wake-ups that preempt (fractions), the findings' bounds: "seldom" at most
#: :data:`SELDOM`, "often" at least :data:`OFTEN` (set after seeing the trace, each with a margin
#: to the shares it bounds).
SELDOM, OFTEN = 0.15, 0.35

_ONE_NAGLE = (
    "with a Nagle client on one CPU the kernel keeps stalling at depths where the simulator "
    f"does not. The scheduler trace ({PREEMPT_DATASET}) shows why: the woken client often "
    "preempts the server at the end of its send() calls, so it answers the server's data "
    "before the server has served the requests that data's ACK let in, and the next header "
    "goes alone with no request left to carry its ACK. A thread that keeps its CPU until it "
    "blocks (run_to_block) allows no such preemption"
)
_ONE_OVER = (
    "on one CPU the simulator stalls where a queue's responses overflow a 9000-byte MTU's "
    "segment, which the kernel and the bound do not. Its trace: the client's quick ACK lets the "
    "server's last response go, but the client's turn starts before that frame arrives, so its "
    "next request acknowledges less than it has, its Nagle holds the rest and the server's "
    "delayed ACK ends the wait. In the kernel the ACK, the data it releases and their receipt "
    "all run inside the sender's call (soft interrupt, socket backlog). With the frames' host "
    "latencies at zero these rows pass (a lead, not a rule: loopback, 4 KiB, QD 8 then fails)"
)
#: The one-CPU groups ``(link, client, size)`` whose largest stalling QD the simulator on
#: :data:`ONE_CPU_LINK` gets wrong, each with its cause (set from the bundled sweep).
ONE_CPU_FAILING: dict[tuple[str, str, int], str] = {
    ("loopback", "nagle", 512): _ONE_NAGLE,
    ("veth-9000", "nagle", 512): _ONE_NAGLE,
    ("veth-9000", "nagle", 4096): _ONE_OVER,
}


def preemption(df: pd.DataFrame) -> pd.Series:
    """Per ``(client_sock_mode, caller, call)`` of the scheduler trace
    (:data:`PREEMPT_DATASET`): the share of the ``send()`` calls that woke the other end after
    which that end preempted the caller.

    >>> import pandas as pd
    >>> df = pd.DataFrame({"client_sock_mode": ["nagle"], "caller": ["server"],
    ...                    "call": ["data"], "wakeups": [20], "preempted": [15]})
    >>> preemption(df).tolist()
    [0.75]
    """
    t = df.set_index(["client_sock_mode", "caller", "call"])
    return (t["preempted"] / t["wakeups"]).rename("share")


def preemption_findings(df: pd.DataFrame) -> dict[str, bool]:
    """What chapter 9 says of the scheduler trace, each a test the trace can fail."""
    share = preemption(df)
    client_calls = share.xs("client", level="caller")
    nagle_server = share.loc[("nagle", "server")]
    nodelay_server = share.loc[("nodelay", "server")]
    return {
        "the server's wake-ups seldom preempt the client": bool((client_calls <= SELDOM).all()),
        "with a Nagle client, the woken client often preempts the server after its sends": bool(
            (nagle_server >= OFTEN).all()
        ),
        "with a NODELAY client, it seldom does": bool((nodelay_server <= SELDOM).all()),
    }


#: The model each placement's verdicts are held to (see the module's text).
MODEL = {"apart": "simulator", "same": "bound", "none": "bound"}
#: Verdict labels.
STALLS, NO_STALL, MIXED = "stalls", "no stall", "mixed"

_SPREAD = (
    "unpinned, the scheduler moved one end to the other CPU at this depth in some runs (their "
    "rates are the two-CPU ones), so the one-CPU bound overstates the stall"
)
_RACE = "the runs of this placement disagree: the kernel decided the stall's entry both ways"
#: Test rows recorded as failing, ``(link, client, size, qd, pin)``, each with its cause: set
#: from the bundled sweep, so that a row that starts to pass (or to fail) after a change of the
#: model or the data shows up as a status that is not as recorded.
KNOWN_FAILING: dict[tuple[str, str, int, int, str], str] = {
    ("loopback", "nagle", 512, 32, "none"): _SPREAD,
    ("loopback", "nodelay", 512, 64, "none"): _SPREAD,
}


def _verdict(stalled: Any) -> str:
    from models.kernel import STALL_SHARE_PCT

    s = [float(x) >= STALL_SHARE_PCT for x in stalled]
    return STALLS if all(s) else NO_STALL if not any(s) else MIXED


def kernel_verdicts(df: pd.DataFrame) -> pd.DataFrame:
    """Per configuration (index :data:`KEY`): the verdict of each placement present (columns
    ``same``, ``apart``, ``none``: :data:`STALLS`, :data:`NO_STALL` or :data:`MIXED`) and the
    mean share of stalled operations of each (``*_pct``)."""
    import pandas as pd

    g = df.groupby([*KEY, "pin"])["stalled_pct"]
    verdicts = g.agg(_verdict).unstack("pin")
    pct = g.mean().unstack("pin").add_suffix("_pct")
    return pd.concat([verdicts, pct], axis=1)


def stall_bound(qd: int, iosize_bytes: int, mtu: int) -> bool:
    """Butterfield's bound for an iSCSI read (:func:`models.kernel.runs.stall_possible` with the
    iSCSI header and the MSS of an IP MTU of ``mtu`` bytes): whether a stall can form."""
    from models import framing
    from models.kernel.runs import HEADER_BYTES, stall_possible

    return stall_possible(int(qd), HEADER_BYTES["iscsi"], int(iosize_bytes), framing.mss(mtu))


def bound_verdicts(index: Any) -> pd.Series:
    """Per configuration of ``index`` (:data:`KEY`): the verdict of :func:`stall_bound`."""
    import pandas as pd

    out = [
        STALLS if stall_bound(qd, size, mtu_bytes(str(link))) else NO_STALL
        for link, _client, size, qd in index
    ]
    return pd.Series(out, index=index, name="bound")


def deepest(table: pd.DataFrame, column: str) -> pd.Series:
    """Per link, client and size of a table indexed by :data:`KEY` (:func:`kernel_verdicts`,
    :func:`verdict_table`): the largest QD whose ``column`` is :data:`STALLS` (0: none).

    >>> import pandas as pd
    >>> t = pd.DataFrame({"same": [STALLS, STALLS, NO_STALL]}, index=pd.MultiIndex.from_tuples(
    ...     [("loopback", "nagle", 512, q) for q in (2, 4, 8)], names=KEY))
    >>> deepest(t, "same").tolist()
    [4]
    """
    import pandas as pd

    qd = pd.Series(table.index.get_level_values("qd"), index=table.index)
    return qd.where(table[column] == STALLS, 0).groupby(level=KEY[:3]).max()


def field_verdicts(table: pd.DataFrame) -> pd.DataFrame:
    """The Nagle-server test rows on unlimited links of an evaluated field table
    (:func:`models.validation.fidelity.evaluate`'s ``iscsi``), with the bound's verdict
    (``bound_stalls``) beside the kernel's and the simulator's: which one the kernel's unpinned
    runs follow."""
    from models.validation.fidelity import link_limited

    keep = (table["role"] == "test") & (table["sock_mode"] == "nagle") & ~link_limited(table)
    out = table.loc[keep, ["kernel_stalls", "sim_stalls"]].copy()
    out["bound_stalls"] = [
        stall_bound(r.qd, r.iosize_bytes, int(r.mtu_bytes)) for r in table.loc[keep].itertuples()
    ]
    return out


def field_row(link: str, client: str, size: int, qd: int) -> dict:
    """The configuration as a field-sweep row (what :func:`fidelity.field_scenario` reads)."""
    return {
        "link": link,
        "cc": "bbr",  # the machine's default, under which the sweep ran
        "sock_mode": "nagle",
        "client_sock_mode": client,
        "qd": qd,
        "iosize_bytes": size,
        "mtu_bytes": mtu_bytes(link),
        "rate_limit_bits_per_s": None,
    }


def simulated_verdicts(
    index: Any,
    profile: Any = None,
    hz: int | None = None,
    one_cpu: dict[str, Any] | None = None,
) -> pd.DataFrame:
    """Per configuration of ``index``: the simulator's verdict (``simulator``) and share of
    stalled operations (``simulator_pct``), each configuration run as the field evaluation runs
    its rows (host ``profile``, default the shipped one; the timer rate ``hz``, default the field
    sweep's); with ``one_cpu`` (``Link`` options such as :data:`ONE_CPU_LINK`), on that machine of
    one CPU instead of a CPU per end."""
    import pandas as pd

    from models.kernel import load_kernel_run, simulate_summary
    from models.sim import hostprofile
    from models.validation import fidelity

    if hz is None:
        hz = load_kernel_run(prefix=fidelity.FIELD_PREFIX).hz
    host = fidelity.ProfileHost(profile or hostprofile.shipped())
    out = {}
    for link, client, size, qd in index:
        row = field_row(str(link), str(client), int(size), int(qd))
        sc = fidelity.field_scenario("iscsi_loop", row, host, hz, cpus=1 if one_cpu else None)
        s = simulate_summary(sc.replace(link=one_cpu) if one_cpu else sc)
        out[(link, client, size, qd)] = {
            "simulator": STALLS if s.stalls else NO_STALL,
            "simulator_pct": s.stalled_pct,
        }
    sim = pd.DataFrame.from_dict(out, orient="index")
    sim.index = pd.MultiIndex.from_tuples(sim.index, names=KEY)
    return sim


#: The column of :func:`verdict_table` with the simulator's verdicts on one CPU.
ONE_CPU = "simulator_one_cpu"

#: The same sweep on the fourth machine (``tools/stall_placement_sweep.py``, loopback and veth
#: at MTU 9000), where the scheduler trace (:data:`PREEMPT_DATASET`) and the fourth machine's
#: calibrated profile (``models.validation.machine4.PROFILE``) were measured.
MACHINE4_DATASET = "kernel6_machine4_stall_placement"
#: ``Link`` options of the simulator's machine of one CPU with EEVDF's wake-up preemption.
PREEMPT_LINK = {"shared_cpus": 1, "wake_preempt": True}


def one_cpu_right(kernel: pd.DataFrame, sim: pd.DataFrame) -> tuple[dict[str, int], int]:
    """How many of ``kernel``'s one-CPU verdicts (:func:`kernel_verdicts`, ``same``) the
    simulator's (:func:`simulated_verdicts`) get right, per client socket mode, and how many
    groups' largest stalling QD.

    >>> import pandas as pd
    >>> idx = pd.MultiIndex.from_tuples([("lo", "nagle", 512, 2), ("lo", "nagle", 512, 4)],
    ...                                 names=KEY)
    >>> k = pd.DataFrame({"same": [STALLS, STALLS]}, index=idx)
    >>> one_cpu_right(k, pd.DataFrame({"simulator": [STALLS, NO_STALL]}, index=idx))
    ({'nagle': 1}, 0)
    """
    t = kernel[["same"]].join(sim["simulator"].rename(ONE_CPU))
    ok = (t[ONE_CPU] == t["same"]).groupby(level="client_sock_mode").sum()
    groups = int((deepest(t, "same") == deepest(t, ONE_CPU)).sum())
    return {str(k): int(v) for k, v in ok.items()}, groups


def verdict_table(
    kernel: pd.DataFrame, sim: pd.DataFrame, one_cpu: pd.DataFrame | None = None
) -> pd.DataFrame:
    """The kernel's verdicts (:func:`kernel_verdicts`) beside the simulator's
    (:func:`simulated_verdicts`) and the bound's (:func:`bound_verdicts`); with ``one_cpu`` (the
    simulator's verdicts on one CPU), those too, as :data:`ONE_CPU` and its ``_pct``."""
    out = kernel.join(sim[["simulator", "simulator_pct"]])
    if one_cpu is not None:
        got = one_cpu[["simulator", "simulator_pct"]]
        out = out.join(got.set_axis([ONE_CPU, ONE_CPU + "_pct"], axis=1))
    out["bound"] = bound_verdicts(out.index)
    return out


def one_cpu_rows(table: pd.DataFrame, source: str) -> list[Comparison]:
    """Per link, client and size of a :func:`verdict_table` with :data:`ONE_CPU`: the largest QD
    at which the kernel's runs pinned to one CPU stall against the simulator's on one CPU
    (:data:`ONE_CPU_LINK`), exactly; a test, known to fail where :data:`ONE_CPU_FAILING` says."""
    kernel, sim = deepest(table, "same"), deepest(table, ONE_CPU)
    rows = []
    for key in kernel.index:
        link, client, size = key
        rows.append(
            Comparison(
                "ch9",
                f"stall placement, {link}, {client} client, {size} B, one CPU: largest "
                "stalling QD, simulator (a thread holds the CPU until it blocks) against the kernel",
                measured=float(kernel[key]),
                predicted=float(sim[key]),
                unit="QD",
                abs_tol=0.0,
                why="a queue depth is exact",
                source=source,
                kind="test",
                fails=ONE_CPU_FAILING.get((str(link), str(client), int(size)), ""),
            )
        )
    return rows


def _number(verdict: str) -> float:
    return 1.0 if verdict == STALLS else 0.0


def verdict_rows(
    table: pd.DataFrame, source: str, model_of: dict[str, str] | None = None
) -> list[Comparison]:
    """The comparison rows of a :func:`verdict_table`: per configuration and placement, a test
    of the placement's model (``model_of``, default :data:`MODEL`), or an audit that fails where
    the runs disagree."""
    rows: list[Comparison] = []
    for key, r in table.iterrows():
        link, client, size, qd = key
        for pin, model in (model_of or MODEL).items():
            if pin not in r.index:
                continue
            what = f"stall placement, {link}, {client} client, {size} B, QD {qd}, pin {pin}"
            kernel = str(r[pin])
            if kernel == MIXED:
                rows.append(
                    Comparison(
                        "ch9",
                        f"{what}: the runs' verdicts against each other",
                        measured=1.0,
                        predicted=0.0,
                        unit="stalls (1/0)",
                        abs_tol=0.0,
                        why="a verdict is exact",
                        source=source,
                        kind="audit",
                        fails=_RACE,
                    )
                )
                continue
            rows.append(
                Comparison(
                    "ch9",
                    f"{what}: stalls, {model} against the kernel",
                    measured=_number(kernel),
                    predicted=_number(str(r[model])),
                    unit="stalls (1/0)",
                    abs_tol=0.0,
                    why="a verdict is exact",
                    source=source,
                    kind="test",
                    fails=KNOWN_FAILING.get((str(link), str(client), int(size), int(qd), pin), ""),
                )
            )
    return rows


@comparisons("ch9.stall_placement")
def stall_placement_comparisons() -> list[Comparison]:
    """Chapter 9's stall placement sweep against the simulator and Butterfield's bound."""
    from models import data

    kernel = kernel_verdicts(data.load(DATASET))
    one = simulated_verdicts(kernel.index, one_cpu=ONE_CPU_LINK)
    table = verdict_table(kernel, simulated_verdicts(kernel.index), one)
    source = f"kernel stall placement sweep ({DATASET})"
    return verdict_rows(table, source=source) + one_cpu_rows(table, source)
