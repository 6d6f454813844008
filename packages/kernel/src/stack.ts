/**
 * A host's TCP/UDP stack as far as connection outcomes need it: listeners answer SYNs, a closed
 * port answers with RST (TCP) or ICMP port unreachable (UDP), a connecting socket completes on a
 * SYN-ACK and fails on a RST or an ICMP error, established sockets acknowledge data. There is no
 * sequence-number or window model: segments are judged by flags and 4-tuple only.
 */
import { formatIpv4, type Ipv4 } from '@netsim/netfilter';
import { TCP_ACK, TCP_FIN, TCP_PSH, TCP_RST, TCP_SYN } from './conntrack.ts';
import { hostSend, icmpErrorTyped, isBroadcastFor, tcpReset, type RunCtx, type SkbCt } from './datapath.ts';
import type { Host } from './host.ts';
import { ICMP_DEST_UNREACH, PROTO_ICMP, PROTO_TCP, PROTO_UDP, icmpName, type Pkt } from './packet.ts';
import type { SockError, TcpSock } from './sockets.ts';

/** `icmp_err_convert`: the errno a socket reports for an ICMP destination-unreachable code. */
const UNREACH_ERRNO: { readonly [code: number]: string } = {
  0: 'ENETUNREACH',
  1: 'EHOSTUNREACH',
  2: 'ENOPROTOOPT',
  3: 'ECONNREFUSED',
  4: 'EMSGSIZE',
  6: 'ENETUNREACH',
  7: 'EHOSTDOWN',
  9: 'ENETUNREACH',
  10: 'EHOSTUNREACH',
  11: 'ENETUNREACH',
  12: 'EHOSTUNREACH',
  13: 'EHOSTUNREACH',
};

/** Something the stack did that a caller (connect, a probe) wants to know about. */
export type StackEvent =
  | { readonly kind: 'accepted'; readonly host: string; readonly sock: TcpSock }
  | { readonly kind: 'syn-received'; readonly host: string; readonly sock: TcpSock }
  | { readonly kind: 'data'; readonly host: string; readonly sock: TcpSock }
  | { readonly kind: 'acked'; readonly host: string; readonly sock: TcpSock }
  | { readonly kind: 'closed'; readonly host: string; readonly sock: TcpSock }
  | { readonly kind: 'udp'; readonly host: string; readonly from: string; readonly to: string; readonly answered: boolean };

function ep(a: number, p: number): string {
  return `${formatIpv4(a)}:${p}`;
}

function segment(host: Host, from: { local: Ipv4; lport: number; remote: Ipv4; rport: number }, flags: number, rc: RunCtx, why: string): Pkt {
  return {
    id: rc.nextPktId(),
    src: from.local,
    dst: from.remote,
    proto: PROTO_TCP,
    sport: from.lport,
    dport: from.rport,
    tcpFlags: flags,
    icmpType: 0,
    icmpCode: 0,
    icmpId: 0,
    mark: 0,
    lengthBytes: flags === (TCP_PSH | TCP_ACK) ? 100 : 40,
    ttl: 64,
    inner: null,
    encap: null,
    origin: { host: host.name, why },
  };
}

function note(host: Host, event: string, detail: string, rc: RunCtx): void {
  rc.trace.push({ kind: 'stack', host: host.name, event, detail });
}

/** Delivers a packet that passed INPUT to the host's sockets. */
/** A segment from a socket (exported for the network's close). */
export function socketSegment(host: Host, sock: TcpSock, flags: number, rc: RunCtx, why: string): Pkt {
  return segment(host, sock, flags, rc, why);
}

export function stackReceive(host: Host, pkt: Pkt, sk: SkbCt, rc: RunCtx, events: StackEvent[]): void {
  if (pkt.proto === PROTO_TCP) tcpReceive(host, pkt, rc, events);
  else if (pkt.proto === PROTO_UDP) udpReceive(host, pkt, sk, rc, events);
  else if (pkt.proto === PROTO_ICMP) icmpReceive(host, pkt, rc);
  else note(host, 'ignored', `protocol ${pkt.proto} has no socket`, rc);
}

