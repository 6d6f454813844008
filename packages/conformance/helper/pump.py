#!/usr/bin/env python3
"""Raw packet pump for the netsim kernel conformance suite (standard library only).

Reads one JSON request on stdin, writes one JSON answer on stdout. For each step it sends one
packet into the lab's namespaces, then a sentinel frame behind it on the same path, and returns
every frame the capture socket in the node namespace saw up to that sentinel. The kernel handles
a CPU's backlog in order, so once the sentinel has been seen the node has finished with the
packet: no sleeping, no guessing.

Request:
  {"node": "/run/netns/<node>",                 # capture here (one ETH_P_ALL socket, every iface)
   "udpPorts": [53, ...],                        # bound in the node so local UDP gets no ICMP reply
   "timeoutMs": 5000,
   "steps": [
     {"kind": "l2", "netns": "/run/netns/<peer>", "iface": "eth0", "frame": "<hex>"},
     {"kind": "l3", "dst": "192.0.2.2", "packet": "<hex>", "mark": 0, "sentinelIface": "eth0"}
   ]}
  l2: an Ethernet frame sent by an AF_PACKET socket on a peer's veth end (enters the node).
  l3: an IPv4 packet sent from the node itself by an IPPROTO_RAW socket (header included), so
      it traverses OUTPUT and POSTROUTING like locally generated traffic.
Answer:
  {"steps": [{"frames": [{"ifname": "eth0", "pkttype": 4, "hex": "..."}, ...], "delivered": 0}],
   "stray": [...]}
  pkttype is the AF_PACKET packet type (0 host, 1 broadcast, 3 otherhost, 4 outgoing);
  delivered is how much the node's Ip InDelivers counter grew (packets handed to a local protocol);
  sendError is the errno name when an l3 send failed (EPERM: netfilter dropped it on the way out).
"""
import ctypes
import errno
import json
import os
import select
import socket
import struct
import sys

CLONE_NEWNET = 0x40000000
ETH_P_ALL = 0x0003
SENTINEL_ETHERTYPE = 0x88B5  # IEEE 802 local experimental: no protocol handler, netfilter never sees it
SO_MARK = 36

libc = ctypes.CDLL(None, use_errno=True)


def enter(netns_path):
    fd = os.open(netns_path, os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns({netns_path}): {os.strerror(err)}")
    finally:
        os.close(fd)


def sentinel_frame(iface_mac, nonce):
    # Broadcast destination, the sending interface's own source, our ethertype, then the nonce.
    return b"\xff" * 6 + iface_mac + struct.pack("!H", SENTINEL_ETHERTYPE) + nonce + b"\x00" * 32


def is_sentinel(data, nonce):
    return len(data) >= 14 + len(nonce) and data[12:14] == struct.pack("!H", SENTINEL_ETHERTYPE) and data[14:14 + len(nonce)] == nonce


def main():
    req = json.load(sys.stdin)
    timeout_s = req.get("timeoutMs", 5000) / 1000.0
    # One CPU: every packet this process sends is queued on that CPU's backlog, so the sentinel is
    # processed after the packet before it. Without pinning, two sends could land on two CPUs.
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpus[0]})

    enter(req["node"])
    cap = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    cap.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    udp = []
    for port in req.get("udpPorts", []):
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        u.bind(("0.0.0.0", port))
        udp.append(u)
    raw = None
    node_tx = {}
    peer_tx = {}
    for step in req["steps"]:
        if step["kind"] == "l3":
            if raw is None:
                raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
            name = step["sentinelIface"]
            if name not in node_tx:
                s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(SENTINEL_ETHERTYPE))
                s.bind((name, 0))
                node_tx[name] = s
    for step in req["steps"]:
        if step["kind"] == "l2":
            key = (step["netns"], step["iface"])
            if key not in peer_tx:
                enter(step["netns"])
                s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(SENTINEL_ETHERTYPE))
                s.bind((step["iface"], 0))
                peer_tx[key] = s
    # Stay in the node's namespace: /proc/net/snmp below must be the node's.
    enter(req["node"])

    # Anything already queued was sent before the first packet: report it, never mix it in.
    stray = drain(cap)
    answers = []
    for i, step in enumerate(req["steps"]):
        nonce = b"netsim-conformance" + struct.pack("!I", i) + os.urandom(8)
        delivered_before = in_delivers()
        send_error = None
        if step["kind"] == "l2":
            tx = peer_tx[(step["netns"], step["iface"])]
            tx.send(bytes.fromhex(step["frame"]))
            tx.send(sentinel_frame(tx.getsockname()[4], nonce))
        else:
            raw.setsockopt(socket.SOL_SOCKET, SO_MARK, step.get("mark", 0))
            try:
                raw.sendto(bytes.fromhex(step["packet"]), (step["dst"], 0))
            except OSError as e:
                # A DROP in OUTPUT or POSTROUTING fails the send with EPERM: that is an outcome.
                send_error = errno.errorcode.get(e.errno, str(e.errno))
            tx = node_tx[step["sentinelIface"]]
            tx.send(sentinel_frame(tx.getsockname()[4], nonce))
        frames = []
        while True:
            ready, _, _ = select.select([cap], [], [], timeout_s)
            if not ready:
                raise TimeoutError(f"step {i}: the sentinel frame never reached the capture socket within {timeout_s}s")
            data, addr = cap.recvfrom(65536)
            if is_sentinel(data, nonce):
                break
            frames.append({"ifname": addr[0], "pkttype": addr[2], "hex": data.hex()})
        answers.append({"frames": frames, "delivered": in_delivers() - delivered_before, "sendError": send_error})
    json.dump({"steps": answers, "stray": stray}, sys.stdout)


def in_delivers():
    # Ip: InDelivers counts packets the node's IP layer handed to a local protocol (local delivery).
    with open("/proc/net/snmp") as f:
        lines = [l.split() for l in f if l.startswith("Ip:")]
    return int(lines[1][lines[0].index("InDelivers")])


def drain(cap):
    out = []
    cap.setblocking(False)
    try:
        while True:
            data, addr = cap.recvfrom(65536)
            out.append({"ifname": addr[0], "pkttype": addr[2], "hex": data.hex()})
    except BlockingIOError:
        pass
    cap.setblocking(True)
    return out


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # one line on stderr, non-zero exit: the harness reports it
        print(f"pump: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(2)
