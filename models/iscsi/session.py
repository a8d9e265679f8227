"""iSCSI login keys and their negotiation (RFC 7143, sections 6 and 13): the :class:`Session`
whose keys shape every command's exchange (:mod:`models.iscsi.exchange`).  Standard library only."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from models import framing

__all__ = [
    "BHS_BYTES",
    "DIGEST_BYTES",
    "KeySpec",
    "KEYS",
    "RFC7143_DEFAULTS",
    "IET_DEFAULTS",
    "OPEN_ISCSI_DEFAULTS",
    "Session",
    "negotiate",
]

BHS_BYTES = framing.ISCSI_HEADER_BYTES
#: A CRC32C header or data digest, bytes (RFC 7143, section 11.2).
DIGEST_BYTES = 4
_LARGEST_24BIT = 2**24 - 1

KeyValue = bool | int | str


@dataclass(frozen=True)
class KeySpec:
    """One negotiated login key: its RFC 7143 default, rule and range.

    ``rule`` is ``"or"``, ``"and"``, ``"min"``, ``"max"``, ``"declared"``
    (each side states its own value) or ``"list"`` (the target picks the
    first of the initiator's values it accepts).
    """

    name: str
    default: KeyValue
    rule: str
    low: int | None = None
    high: int | None = None

    @property
    def boolean(self) -> bool:
        """True for Yes/No keys."""
        return isinstance(self.default, bool)


#: The operational keys this model knows, with RFC 7143 defaults (section
#: 13).  Any other key name raises ``ValueError``.
KEYS: dict[str, KeySpec] = {
    k.name: k
    for k in (
        KeySpec("InitialR2T", True, "or"),
        KeySpec("ImmediateData", True, "and"),
        KeySpec("MaxRecvDataSegmentLength", 8192, "declared", 512, _LARGEST_24BIT),
        KeySpec("MaxBurstLength", 262144, "min", 512, _LARGEST_24BIT),
        KeySpec("FirstBurstLength", 65536, "min", 512, _LARGEST_24BIT),
        KeySpec("MaxOutstandingR2T", 1, "min", 1, 65535),
        KeySpec("MaxConnections", 1, "min", 1, 65535),
        KeySpec("DataPDUInOrder", True, "or"),
        KeySpec("DataSequenceInOrder", True, "or"),
        KeySpec("ErrorRecoveryLevel", 0, "min", 0, 2),
        KeySpec("DefaultTime2Wait", 2, "max", 0, 3600),
        KeySpec("DefaultTime2Retain", 20, "min", 0, 3600),
        KeySpec("HeaderDigest", "None", "list"),
        KeySpec("DataDigest", "None", "list"),
    )
}

#: Every key at its RFC 7143 default.
RFC7143_DEFAULTS: dict[str, KeyValue] = {name: spec.default for name, spec in KEYS.items()}

#: The iSCSI Enterprise Target's (IET) built-in values of the keys that
#: shape a command (its ``usr/param.c`` table; ``ietd.conf(5)``).  The
#: manual page gives ImmediateData's default as No while the code's table
#: and sample configuration say Yes; chapter 10 shows the write's round
#: trips are the same either way.
IET_DEFAULTS: dict[str, KeyValue] = {
    "InitialR2T": True,
    "ImmediateData": True,
    "MaxRecvDataSegmentLength": 8192,
    "MaxBurstLength": 262144,
    "FirstBurstLength": 65536,
    "MaxOutstandingR2T": 1,
}

#: The open-iscsi initiator's offers (``iscsid.conf`` defaults of the
#: 2.0 series, ``usr/iscsi_settings.h``).
OPEN_ISCSI_DEFAULTS: dict[str, KeyValue] = {
    "InitialR2T": False,
    "ImmediateData": True,
    "MaxRecvDataSegmentLength": 131072,
    "MaxBurstLength": 16776192,
    "FirstBurstLength": 262144,
    "MaxOutstandingR2T": 1,
}

_DIGESTS = ("None", "CRC32C")


def _parse(name: str, value: object) -> KeyValue:
    """A key's value as bool, int or digest list, checked against KEYS."""
    if name not in KEYS:
        raise ValueError(f"unknown iSCSI key {name!r}; known keys: {sorted(KEYS)}")
    spec = KEYS[name]
    if spec.rule == "list":
        items = value.split(",") if isinstance(value, str) else None
        if not items or any(v not in _DIGESTS for v in items):
            raise ValueError(f"{name} must be a comma-separated list of {_DIGESTS}, got {value!r}")
        return ",".join(items)
    if spec.boolean:
        if isinstance(value, bool):
            return value
        if value in ("Yes", "No"):
            return value == "Yes"
        raise ValueError(f"{name} must be Yes/No (or a bool), got {value!r}")
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if not isinstance(value, int):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    assert spec.low is not None and spec.high is not None
    if not spec.low <= value <= spec.high:
        raise ValueError(f"{name} must lie in {spec.low}..{spec.high}, got {value!r}")
    return value


def _offers(side: str, given: Mapping[str, object] | None) -> dict:
    """One side's complete set of values: RFC defaults overlaid by given."""
    out: dict[str, KeyValue] = dict(RFC7143_DEFAULTS)
    for name, value in (given or {}).items():
        out[name] = _parse(name, value)
    fbl, mbl = out["FirstBurstLength"], out["MaxBurstLength"]
    assert isinstance(fbl, int) and isinstance(mbl, int)
    if fbl > mbl:
        raise ValueError(
            f"{side}: FirstBurstLength ({fbl}) must not exceed MaxBurstLength ({mbl})"
        )
    return out


@dataclass(frozen=True)
class Session:
    """The operational values of a logged-in session, all in bytes/counts.

    Build one with :func:`negotiate`; constructing it directly checks the
    same rules.

    Parameters
    ----------
    initial_r2t, immediate_data : bool
        InitialR2T and ImmediateData after negotiation.
    first_burst_length, max_burst_length : int
        FirstBurstLength and MaxBurstLength, bytes.
    max_outstanding_r2t : int
        MaxOutstandingR2T, R2Ts per command.
    target_mrdsl : int
        MaxRecvDataSegmentLength declared by the target, bytes: the
        largest data segment the initiator may send (immediate data,
        Data-Out).
    initiator_mrdsl : int
        MaxRecvDataSegmentLength declared by the initiator, bytes: the
        largest Data-In segment.
    header_digest, data_digest : bool
        CRC32C digests in use.
    """

    initial_r2t: bool = True
    immediate_data: bool = True
    first_burst_length: int = 65536
    max_burst_length: int = 262144
    max_outstanding_r2t: int = 1
    target_mrdsl: int = 8192
    initiator_mrdsl: int = 8192
    header_digest: bool = False
    data_digest: bool = False

    def __post_init__(self) -> None:
        checks = (
            ("FirstBurstLength", self.first_burst_length),
            ("MaxBurstLength", self.max_burst_length),
            ("MaxOutstandingR2T", self.max_outstanding_r2t),
            ("MaxRecvDataSegmentLength", self.target_mrdsl),
            ("MaxRecvDataSegmentLength", self.initiator_mrdsl),
        )
        for name, value in checks:
            _parse(name, value)
        if self.first_burst_length > self.max_burst_length:
            raise ValueError(
                f"FirstBurstLength ({self.first_burst_length}) must not "
                f"exceed MaxBurstLength ({self.max_burst_length})"
            )
        for name in ("initial_r2t", "immediate_data", "header_digest", "data_digest"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be a bool, got {getattr(self, name)!r}")


def negotiate(
    initiator: Mapping[str, object] | None = None, target: Mapping[str, object] | None = None
) -> Session:
    """The session two sides agree on, by the rules of RFC 7143.

    Parameters
    ----------
    initiator, target : mapping, optional
        Each side's offered (or declared) values by RFC key name, e.g.
        ``{"InitialR2T": "No", "MaxBurstLength": 262144}``; keys left out
        take the RFC default.  Booleans may be ``True``/``False`` or
        ``"Yes"``/``"No"``.

    Examples
    --------
    >>> s = negotiate(OPEN_ISCSI_DEFAULTS, IET_DEFAULTS)
    >>> s.initial_r2t, s.first_burst_length, s.target_mrdsl
    (True, 65536, 8192)
    """
    ini = _offers("initiator", initiator)
    tgt = _offers("target", target)

    def digest(name: str) -> bool:
        accepted = str(tgt[name]).split(",")
        for choice in str(ini[name]).split(","):
            if choice in accepted:
                return choice == "CRC32C"
        raise ValueError(
            f"{name}: no common value (initiator offers {ini[name]!r}, "
            f"target accepts {tgt[name]!r})"
        )

    return Session(
        initial_r2t=bool(ini["InitialR2T"]) or bool(tgt["InitialR2T"]),
        immediate_data=(bool(ini["ImmediateData"]) and bool(tgt["ImmediateData"])),
        first_burst_length=min(int(ini["FirstBurstLength"]), int(tgt["FirstBurstLength"])),
        max_burst_length=min(int(ini["MaxBurstLength"]), int(tgt["MaxBurstLength"])),
        max_outstanding_r2t=min(int(ini["MaxOutstandingR2T"]), int(tgt["MaxOutstandingR2T"])),
        target_mrdsl=int(tgt["MaxRecvDataSegmentLength"]),
        initiator_mrdsl=int(ini["MaxRecvDataSegmentLength"]),
        header_digest=digest("HeaderDigest"),
        data_digest=digest("DataDigest"),
    )
