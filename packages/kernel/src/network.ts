/**
 * A network of hosts and the wires between them, and the exchanges played across it: a TCP
 * handshake (`connect`), data on an established connection (`sendData`) and a UDP exchange
 * (`udp`), each hop by hop through every host's datapath, with a complete trace.
 *
 * Layer 2 is modelled as broadcast domains: a wire joins two interfaces (a veth pair whose ends
 * sit on different hosts, or a cable), a segment joins several (a switch), and a bridge joins its
 * ports. A host transmitting toward a next hop reaches the interface, in the same domain, of the
 * host that owns that address (ARP with the kernel's default `arp_ignore=0`: a host answers for
 * any of its addresses on any interface). Interfaces that are down cut their wire. Wires have no
 * latency: an exchange happens at one simulated instant, and TCP retransmissions at the kernel's
 * back-off times after it.
 */
import { formatIpv4, parseIpv4, type Ipv4 } from '@netsim/netfilter';
import { TCP_ACK, TCP_FIN, TCP_PSH, TCP_SYN } from './conntrack.ts';
import { hostSend, hostReceive, type RunCtx, type SkbCt } from './datapath.ts';
import { KernelError } from './errors.ts';
import { fibLookup, routeSource } from './fib.ts';
import { Host } from './host.ts';
import type { RandomSource } from './nat.ts';
import { PROTO_TCP, PROTO_UDP, copyPkt, viewPkt, type PacketView, type Pkt } from './packet.ts';
import type { SockError, TcpSock } from './sockets.ts';
import { socketSegment, stackReceive, type StackEvent } from './stack.ts';
import type { Sysctls } from './sysctl.ts';
import { formatTrace, type DropSite, type TraceStep } from './trace.ts';

/** An interface of a host. */
export interface Endpoint {
  readonly host: string;
  readonly iface: string;
}

export interface NetworkOptions {
  /** Injected randomness: ephemeral ports, SNAT port choice, `statistic` draws. */
  readonly rng: RandomSource;
  /** Steps (packet arrivals) allowed in one exchange before it is declared a loop. Default 10 000. */
  readonly maxSteps?: number;
  /**
   * `full` (default): every decision in the trace. `lean`: only drops, stack events and notes —
   * the outcomes are the same, for callers that run many exchanges and read only results.
   */
  readonly trace?: 'full' | 'lean';
}

/** A packet the network dropped, and where. */
export interface DropInfo {
  readonly host: string;
  readonly packet: PacketView;
  readonly site: DropSite;
  readonly reason: string;
}

/** A TCP connection as one end sees it: enough to send data on it later. */
export interface ConnectionRef {
  readonly host: string;
  readonly local: string;
  readonly remote: string;
}

interface ResultBase {
  /** `client:port -> server:port` as the client addressed it. */
  readonly flow: string;
  readonly startMs: number;
  readonly endMs: number;
  /** SYNs sent (1 + retransmissions). */
  readonly attempts: number;
  readonly drops: readonly DropInfo[];
  readonly trace: readonly TraceStep[];
}

export type ConnectResult =
  | (ResultBase & {
      readonly kind: 'established';
      readonly connection: ConnectionRef;
      /**
       * The accepting side: which host, the address it answered on, and the peer address it saw
       * (the client's own address when the source was preserved, a NAT address otherwise). Null
       * when the final ACK never reached a listening socket.
       */
      readonly server: { readonly host: string; readonly local: string; readonly peer: string } | null;
    })
  | (ResultBase & {
      /** A RST closed the connecting socket. */
      readonly kind: 'reset';
      /** Who sent the RST and why (a closed port, a REJECT rule, …). */
      readonly by: string;
    })
  | (ResultBase & {
      /** An ICMP error aborted the connect. */
      readonly kind: 'unreachable';
      readonly errno: string;
      readonly icmp: string;
      readonly by: string;
    })
  | (ResultBase & {
      /** No answer after every retransmission. `drops` says which host dropped which packet. */
      readonly kind: 'timed-out';
    })
  | (ResultBase & {
      /** The connect failed locally before any packet left (no route). */
      readonly kind: 'error';
      readonly errno: string;
      readonly reason: string;
    });

