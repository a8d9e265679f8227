"""The command line: ``python -m models.sim``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from models.sim.cli import main


def run(*args):
    return subprocess.run([sys.executable, "-m", "models.sim", *args], capture_output=True, text=True, timeout=120)


def test_flory_1447_json():
    p = run("--qd", "1", "--request-writes", "8", "--response-writes", "8,1447", "--kernel", "linux-2.4",
            "--ops", "200", "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert {"iops", "rtt_mean_s", "ops", "packets", "busy_counts", "events"} <= set(d)
    assert 25 <= d["iops"] <= 28 and d["ops"] == 200


def test_flory_1448_is_hundreds_of_times_faster(capsys):
    assert main(["--request-writes", "8", "--response-writes", "8,1448", "--kernel", "linux-2.4",
                 "--ops", "200", "--json"]) == 0
    fast = json.loads(capsys.readouterr().out)["iops"]
    assert fast > 100 * 28


@pytest.mark.parametrize("extra, stalled", [((), True), (("--msg-more",), False), (("--nodelay", "server"), False),
                                            (("--msg-more", "server", "--msg-more-last"), True)])
def test_two_call_response(capsys, extra, stalled):
    assert main(["--qd", "1", "--response-writes", "48,512", "--ops", "50", "--json", *extra]) == 0
    iops = json.loads(capsys.readouterr().out)["iops"]
    assert (iops < 30) == stalled


def test_trace_shows_held_segment_after_delayed_ack(capsys):
    assert main(["--qd", "1", "--request-writes", "8", "--response-writes", "8,1447", "--kernel", "linux-2.4",
                 "--ops", "3", "--trace", "--trace-lines", "0"]) == 0
    lines = [l for l in capsys.readouterr().out.splitlines() if " > " in l]
    held = [k for k, l in enumerate(lines) if "S > C" in l and "length 1447" in l
            and float(l.split()[0]) - float(lines[k - 2].split()[0]) > 0.03]
    assert held, "no 1447-byte segment left after a stall"
    k = held[0]
    seq = lines[k].split("seq ")[1].split(":")[0]
    ack = lines[k - 1]                                # just before it: the client's delayed pure ACK
    assert ack.split()[1:4] == ["C", ">", "S:"] and "length 0" in ack and f"ack {seq}," in ack
    assert float(lines[k].split()[0]) == pytest.approx(float(ack.split()[0]))


@pytest.mark.parametrize("args, word", [(("--qd", "0"), "qd"), (("--sp", "-1"), "sp"), (("--mtu", "40"), "mtu"),
                                        (("--latency", "-0.1"), "latency")])
def test_bad_parameters_exit_nonzero_with_one_line(args, word):
    p = run(*args)
    assert p.returncode != 0
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and word in lines[0] and "Traceback" not in p.stderr


def test_unknown_kernel_exits_nonzero():
    p = run("--kernel", "linux-3")
    assert p.returncode != 0 and "kernel" in p.stderr


def test_help_states_units_and_defaults():
    p = run("--help")
    assert p.returncode == 0
    text = " ".join(p.stdout.split())
    for phrase in ("--qd", "--request-writes", "--response-writes", "--mtu", "--bandwidth", "--nodelay",
                   "--msg-more", "--no-autocork", "--kernel", "--sp", "--cp", "--sl", "--cl", "--latency",
                   "--ops", "--seed", "--trace", "--json", "(seconds)", "(bits per second)", "(bytes)",
                   "default: 1500", "default: linux-6"):
        assert phrase in text, phrase
