"""The command line: ``python -m models.sim``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from models.sim import PARTS
from models.sim.cli import build_parser, main, option_names


def run(*args):
    return subprocess.run(
        [sys.executable, "-m", "models.sim", *args], capture_output=True, text=True, timeout=120
    )


def test_every_scenario_field_has_an_option_in_help():
    fields = {(part, name) for part, cls in PARTS.items() for name in cls.specs()}
    options = option_names()
    assert set(options.values()) == fields  # one option per field
    assert len(options) == len(fields)  # and no name twice
    text = build_parser().format_help()
    for flag in options:
        assert flag in text, flag


def test_flory_1447_json():
    p = run(
        "--request-writes",
        "8",
        "--response-writes",
        "8,1447",
        "--profile",
        "linux-2.4",
        "--ops",
        "200",
        "--json",
    )
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert {"iops", "rtt_mean_s", "ops", "packets", "hosts", "events", "scenario"} <= set(d)
    assert 25 <= d["iops"] <= 28 and d["ops"] == 200


def test_flory_1448_is_a_hundred_times_faster(capsys):
    assert (
        main(
            [
                "--request-writes",
                "8",
                "--response-writes",
                "8,1448",
                "--profile",
                "linux-2.4",
                "--ops",
                "200",
                "--json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["iops"] > 100 * 28


@pytest.mark.parametrize(
    "extra, stalled",
    [
        ((), True),
        (("--server-msg-more", "true"), False),
        (("--server-nodelay", "true"), False),
        (("--server-msg-more", "true", "--server-msg-more-last", "true"), True),
    ],
)
def test_two_call_response(capsys, extra, stalled):
    assert main(["--response-writes", "48,512", "--ops", "50", "--json", *extra]) == 0
    iops = json.loads(capsys.readouterr().out)["iops"]
    assert (iops < 30) == stalled


def test_options_reach_every_part(capsys):
    assert (
        main(
            [
                "--qd",
                "3",
                "--mtu",
                "9000",
                "--client-proc-s",
                "1e-5",
                "--hz",
                "1000",
                "--kernel-timers",
                "true",
                "--seed",
                "7",
                "--legs",
                "48/48/4096/48",
                "--json",
            ]
        )
        == 0
    )
    sc = json.loads(capsys.readouterr().out)["scenario"]
    assert sc["workload"]["qd"] == 3 and sc["link"]["mtu"] == 9000
    assert sc["client"]["proc_s"] == 1e-5 and sc["kernel"]["hz"] == 1000
    assert sc["kernel"]["kernel_timers"] is True and sc["run"]["seed"] == 7
    assert sc["workload"]["legs"] == [[48], [48], [4096], [48]]


def test_trace_shows_held_segment_after_delayed_ack(capsys):
    assert (
        main(
            [
                "--request-writes",
                "8",
                "--response-writes",
                "8,1447",
                "--profile",
                "linux-2.4",
                "--ops",
                "3",
                "--trace",
                "true",
                "--trace-lines",
                "0",
            ]
        )
        == 0
    )
    lines = [ln for ln in capsys.readouterr().out.splitlines() if " > " in ln]
    held = [
        k
        for k, ln in enumerate(lines)
        if "S > C" in ln
        and "length 1447" in ln
        and float(ln.split()[0]) - float(lines[k - 2].split()[0]) > 0.03
    ]
    assert held, "no 1447-byte segment left after a stall"
    k = held[0]
    seq = lines[k].split("seq ")[1].split(":")[0]
    ack = lines[k - 1]  # just before: the delayed pure ACK
    assert ack.split()[1:4] == ["C", ">", "S:"] and "length 0" in ack
    assert f"ack {seq}," in ack
    assert float(lines[k].split()[0]) == pytest.approx(float(ack.split()[0]))


@pytest.mark.parametrize(
    "args, word",
    [
        (("--qd", "0"), "workload.qd"),
        (("--server-proc-s", "-1"), "proc_s"),
        (("--mtu", "40"), "link.mtu"),
        (("--latency-s", "-0.1"), "latency_s"),
        (("--bucket-bytes", "100"), "bucket_bytes"),
        (("--legs", "48/48/512"), "legs"),
        (("--profile", "linux-3"), "profile"),
        (("--tick-phase-s", "0.5"), "tick_phase_s"),
    ],
)
def test_bad_parameters_exit_2_with_one_line(args, word):
    p = run(*args)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and word in lines[0] and "Traceback" not in p.stderr


def test_help_states_units_and_defaults():
    p = run("--help")
    assert p.returncode == 0
    text = " ".join(p.stdout.split())
    for phrase in (
        "--qd",
        "--server-nodelay",
        "--client-msg-more",
        "--autocork",
        "--profile",
        "[seconds]",
        "[bits per second]",
        "[bytes]",
        "default 1500",
        "default linux-6",
        "--json",
    ):
        assert phrase in text, phrase
