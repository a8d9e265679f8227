"""tools/trim_pcap.py: a capture's handshake and last packets, the rest dropped; bad input is a
clear error."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CAP = ROOT / "data" / "captures" / "lo_nagle_qd1_512.pcap"


def _tool():
    spec = importlib.util.spec_from_file_location("trim_pcap", ROOT / "tools" / "trim_pcap.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["trim_pcap"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_head_and_tail_are_kept_in_order(tmp_path):
    tool = _tool()
    data = CAP.read_bytes()
    header, recs = tool.records(data)
    out = tool.trim(data, 3, 10)
    h2, kept = tool.records(out)
    assert h2 == header and kept == recs[:3] + recs[-10:]
    assert tool.trim(data, 3, len(recs)) == data  # overlapping: the whole file
    dst = tmp_path / "t.pcap"
    assert tool.main([str(CAP), str(dst), "--head", "3", "--tail", "5"]) == 0
    from models.measure.capture import read_pcap

    assert len(read_pcap(dst)) == 8


def test_bad_input_is_a_clear_error(tmp_path, capsys):
    tool = _tool()
    with pytest.raises(ValueError, match="not a classic pcap"):
        tool.trim(b"hello, world, not a capture", 3, 3)
    with pytest.raises(ValueError, match="cut off"):
        tool.trim(CAP.read_bytes()[:-5], 3, 3)
    with pytest.raises(ValueError, match="head and tail"):
        tool.trim(CAP.read_bytes(), -1, 3)
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"nothing")
    assert tool.main([str(bad), str(tmp_path / "o.pcap")]) == 2
    assert "not a classic pcap" in capsys.readouterr().err
