"""Command line: ``python -m models.sim [options]``.

Every option is generated from a scenario field's declaration
(:mod:`models.sim.params`): ``--qd``, ``--response-writes``,
``--server-nodelay``, ``--kernel-timers`` and so on, so the command line
and the :class:`~models.sim.scenario.Scenario` cannot drift apart.  Host fields
take the host's name as a prefix (``--client-proc-s``); the other
parts' field names are unique and used as they are.

Prints a short summary, the packet trace with ``--trace``, or one JSON
object with ``--json``; ``--explain`` adds which limit binds and what would move it
(:mod:`models.sim.explain`).  ``--host FILE`` applies a host profile
(:mod:`models.sim.hostprofile`, written by ``python -m models.measure
calibrate``) to both ends; host options given on the command line
override the profile's values.  Bad parameters exit with status 2 and a
one-line message.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from models.sim import hostprofile
from models.sim.engine import simulate
from models.sim.exchange import parse_messages
from models.sim.explain import explain, format_explanation
from models.sim.params import Spec, parse_curve, parse_legs, parse_sizes
from models.sim.scenario import PARTS, Scenario

__all__ = ["main", "build_parser", "option_names"]

_DEFAULT = Scenario()
_PREFIXED = ("client", "server")


def option_names() -> dict:
    """``{"--option": ("part", "field")}`` for every scenario field."""
    out = {}
    for part, cls in PARTS.items():
        for name in cls.specs():
            flag = name.replace("_", "-")
            if part in _PREFIXED:
                flag = f"{part}-{flag}"
            out["--" + flag] = (part, name)
    return out


def _flag(text: str) -> bool:
    low = text.lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _converter(spec: Spec):
    """The argparse ``type`` for a field of this spec."""

    def number(text: str) -> Any:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        return int(v) if spec.kind in ("count", "bytes") and v.is_integer() else v

    def optional(conv):
        def f(text: str) -> Any:
            return None if text.lower() in ("none", "default") else conv(text)

        return f

    def sizes(text: str) -> tuple:
        try:
            return parse_sizes(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    def legs(text: str) -> tuple:
        try:
            return parse_legs(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    def messages(text: str) -> tuple:
        try:
            return parse_messages(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    def curve(text: str) -> tuple:
        try:
            return parse_curve(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    kinds = {
        "sizes": sizes,
        "legs": legs,
        "messages": messages,
        "curve": curve,
        "flag": _flag,
        "choice": str,
    }
    conv = kinds.get(spec.kind, number)
    return optional(conv) if spec.optional else conv


def _show(value: Any) -> str:
    if isinstance(value, tuple):
        if value and isinstance(value[0], tuple):
            return "/".join(",".join(map(str, leg)) for leg in value)
        return ",".join(map(str, value)) or "(none)"
    return str(value)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m models.sim",
        description=(
            "Simulate one TCP connection carrying a closed loop of "
            "operations, counting every send(), segment and ACK. "
            "Defaults: Butterfield (2017)'s 512-byte iSCSI read over 1 Gb/s "
            "Ethernet, MTU 1500, Nagle on, linux-6."
        ),
    )
    for flag, (part, name) in option_names().items():
        spec = PARTS[part].specs()[name]
        default = getattr(getattr(_DEFAULT, part), name)
        unit = f" [{spec.unit}]" if spec.unit else ""
        extra = ""
        if spec.kind == "flag":
            extra = " (true/false)"
        elif spec.kind == "choice":
            extra = f" (one of {', '.join(map(str, spec.choices))})"
        p.add_argument(
            flag,
            dest=f"{part}.{name}",
            type=_converter(spec),
            default=None,
            metavar=spec.kind.upper(),
            help=f"{part}: {spec.help}{unit}{extra}; default {_show(default)}",
        )
    p.add_argument(
        "--host",
        metavar="FILE",
        default=None,
        help="a host profile (JSON, from python -m models.measure calibrate) applied to both "
        "client and server; --client-*/--server-* options given here override its values",
    )
    out = p.add_argument_group("output")
    out.add_argument(
        "--json", action="store_true", help="print one JSON object instead of the summary"
    )
    out.add_argument(
        "--explain",
        action="store_true",
        help="say which limit binds (a timer, the link, a CPU or the queue depth) and what would "
        "move it, with the rates of the fixes; with --json, as an 'explain' object",
    )
    out.add_argument(
        "--trace-lines",
        type=int,
        default=40,
        help="trace lines to print with --trace true (0: all)",
    )
    return p


def scenario_from_args(ns: argparse.Namespace) -> Scenario:
    """The scenario the parsed options describe (on the ``--host``
    profile's hosts when one is given; the options win)."""
    changes: dict = {}
    for part, name in option_names().values():
        value = getattr(ns, f"{part}.{name}")
        if value is not None:  # (every optional field defaults to None)
            changes.setdefault(part, {})[name] = value
    host = getattr(ns, "host", None)
    base = _DEFAULT if host is None else Scenario(host=host)
    return base.replace(**changes)


def _finite(x: Any) -> Any | None:
    return x if not isinstance(x, float) or math.isfinite(x) else None


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:g} us"  # s -> us


