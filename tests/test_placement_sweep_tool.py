"""tools/placement_sweep.py: its columns are the bundled dataset's, its sweep covers every size and
placement the comparison reads, and bad arguments are refused before any run."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from models import data
from models.measure.runner import PIN_MODES
from models.validation import placement as P

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import placement_sweep  # noqa: E402


def test_the_tool_writes_the_bundled_columns_and_configuration():
    desc = data.describe(P.DATASET)
    assert [f["name"] for f in desc["schema"]["fields"]] == [n for n, *_ in placement_sweep.FIELDS]
    df = data.load(P.DATASET)
    assert sorted(df["iosize_bytes"].unique()) == list(placement_sweep.SIZES)
    assert set(df["pin"]) == set(PIN_MODES)
    assert set(df["link"]) == set(placement_sweep.LINKS)
    # the sweep ran under the congestion control the comparison simulates
    sweeps = desc["measurement"]["sweeps"]
    assert {w["machine"]["congestion_control"] for w in sweeps} == {P.CONFIG["cc"]}
    # every sweep recorded its machine; the CSV's sweep numbers are the sidecar's
    assert sorted(df["sweep"].unique()) == [w["sweep"] for w in sweeps]
    assert all(w["machine"]["config_hz"] and w["machine"]["date"] for w in sweeps)


@pytest.mark.parametrize(
    "argv, word",
    [
        (["--repeats", "0"], "--repeats"),
        (["--duration", "0"], "--duration"),
        (["--append", "--prefix", "no_such_table"], "does not exist"),
        (["--links", "wifi"], "--links"),
        (["--links", "loopback,loopback"], "--links"),
    ],
)
def test_bad_arguments_are_refused_before_any_run(argv, word, tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        placement_sweep.main(["--out", str(tmp_path), *argv])
    assert info.value.code == 2
    assert word in capsys.readouterr().err


import stall_placement_sweep  # noqa: E402


def test_the_stall_tool_writes_the_bundled_columns_and_configuration():
    from models.validation import stall_placement as SP

    desc = data.describe(SP.DATASET)
    names = [n for n, *_ in stall_placement_sweep.FIELDS]
    assert [f["name"] for f in desc["schema"]["fields"]] == names
    assert desc["schema"]["primaryKey"] == stall_placement_sweep.KEY
    df = data.load(SP.DATASET)
    assert sorted(df["iosize_bytes"].unique()) == list(stall_placement_sweep.SIZES)
    assert sorted(df["qd"].unique()) == list(stall_placement_sweep.QDS)
    assert set(df["client_sock_mode"]) == set(stall_placement_sweep.CLIENT_SOCKS)
    assert set(df["pin"]) == set(PIN_MODES)
    assert set(df["link"]) == set(stall_placement_sweep.DEFAULT_LINKS)
    # every configuration ran in each placement the same number of times
    per = df.groupby(["link", "client_sock_mode", "iosize_bytes", "qd", "pin"]).size()
    assert per.nunique() == 1
    sweeps = desc["measurement"]["sweeps"]
    assert sorted(df["sweep"].unique()) == [w["sweep"] for w in sweeps]
    assert all(w["machine"]["config_hz"] and w["machine"]["date"] for w in sweeps)


@pytest.mark.parametrize(
    "argv, word",
    [
        (["--repeats", "21"], "--repeats"),
        (["--duration", "11"], "--duration"),
        (["--links", "veth-9000,wifi"], "--links"),
    ],
)
def test_the_stall_tool_refuses_bad_arguments_before_any_run(argv, word, tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        stall_placement_sweep.main(["--out", str(tmp_path), *argv])
    assert info.value.code == 2
    assert word in capsys.readouterr().err
