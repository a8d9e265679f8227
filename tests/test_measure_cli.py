"""The harness's command line refuses what it would otherwise ignore or misread, in one line.

Every flag that takes a value has documented bounds; each bad value is an exit status 2 with one line
on standard error naming the flag and the allowed range, before anything is compiled or any namespace
created.  Flags the chosen link ignores (``--mtu``, ``--rate``, ``--offloads`` on loopback,
``--isolate`` on a veth) and captures that cannot be taken (``--pcap``, ``--capture``,
``--pcap-dir`` without tcpdump or root) are refused the same way.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from models.measure import capture, cli, diagnose
from models.measure.__main__ import main

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.timeout(120)

#: ``(command, flag): (bad values, words the error must contain)``: every flag that takes a value.
BAD: dict[tuple[str, str], tuple[list[str], str]] = {
    ("run", "--proto"): (["http"], "invalid choice"),
    ("run", "--sock"): (["cork"], "invalid choice"),
    ("run", "--client-sock"): (["more"], "invalid choice"),
    ("run", "--pin"): (["both", ""], "invalid choice"),
    ("run", "--qd"): (["0", "4097", "-3", "x", "1.5", ""], "an integer 1..4096"),
    ("run", "--iosize"): (["-1", "4194305", "1k"], "an integer 0..4194304 bytes"),
    ("run", "--duration"): (["0", "600.5", "-1", "nan", "inf", "x"], "(0, 600] seconds"),
    ("run", "--warmup"): (["-0.1", "61", "nan", "x"], "[0, 60] seconds"),
    ("run", "--count"): (["0", "1000000000001", "1e3"], "an integer 1..1000000000000"),
    ("run", "--cc-log-every"): (["-1", "1000001", "4.5"], "an integer 0..1000000"),
    ("run", "--cc"): (["cubic; rm", "", "c" * 16, "cubïc", "-x"], "1..15 letters"),
    ("run", "--link"): (["wifi"], "invalid choice"),
    ("run", "--mtu"): (["67", "65536", "x"], "an integer 68..65535 bytes"),
    ("run", "--rate"): (["10", "999k", "200g", "fast", "nan", "inf"], "1m..100g bits per second"),
    ("run", "--offloads"): (["maybe"], "invalid choice"),
    ("run", "--burst"): (["0", "1001", "x", "2.5", ""], "an integer 1..1000"),
    ("run", "--pcap"): (["{tmp}", "{tmp}/no-such-folder/x.pcap", ""], "existing folder"),
    ("smoke", "--duration"): (["0", "61", "-1", "nan", "x"], "(0, 60] seconds"),
    ("sweep", "--out"): (["{file}", ""], "must be a folder"),
    ("sweep", "--prefix"): (["Kernel6", "_k", "k" * 41, "k-6", ""], "1..40 lower-case"),
    ("sweep", "--links"): (["wifi", "loopback,loopback", "", "veth-1500,"], "comma-separated"),
    ("sweep", "--pcap-dir"): (["{file}", ""], "must be a folder"),
    ("sweep", "--plan"): (["wide", "", "Field"], "invalid choice"),
    ("sweep", "--pin"): (["both", "", "Apart"], "invalid choice"),
    ("analyze", "--server-port"): (["0", "65536", "x"], "1..65535"),
}


def _value_flags(p: argparse.ArgumentParser) -> set[str]:
    return {
        a.option_strings[-1]
        for a in p._actions
        if a.option_strings and a.nargs != 0 and not isinstance(a, argparse._HelpAction)
    }


def test_every_flag_that_takes_a_value_is_walked():
    p = cli.parser()
    flags = {("analyze", f) for f in _value_flags(diagnose.parser())}
    for command in ("info", "smoke", "run", "sweep", "cleanup"):
        flags |= {(command, f) for f in _value_flags(cli.subparser(p, command))}
    assert flags == set(BAD)


def _one_line_error(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2, argv
    out, err = capsys.readouterr()
    assert out == "" and err.endswith("\n") and err.count("\n") == 1, (argv, err)
    return err


def test_each_bad_value_is_one_line_naming_the_flag_and_its_range(capsys, tmp_path):
    afile = tmp_path / "a-file"
    afile.write_text("")
    t0 = time.monotonic()
    walked = 0
    for (command, flag), (values, words) in BAD.items():
        for value in values:
            value = value.format(tmp=tmp_path, file=afile)
            argv = [command, "capture.pcap"] if command == "analyze" else [command]
            err = _one_line_error(capsys, [*argv, f"{flag}={value}"])
            assert f"argument {flag}:" in err and words in err, err
            walked += 1
    assert walked == sum(len(values) for values, _ in BAD.values())
    assert time.monotonic() - t0 < 30  # refused at parse time: nothing built, nothing created


def test_the_command_line_itself_refuses_with_status_2_and_one_line():
    t0 = time.monotonic()
    res = subprocess.run(
        [sys.executable, "-m", "models.measure", "run", "--qd", "0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2 and res.stdout == ""
    assert (
        res.stderr.count("\n") == 1 and "argument --qd: must be an integer 1..4096" in res.stderr
    )
    assert time.monotonic() - t0 < 30


@pytest.mark.parametrize(
    "argv, flag, why",
    [
        (["--mtu", "9000"], "--mtu", "kernel fixes the loopback's MTU"),
        (["--mtu", "1500"], "--mtu", "--link veth only"),
        (["--rate", "1g"], "--rate", "slow every program on the host"),
        (["--offloads", "off"], "--offloads", "--link veth only"),
        (["--offloads", "default"], "--offloads", "--link veth only"),
        (["--link", "veth", "--isolate"], "--isolate", "--link loopback only"),
        (["--burst", "10"], "--burst", "sizes the veth's tbf rate limit"),
    ],
)
def test_flags_the_link_would_ignore_are_refused(capsys, argv, flag, why):
    err = _one_line_error(capsys, ["run", *argv])
    assert f"argument {flag}: applies to" in err and why in err, err


def test_a_bucket_depth_without_a_rate_limit_is_refused(capsys):
    err = _one_line_error(capsys, ["run", "--link", "veth", "--burst", "10"])
    assert "argument --burst: needs --rate" in err, err


def test_pcap_with_no_capture_is_refused(capsys, tmp_path):
    err = _one_line_error(capsys, ["run", "--pcap", str(tmp_path / "x.pcap"), "--no-capture"])
    assert "argument --pcap:" in err and "drop --no-capture" in err


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["run", "--pcap", "{tmp}/x.pcap"], "--pcap"),
        (["run", "--capture"], "--capture"),
        (["sweep", "--pcap-dir", "{tmp}/caps"], "--pcap-dir"),
    ],
)
def test_a_capture_without_tcpdump_is_an_error_not_a_silent_skip(
    capsys, monkeypatch, tmp_path, argv, flag
):
    monkeypatch.setattr(capture, "tcpdump_path", lambda: None)
    err = _one_line_error(capsys, [a.format(tmp=tmp_path) for a in argv])
    assert f"argument {flag}: tcpdump is not installed" in err
    assert not (tmp_path / "x.pcap").exists() and not (tmp_path / "caps").exists()


def test_a_capture_without_root_is_an_error(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(capture, "tcpdump_path", lambda: "/usr/bin/tcpdump")
    monkeypatch.setattr(os, "geteuid", lambda: 4242)
    err = _one_line_error(capsys, ["run", "--pcap", str(tmp_path / "x.pcap")])
    assert "argument --pcap: capturing needs root" in err


def test_good_values_still_parse():
    p = cli.parser()
    args = p.parse_args(
        ["run", "--link", "veth", "--mtu", "9000", "--rate", "1g", "--offloads", "off"]
        + ["--qd", "4096", "--iosize", "0", "--duration", "600", "--warmup", "0", "--cc", "cubic"]
    )
    cli.check(p, args)
    assert (args.mtu, args.rate, args.qd, args.duration, args.cc) == (
        9000,
        10**9,
        4096,
        600,
        "cubic",
    )
    args = p.parse_args(["sweep", "--links", "loopback,veth-9000", "--prefix", "kernel7"])
    assert args.links == ["loopback", "veth-9000"] and args.prefix == "kernel7"
    args = p.parse_args(["run"])
    cli.check(p, args)
    assert args.mtu is None and args.rate is None and args.offloads is None


def test_sweep_dry_run_lists_the_plan_and_a_closed_pipe_ends_quietly():
    py = sys.executable
    res = subprocess.run(
        [py, "-m", "models.measure", "sweep", "--dry-run", "--links", "loopback"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0 and res.stdout.startswith("loopback flory RunSpec(")
    assert "pin='none'" in res.stdout and "pin='apart'" not in res.stdout
    pinned = subprocess.run(
        [
            py,
            "-m",
            "models.measure",
            "sweep",
            "--dry-run",
            "--links",
            "loopback",
            "--pin",
            "apart",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = pinned.stdout.splitlines()
    assert pinned.returncode == 0 and len(lines) == len(res.stdout.splitlines())
    assert all(line.endswith("pin='apart')") for line in lines)
    res = subprocess.run(
        [
            "/bin/bash",
            "-c",
            f"{py} -m models.measure sweep --dry-run | head -1; echo ${{PIPESTATUS[0]}}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "Traceback" not in res.stderr and "BrokenPipe" not in res.stderr, res.stderr
    assert res.stdout.splitlines()[-1] == "141"


def test_a_plan_with_no_runs_on_the_chosen_links_is_an_error_not_an_empty_table(capsys, tmp_path):
    code = main(["sweep", "--plan", "burst", "--links", "loopback", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and "the burst plan has no runs on these links" in err, err
    assert not any(tmp_path.iterdir())  # nothing written
