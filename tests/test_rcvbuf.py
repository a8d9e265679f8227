"""The receive buffer's autotuning against the kernel's, read with ss on the fifth machine
(models.validation.rcvbuf): every row a test, and the check fails for the rules it should."""

from __future__ import annotations

import functools

import pytest

from models.sim.rules.rwnd import ReceiveSpace
from models.validation import rcvbuf as RB


@functools.cache
def _comparison(kernel: str | None = None) -> RB.Comparison:
    return RB.compare(kernel)


def test_every_buffer_grows_as_the_kernels_and_settles_within_the_factor():
    c = _comparison()
    t = c.table
    assert c.kernel == "linux-6.18-rwnd"  # the machine's tcp_rmem are 6.18's defaults
    assert len(t) == 2 * len(RB.CONFIGS) and set(t.role) == {"test"}
    assert t.grew_right.all() and t.within.all(), t
    # the stalled run keeps tcp_rmem[1] on both sides, the others grow to megabytes
    stalled = t[t.qd.eq(1) & t.sock_mode.eq("nagle")]
    assert (stalled.kernel_last == 131072).all() and (stalled.model == 131072).all()
    assert (t.drop(stalled.index).kernel_last > 10 * 131072).all()


def test_without_autotuning_the_fast_runs_fail():
    """Wrong model: linux-6-rwnd keeps tcp_rmem[1]."""
    t = _comparison("linux-6-rwnd").table
    assert not t.grew_right.all() and not t.within.all()
    assert t[t.kernel_last > 131072].within.sum() == 0


def test_linux_616s_rule_stops_short(monkeypatch):
    """Wrong model: 6.16's tcp_rcvbuf_grow (twice the bytes read, no room for slow start) gives
    the fast clients a buffer several times too small."""

    def grow_616(self, copied: int) -> None:
        self.space = copied
        buf = min((copied << 1) * 256 // self.ratio, self.cap)
        if buf > self.buf:
            self.buf = buf
            self.full = self.clamp = buf * self.ratio // 256

    monkeypatch.setattr(ReceiveSpace, "_grow", grow_616)
    t = RB.compare().table
    fast = t[(t.side == "client") & (t.kernel_last > 131072)]
    assert len(fast) == 4 and (fast.ratio < 1 / RB.FACTOR).all(), fast


@pytest.fixture
def own_profiles():
    """Profiles registered in the test are gone after it (other tests list the built-in ones)."""
    from models.sim.kernels import PROFILES

    before = set(PROFILES)
    yield
    for name in set(PROFILES) - before:
        del PROFILES[name]


def test_a_machine_with_other_sysctls_gets_its_own_profile(own_profiles):
    from models.sim.kernels import PROFILES

    name = RB.machine_kernel(
        {"net.ipv4.tcp_rmem": "4096 87380 6291456", "net.core.rmem_max": "16777216"}
    )
    p = PROFILES[name]
    assert (p.rcv_buf_bytes, p.rcv_buf_max_bytes, p.rcv_wscale) == (87380, 6291456, 9)
    with pytest.raises(ValueError, match="rcv_buf_max_bytes"):
        RB.machine_kernel({"net.ipv4.tcp_rmem": "4096 131072 65536"})


def test_the_growth_rule_gives_the_kernels_buffer_from_its_own_rcv_space():
    """The QD-1 NODELAY client's first reading: rcv_space (the bytes read in its first receive
    RTT) and the buffer they grew it to, at a window ratio still 128 (its 560-byte packets never
    set one).  tcp_rcvbuf_grow from rcv_space gives that buffer to the byte in every repeat.
    Wrong model: 6.16's rule (twice the bytes) gives a seventh of it."""
    from models import data

    t = data.load(RB.DATASET)
    rows = t[t.side.eq("client") & t.sock_mode.eq("nodelay") & t.qd.eq(1)]
    assert len(rows) == 3
    for space, rb in zip(rows.rcv_space_first, rows.rb_first):

        class Rcv:
            advmss, rcv_nxt, copied_seq = 1448, 1, 1

        rs = ReceiveSpace(Rcv(), buf_bytes=131072, overhead_bytes=0, buf_max_bytes=2**25)
        assert rs.ratio == 128 and rs.space == 14480
        rs._grow(int(space))
        assert rs.buf == rb
        assert (int(space) << 1) * 256 // rs.ratio < rb / 7  # 6.16's
