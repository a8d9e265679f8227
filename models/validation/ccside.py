"""Which end's congestion control slows a Nagle server under bbr (``data/kernel6_machine3_ccside``,
``tools/cc_side_sweep.py``), beside the simulator's bbr.

Under bbr the kernel's Nagle server runs at about 30 k operations/s on veth whatever its response
size (chapter 9's pacing section).  The sweep sets bbr or reno on each socket of the connection
independently (the server's header and data in two ``send()`` calls under Nagle, the Linux
initiator's TCP_NODELAY client, each end on a CPU of its own) at four cases where that plateau
shows: 64 KiB on the loopback, 4 and 16 KiB on veth at MTU 1500, 16 KiB at MTU 9000.  From the
median of each pairing's runs, per case:

* **the server's bbr** (audit, the data against itself): the rate with bbr on the server and reno
  on the client over the rate with reno on both (below ``1 - TOL``: the server's bbr alone slows
  the loop by more than the tolerance);
* **the client's bbr** (audit): reno on the server and bbr on the client over reno on both
  (within :data:`TOL` of 1: the client's congestion control changes nothing);
* **the simulator** (test): the simulator's rate with bbr over its rate with reno, both sockets
  alike as the simulator sets them, on this machine's ``calibrate`` profile (:data:`PROFILE`,
  the field evaluation's scenario, :func:`models.validation.fidelity.field_scenario`), against
  the kernel's ratio with bbr on both; within :data:`TOL` is a pass.

>>> import pandas as pd
>>> rows = [("bbr", "bbr", 30.0), ("reno", "reno", 100.0), ("bbr", "reno", 32.0),
...         ("reno", "bbr", 98.0)]
>>> df = pd.DataFrame([{"link": "veth-1500", "iosize_bytes": 4096, "qd": 8, "server_cc": s,
...                     "client_cc": c, "iops": v} for s, c, v in rows])
>>> [float(x) for x in kernel_table(df).iloc[0][["server_bbr", "client_bbr", "both_bbr"]]]
[0.32, 0.98, 0.3]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from models.validation.fidelity import IOPS_TOL

if TYPE_CHECKING:  # annotations only
    import pandas as pd

__all__ = [
    "DATASET",
    "PROFILE",
    "CASE_KEY",
    "TOL",
    "link_mtu",
    "sweep_hz",
    "kernel_table",
    "simulated_row",
    "simulated_ratio",
    "table",
    "findings",
]

#: The bundled sweep.
DATASET = "kernel6_machine3_ccside"
#: The measuring machine's ``calibrate`` profile (``data/hosts/<name>.json``).
PROFILE = "kernel6_machine3"
#: The columns that name a case.
CASE_KEY = ["link", "iosize_bytes", "qd"]
#: Relative tolerance of a ratio: the field goal's quarter.
TOL = IOPS_TOL


def link_mtu(link: str) -> int:
    """The MTU of a link label of the sweeps, bytes: ``veth-<MTU>``, or the loopback's 64 KiB.

    >>> link_mtu("veth-9000"), link_mtu("loopback")
    (9000, 65536)
    """
    from models import framing

    return framing.MAX_MTU if link == "loopback" else framing.check_mtu(int(link.split("-")[1]))


def sweep_hz(dataset: str) -> int:
    """The timer rate (``CONFIG_HZ``) of the machine a bundled sweep ran on, from its sidecar."""
    from models import data

    return int(data.describe(dataset)["measurement"]["sweeps"][0]["machine"]["config_hz"])


def kernel_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per case, the median IOPS of each pairing and the three ratios to reno on both sockets:
    ``server_bbr`` (bbr on the server only), ``client_bbr`` (on the client only), ``both_bbr``."""
    med = (
        df.groupby([*CASE_KEY, "server_cc", "client_cc"])["iops"]
        .median()
        .unstack(["server_cc", "client_cc"])
    )
    base = med[("reno", "reno")]
    out = med.copy()
    out.columns = [f"{s}/{c}" for s, c in out.columns]
    out["server_bbr"] = med[("bbr", "reno")] / base
    out["client_bbr"] = med[("reno", "bbr")] / base
    out["both_bbr"] = med[("bbr", "bbr")] / base
    return out.reset_index()


def simulated_ratio(case: dict[str, Any], profile: Any = None) -> float:
    """The simulator's IOPS with bbr over its IOPS with reno for one case (``link``,
    ``iosize_bytes``, ``qd``), the Nagle server and NODELAY client of the sweep, on ``profile``
    (default :data:`PROFILE`) at the sweep's timer rate."""
    from models.kernel import simulate_summary
    from models.sim import hostprofile
    from models.validation.fidelity import ProfileHost, field_scenario

    host = ProfileHost(profile or hostprofile.shipped(PROFILE))
    hz = sweep_hz(DATASET)
    iops = {}
    for cc in ("bbr", "reno"):
        row = simulated_row(case, cc)
        iops[cc] = simulate_summary(field_scenario("iscsi_loop", row, host, hz)).iops
    return iops["bbr"] / iops["reno"]


def simulated_row(case: dict[str, Any], cc: str) -> dict[str, Any]:
    """The field-sweep row a case (``link``, ``iosize_bytes``, ``qd``) stands for, with ``cc`` on
    both sockets: the sweep's Nagle server and NODELAY client, no rate limit."""
    return {
        "link": case["link"],
        "mtu_bytes": link_mtu(case["link"]),
        "rate_limit_bits_per_s": None,
        "cc": cc,
        "sock_mode": "nagle",
        "client_sock_mode": "nodelay",
        "qd": int(case["qd"]),
        "iosize_bytes": int(case["iosize_bytes"]),
    }


def table(df: pd.DataFrame | None = None, profile: Any = None) -> pd.DataFrame:
    """:func:`kernel_table` of the bundled sweep (or ``df``) with the simulator's ratio
    (``sim_both_bbr``) and whether it is within :data:`TOL` of the kernel's (``within``)."""
    from models import data

    d = data.load(DATASET) if df is None else df
    t = kernel_table(d)
    t["sim_both_bbr"] = [simulated_ratio(case, profile) for case in t.to_dict("records")]
    t["within"] = (t["sim_both_bbr"] / t["both_bbr"] - 1.0).abs() <= TOL
    return t


def findings(t: pd.DataFrame) -> dict[str, bool]:
    """What chapter 9 says of :func:`table`'s result, each as a claim that holds or not."""
    veth = t[t["link"] != "loopback"]
    return {
        "the server's bbr alone slows every case": bool((t["server_bbr"] < 1.0 - TOL).all()),
        "the client's bbr changes no case": bool(((t["client_bbr"] - 1.0).abs() <= TOL).all()),
        "the server's bbr accounts for bbr on both": bool(
            ((t["server_bbr"] / t["both_bbr"] - 1.0).abs() <= TOL).all()
        ),
        "the simulator's bbr slows every case": bool((t["sim_both_bbr"] < 1.0 - TOL).all()),
        "the simulator matches the loopback case and no veth case": bool(
            (t["within"] == (t["link"] == "loopback")).all()
        ),
        "on veth the simulator's bbr slows the loop less than the kernel's": bool(
            (veth["sim_both_bbr"] > veth["both_bbr"]).all()
        ),
    }