export type UdpResult =
  | (ResultBase & { readonly kind: 'answered'; readonly from: string })
  | (ResultBase & {
      /** The socket got an ICMP error (port unreachable: ECONNREFUSED on the next recv). */
      readonly kind: 'unreachable';
      readonly errno: string;
      readonly icmp: string;
      readonly by: string;
    })
  | (ResultBase & {
      readonly kind: 'no-answer';
      /** Replies that reached the client host from an address the socket was not connected to. */
      readonly strayReplies: readonly string[];
    })
  | (ResultBase & { readonly kind: 'error'; readonly errno: string; readonly reason: string });

export type CloseResult =
  | (ResultBase & { readonly kind: 'closed' })
  | (ResultBase & { readonly kind: 'reset'; readonly by: string })
  | (ResultBase & { readonly kind: 'lost' });

export type SendDataResult =
  | (ResultBase & { readonly kind: 'acked' })
  | (ResultBase & { readonly kind: 'reset'; readonly by: string })
  | (ResultBase & { readonly kind: 'lost' });

export interface ConnectOptions {
  /** Simulated time of the first SYN. */
  readonly nowMs: number;
  /** Source port; default an ephemeral port from the injected random source. */
  readonly sport?: number;
  /** Source address to bind; default the one routing picks. */
  readonly src?: string;
  /** SYN retransmissions before giving up; default the client's `net.ipv4.tcp_syn_retries`. */
  readonly synRetries?: number;
}

interface L3Member {
  readonly host: Host;
  readonly iface: string;
}

function key(host: string, iface: string): string {
  return `${host}\u0000${iface}`;
}

function parseEndpoint(x: Endpoint | string): Endpoint {
  if (typeof x !== 'string') return x;
  const slash = x.indexOf('/');
  if (slash <= 0) throw new KernelError('topology', `expected "host/iface", got "${x}"`);
  return { host: x.slice(0, slash), iface: x.slice(slash + 1) };
}

function ep(a: number, p: number): string {
  return `${formatIpv4(a)}:${p}`;
}

function toAddr(x: string | Ipv4): Ipv4 {
  return typeof x === 'number' ? x : parseIpv4(x);
}

export class Network {
  private readonly hostMap = new Map<string, Host>();
  private readonly wires: [Endpoint, Endpoint][] = [];
  private readonly segments: { readonly name: string; readonly members: readonly Endpoint[] }[] = [];
  private readonly rng: RandomSource;
  private readonly random31: () => number;
  private readonly maxSteps: number;
  private readonly lean: boolean;
  private nextPacketId = 1;
  private topoVersion = 0;
  private domainCache: { readonly stamp: readonly unknown[]; readonly of: Map<string, number>; readonly members: Map<number, L3Member[]> } | null = null;

  constructor(opts: NetworkOptions) {
    this.rng = opts.rng;
    this.random31 = () => opts.rng.int(0x80000000);
    this.maxSteps = opts.maxSteps ?? 10000;
    this.lean = opts.trace === 'lean';
  }

  /** Adds a host (a node, a Pod's namespace, a client, a router). */
  addHost(name: string, opts: { sysctls?: Sysctls } = {}): Host {
    if (this.hostMap.has(name)) throw new KernelError('topology', `host "${name}" already exists`);
    const h = new Host(name, opts);
    this.hostMap.set(name, h);
    this.topoVersion++;
    return h;
  }

  host(name: string): Host {
    const h = this.hostMap.get(name);
    if (h === undefined) throw new KernelError('not-found', `no host named "${name}"`);
    return h;
  }