function sendReset(host: Host, pkt: Pkt, rc: RunCtx, why: string): void {
  const rst = tcpReset(pkt, rc.nextPktId(), { host: host.name, why });
  note(host, 'reset', `${why}: answers ${ep(pkt.src, pkt.sport)} with ${rst.tcpFlags === TCP_RST ? 'RST' : 'RST,ACK'}`, rc);
  hostSend(host, rst, rc, {});
}

function tcpReceive(host: Host, pkt: Pkt, rc: RunCtx, events: StackEvent[]): void {
  // TCP has no broadcast: no connection is made and no RST is sent (tcp_v4_send_reset skips it).
  if (isBroadcastFor(host, pkt.dst)) {
    note(host, 'ignored', `TCP segment from ${ep(pkt.src, pkt.sport)} to the broadcast ${ep(pkt.dst, pkt.dport)}`, rc);
    return;
  }
  const f = pkt.tcpFlags;
  const sock = host.sockets.findTcp(pkt.dst, pkt.dport, pkt.src, pkt.sport);
  if ((f & TCP_RST) !== 0) {
    if (sock === undefined) {
      note(host, 'ignored', `RST from ${ep(pkt.src, pkt.sport)} matches no socket`, rc);
      return;
    }
    const err: SockError = { kind: 'reset', from: pkt.origin === null ? ep(pkt.src, pkt.sport) : `${pkt.origin.host} (${pkt.origin.why})` };
    sock.error = err;
    note(host, sock.state === 'SYN_SENT' ? 'refused' : 'reset', `socket ${ep(sock.local, sock.lport)} <-> ${ep(sock.remote, sock.rport)} closed by RST (${sock.state === 'SYN_SENT' ? 'ECONNREFUSED' : 'ECONNRESET'})`, rc);
    host.sockets.closeTcp(sock);
    return;
  }
  if (sock !== undefined) {
    switch (sock.state) {
      case 'SYN_SENT':
        if ((f & (TCP_SYN | TCP_ACK)) === (TCP_SYN | TCP_ACK)) {
          sock.state = 'ESTABLISHED';
          note(host, 'established', `connect ${ep(sock.local, sock.lport)} -> ${ep(sock.remote, sock.rport)} completes; sends ACK`, rc);
          hostSend(host, segment(host, sock, TCP_ACK, rc, 'handshake ACK'), rc, {});
        } else if ((f & TCP_ACK) !== 0) {
          sendReset(host, pkt, rc, 'unacceptable ACK in SYN_SENT');
        }
        return;
      case 'SYN_RECV':
        if ((f & TCP_SYN) !== 0) {
          note(host, 'syn-ack', `retransmitted SYN: resends SYN-ACK to ${ep(sock.remote, sock.rport)}`, rc);
          hostSend(host, segment(host, sock, TCP_SYN | TCP_ACK, rc, 'listening socket'), rc, {});
        } else if ((f & TCP_ACK) !== 0) {
          sock.state = 'ESTABLISHED';
          events.push({ kind: 'accepted', host: host.name, sock });
          note(host, 'accepted', `accept() returns ${ep(sock.local, sock.lport)} <- peer ${ep(sock.remote, sock.rport)}`, rc);
        }
        return;
      case 'LAST_ACK':
        if ((f & TCP_ACK) !== 0) {
          note(host, 'closed', `${ep(sock.local, sock.lport)} <-> ${ep(sock.remote, sock.rport)}: last ACK received`, rc);
          host.sockets.closeTcp(sock);
        }
        return;
      case 'FIN_WAIT':
        // Our FIN was sent; the peer's FIN,ACK closes the connection: last ACK, then gone.
        if ((f & TCP_FIN) !== 0) {
          note(host, 'closed', `${ep(sock.local, sock.lport)} <-> ${ep(sock.remote, sock.rport)}: peer FIN; sends the last ACK`, rc);
          hostSend(host, segment(host, sock, TCP_ACK, rc, 'last ACK'), rc, {});
          events.push({ kind: 'closed', host: host.name, sock });
          host.sockets.closeTcp(sock);
        }
        return;
      case 'ESTABLISHED':
        if ((f & TCP_FIN) !== 0) {
          // The application closes at once: ACK and FIN in one segment.
          note(host, 'fin', `${ep(sock.remote, sock.rport)} closes; answers FIN,ACK and waits for the last ACK`, rc);
          sock.state = 'LAST_ACK';
          hostSend(host, segment(host, sock, TCP_FIN | TCP_ACK, rc, 'close()'), rc, {});
          return;
        }
        if ((f & TCP_SYN) !== 0) {
          note(host, 'challenge-ack', `SYN on an established connection: challenge ACK`, rc);
          hostSend(host, segment(host, sock, TCP_ACK, rc, 'challenge ACK'), rc, {});
        } else if ((f & TCP_PSH) !== 0) {
          events.push({ kind: 'data', host: host.name, sock });
          note(host, 'data', `data from ${ep(sock.remote, sock.rport)}; sends ACK`, rc);
          hostSend(host, segment(host, sock, TCP_ACK, rc, 'data ACK'), rc, {});
        } else if ((f & TCP_ACK) !== 0) {
          events.push({ kind: 'acked', host: host.name, sock });
          note(host, 'acked', `ACK from ${ep(sock.remote, sock.rport)}`, rc);
        }
        return;
      case 'CLOSED':
        break;
    }
  }
  const listener = host.config.listeners.find((l) => l.proto === 'tcp' && l.port === pkt.dport && (l.addr === 0 || l.addr === pkt.dst));
  if (listener !== undefined && (f & (TCP_SYN | TCP_ACK)) === TCP_SYN) {
    const child = host.sockets.openTcp(pkt.dst, pkt.dport, pkt.src, pkt.sport, 'server', 'SYN_RECV');
    events.push({ kind: 'syn-received', host: host.name, sock: child });
    note(host, 'syn-ack', `listening socket ${listener.addr === 0 ? '0.0.0.0' : formatIpv4(listener.addr)}:${listener.port} answers ${ep(pkt.src, pkt.sport)} with SYN-ACK`, rc);
    hostSend(host, segment(host, child, TCP_SYN | TCP_ACK, rc, 'listening socket'), rc, {});
    return;
  }
  const why = listener === undefined ? `nothing listens on tcp port ${pkt.dport}` : `no connection ${ep(pkt.dst, pkt.dport)} <-> ${ep(pkt.src, pkt.sport)}`;
  sendReset(host, pkt, rc, why);
}

