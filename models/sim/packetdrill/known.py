"""Scripts of ``scripts/`` on which the simulator disagrees with Linux.

Each script states what Linux does (checked with packetdrill on a Linux
6.18 kernel, HZ=250, see the script's header).  Where the simulator does
something else and its rules are not to change here, the script stays,
failing, and is listed with the cause: the test suite asserts that it
still fails (so a fix shows up), and the command line does not count it
as a failure on the profile the scripts are written for.

>>> sorted(KNOWN_DISAGREEMENTS)
['autocork_large_write.pkt', 'psh_on_full_write.pkt', 'window_edge_ack.pkt']
"""

from __future__ import annotations

__all__ = ["KNOWN_DISAGREEMENTS", "REFERENCE_PROFILE"]

#: The profile the scripts describe (today's Linux).
REFERENCE_PROFILE = "linux-6"

#: Script file name -> why the simulator fails it.
KNOWN_DISAGREEMENTS: dict[str, str] = {
    "psh_on_full_write.pkt": (
        "PSH on a full last segment: the simulator sends a buffer that a write fills to the MSS "
        "from inside the write (the tcp_push_one path) without PSH, while Linux leaves the copy "
        "loop when the data is used up and tcp_push marks that segment PSH "
        "(models/sim/sender.py, Sender.write)"
    ),
    "window_edge_ack.pkt": (
        "no receive window: the simulator's ACK rule ACKs as soon as more than one rcv_mss is "
        "unacknowledged, as if the window test of __tcp_ack_snd_check (__tcp_select_window() >= "
        "rcv_wnd) always held; with default buffers Linux 6.18 finds the window would shrink, so "
        "the ACK waits for the application's read (tcp_cleanup_rbuf) "
        "(models/sim/rules/ack.py, LinuxAck.check)"
    ),
    "autocork_large_write.pkt": (
        "size_goal: the simulator cuts a write into MSS-sized buffers and sends the full ones "
        "inside the call, so the autocork test at the end of the call sees the write's own "
        "segments queued and holds its partial tail; Linux builds one skb of up to size_goal "
        "(many MSS), whose push finds nothing in flight, so the whole write leaves "
        "(models/sim/sender.py, Sender.write; models/sim/rules/cork.py, Autocork.defer)"
    ),
}