  /** Host names, sorted. */
  hostNames(): readonly string[] {
    return [...this.hostMap.keys()].sort();
  }

  /**
   * Wires two interfaces together: a veth pair (ends may sit on different hosts) or a cable.
   * Both interfaces must exist; an interface takes at most one wire.
   */
  wire(a: Endpoint | string, b: Endpoint | string): this {
    const ea = parseEndpoint(a);
    const eb = parseEndpoint(b);
    for (const e of [ea, eb]) {
      const h = this.host(e.host);
      if (!h.hasIface(e.iface)) throw new KernelError('topology', `host "${e.host}" has no interface "${e.iface}"`);
      if (this.wires.some(([x, y]) => (x.host === e.host && x.iface === e.iface) || (y.host === e.host && y.iface === e.iface))) {
        throw new KernelError('topology', `${e.host}/${e.iface} is already wired`);
      }
    }
    this.wires.push([ea, eb]);
    this.topoVersion++;
    return this;
  }

  /** A switch joining several interfaces into one broadcast domain. */
  segment(name: string, members: readonly (Endpoint | string)[]): this {
    const ms = members.map(parseEndpoint);
    for (const e of ms) if (!this.host(e.host).hasIface(e.iface)) throw new KernelError('topology', `host "${e.host}" has no interface "${e.iface}"`);
    this.segments.push({ name, members: ms });
    this.topoVersion++;
    return this;
  }