function udpReceive(host: Host, pkt: Pkt, sk: SkbCt, rc: RunCtx, events: StackEvent[]): void {
  const sock = host.sockets.findUdp(pkt.dst, pkt.dport, pkt.src, pkt.sport);
  if (sock !== undefined) {
    sock.received.push(ep(pkt.src, pkt.sport));
    events.push({ kind: 'udp', host: host.name, from: ep(pkt.src, pkt.sport), to: ep(pkt.dst, pkt.dport), answered: false });
    note(host, 'udp-received', `socket ${ep(sock.local, sock.lport)} receives a datagram from ${ep(pkt.src, pkt.sport)}`, rc);
    return;
  }
  const listener = host.config.listeners.find((l) => l.proto === 'udp' && l.port === pkt.dport && (l.addr === 0 || l.addr === pkt.dst));
  if (listener === undefined && isBroadcastFor(host, pkt.dst)) {
    note(host, 'ignored', `broadcast datagram from ${ep(pkt.src, pkt.sport)} to ${ep(pkt.dst, pkt.dport)}: nothing listens on udp port ${pkt.dport}`, rc);
    return;
  }
  if (listener === undefined) {
    note(host, 'port-unreachable', `datagram from ${ep(pkt.src, pkt.sport)} to ${ep(pkt.dst, pkt.dport)}: nothing listens on udp port ${pkt.dport}`, rc);
    icmpErrorTyped(host, pkt, ICMP_DEST_UNREACH, 3, sk, rc, `nothing listens on udp port ${pkt.dport}`);
    return;
  }
  const answered = listener.udpReply !== 'silent';
  events.push({ kind: 'udp', host: host.name, from: ep(pkt.src, pkt.sport), to: ep(pkt.dst, pkt.dport), answered });
  if (!answered) {
    note(host, 'udp-received', `socket on udp port ${pkt.dport} takes the datagram and stays silent`, rc);
    return;
  }
  // sendto() from the listening socket: a wildcard-bound socket gets the source routing picks,
  // not the address the datagram was sent to (the multi-homed UDP pitfall; checked on 6.18).
  const reply: Pkt = {
    id: rc.nextPktId(),
    src: listener.addr === 0 ? (0 as Ipv4) : listener.addr,
    dst: pkt.src,
    proto: PROTO_UDP,
    sport: pkt.dport,
    dport: pkt.sport,
    tcpFlags: 0,
    icmpType: 0,
    icmpCode: 0,
    icmpId: 0,
    mark: 0,
    lengthBytes: 60,
    ttl: 64,
    inner: null,
    encap: null,
    origin: { host: host.name, why: 'udp reply' },
  };
  note(host, 'udp-reply', `socket ${listener.addr === 0 ? '0.0.0.0' : formatIpv4(listener.addr)}:${listener.port} answers ${ep(pkt.src, pkt.sport)}`, rc);
  hostSend(host, reply, rc, {});
}

