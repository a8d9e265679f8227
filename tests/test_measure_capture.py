"""pcap parsing (dpkt) and capture analysis, on two small captures committed under tests/data/.

The captures were taken with ``python -m models.measure run --link veth --mtu 1500 --proto flory --iosize N
--count 4 --warmup 0 --capture --pcap ...`` (kernel 6.18, HZ=250): Flory's exchange with N = 1447 (one byte
short of the 1448-byte MSS: the payload waits for the client's delayed ACK) and N = 1448 (a full segment:
no wait).
"""

from pathlib import Path

import pytest

from models.measure.capture import Segment, analyze, read_pcap, summarise_spreads

DATA = Path(__file__).parent / "data"
STALL = DATA / "measure_flory_veth1500_n1447.pcap"
NO_STALL = DATA / "measure_flory_veth1500_n1448.pcap"


def _port(segs: list[Segment]) -> int:
    syn = next(
        s for s in segs if s.syn and not (s.flags & 0x10)
    )  # SYN without ACK: client -> server
    return syn.dport


@pytest.mark.parametrize("path, n", [(STALL, 1447), (NO_STALL, 1448)])
def test_read_pcap_fields(path: Path, n: int) -> None:
    segs = read_pcap(path)
    assert segs, "capture should hold segments"
    port = _port(segs)
    assert all(port in (s.sport, s.dport) for s in segs)
    times = [s.time_s for s in segs]
    assert times == sorted(times)
    # 4 exchanges: the server's data segments carry 4 descriptors of 8 bytes and 4 payloads of n bytes
    server_payloads = [s.payload_bytes for s in segs if s.sport == port and s.payload_bytes]
    assert sorted(server_payloads) == sorted([8] * 4 + [n] * 4)
    # the client's 4 requests of 8 bytes
    assert [s.payload_bytes for s in segs if s.dport == port and s.payload_bytes] == [8] * 4
    # handshake and close are there once each way
    assert sum(s.syn for s in segs) == 2 and sum(s.fin for s in segs) == 2


def test_analyze_stall_capture() -> None:
    segs = read_pcap(STALL)
    a = analyze(segs, _port(segs), request_bytes=8, response_bytes=8 + 1447)
    assert a["responses"] == 4 and a["requests"] == 4
    assert a["responses_split"] == 4  # descriptor and payload always in separate segments
    spreads = a["response_spread_us"]
    # the first exchange is answered in quick-ACK mode; the other three wait for the 40 ms delayed-ACK
    # timer (HZ=250: fires 40-48 ms later)
    assert spreads[0] < 1_000
    assert all(38_000 <= x <= 50_000 for x in spreads[1:]), spreads
    assert len(a["gaps_ms"]) == 3
    # each stall ends with a pure ACK from the client
    assert a["client_pure_acks"] >= 3


def test_analyze_no_stall_capture() -> None:
    segs = read_pcap(NO_STALL)
    a = analyze(segs, _port(segs), request_bytes=8, response_bytes=8 + 1448)
    assert a["responses"] == 4
    assert max(a["response_spread_us"]) < 5_000
    assert a["gaps_ms"] == []
    assert summarise_spreads(a["response_spread_us"])["max_us"] == max(a["response_spread_us"])


def test_analyze_ignores_other_ports() -> None:
    segs = read_pcap(STALL)
    a = analyze(segs, server_port=1, request_bytes=8, response_bytes=1455)
    assert a["packets"] == 0 and a["responses"] is None


def test_analyze_rejects_bad_sizes() -> None:
    segs = read_pcap(STALL)
    with pytest.raises(ValueError, match="response_bytes"):
        analyze(segs, _port(segs), request_bytes=8, response_bytes=0)


def test_read_pcap_rejects_non_pcap(tmp_path: Path) -> None:
    bad = tmp_path / "not.pcap"
    bad.write_bytes(b"this is not a capture file at all")
    with pytest.raises(ValueError, match="not a pcap"):
        read_pcap(bad)


def test_summarise_empty() -> None:
    s = summarise_spreads([])
    assert s["median_us"] != s["median_us"]  # NaN