  private domains(): { of: Map<string, number>; members: Map<number, L3Member[]> } {
    const hosts = [...this.hostMap.values()];
    const stamp: unknown[] = [this.topoVersion, ...hosts.map((h) => h.config)];
    const c = this.domainCache;
    if (c !== null && c.stamp.length === stamp.length && c.stamp.every((x, i) => x === stamp[i])) return c;
    const parent = new Map<string, string>();
    const find = (k: string): string => {
      let r = k;
      while (parent.get(r) !== r) r = parent.get(r) ?? r;
      parent.set(k, r);
      return r;
    };
    const union = (a: string, b: string): void => {
      if (!parent.has(a) || !parent.has(b)) return;
      const ra = find(a);
      const rb = find(b);
      if (ra !== rb) parent.set(ra < rb ? rb : ra, ra < rb ? ra : rb);
    };
    for (const h of hosts) for (const i of h.config.ifaces) if (i.up && i.kind !== 'loopback' && i.kind !== 'overlay') parent.set(key(h.name, i.name), key(h.name, i.name));
    for (const [a, b] of this.wires) union(key(a.host, a.iface), key(b.host, b.iface));
    for (const s of this.segments) for (let i = 1; i < s.members.length; i++) union(key(s.members[0]?.host ?? '', s.members[0]?.iface ?? ''), key(s.members[i]?.host ?? '', s.members[i]?.iface ?? ''));
    for (const h of hosts) for (const i of h.config.ifaces) if (i.master !== undefined) union(key(h.name, i.name), key(h.name, i.master));
    const ids = new Map<string, number>();
    const of = new Map<string, number>();
    const members = new Map<number, L3Member[]>();
    for (const h of [...hosts].sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0))) {
      for (const i of h.config.ifaces) {
        const k = key(h.name, i.name);
        if (!parent.has(k)) continue;
        const root = find(k);
        let id = ids.get(root);
        if (id === undefined) {
          id = ids.size;
          ids.set(root, id);
        }
        of.set(k, id);
        if (i.master === undefined) {
          const list = members.get(id);
          if (list === undefined) members.set(id, [{ host: h, iface: i.name }]);
          else list.push({ host: h, iface: i.name });
        }
      }
    }
    this.domainCache = { stamp, of, members };
    return this.domainCache;
  }

  /** Who answers ARP for `nexthop` on `host`'s `iface`. */
  neighbour(host: Host, iface: string, nexthop: Ipv4): L3Member | undefined {
    const d = this.domains();
    const id = d.of.get(key(host.name, iface));
    if (id === undefined) return undefined;
    const cands = (d.members.get(id) ?? []).filter((m) => !(m.host === host && m.iface === iface));
    return (
      cands.find((m) => m.host.config.ifaces.find((i) => i.name === m.iface)?.addrs.some((a) => a.addr === nexthop) === true) ??
      cands.find((m) => m.host.isLocal(nexthop))
    );
  }

  private run<T>(nowMs: number, trace: TraceStep[], events: StackEvent[], body: (rc: RunCtx) => T): T {
    const queue: { host: Host; iface: string; pkt: Pkt }[] = [];
    const rc: RunCtx = {
      nowMs,
      rng: this.rng,
      random31: this.random31,
      trace,
      nextPktId: () => this.nextPacketId++,
      transmit: (host, iface, nexthop, pkt) => {
        const n = this.neighbour(host, iface, nexthop);
        if (n === undefined) return false;
        const copy = copyPkt(pkt, pkt.id);
        if (!this.lean) trace.push({ kind: 'wire', from: { host: host.name, iface }, to: { host: n.host.name, iface: n.iface }, packet: viewPkt(copy) });
        queue.push({ host: n.host, iface: n.iface, pkt: copy });
        return true;
      },
      deliver: (host: Host, pkt: Pkt, _inIface: string, sk: SkbCt) => stackReceive(host, pkt, sk, rc, events),
      depth: 0,
      lean: this.lean,
    };
    const out = body(rc);
    let steps = 0;
    for (let i = 0; i < queue.length; i++) {
      if (++steps > this.maxSteps) throw new KernelError('topology', `exchange exceeded ${this.maxSteps} packet arrivals: a forwarding loop?`);
      const q = queue[i];
      if (q !== undefined) hostReceive(q.host, q.pkt, q.iface, 'wire', rc);
    }
    return out;
  }

  private newPkt(src: Ipv4, dst: Ipv4, proto: number, sport: number, dport: number, flags: number, origin: string, hostName: string): Pkt {
    return {
      id: this.nextPacketId++,
      src,
      dst,
      proto,
      sport,
      dport,
      tcpFlags: flags,
      icmpType: 0,
      icmpCode: 0,
      icmpId: 0,
      mark: 0,
      lengthBytes: proto === PROTO_TCP ? 60 : 60,
      ttl: 64,
      inner: null,
      encap: null,
      origin: { host: hostName, why: origin },
    };
  }

  /** The source a socket on `host` gets toward `dst` (route `src`, else the device's primary). */
  private pickSource(host: Host, dst: Ipv4): { ok: true; src: Ipv4 } | { ok: false; errno: string; reason: string } {
    const r = fibLookup(host.fib, { dst, src: 0, iif: 'lo', oif: null, mark: 0 });
    if (r.kind === 'error') {
      const errno = r.error === 'none' ? 'ENETUNREACH' : r.error === 'unreachable' ? 'EHOSTUNREACH' : r.error === 'prohibit' ? 'EACCES' : 'EINVAL';
      return { ok: false, errno, reason: r.error === 'none' ? 'Network is unreachable' : `${r.error} route` };
    }
    const s = routeSource(host.fib, r);
    return { ok: true, src: (s === 0 ? dst : s) };
  }

  /**
   * Plays a TCP handshake from `from` to `to:port`: SYN (retransmitted at 1, 3, 7, 15, 31, 63 s
   * with the default 6 retries), SYN-ACK, ACK, hop by hop. Says established, reset (who and why),
   * unreachable (an ICMP error), timed out (with every drop), or a local routing error.
   *
   * @example
   * const r = net.connect('client', '198.51.100.10', 30080, { nowMs: 0 });
   * if (r.kind === 'timed-out') console.log(r.drops[0]?.reason);
   */
  connect(from: string, to: string | Ipv4, port: number, opts: ConnectOptions): ConnectResult {
    const client = this.host(from);
    const dst = toAddr(to);
    const trace: TraceStep[] = [];
    const events: StackEvent[] = [];
    const flowTo = ep(dst, port);
    let src: Ipv4;
    if (opts.src !== undefined) {
      src = parseIpv4(opts.src);
      if (!client.isLocal(src)) {
        return { kind: 'error', errno: 'EADDRNOTAVAIL', reason: `bind ${opts.src}: Cannot assign requested address`, flow: `${opts.src} -> ${flowTo}`, startMs: opts.nowMs, endMs: opts.nowMs, attempts: 0, drops: [], trace };
      }
    } else {
      const s = this.pickSource(client, dst);
      if (!s.ok) {
        return { kind: 'error', errno: s.errno, reason: s.reason, flow: `? -> ${flowTo}`, startMs: opts.nowMs, endMs: opts.nowMs, attempts: 0, drops: [], trace };
      }
      src = s.src;
    }
    const sport = opts.sport ?? client.sockets.ephemeralPort('tcp', src, dst, port, client.config.sysctls.localPortRange, this.rng);
    const sock = client.sockets.openTcp(src, sport, dst, port, 'client', 'SYN_SENT');
    const flow = `${ep(src, sport)} -> ${flowTo}`;
    const retries = opts.synRetries ?? client.config.sysctls.tcpSynRetries;
    let at = opts.nowMs;
    let rto = 1000;
    for (let attempt = 1; attempt <= retries + 1; attempt++) {
      const sent = this.run(at, trace, events, (rc) => {
        trace.push({ kind: 'note', host: from, text: `connect() ${attempt === 1 ? 'sends SYN' : `retransmits SYN (attempt ${attempt})`} at ${at} ms` });
        return hostSend(client, this.newPkt(src, dst, PROTO_TCP, sport, port, TCP_SYN, 'connect()', from), rc, {});
      });
      const base = { flow, startMs: opts.nowMs, attempts: attempt, drops: dropsOf(trace), trace };
      if (!sent.ok) {
        client.sockets.closeTcp(sock);
        return { ...base, kind: 'error', errno: sent.errno, reason: sent.reason, endMs: at };
      }
      if (sock.state === 'ESTABLISHED') {
        const acc = events.find((e): e is Extract<StackEvent, { kind: 'accepted' }> => e.kind === 'accepted');
        return {
          ...base,
          kind: 'established',
          endMs: at,
          connection: { host: from, local: ep(src, sport), remote: flowTo },
          server: acc === undefined ? null : { host: acc.host, local: ep(acc.sock.local, acc.sock.lport), peer: ep(acc.sock.remote, acc.sock.rport) },
        };
      }
      if (sock.error !== null) return { ...base, ...errorResult(sock.error), endMs: at };
      if (attempt <= retries) {
        at += rto;
        rto *= 2;
      }
    }
    client.sockets.closeTcp(sock);
    return { kind: 'timed-out', flow, startMs: opts.nowMs, endMs: at + rto, attempts: retries + 1, drops: dropsOf(trace), trace };
  }

  /**
   * Sends one data segment on an established connection (from {@link ConnectResult}) and says
   * whether it was acknowledged, reset (who and why), or lost (with the drops). No retransmission.
   */
  sendData(conn: ConnectionRef, opts: { readonly nowMs: number }): SendDataResult {
    const host = this.host(conn.host);
    const [lip, lp] = splitEp(conn.local);
    const [rip, rp] = splitEp(conn.remote);
    const sock = host.sockets.findTcp(lip, lp, rip, rp);
    const trace: TraceStep[] = [];
    const base = { flow: `${conn.local} -> ${conn.remote}`, startMs: opts.nowMs, endMs: opts.nowMs, attempts: 1 };
    if (sock === undefined || sock.state !== 'ESTABLISHED') {
      throw new KernelError('not-found', `${conn.host}: no established connection ${conn.local} -> ${conn.remote}`);
    }
    const events: StackEvent[] = [];
    this.run(opts.nowMs, trace, events, (rc) => {
      trace.push({ kind: 'note', host: conn.host, text: `send() on ${conn.local} -> ${conn.remote} at ${opts.nowMs} ms` });
      return hostSend(host, this.newPkt(lip, rip, PROTO_TCP, lp, rp, TCP_PSH | TCP_ACK, 'send()', conn.host), rc, {});
    });
    const drops = dropsOf(trace);
    if (sock.error !== null && sock.error.kind === 'reset') return { ...base, kind: 'reset', by: sock.error.from, drops, trace };
    if (events.some((e) => e.kind === 'acked' && e.sock === sock)) return { ...base, kind: 'acked', drops, trace };
    return { ...base, kind: 'lost', drops, trace };
  }

  /**
   * Closes an established connection gracefully from its side: FIN,ACK, the peer's FIN,ACK, the
   * last ACK, through every datapath, leaving conntrack entries in TIME_WAIT (120 s) instead of
   * ESTABLISHED (5 days). Probes that open many connections should close them.
   */
  close(conn: ConnectionRef, opts: { readonly nowMs: number }): CloseResult {
    const host = this.host(conn.host);
    const [lip, lp] = splitEp(conn.local);
    const [rip, rp] = splitEp(conn.remote);
    const sock = host.sockets.findTcp(lip, lp, rip, rp);
    if (sock === undefined || sock.state !== 'ESTABLISHED') {
      throw new KernelError('not-found', `${conn.host}: no established connection ${conn.local} -> ${conn.remote}`);
    }
    const trace: TraceStep[] = [];
    const events: StackEvent[] = [];
    sock.state = 'FIN_WAIT';
    this.run(opts.nowMs, trace, events, (rc) => {
      trace.push({ kind: 'note', host: conn.host, text: `close() on ${conn.local} -> ${conn.remote} at ${opts.nowMs} ms` });
      return hostSend(host, socketSegment(host, sock, TCP_FIN | TCP_ACK, rc, 'close()'), rc, {});
    });
    const base = { flow: `${conn.local} -> ${conn.remote}`, startMs: opts.nowMs, endMs: opts.nowMs, attempts: 1, drops: dropsOf(trace), trace };
    if (events.some((e) => e.kind === 'closed' && e.sock === sock)) return { ...base, kind: 'closed' };
    // Without the peer's FIN the socket is aborted locally; conntrack keeps what it saw.
    host.sockets.closeTcp(sock);
    if (sock.error !== null && sock.error.kind === 'reset') return { ...base, kind: 'reset', by: sock.error.from };
    return { ...base, kind: 'lost' };
  }

  /**
   * One UDP request from a connected socket on `from` to `to:port` and the answer, if any. A reply
   * from another address than `to` does not reach the connected socket (the stack answers it with
   * port unreachable) and is listed in `strayReplies`.
   */
  udp(from: string, to: string | Ipv4, port: number, opts: ConnectOptions): UdpResult {
    const client = this.host(from);
    const dst = toAddr(to);
    const trace: TraceStep[] = [];
    const events: StackEvent[] = [];
    const flowTo = ep(dst, port);
    let src: Ipv4;
    if (opts.src !== undefined) {
      src = parseIpv4(opts.src);
      if (!client.isLocal(src)) {
        return { kind: 'error', errno: 'EADDRNOTAVAIL', reason: `bind ${opts.src}: Cannot assign requested address`, flow: `${opts.src} -> ${flowTo}`, startMs: opts.nowMs, endMs: opts.nowMs, attempts: 0, drops: [], trace };
      }
    } else {
      const s = this.pickSource(client, dst);
      if (!s.ok) return { kind: 'error', errno: s.errno, reason: s.reason, flow: `? -> ${flowTo}`, startMs: opts.nowMs, endMs: opts.nowMs, attempts: 0, drops: [], trace };
      src = s.src;
    }
    const sport = opts.sport ?? client.sockets.ephemeralPort('udp', src, dst, port, client.config.sysctls.localPortRange, this.rng);
    const sock = client.sockets.openUdp(src, sport, dst, port);
    const flow = `${ep(src, sport)} -> ${flowTo}`;
    const sent = this.run(opts.nowMs, trace, events, (rc) => {
      trace.push({ kind: 'note', host: from, text: `sendto() ${flowTo} at ${opts.nowMs} ms` });
      return hostSend(client, this.newPkt(src, dst, PROTO_UDP, sport, port, 0, 'sendto()', from), rc, {});
    });
    client.sockets.closeUdp(sock);
    const base = { flow, startMs: opts.nowMs, endMs: opts.nowMs, attempts: 1, drops: dropsOf(trace), trace };
    if (!sent.ok) return { ...base, kind: 'error', errno: sent.errno, reason: sent.reason };
    if (sock.received.length > 0) return { ...base, kind: 'answered', from: sock.received[0] ?? flowTo };
    if (sock.error !== null && sock.error.kind === 'icmp') return { ...base, kind: 'unreachable', errno: sock.error.errno, icmp: sock.error.icmp, by: sock.error.from };
    const stray = trace.flatMap((s) =>
      s.kind === 'stack' && s.host === from && s.event === 'port-unreachable' ? [s.detail] : [],
    );
    return { ...base, kind: 'no-answer', strayReplies: stray };
  }
}

