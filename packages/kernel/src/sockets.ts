/**
 * The sockets of a host's stack at run time: TCP connections (client and accepted) with the
 * handshake states the datapath needs, and connected UDP client sockets. Listening sockets are
 * configuration (see `HostConfig.listeners`).
 */
import { formatIpv4, type Ipv4 } from '@netsim/netfilter';
import { KernelError } from './errors.ts';
import type { RandomSource } from './nat.ts';

export type TcpSockState = 'SYN_SENT' | 'SYN_RECV' | 'ESTABLISHED' | 'FIN_WAIT' | 'LAST_ACK' | 'CLOSED';

/** Why a socket closed. */
export type SockError =
  | { readonly kind: 'reset'; readonly from: string }
  | { readonly kind: 'icmp'; readonly from: string; readonly icmp: string; readonly errno: string };

export interface TcpSock {
  readonly id: number;
  readonly local: Ipv4;
  readonly lport: number;
  readonly remote: Ipv4;
  readonly rport: number;
  readonly role: 'client' | 'server';
  state: TcpSockState;
  error: SockError | null;
}

export interface UdpSock {
  readonly id: number;
  readonly local: Ipv4;
  readonly lport: number;
  readonly remote: Ipv4;
  readonly rport: number;
  /** Datagrams received, as `src:sport` of each sender. */
  readonly received: string[];
  error: SockError | null;
}

function key4(local: number, lport: number, remote: number, rport: number): string {
  return `${local}|${lport}|${remote}|${rport}`;
}

export class SocketTable {
  private readonly tcp = new Map<string, TcpSock>();
  private readonly udp = new Map<string, UdpSock>();
  private nextId = 1;

  findTcp(local: number, lport: number, remote: number, rport: number): TcpSock | undefined {
    return this.tcp.get(key4(local, lport, remote, rport));
  }

  findUdp(local: number, lport: number, remote: number, rport: number): UdpSock | undefined {
    return this.udp.get(key4(local, lport, remote, rport));
  }

  /** Creates a TCP socket for a 4-tuple; an existing one in the same tuple is replaced only if closed. */
  openTcp(local: Ipv4, lport: number, remote: Ipv4, rport: number, role: 'client' | 'server', state: TcpSockState): TcpSock {
    const k = key4(local, lport, remote, rport);
    const old = this.tcp.get(k);
    if (old !== undefined && old.state !== 'CLOSED') {
      throw new KernelError('config', `connect ${formatIpv4(local)}:${lport} -> ${formatIpv4(remote)}:${rport}: Address already in use`);
    }
    const s: TcpSock = { id: this.nextId++, local, lport, remote, rport, role, state, error: null };
    this.tcp.set(k, s);
    return s;
  }

  openUdp(local: Ipv4, lport: number, remote: Ipv4, rport: number): UdpSock {
    const k = key4(local, lport, remote, rport);
    const s: UdpSock = { id: this.nextId++, local, lport, remote, rport, received: [], error: null };
    this.udp.set(k, s);
    return s;
  }

  closeTcp(s: TcpSock): void {
    s.state = 'CLOSED';
    const k = key4(s.local, s.lport, s.remote, s.rport);
    if (this.tcp.get(k) === s) this.tcp.delete(k);
  }

  closeUdp(s: UdpSock): void {
    const k = key4(s.local, s.lport, s.remote, s.rport);
    if (this.udp.get(k) === s) this.udp.delete(k);
  }

  /** Whether a local port is in use by any socket of `proto` (for ephemeral port choice). */
  portInUse(proto: 'tcp' | 'udp', local: number, lport: number, remote: number, rport: number): boolean {
    return (proto === 'tcp' ? this.tcp : this.udp).has(key4(local, lport, remote, rport));
  }

  /**
   * An ephemeral port for a connection to `remote:rport` from `local`, drawn from the injected
   * random source inside `range` and stepping on while the 4-tuple is taken (as
   * `__inet_hash_connect` does from its random offset).
   */
  ephemeralPort(proto: 'tcp' | 'udp', local: number, remote: number, rport: number, range: readonly [number, number], rng: RandomSource): number {
    const [lo, hi] = range;
    const size = hi - lo + 1;
    const off = rng.int(size);
    for (let i = 0; i < size; i++) {
      const port = lo + ((off + i) % size);
      if (!this.portInUse(proto, local, port, remote, rport)) return port;
    }
    throw new KernelError('config', 'connect: Cannot assign requested address (ephemeral ports exhausted)');
  }

  /** Open TCP sockets in creation order. */
  listTcp(): readonly TcpSock[] {
    return [...this.tcp.values()];
  }
}