def main(argv=None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:  # output piped into head(1)
        return 0


def _main(argv=None) -> int:
    parser = build_parser()
    ns = parser.parse_args(argv)
    try:
        sc = scenario_from_args(ns)
        r = simulate(sc)
        why = explain(sc, r) if ns.explain else None
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    profile = None if ns.host is None else hostprofile.load(ns.host)
    if ns.json:
        d = {k: _finite(v) for k, v in r.to_dict().items()}
        d["scenario"] = sc.to_dict()
        if profile is not None:
            d["host_profile"] = {"file": ns.host, "machine": profile.machine}
        if why is not None:
            d["explain"] = why
        if sc.run.trace:
            d["trace"] = [str(t) for t in r.trace]
        print(json.dumps(d))
        return 0
    if sc.run.trace:
        lines = r.trace if ns.trace_lines == 0 else r.trace[: ns.trace_lines]
        for t in lines:
            print(t)
        if len(lines) < len(r.trace):
            print(f"... ({len(r.trace) - len(lines)} more packets)")
        print()
    wl, k = sc.workload, sc.kernel
    if profile is not None:
        print(profile.describe())
    print(
        f"kernel {k.profile}, QD {wl.qd}, exchange "
        f"{_show(wl.exchange)}, MTU {sc.link.mtu}, "
        f"{sc.link.bandwidth_bps:g} b/s, autocork "
        f"{'on' if sc.profile.autocork else 'off'}"
    )
    print(
        f"IOPS {r.iops:.1f}   RTT mean {_us(r.rtt_mean_s)}, p50 "
        f"{_us(r.rtt_percentile_s(50))}, p99 "
        f"{_us(r.rtt_percentile_s(99))}   ({r.ops} ops measured)"
    )
    print(
        f"packets {r.packets} {r.packets_by_direction}; pure ACKs "
        f"{r.pure_acks}; delayed-ACK timer {r.delayed_acks}; probes "
        f"{r.probes}"
    )
    print("link utilization " + ", ".join(f"{d} {v:.1%}" for d, v in r.link_utilization.items()))
    print("CPU utilization " + ", ".join(f"{h} {v:.1%}" for h, v in r.cpu_utilization.items()))
    print(f"server busy counts {r.busy_counts}")
    print(
        f"{r.events} events in {r.wall_time_s:.3f} s; "
        f"{r.skipped_ops} operations fast-forwarded "
        f"(a cycle of {r.cycle_ops})"
    )
    if r.fast_forward_off_reason:
        print(f"fast-forward off: {r.fast_forward_off_reason}")
    if why is not None:
        print()
        print(format_explanation(why))
    return 0
