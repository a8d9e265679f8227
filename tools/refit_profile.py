"""Refit a ``calibrate`` profile from its own records, optionally with ``Host`` or ``Link`` flags on.

    .venv/bin/python tools/refit_profile.py data/hosts/kernel6_machine4.json \\
        --set send_cpu_first=true --out data/hosts/kernel6_machine4_sent_after_cpu.json

A profile written by ``python -m models.measure calibrate`` keeps what it was fitted to: the
microbenchmarks (``measured``), the machine's settings (``settings``) and each training run's
measured operation time (``fit.training_rows``, with the kernel's smallest round trip).  This tool
rebuilds the training rows from those records and runs the same fit again
(:func:`models.measure.profile.build_profile`, a thread's CPU per wake-up fitted when the profile
fitted it), with the ``Host`` flags given by ``--set`` on both ends of every simulation of the
fit and in the result, and the ``Link`` flags given by ``--link`` on the path of every simulation
of the fit (recorded in the result's ``fit.link``: a profile holds ``Host`` fields only, so whoever
simulates with it sets them on the link).  Nothing is measured: without ``--set`` the refit gives the profile's own
costs and loss again (the check that the rows were rebuilt as they were measured).

Host fields a profile holds from a measurement made after its calibration (``--keep``, default
``timer_fire_cpu_s``, which the fourth machine's profile took from ``measured.timer_fire_again``)
are carried over as the profile holds them, into the fit's simulations and the result.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from models.sim import hostprofile  # noqa: E402

#: Host fields carried over by default (see the module's docstring).
KEEP = ("timer_fire_cpu_s",)
#: The calibration's loopback: its MTU, bytes (the harness's loopback runs).
LOOPBACK_MTU = 65536


def training_rows(profile: dict[str, Any]) -> list[dict[str, Any]]:
    """The training rows of a ``calibrate`` profile (a JSON object) as
    :func:`~models.measure.profile.build_profile` takes them: loopback runs under the machine's
    congestion control, each with the operation time it was fitted to (a median, or a mean for a
    busy run fitted by its rate) and the kernel's smallest round trip.

    >>> p = {"machine": {"congestion_control": "bbr"},
    ...      "fit": {"kernel_min_rtt_us": 3.0, "training_rows": [
    ...          {"sock_mode": "more", "client_sock_mode": "nagle", "qd": 8, "iosize_bytes": 512,
    ...           "measured_p50_us": 50.0, "model_p50_us": 52.0},
    ...          {"sock_mode": "more", "qd": 64, "iosize_bytes": 512,
    ...           "measured_mean_us": 250.0, "model_mean_us": 240.0}]}}
    >>> a, b = training_rows(p)
    >>> a["lat_p50_us"], a["link"], a["cc"], a["min_rtt_us"], "fit_target" in a
    (50.0, 'loopback', 'bbr', 3.0, False)
    >>> b["fit_target"], b["iops"], b["client_sock_mode"]
    ('mean', 256000.0, 'nagle')
    """
    fit = profile.get("fit") or {}
    rows = fit.get("training_rows")
    if not rows:
        raise ValueError("profile: fit.training_rows is missing; only calibrate's profiles refit")
    out = []
    for r in rows:
        row: dict[str, Any] = {
            "link": "loopback",
            "mtu_bytes": LOOPBACK_MTU,
            "cc": profile["machine"]["congestion_control"],
            "stalled_pct": 0.0,  # (a stalled run is never a training row)
            "sock_mode": r["sock_mode"],
            "client_sock_mode": r.get("client_sock_mode", "nagle"),
            "qd": int(r["qd"]),
            "iosize_bytes": int(r["iosize_bytes"]),
        }
        if fit.get("kernel_min_rtt_us") is not None:
            row["min_rtt_us"] = float(fit["kernel_min_rtt_us"])
        if "measured_mean_us" in r:  # fitted by its rate: QD / IOPS, us
            mean = float(r["measured_mean_us"])
            row.update(fit_target="mean", lat_p50_us=mean, iops=1e6 * row["qd"] / mean)
        else:
            p50 = float(r["measured_p50_us"])
            row.update(lat_p50_us=p50, iops=1e6 * row["qd"] / p50)
        out.append(row)
    return out


def require_records(profile: dict[str, Any]) -> None:
    """Check that ``profile`` (a JSON object) holds what a refit reads: a host profile with the
    microbenchmarks (``measured``), the machine's settings (``settings``) and the training rows
    (``fit.training_rows``), as ``python -m models.measure calibrate`` writes them.

    >>> require_records({"schema": "queue-depth-host-profile", "version": 1, "host": {},
    ...          "machine": {"kernel": "6.1", "config_hz": 250, "congestion_control": "bbr",
    ...                      "date": "2026-01-01"}})
    Traceback (most recent call last):
    ...
    ValueError: profile: no measured, settings, fit.training_rows; only calibrate's profiles refit
    """
    hostprofile.validate(profile)
    fit = profile.get("fit") or {}
    missing = [
        name
        for name, value in (
            ("measured", profile.get("measured")),
            ("settings", profile.get("settings")),
            ("fit.training_rows", fit.get("training_rows")),
        )
        if not value
    ]
    if missing:
        raise ValueError(f"profile: no {', '.join(missing)}; only calibrate's profiles refit")


def link_setting(text: str) -> tuple[str, bool]:
    """A command line's ``NAME=true`` or ``NAME=false`` for a flag of
    :data:`models.measure.profile.LINK_FLAGS`.

    >>> link_setting("freed_on_handover=true")
    ('freed_on_handover', True)
    >>> link_setting("mtu=1500")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: 'mtu' is not a Link flag; known: run_to_block, ...
    """
    from models.measure.profile import LINK_FLAGS  # noqa: PLC0415

    return hostprofile.bool_setting(text, LINK_FLAGS, "a Link flag")


def refit(
    profile: dict[str, Any],
    flags: dict[str, bool],
    keep: tuple[str, ...] = KEEP,
    link: dict[str, bool] | None = None,
) -> dict[str, Any]:
    """``profile`` fitted again from its records with ``flags`` (see the module's docstring).

    Raises
    ------
    ValueError
        The profile lacks a record the refit reads (:func:`require_records`), or a value outside its range.
    """
    from models.measure.profile import build_profile  # noqa: PLC0415 - NumPy and SciPy

    require_records(profile)
    kept = {k: profile["host"][k] for k in keep if k in profile["host"]}
    measured = dict(profile["measured"])
    costs = {k: v for k, v in measured.items() if k != "busy_runs"}
    wake_cpu = "wcpu_s" in (profile.get("fit") or {}).get("fitted", [])
    out = build_profile(
        {"settings": profile["settings"], "costs": costs},
        training_rows(profile),
        fit_wake_cpu=wake_cpu,
        training=profile["fit"].get("training"),
        flags=flags,
        host=kept,  # the kept fields in every simulation of the fit, and in the result
        link=link,  # on the path of every simulation of the fit; recorded in fit.link
    )
    for k in kept:
        out["provenance"][k] = profile.get("provenance", {}).get(k, "carried over")
    out["measured"] = measured  # (the busy runs' record too)
    hostprofile.validate(out)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("profile", type=Path, help="a calibrate profile (JSON)")
    p.add_argument("--out", type=Path, required=True, help="the refitted profile to write")
    p.add_argument(
        "--set",
        type=hostprofile.flag_setting,
        action="append",
        default=[],
        help="a Host flag, NAME=true",
    )
    p.add_argument(
        "--link",
        type=link_setting,
        action="append",
        default=[],
        help="a Link flag on the path of the fit's simulations, NAME=true",
    )
    p.add_argument("--keep", nargs="*", default=list(KEEP), help="host fields carried over")
    ns = p.parse_args(argv)
    try:
        src = json.loads(ns.profile.read_text())
        out = refit(src, dict(ns.set), tuple(ns.keep), dict(ns.link))
    except (OSError, ValueError) as e:  # (a JSON syntax error is a ValueError)
        p.error(f"{ns.profile}: {e}")
    flags = " ".join(
        [f"--set {k}={'true' if v else 'false'}" for k, v in ns.set]
        + [f"--link {k}={'true' if v else 'false'}" for k, v in ns.link]
    )
    out["fit"]["refit"] = (
        f"tools/refit_profile.py {ns.profile.name} {flags}".strip()
        + f": fitted again from {ns.profile.name}'s records (measured, fit.training_rows); "
        f"kept as that profile holds them: {', '.join(ns.keep) or 'nothing'}"
    )
    ns.out.write_text(json.dumps(out, indent=2) + "\n")
    f = out["fit"]
    print(
        f"{ns.out}: loss {f['loss']:.4g} (was {src['fit']['loss']:.4g}), at a bound: {f['at_bound']}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
