"""tools/bbr_trace.py unpacks bpftrace's lines as struct bbr is laid out, and keeps the socket that
delivered the most (the server's)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import bbr_trace  # noqa: E402


def _line(t: int, sk: str, delivered: int, bw: int, rounds: int, mode: int, gain_word: int) -> str:
    head = f"{t} {sk} {delivered} 0 12 30 1000000 3 456 48 120"
    w2 = (7 << 32) | bw  # high: bw.s[1].t; low: bw.s[0].v
    w4 = (rounds << 32) | 5
    w7 = (99 << 32) | (1 << 7) | mode  # round_start set beside the mode
    w9 = (gain_word << 32) | 1234  # low: lt_last_lost
    return head + " " + " ".join(f"{w:x}" for w in (w2, w4, w7, w9))


def test_the_words_unpack_as_struct_bbr():
    # pacing_gain 320 (1.25), cwnd_gain 512, full_bw_reached, full_bw_cnt 3, cycle_idx 5
    gain_word = 320 | (512 << 10) | (1 << 20) | (3 << 21) | (5 << 23)
    lines = [
        "Attaching 1 probe...",
        _line(1000, "ffa", 10, 1 << 23, 40, 2, gain_word),  # bw 0.5 packets/us
        _line(2000, "ffb", 5, 0, 1, 0, 739),
        _line(3000, "ffa", 22, 1 << 24, 41, 2, gain_word),
    ]
    rows = bbr_trace.parse(lines)
    assert [r["delivered_packets"] for r in rows] == [10, 22]  # socket ffa delivered more
    r = rows[0]
    assert r["bw_estimate_packets_per_us"] == 0.5 and r["rounds"] == 40
    assert r["bbr_mode"] == "probe_bw" and r["pacing_gain"] == 1.25
    assert r["full_bw_reached"] and r["cycle_idx"] == 5
    assert (r["unsent_bytes"], r["cwnd_packets"]) == (456, 120)


def test_no_rows_is_an_error():
    with pytest.raises(RuntimeError, match="no rows"):
        bbr_trace.parse(["Attaching 1 probe..."])