function icmpReceive(host: Host, pkt: Pkt, rc: RunCtx): void {
  const inner = pkt.inner;
  if (pkt.icmpType !== ICMP_DEST_UNREACH || inner === null) {
    note(host, 'ignored', `ICMP ${icmpName(pkt.icmpType, pkt.icmpCode)} from ${formatIpv4(pkt.src)}`, rc);
    return;
  }
  const errno = UNREACH_ERRNO[pkt.icmpCode] ?? 'EHOSTUNREACH';
  const err: SockError = {
    kind: 'icmp',
    from: pkt.origin === null ? formatIpv4(pkt.src) : `${pkt.origin.host} (${pkt.origin.why})`,
    icmp: icmpName(pkt.icmpType, pkt.icmpCode),
    errno,
  };
  if (inner.proto === PROTO_TCP) {
    const sock = host.sockets.findTcp(inner.src, inner.sport, inner.dst, inner.dport);
    if (sock === undefined) {
      note(host, 'ignored', `ICMP ${err.icmp} about ${ep(inner.src, inner.sport)} > ${ep(inner.dst, inner.dport)} matches no socket`, rc);
      return;
    }
    if (sock.state === 'SYN_SENT' || sock.state === 'SYN_RECV') {
      sock.error = err;
      note(host, 'connect-failed', `ICMP ${err.icmp} from ${formatIpv4(pkt.src)} aborts connect (${errno})`, rc);
      host.sockets.closeTcp(sock);
    } else {
      note(host, 'soft-error', `ICMP ${err.icmp} on an established connection is a soft error (${errno})`, rc);
    }
    return;
  }
  if (inner.proto === PROTO_UDP) {
    const sock = host.sockets.findUdp(inner.src, inner.sport, inner.dst, inner.dport);
    if (sock === undefined) {
      note(host, 'ignored', `ICMP ${err.icmp} about ${ep(inner.src, inner.sport)} > ${ep(inner.dst, inner.dport)} matches no socket`, rc);
      return;
    }
    sock.error = err;
    note(host, 'udp-error', `ICMP ${err.icmp} from ${formatIpv4(pkt.src)}: the connected socket reports ${errno}`, rc);
  }
}