function splitEp(s: string): [Ipv4, number] {
  const i = s.lastIndexOf(':');
  return [parseIpv4(s.slice(0, i)), Number(s.slice(i + 1))];
}

function dropsOf(trace: readonly TraceStep[]): DropInfo[] {
  return trace.flatMap((s) => (s.kind === 'drop' ? [{ host: s.host, packet: s.packet, site: s.site, reason: s.reason }] : []));
}

function errorResult(e: SockError): { kind: 'reset'; by: string } | { kind: 'unreachable'; errno: string; icmp: string; by: string } {
  return e.kind === 'reset' ? { kind: 'reset', by: e.from } : { kind: 'unreachable', errno: e.errno, icmp: e.icmp, by: e.from };
}

/** A result in words: the outcome line, then the trace. */
export function formatConnectResult(r: ConnectResult | UdpResult | SendDataResult | CloseResult): string {
  let head: string;
  switch (r.kind) {
    case 'established':
      head = `established ${r.flow}${r.server !== null ? `; ${r.server.host} accepted on ${r.server.local} from ${r.server.peer}` : '; the final ACK never reached the server'}`;
      break;
    case 'reset':
      head = `reset ${r.flow} by ${r.by}`;
      break;
    case 'unreachable':
      head = `unreachable ${r.flow}: ICMP ${r.icmp} from ${r.by} (${r.errno})`;
      break;
    case 'timed-out':
      head = `timed out ${r.flow} after ${r.attempts} SYNs (${r.endMs - r.startMs} ms)`;
      break;
    case 'error':
      head = `error ${r.flow}: ${r.errno} (${r.reason})`;
      break;
    case 'answered':
      head = `answered ${r.flow} from ${r.from}`;
      break;
    case 'no-answer':
      head = `no answer ${r.flow}${r.strayReplies.length > 0 ? ` (stray replies: ${r.strayReplies.join('; ')})` : ''}`;
      break;
    case 'acked':
      head = `acked ${r.flow}`;
      break;
    case 'lost':
      head = `lost ${r.flow}`;
      break;
    case 'closed':
      head = `closed ${r.flow}`;
      break;
  }
  const drops = r.drops.map((d) => `  dropped by ${d.host}: ${d.reason}`).join('\n');
  return [head, drops, formatTrace(r.trace)].filter((s) => s.length > 0).join('\n');
}

export type { TcpSock };
