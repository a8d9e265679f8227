"""Scripts of ``scripts/`` on which the simulator disagrees with Linux.

Each script states what Linux does (checked with packetdrill on a Linux
6.18 kernel, HZ=250, see the script's header).  Where the simulator does
something else and its rules are not to change here, the script stays,
failing, and is listed with the cause: the test suite asserts that it
still fails (so a fix shows up), and the command line does not count it
as a failure on the profile the scripts are written for.

>>> sorted(KNOWN_DISAGREEMENTS)
['window_edge_ack.pkt']
"""

from __future__ import annotations

__all__ = ["KNOWN_DISAGREEMENTS", "REFERENCE_PROFILE"]

#: The profile the scripts describe (today's Linux).
REFERENCE_PROFILE = "linux-6"

#: Script file name -> why the simulator fails it.
KNOWN_DISAGREEMENTS: dict[str, str] = {
    "window_edge_ack.pkt": (
        "the receive window's test is left out of linux-6: its ACK rule ACKs as soon as more than "
        "one rcv_mss is unacknowledged, as if __tcp_select_window() >= rcv_wnd always held, where "
        "Linux 6.18 finds the window would shrink and waits for the application's read "
        "(tcp_cleanup_rbuf).  The test is modelled (models/sim/rules/rwnd.py) and the profile "
        "linux-6-rwnd passes this script; linux-6 leaves it out because the field sweep fits "
        "worse with it (chapter 9)"
    ),
}
