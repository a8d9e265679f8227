"""The receive window a Linux receiver advertises, as far as it decides
when an ACK leaves.

``__tcp_ack_snd_check`` ACKs at once when more than one ``rcv_mss`` is
unacknowledged only if the window it would advertise now is at least the
one it last advertised (``__tcp_select_window() >= rcv_wnd``): data the
application has not read yet shrink the free space, and then the ACK
waits for the read (``tcp_cleanup_rbuf``), a delayed-ACK timer or a
segment going the other way.  :class:`ReceiveSpace` keeps what that test
needs:

* ``buf``: the receive buffer, bytes of memory (``sk_rcvbuf``):
  ``tcp_rmem[1]``;
* ``ratio``: window bytes per 256 bytes of memory (``scaling_ratio``),
  at first 128;  the window the buffer allows is
  ``full = buf * ratio / 256`` (``tcp_full_space``);
* ``clamp``: ``window_clamp``, at most ``full``; or the application's
  ``TCP_WINDOW_CLAMP`` (then fixed);
* ``ssthresh``: ``rcv_ssthresh``, the most the window may offer;
* ``wnd``: ``rcv_wnd``, the window in the last segment sent.

Rules (``net/ipv4/tcp_output.c``, ``net/ipv4/tcp_input.c``):

* ``tcp_select_initial_window``: ``wnd = ssthresh = min(full, clamp)``
  rounded down to a whole number of MSS; then ``tcp_init_buffer_space``
  reserves a segment (``tcp_app_win``): ``clamp = max(2 advmss, full -
  advmss)`` and ``ssthresh`` at most ``clamp``.
* ``tcp_measure_rcv_mss``: when the first segment of a new, larger
  ``rcv_mss`` arrives, ``ratio`` becomes its length over its memory
  (``truesize``: the length plus a fixed overhead) and ``clamp`` follows
  ``full`` (``ssthresh`` at most ``clamp``).
* ``__tcp_select_window``: free space = ``full`` less the unread
  memory's share (``ratio`` of it: ``tcp_space``); under half of
  ``min(full, clamp)`` it is rounded down to the window scale and is 0
  below ``full/16`` or below
  ``rcv_mss``; then at most ``ssthresh``, rounded up to the window scale
  (``ALIGN``).
* ``tcp_select_window`` (every segment sent): the new window, or what is
  left of the old one if that is larger (a window never shrinks).
* ``tcp_grow_window`` (data of 128 bytes or more): while
  ``min(clamp, free space)`` exceeds ``ssthresh``, raise ``ssthresh`` by
  ``max(2 advmss, 2 len)`` (at most the room) and enter quick-ACK mode
  (``quick |= 1``).
* Unread memory (``sk_rmem_alloc``): each packet's length plus its
  overhead, unless the queue merged it into the packet before it
  (``tcp_try_coalesce``).  ``skb_try_coalesce`` refuses to merge into a
  packet whose data the sender still shares (``skb_cloned``): on the
  loopback and a veth pair the receiver gets the sender's clone, shared
  until the sender frees its copy on the ACK.  So the packets of a
  response, unread and not yet acknowledged, each keep their overhead.

Simplified:

* Every unread packet keeps its overhead, also one that arrived after
  its predecessor was acknowledged, which the kernel may merge.
* ``ssthresh`` grows toward the free space that the arriving packet
  alone leaves, not the free space at that moment.  Over a run of
  thousands of responses some packet of each kind arrives when all
  before it has been read, and the threshold keeps that high-water
  mark; the model takes the mark instead of replaying the history.  (On
  the fifth machine, 2026-12-01, Flory's responses behind a Nagle server
  on a veth pair at MTU 1500: after its first few hundred 1448-byte
  responses the kernel's client ACKs each response's full segment at its
  read, not on arrival (``data/captures/veth1500_flory_nagle_1448.pcap``);
  the model does so only with the mark: with the free space at each
  arrival its threshold stops where the descriptor and the full segment
  leave it, and the ACK leaves at once.  ``ss`` on a 1449-byte run under
  reno gave the client's ``rcv_ssthresh`` as 958071 bytes against an
  advertised window of 958464, the threshold rounded up to the window
  scale.  With 1449-byte responses the kernel's client ACKs on arrival
  throughout (``..._1449.pcap``), where the model waits for the read.
  ``ss`` read every 20 ms through 1.5-s runs at 11:33 UTC, two each
  under bbr and reno, points at the rounding: the autotuned buffer and
  the threshold settle at the same values every run, 1514053 and 956668
  bytes at 1448 bytes, 1516319 and 958102 at 1449, the threshold 252
  bytes above a 1024-byte window unit at 1448 and 662 above one at
  1449: a drop in free space between the two, about what the unread
  descriptor's packet takes, rounds the window down a unit at 1448 and
  not at 1449 (an inference: ``ss`` does not show the free space).  The
  model's buffer settles elsewhere, with autotuning or without (its
  window ratio and first receive RTT are not the kernel's:
  ``models.validation.rcvbuf`` holds it within a factor of two), so
  where its free space falls within a unit is its own arithmetic: it
  cannot tell the two apart.)
* Without ``buf_max_bytes`` the buffer keeps its first size.  With it
  (``tcp_rmem[2]``, ``tcp_moderate_rcvbuf`` on) it grows as Linux 6.18's
  does (below), which needs a receive RTT: the model takes the
  window-dependent estimate alone.  Linux also samples the RTT from the
  echoed timestamps, in whole milliseconds of its timestamp clock; on
  the paths here a response answers its request within the same
  millisecond and gives no sample most of the time, and a larger sample
  only nudges a smaller estimate up (the estimate keeps its minimum).
* The read calls ``tcp_rcv_space_adjust`` once, after it took
  everything queued; Linux calls it after each packet it copies.

Autotuning (``net/ipv4/tcp_input.c``, 6.18: ``tcp_rcv_rtt_measure``,
``tcp_rcv_rtt_update``, ``tcp_rcv_space_adjust``, ``tcp_rcvbuf_grow``):

* ``tcp_init_buffer_space``: ``space = min(ssthresh, wnd, 10 advmss)``
  (``TCP_INIT_CWND``), measured from the connection's start.
* Each data packet (``tcp_event_data_recv``): the first starts a
  measurement that ends when ``rcv_nxt`` has passed one advertised
  window further; its length in time is a sample of the receive RTT,
  and a sample below the estimate (or the first) replaces it; the next
  measurement starts there.
* Each read, once an RTT has passed since the last measurement: the
  bytes read since then, less those still queued, are ``copied``; if
  more than ``space``, ``tcp_rcvbuf_grow``: ``rcvwin = 2 copied + 4
  copied (copied - space) / space`` ("DRS is always one RTT late", then
  room for a sender in slow start to double), the buffer grows to
  ``rcvwin`` bytes of window (``tcp_space_from_win``, at most
  ``tcp_rmem[2]``), the clamp follows it, and ``space = copied``.  A new
  measurement starts at every such read.  So the first read an RTT into
  a fast run, with tens of kilobytes read against ``space``'s 14480,
  lifts the buffer to megabytes at once (the fifth machine, 2026-12-01,
  ``data/kernel6_machine5_rcvbuf_ss.csv``: an iSCSI client at QD 1 with
  ``TCP_NODELAY`` read 63936 bytes in its first receive RTT, and at the
  first ``ss`` reading its buffer stood at 2002712 bytes, what this rule
  gives for them to the byte), where a stalled run never reads more
  than ``space`` in an RTT and keeps ``tcp_rmem[1]``.

>>> class Rcv:
...     advmss, rcv_nxt, copied_seq = 1448, 1, 1
>>> rs = ReceiveSpace(Rcv(), buf_bytes=131072, overhead_bytes=896)
>>> rs.full, rs.clamp, rs.ssthresh, rs.wnd  # 45 segments of 1448, one reserved
(65536, 64088, 64088, 65160)
>>> Rcv.rcv_nxt += 2 * 1448  # two full segments, not read
>>> rs.packets = 2
>>> rs.window(rcv_mss=1448), rs.grows(rcv_mss=1448)
(63232, False)
>>> rs.measured(4144)  # a veth super-packet: 210 window bytes per 256
>>> rs.ratio, rs.full, rs.received(2 * 1448), rs.ssthresh
(210, 107520, True, 69880)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Hashable

    from models.sim.fastforward import Shift, View

__all__ = [
    "ReceiveSpace",
    "GROW_MIN_BYTES",
    "RATIO_ONE",
    "INIT_CWND",
    "window_scale",
]

#: ``tcp_event_data_recv`` grows the window only for data of this many
#: bytes or more (``skb->len >= 128``).
GROW_MIN_BYTES = 128
#: ``scaling_ratio`` is in 256ths (``TCP_RMEM_TO_WIN_SCALE`` = 8); a new
#: socket starts at half (``TCP_DEFAULT_SCALING_RATIO``).
RATIO_ONE = 256
#: ``TCP_INIT_CWND``: the first ``rcvq_space.space`` is at most this many
#: ``advmss`` (``tcp_init_buffer_space``).
INIT_CWND = 10
#: Femtoseconds per microsecond: the kernel's receive RTT and its
#: measurements are whole microseconds (``tcp_stamp_us_delta``).
_FS_PER_US = 10**9


def window_scale(space_bytes: int) -> int:
    """``tcp_select_initial_window``'s window scale for a socket whose
    buffer may reach ``space_bytes`` (``max(tcp_rmem[2], rmem_max)``):
    ``ilog2(space) - 15``, from 0 to 14 (``TCP_MAX_WSCALE``).

    >>> window_scale(6 * 2**20), window_scale(32 * 2**20), window_scale(65535)
    (7, 10, 0)
    """
    if not (isinstance(space_bytes, int) and space_bytes >= 1):
        raise ValueError(
            "space_bytes must be a whole number of bytes >= 1, "
            f"got {space_bytes!r}"
        )
    return min(14, max(0, space_bytes.bit_length() - 1 - 15))


class ReceiveSpace:
    """The receive window of one receiver (see the module's rules).

    ``receiver`` has ``advmss``, ``rcv_nxt`` and ``copied_seq``;
    ``buf_bytes`` is the receive buffer (``tcp_rmem[1]``, bytes),
    ``overhead_bytes`` the memory a received packet takes beyond its
    payload (bytes), ``clamp_bytes`` the application's
    ``TCP_WINDOW_CLAMP`` (bytes; ``None``: none), ``wscale`` the
    receiver's window scale (windows are multiples of ``2**wscale``),
    ``buf_max_bytes`` the most autotuning may grow the buffer to
    (``tcp_rmem[2]``, bytes; ``None``: no autotuning, the buffer keeps
    ``buf_bytes``).  Autotuning stops where the application fixes the
    window (``clamp_bytes``), as ``SO_RCVBUF`` would stop it.
    """

    __slots__ = (
        "rcv",
        "advmss",
        "buf",
        "overhead",
        "ratio",
        "full",
        "clamp",
        "fixed",
        "unit",
        "ssthresh",
        "wnd",
        "packets",
        "cap",
        "space",
        "space_seq",
        "space_time",
        "rtt",
        "rtt_seq",
        "rtt_time",
    )

    def __init__(
        self,
        receiver,
        buf_bytes: int,
        overhead_bytes: int,
        clamp_bytes: int | None = None,
        wscale: int = 7,
        buf_max_bytes: int | None = None,
    ) -> None:
        if buf_bytes < 1:
            raise ValueError(f"buf_bytes must be at least 1, got {buf_bytes}")
        if overhead_bytes < 0:
            raise ValueError(
                f"overhead_bytes must be 0 or more, got {overhead_bytes}"
            )
        if clamp_bytes is not None and clamp_bytes < 1:
            raise ValueError(
                f"clamp_bytes must be at least 1 (or None), got {clamp_bytes}"
            )
        if buf_max_bytes is not None and buf_max_bytes < buf_bytes:
            raise ValueError(
                f"buf_max_bytes must be at least buf_bytes ({buf_bytes}) "
                f"or None, got {buf_max_bytes}"
            )
        self.rcv = receiver
        advmss = self.advmss = receiver.advmss
        self.buf = buf_bytes
        self.overhead = overhead_bytes
        self.unit = 1 << wscale
        self.ratio = RATIO_ONE >> 1
        full = self.full = buf_bytes * self.ratio // RATIO_ONE
        self.fixed = clamp_bytes is not None
        clamp = clamp_bytes if clamp_bytes is not None else full
        # tcp_select_initial_window: a whole number of MSS
        wnd = min(full, clamp)
        if wnd > advmss:
            wnd -= wnd % advmss
        self.wnd = wnd
        # tcp_init_buffer_space: a segment reserved (tcp_app_win)
        if clamp > 2 * advmss and clamp + advmss > full:
            clamp = max(2 * advmss, full - advmss)
        self.clamp = clamp
        self.ssthresh = min(wnd, clamp)
        self.packets = 0  # unread packets, each with its overhead
        # autotuning (tcp_init_buffer_space); None: the buffer stays
        self.cap = None if clamp_bytes is not None else buf_max_bytes
        self.space = min(self.ssthresh, wnd, INIT_CWND * advmss)  # bytes
        self.space_seq = receiver.copied_seq  # where the measurement began
        self.space_time = 0  # fs: the connection's start
        self.rtt = 0  # fs, whole microseconds; 0: no sample yet
        self.rtt_seq = 0  # rcv_nxt that ends the RTT measurement
        self.rtt_time = -1  # fs: when it began; -1: none running

    @classmethod
    def of(cls, receiver, profile) -> ReceiveSpace | None:
        """The window of a kernel profile's receiver (``rcv_buf_bytes``
        and the rest, :class:`~models.sim.kernels.KernelProfile`), or
        ``None`` if the profile leaves the window test out."""
        buf = getattr(profile, "rcv_buf_bytes", None)
        if buf is None:
            return None
        return cls(
            receiver,
            buf,
            profile.rcv_overhead_bytes,
            profile.rcv_window_clamp_bytes,
            profile.rcv_wscale,
            getattr(profile, "rcv_buf_max_bytes", None),
        )

    def _free(self) -> int:
        """``tcp_space``: the window the buffer has left (bytes)."""
        rcv = self.rcv
        unread = rcv.rcv_nxt - rcv.copied_seq
        if not unread:
            return self.full
        used = unread + self.packets * self.overhead  # sk_rmem_alloc, bytes
        return self.full - used * self.ratio // RATIO_ONE

    def window(self, rcv_mss: int) -> int:
        """``__tcp_select_window``: the window to advertise now (bytes)."""
        full = self.full
        most = self.clamp if self.clamp < full else full  # full_space
        free = self._free()
        unit = self.unit
        if free < (most >> 1):
            free -= free % unit if free > 0 else free
            if free < (full >> 4) or free < min(rcv_mss, most):
                return 0
        if free > self.ssthresh:
            free = self.ssthresh
        return -(-free // unit) * unit  # ALIGN up

    def grows(self, rcv_mss: int) -> bool:
        """The window test of ``__tcp_ack_snd_check``: the window now is
        at least the one last advertised."""
        return self.window(rcv_mss) >= self.wnd

    def advertise(self, rcv_wup: int, rcv_mss: int) -> None:
        """``tcp_select_window`` for a segment leaving now; ``rcv_wup`` is
        ``rcv_nxt`` when the previous one left."""
        left = rcv_wup + self.wnd - self.rcv.rcv_nxt  # tcp_receive_window
        new = self.window(rcv_mss)
        if new < left:
            unit = self.unit
            new = -(-left // unit) * unit
        self.wnd = new

    def measured(self, length: int) -> None:
        """``tcp_measure_rcv_mss``: ``length`` bytes arrived in one packet
        that set a new ``rcv_mss``; the ratio follows its memory."""
        ratio = length * RATIO_ONE // (length + self.overhead)
        self.ratio = ratio if ratio else 1
        self.full = self.buf * self.ratio // RATIO_ONE
        if not self.fixed:  # window_clamp follows the buffer
            self.clamp = self.full
            if self.ssthresh > self.clamp:
                self.ssthresh = self.clamp

    def received(self, length: int) -> bool:
        """A packet of ``length`` bytes just queued (``rcv_nxt`` past it):
        counted among the unread packets, then ``tcp_grow_window``; whether
        ``ssthresh`` grew (the caller then enters quick-ACK mode)."""
        rcv = self.rcv
        if rcv.copied_seq + length == rcv.rcv_nxt:  # all before it read
            self.packets = 1
        else:
            self.packets += 1
        if length < GROW_MIN_BYTES:
            return False
        # the free space this packet alone leaves (the high-water mark)
        free = self.full - (length + self.overhead) * self.ratio // RATIO_ONE
        room = (self.clamp if self.clamp < free else free) - self.ssthresh
        if room <= 0:
            return False
        incr = max(2 * self.advmss, 2 * length)
        self.ssthresh += incr if incr < room else room
        return True

    def arrived(self, now: int) -> None:
        """``tcp_rcv_rtt_measure``: data arrived at ``now`` (fs), ``rcv_nxt``
        already past it.  Only with autotuning."""
        rcv_nxt = self.rcv.rcv_nxt
        if self.rtt_time >= 0:
            if rcv_nxt < self.rtt_seq:
                return
            # tcp_stamp_us_delta: whole microseconds, at least 1
            sample = max(1, (now - self.rtt_time) // _FS_PER_US) * _FS_PER_US
            if not self.rtt or sample < self.rtt:  # win_dep: the minimum
                self.rtt = sample
        self.rtt_seq = rcv_nxt + self.wnd
        self.rtt_time = now

    def read(self, now: int) -> None:
        """``tcp_rcv_space_adjust``: the application has just read
        everything queued, at ``now`` (fs).  Only with autotuning."""
        if not self.rtt or now - self.space_time < self.rtt:
            return
        rcv = self.rcv
        copied = (
            rcv.copied_seq - self.space_seq - (rcv.rcv_nxt - rcv.copied_seq)
        )
        if copied > self.space:
            self._grow(copied)
        self.space_seq = rcv.copied_seq
        self.space_time = now

    def _grow(self, copied: int) -> None:
        """``tcp_rcvbuf_grow``: ``copied`` bytes were read in the last
        receive RTT, more than ever before."""
        old, self.space = self.space, copied
        rcvwin = copied << 1  # DRS is always one RTT late
        rcvwin += (
            rcvwin * (copied - old) // old
        ) << 1  # slow start's doubling
        rcvwin &= 0xFFFFFFFF  # u32
        buf = (rcvwin * RATIO_ONE) // self.ratio  # tcp_space_from_win
        if buf > self.cap:
            buf = self.cap
        if buf > self.buf:
            self.buf = buf
            self.full = full = buf * self.ratio // RATIO_ONE
            self.clamp = full  # tcp_win_from_space: the clamp follows

    # -- the fast-forward's view (models.sim.fastforward) -------------------

    #: ``full`` follows from ``buf`` and ``ratio`` (a cache of their product).
    cycle_transient = ("full",)

    def cycle_state(self, view: View) -> Hashable:
        """Its ratio, window sizes (bytes, not positions in the stream) and
        unread packets; with autotuning also the buffer, ``space``, the
        receive RTT and both measurements (where each began; a measurement
        older than an RTT compares the same at any age: the next read
        ends it whatever its age), until the buffer reaches its cap.
        Before that a run seldom repeats exactly within its length: the
        RTT measurement spans a window, megabytes once grown, and ends at
        a different place in the pattern each time, so such runs go event
        by event."""
        window = self.ratio, self.clamp, self.ssthresh, self.wnd, self.packets
        if self.cap is None:
            return window
        if (
            self.buf >= self.cap
        ):  # it cannot grow: the measurements change nothing
            return window, self.buf
        age = view.now - self.space_time
        rtt = self.rtt
        running = self.rtt_time >= 0
        return (
            window,
            self.buf,
            self.space,
            rtt,
            view.seq(self.space_seq),
            "due" if rtt and age >= rtt else age,
            view.seq(self.rtt_seq) if running else None,
            view.time(self.rtt_time) if running else None,
        )

    def cycle_shift(self, shift: Shift) -> None:
        """Nothing moves without autotuning; with it, the measurements'
        starts move with time and the stream."""
        if self.cap is None:
            return
        d = shift.seq()
        self.space_seq += d
        self.space_time += shift.dt
        if self.rtt_time >= 0:
            self.rtt_seq += d
            self.rtt_time += shift.dt
