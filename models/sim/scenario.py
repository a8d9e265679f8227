"""The scenario: one connection, composed of keyword-only parts.

``Scenario(workload=..., link=..., client=..., server=..., kernel=...,
run=...)``.  Each part is a small frozen record
(``models.sim.parts``: :class:`Workload`, :class:`Link`,
:class:`Host`, :class:`Kernel`, :class:`Run`, all importable from here
too); a part may be given whole or as a dict of changes to its
default::

    Scenario(workload={"qd": 4}, server={"nodelay": True})
    sc.replace(run={"ops": 500}, kernel={"profile": "linux-2.4"})

Defaults: Butterfield (2017)'s case, a 512-byte iSCSI read over 1 Gb/s
Ethernet at MTU 1500 with his measured stage times
(``BUTTERFIELD_SERVER``, ``BUTTERFIELD_CLIENT``).

>>> sc = Scenario(workload={"qd": 4})
>>> sc.workload.qd, sc.server.proc_s, sc.link.mss
(4, 1.59e-05, 1448)

``host=`` applies a host profile (:mod:`models.sim.hostprofile`: a
profile, its JSON object or the path of its file) to both ends first;
``client=``/``server=`` given as dicts change the result (explicit
values win), a ``Host`` given whole replaces it.

>>> Scenario(qd=4)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ValueError: Scenario has no part 'qd'; it is a field of workload: ...
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from models import framing
from models.sim import hostprofile
from models.sim.kernels import KernelProfile
from models.sim.params import Part, check_names
from models.sim.parts import (
    BUTTERFIELD_CLIENT,
    BUTTERFIELD_SERVER,
    Host,
    Kernel,
    Link,
    Run,
    Workload,
)

__all__ = [
    "Scenario",
    "Workload",
    "Link",
    "Host",
    "Kernel",
    "Run",
    "BUTTERFIELD_SERVER",
    "BUTTERFIELD_CLIENT",
    "PARTS",
]

#: The parts of a scenario, by name, with their types.
PARTS: dict[str, type[Part]] = {
    "workload": Workload,
    "link": Link,
    "client": Host,
    "server": Host,
    "kernel": Kernel,
    "run": Run,
}
_DEFAULTS: dict[str, Part] = {
    "workload": Workload(),
    "link": Link(),
    "client": BUTTERFIELD_CLIENT,
    "server": BUTTERFIELD_SERVER,
    "kernel": Kernel(),
    "run": Run(),
}

#: A part given whole, or as a mapping of changes to the default part.
PartLike = Part | Mapping[str, Any]


def _part(name: str, value: Any, base: Part | None = None) -> Any:
    """The part called ``name`` from a part or a mapping of changes (to
    ``base``, else the default part)."""
    kind = PARTS[name]
    if isinstance(value, Mapping):
        return (_DEFAULTS[name] if base is None else base).replace(_as=name, **value)
    if not isinstance(value, kind):
        raise ValueError(
            f"{name} must be a {kind.__name__} or a dict of changes to it, got {value!r}"
        )
    return value


@dataclasses.dataclass(frozen=True, init=False)
class Scenario:
    """One simulated connection: six parts, each a record or a dict of
    changes to the default part (keyword arguments only); ``host`` a
    host profile (or its path) applied to both ends under them."""

    workload: Workload
    link: Link
    client: Host
    server: Host
    kernel: Kernel
    run: Run

    def __init__(
        self,
        *args: Any,
        workload: PartLike = _DEFAULTS["workload"],
        link: PartLike = _DEFAULTS["link"],
        client: PartLike = _DEFAULTS["client"],
        server: PartLike = _DEFAULTS["server"],
        kernel: PartLike = _DEFAULTS["kernel"],
        run: PartLike = _DEFAULTS["run"],
        host: Any = None,
        **unknown: Any,
    ) -> None:
        if args:
            raise ValueError(f"Scenario takes keyword arguments only, got {args!r}")
        for key in unknown:
            owners = [p for p, t in PARTS.items() if key in t.specs()]
            if owners:
                raise ValueError(
                    f"Scenario has no part {key!r}; it is a field of "
                    f"{' and '.join(owners)}: "
                    f"use {owners[0]}={{{key!r}: ...}}"
                )
            check_names(Scenario, {key: None}, "Scenario", list(PARTS))
        given = dict(
            workload=workload, link=link, client=client, server=server, kernel=kernel, run=run
        )
        bases: dict[str, Part] = {}
        if host is not None:
            profile = hostprofile.load(host)
            for side in hostprofile.SIDES:
                bases[side] = _DEFAULTS[side].replace(_as=side, **profile.side(side))
                if given[side] is _DEFAULTS[side]:
                    given[side] = bases[side]
        for name, value in given.items():
            object.__setattr__(self, name, _part(name, value, bases.get(name)))

    # -- building ---------------------------------------------------------

    def replace(self, **changes: Any) -> Scenario:
        """A copy with parts replaced or changed: ``run={"ops": 50}``.  With ``host`` (a profile)
        it applies under each end's fields that differ from the default and under the changes
        given for that end, as the constructor applies it.

        >>> from models.sim import hostprofile
        >>> p = hostprofile.shipped()
        >>> s = Scenario().replace(host=p, server={"nodelay": True})
        >>> s.server.nodelay, s.server.proc_s == p.side("server")["proc_s"]
        (True, True)
        """
        if "host" in changes:
            changes = dict(changes)
            host = changes.pop("host")
            for side in hostprofile.SIDES:
                given = changes.get(side)
                if given is not None and not isinstance(given, Mapping):
                    continue  # a whole part given: it stands as it is
                default = _DEFAULTS[side].to_dict()
                mine = {k: v for k, v in getattr(self, side).to_dict().items() if default[k] != v}
                changes[side] = {**mine, **(given or {})}
            rest = {k: v for k, v in self.parts().items() if k not in hostprofile.SIDES}
            for name, value in changes.items():
                if isinstance(value, Mapping) and name in PARTS and name not in hostprofile.SIDES:
                    value = getattr(self, name).replace(_as=name, **value)
                rest[name] = value
            return Scenario(host=host, **rest)
        new: dict[str, Any] = {}
        for name, value in changes.items():
            if isinstance(value, Mapping) and name in PARTS:
                value = getattr(self, name).replace(_as=name, **value)
            new[name] = value
        return Scenario(**{**self.parts(), **new})

    def parts(self) -> dict:
        """``{part name: part}``."""
        return {name: getattr(self, name) for name in PARTS}

    def to_dict(self) -> dict:
        """Every parameter, nested by part (JSON-friendly)."""
        return {name: part.to_dict() for name, part in self.parts().items()}

    @classmethod
    def from_dict(cls, d: dict) -> Scenario:
        """The inverse of :meth:`to_dict` (missing fields: defaults)."""
        return cls(**{k: dict(v) for k, v in d.items()})

    # -- derived values ---------------------------------------------------

    @property
    def profile(self) -> KernelProfile:
        """The kernel profile with this scenario's settings applied."""
        return self.kernel.resolve()

    @property
    def warmup(self) -> int:
        """Completions excluded from the statistics."""
        w = self.run.warmup_ops
        return self.workload.qd if w is None else w

    def host(self, side: str) -> Host:
        """``"client"`` or ``"server"``."""
        if side not in ("client", "server"):
            raise ValueError(f"side must be 'client' or 'server', got {side!r}")
        return self.client if side == "client" else self.server

    def stage_times(self) -> dict:
        """The four-stage ring of this scenario, seconds.

        ``W1``/``W2``: wire time of one request / response alone (its
        frames at the link rate, :func:`models.framing.wire_time`);
        ``SP``/``CP``: the hosts' processing times.
        """
        link, wl = self.link, self.workload
        legs = wl.exchange
        w1 = math.fsum(
            framing.wire_time(sum(leg), link.bandwidth_bps, link.mtu) for leg in legs[0::2]
        )
        w2 = math.fsum(
            framing.wire_time(sum(leg), link.bandwidth_bps, link.mtu) for leg in legs[1::2]
        )
        return {"W1": w1, "SP": self.server.proc_s, "W2": w2, "CP": self.client.proc_s}

    def symbol_values(self) -> dict:
        """Every stage time in the source's notation, seconds.

        The ring (:meth:`stage_times`) plus the wake-up latencies
        ``SL``/``CL``, the path latencies ``CT``, ``SR``, ``ST``, ``CR``,
        the per-segment CPU ``SI``, ``SK``, ``CI``, ``CK`` and
        ``RTTmin`` (the ring's sum).
        """
        s, c = self.server, self.client
        out = self.stage_times()
        out["RTTmin"] = math.fsum(out.values())
        out.update(
            SL=s.wake_s,
            CL=c.wake_s,
            CT=c.tx_latency_s,
            SR=s.rx_latency_s,
            ST=s.tx_latency_s,
            CR=c.rx_latency_s,
            SI=s.softirq_s,
            SK=s.tx_cpu_s,
            CI=c.softirq_s,
            CK=c.tx_cpu_s,
        )
        return out

    def path_latency_s(self) -> float:
        """``CT + SR + ST + CR``: the start latencies a lone operation
        meets on the two paths, seconds."""
        return (
            self.client.tx_latency_s
            + self.server.rx_latency_s
            + self.server.tx_latency_s
            + self.client.rx_latency_s
        )
