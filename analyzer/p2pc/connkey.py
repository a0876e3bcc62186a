"""Which connection a frame belongs to, for the splitter (shard.py): the same key for both
directions of a TCP or UDP connection, the address pair for other IP.

dpkt decodes the link layer (Ethernet with 802.1Q/QinQ tags and MPLS, Linux cooked v1 and v2,
BSD loopback, raw IP) and the IPv4/IPv6 headers (IPv6 extension headers; the transport of
fragments past the first is not read).  Of TCP and UDP only the two port fields their headers
begin with are decoded: two dpkt classes of our own, put into dpkt's protocol tables by
subclassing (dpkt's own tables stay as they are), so the rest of each segment costs nothing.
"""
from __future__ import annotations

import struct

import dpkt


class _TCPPorts(dpkt.Packet):
    """The start of a TCP header: the source and destination ports."""
    __hdr__ = (("sport", "H", 0), ("dport", "H", 0))


class _UDPPorts(dpkt.Packet):
    """The start of a UDP header: the source and destination ports."""
    __hdr__ = (("sport", "H", 0), ("dport", "H", 0))


_PORTS = {dpkt.ip.IP_PROTO_TCP: _TCPPorts, dpkt.ip.IP_PROTO_UDP: _UDPPorts}


class _IP(dpkt.ip.IP):
    _protosw = _PORTS


class _IP6(dpkt.ip6.IP6):
    _protosw = _PORTS


class _Ethernet(dpkt.ethernet.Ethernet):
    _typesw = dict(dpkt.ethernet.Ethernet._typesw)


_Ethernet._typesw.update({dpkt.ethernet.ETH_TYPE_IP: _IP, dpkt.ethernet.ETH_TYPE_IP6: _IP6,
                          dpkt.ethernet.ETH_TYPE_TEB: _Ethernet})      # MPLS pseudowire


class _SLL(dpkt.sll.SLL):
    _typesw = _Ethernet._typesw


class _SLL2(dpkt.sll2.SLL2):
    _typesw = _Ethernet._typesw


_IP_OVER_ETHERNET = {struct.pack("!H", dpkt.ethernet.ETH_TYPE_IP): _IP,
                     struct.pack("!H", dpkt.ethernet.ETH_TYPE_IP6): _IP6}


def _ethernet_key(frame: bytes) -> bytes | None:
    # Most frames are Ethernet II carrying IP straight away (the type field, bytes 12-13, says
    # so): the IP header is decoded without an Ethernet object; tags, MPLS and the rest go
    # through dpkt's Ethernet.
    ip = _IP_OVER_ETHERNET.get(frame[12:14])
    return connection_key(ip(frame[14:]) if ip else _Ethernet(frame).data)


def frame_key(linktype: int):
    """A function frame bytes -> its connection_key(), for one link type (None when the link
    type is not one dpkt decodes)."""
    if linktype == 1:                       # Ethernet
        return _ethernet_key
    if linktype == 113:                     # Linux cooked capture
        return lambda b: connection_key(_SLL(b).data)
    if linktype == 276:                     # Linux cooked capture v2
        return lambda b: connection_key(_SLL2(b).data)
    if linktype in (0, 108):                # BSD loopback / OpenBSD loop (dpkt decodes it all)
        return lambda b: connection_key(dpkt.loopback.Loopback(b).data)
    if linktype in (12, 14, 101, 228, 229):  # raw IP
        return lambda b: connection_key(_IP(b) if b and b[0] >> 4 == 4 else _IP6(b))
    return None


_TRANSPORT = {_TCPPorts: b"T", dpkt.tcp.TCP: b"T", _UDPPorts: b"U", dpkt.udp.UDP: b"U"}
_PORT = struct.Struct("!H")


def connection_key(net) -> bytes | None:
    """The same bytes for both directions of a connection: the sorted (address, port) ends."""
    if not isinstance(net, (dpkt.ip.IP, dpkt.ip6.IP6)):
        return None
    l4 = net.data
    proto = _TRANSPORT.get(type(l4))
    if proto:
        a, b = net.src + _PORT.pack(l4.sport), net.dst + _PORT.pack(l4.dport)
    else:   # other IP, and fragments past the first: by address pair
        a, b, proto = net.src, net.dst, b"I"
    return proto + (a + b if a <= b else b + a)
