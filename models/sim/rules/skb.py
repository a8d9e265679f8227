"""The sizes of a Linux packet buffer (``struct sk_buff``) that rules
need: its memory (``truesize``), which sets a receiver's window per byte
(:mod:`models.sim.rules.rwnd`), and the room kept for headers, which
bounds a GSO super-packet (:mod:`models.sim.rules.bbr_model`, the packetdrill
runner's tun).  Values for x86-64 (``include/linux/skbuff.h``,
``include/net/tcp.h``).

>>> skb_truesize(MAX_TCP_HEADER_BYTES), GSO_GOAL_BYTES
(896, 65215)
"""

from __future__ import annotations

__all__ = [
    "SKB_STRUCT_BYTES",
    "SKB_SHINFO_BYTES",
    "MAX_TCP_HEADER_BYTES",
    "GSO_GOAL_BYTES",
    "SENDMSG_OVERHEAD_BYTES",
    "skb_truesize",
]

#: The ``sk_buff`` (``SKB_DATA_ALIGN(sizeof(struct sk_buff))``), bytes.
SKB_STRUCT_BYTES = 256
#: The shared info (``SKB_DATA_ALIGN(sizeof(struct skb_shared_info))``),
#: bytes.
SKB_SHINFO_BYTES = 320
#: The room kept for every header below TCP's (``MAX_TCP_HEADER``), bytes.
MAX_TCP_HEADER_BYTES = 320
#: The size of the largest GSO super-packet TCP builds (bytes), which is
#: ``GSO_LEGACY_MAX_SIZE`` (65536) less one and ``MAX_TCP_HEADER``
#: (``tcp_tso_autosize``, ``tcp_xmit_size_goal``).
GSO_GOAL_BYTES = 65536 - 1 - MAX_TCP_HEADER_BYTES


def skb_truesize(data_bytes: int) -> int:
    """``SKB_TRUESIZE``: the memory of an skb whose head holds
    ``data_bytes`` (bytes), with its shared info and the ``sk_buff``."""
    return data_bytes + SKB_STRUCT_BYTES + SKB_SHINFO_BYTES


#: The memory beyond its payload (bytes) of a packet that ``tcp_sendmsg``
#: built and the loopback or a veth pair hands over whole, which is the
#: small head of ``tcp_stream_alloc_skb`` (``MAX_TCP_HEADER`` of data);
#: the payload, in page fragments, counts by its length.
SENDMSG_OVERHEAD_BYTES = skb_truesize(MAX_TCP_HEADER_BYTES)
