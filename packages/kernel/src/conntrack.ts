/**
 * The connection tracking table of one host (`nf_conntrack`): entries keyed by both their original
 * and reply tuples, the TCP state machine, UDP stream detection, timeouts on the simulated clock,
 * NAT status bits, and the `conntrack -L` line format.
 *
 * Entries are created unconfirmed by a connection's first packet and inserted into the table only
 * when that packet leaves the last hook ({@link ConntrackTable.confirm}); a first packet dropped
 * on the way leaves nothing behind. Expiry is lazy: an entry whose deadline has passed is treated
 * as absent (and removed) by the next lookup or listing at a later `nowMs`.
 *
 * Listing order is creation order, so output is deterministic (the kernel prints hash order).
 */
import { formatIpv4, type Ipv4 } from '@netsim/netfilter';
import type { ConntrackTimeouts } from './sysctl.ts';

/**
 * A connection tuple. TCP and UDP have their ports. ICMP queries keep what the kernel keys them
 * by: `sport` is the identifier (`src.u.icmp.id`, the same in both directions) and `dport` is
 * `type << 8 | code` (`dst.u.icmp`), so an echo request's reply tuple says echo reply. Other
 * protocols have 0 in both.
 */
export interface Tuple {
  readonly src: Ipv4;
  readonly dst: Ipv4;
  readonly proto: number;
  readonly sport: number;
  readonly dport: number;
}

const PROTO_ICMP_NUM = 1;

/** `type << 8 | code`, the `dport` of an ICMP tuple. */
export function icmpTypeCode(type: number, code: number): number {
  return ((type & 0xff) << 8) | (code & 0xff);
}

/** The ICMP query types whose reply type is known (`invmap` in nf_conntrack_proto_icmp.c). */
const ICMP_INVERSE: { readonly [type: number]: number } = { 8: 0, 0: 8, 13: 14, 14: 13, 15: 16, 16: 15, 17: 18, 18: 17 };

/** Whether an ICMP packet of this type gets a tuple that can be inverted (an entry is possible). */
export function icmpInvertible(type: number): boolean {
  return ICMP_INVERSE[type] !== undefined;
}

/** ICMP types that may create a connection (`valid_new`): echo, timestamp, information and address mask requests. */
export function icmpStartsConnection(type: number): boolean {
  return type === 8 || type === 13 || type === 15 || type === 17;
}

export type CtDir = 'original' | 'reply';

export type TcpCtState =
  | 'NONE'
  | 'SYN_SENT'
  | 'SYN_RECV'
  | 'ESTABLISHED'
  | 'FIN_WAIT'
  | 'CLOSE_WAIT'
  | 'LAST_ACK'
  | 'TIME_WAIT'
  | 'CLOSE'
  | 'SYN_SENT2';

/**
 * One connection. Mutable inside the kernel package (the datapath updates it per packet);
 * callers get it through {@link ConntrackTable.list} and should treat it as read-only.
 */
export interface CtEntry {
  /** Creation sequence number within this table: stable identity and listing order. */
  readonly id: number;
  readonly orig: Tuple;
  /** The tuple replies carry; NAT rewrites it when a binding is set up. */
  reply: Tuple;
  tcpState: TcpCtState | null;
  seenReply: boolean;
  assured: boolean;
  confirmed: boolean;
  /** IPS_SRC_NAT / IPS_DST_NAT: the binding changed the source / destination. */
  srcNat: boolean;
  dstNat: boolean;
  /** nf_nat_initialized for each manip type: NAT was decided (a "no NAT" binding counts). */
  natDoneSrc: boolean;
  natDoneDst: boolean;
  /** The interface a MASQUERADE binding was made for (its entries die when it goes down). */
  masqIface: string | null;
  /** ct->mark (CONNMARK). */
  mark: number;
  createdMs: number;
  expiresMs: number;
  /** Killed (RST on an unreplied connection, reopen from TIME_WAIT, `conntrack -D`). */
  dying: boolean;
}

function sourceKey(proto: number, src: number, sport: number): string {
  return `${proto}|${src}|${sport}`;
}

export function tupleKey(t: Tuple): string {
  return `${t.proto}|${t.src}|${t.sport}|${t.dst}|${t.dport}`;
}

/** `nf_ct_invert_tuple`: the tuple of the other direction (for ICMP: same id, the inverse type). */
export function invertTuple(t: Tuple): Tuple {
  if (t.proto === PROTO_ICMP_NUM) {
    const type = t.dport >>> 8;
    return { src: t.dst, dst: t.src, proto: t.proto, sport: t.sport, dport: icmpTypeCode(ICMP_INVERSE[type] ?? type, t.dport & 0xff) };
  }
  return { src: t.dst, dst: t.src, proto: t.proto, sport: t.dport, dport: t.sport };
}

export function tupleEquals(a: Tuple, b: Tuple): boolean {
  return a.src === b.src && a.dst === b.dst && a.proto === b.proto && a.sport === b.sport && a.dport === b.dport;
}

/** TCP flag bits as in the header. */
export const TCP_FIN = 0x01;
export const TCP_SYN = 0x02;
export const TCP_RST = 0x04;
export const TCP_PSH = 0x08;
export const TCP_ACK = 0x10;

type Col = 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9;
const STATES: readonly TcpCtState[] = [
  'NONE',
  'SYN_SENT',
  'SYN_RECV',
  'ESTABLISHED',
  'FIN_WAIT',
  'CLOSE_WAIT',
  'LAST_ACK',
  'TIME_WAIT',
  'CLOSE',
  'SYN_SENT2',
];
const COL: { readonly [S in TcpCtState]: Col } = {
  NONE: 0,
  SYN_SENT: 1,
  SYN_RECV: 2,
  ESTABLISHED: 3,
  FIN_WAIT: 4,
  CLOSE_WAIT: 5,
  LAST_ACK: 6,
  TIME_WAIT: 7,
  CLOSE: 8,
  SYN_SENT2: 9,
};

/** A transition target: a state, `IV` (invalid packet) or `IG` (ignored: no state change). */
type Next = TcpCtState | 'IV' | 'IG';
// NONE is never a transition target, so its alias is skipped.
const [, sSS, sSR, sES, sFW, sCW, sLA, sTW, sCL, sS2] = STATES as [
  TcpCtState,
  TcpCtState,
  TcpCtState,
  TcpCtState,
  TcpCtState,
  TcpCtState,
  TcpCtState,
  TcpCtState,
  TcpCtState,
  TcpCtState,
];
const IV = 'IV' as const;
const IG = 'IG' as const;

/**
 * The kernel's transition table (nf_conntrack_proto_tcp.c), indexed by direction, packet class
 * (syn, synack, fin, ack, rst, none) and current state (columns NO SS SR ES FW CW LA TW CL S2).
 */
const TCP_TABLE: { readonly [D in CtDir]: readonly (readonly Next[])[] } = {
  original: [
    /* syn    */ [sSS, sSS, IG, IG, IG, IG, IG, sSS, sSS, sS2],
    /* synack */ [IV, IV, sSR, IV, IV, IV, IV, IV, IV, sSR],
    /* fin    */ [IV, IV, sFW, sFW, sLA, sLA, sLA, sTW, sCL, IV],
    /* ack    */ [sES, IV, sES, sES, sCW, sCW, sTW, sTW, sCL, IV],
    /* rst    */ [IV, sCL, sCL, sCL, sCL, sCL, sCL, sCL, sCL, sCL],
    /* none   */ [IV, IV, IV, IV, IV, IV, IV, IV, IV, IV],
  ],
  reply: [
    /* syn    */ [IV, sS2, IV, IV, IV, IV, IV, sSS, IV, sS2],
    /* synack */ [IV, sSR, IG, IG, IG, IG, IG, IG, IG, sSR],
    /* fin    */ [IV, IV, sFW, sFW, sLA, sLA, sLA, sTW, sCL, IV],
    /* ack    */ [IV, IG, sSR, sES, sCW, sCW, sTW, sTW, sCL, IG],
    /* rst    */ [IV, sCL, sCL, sCL, sCL, sCL, sCL, sCL, sCL, sCL],
    /* none   */ [IV, IV, IV, IV, IV, IV, IV, IV, IV, IV],
  ],
};

const TCP_URG = 0x20;

/**
 * `tcp_valid_flags` of nf_conntrack_proto_tcp.c: the flag combinations (PSH, ECE and CWR
 * ignored) conntrack accepts at all. Any other — SYN+FIN, SYN+RST, a lone FIN, no flags, SYN+ACK+URG
 * — makes `tcp_error` refuse the segment: it is INVALID, gets no entry and changes none (checked on
 * 6.18 against every combination in a namespace).
 */
export function tcpValidFlags(flags: number): boolean {
  switch (flags & (TCP_FIN | TCP_SYN | TCP_RST | TCP_ACK | TCP_URG)) {
    case TCP_SYN:
    case TCP_SYN | TCP_URG:
    case TCP_SYN | TCP_ACK:
    case TCP_RST:
    case TCP_RST | TCP_ACK:
    case TCP_FIN | TCP_ACK:
    case TCP_FIN | TCP_ACK | TCP_URG:
    case TCP_ACK:
    case TCP_ACK | TCP_URG:
      return true;
    default:
      return false;
  }
}

/** `get_conntrack_index`: which row of the table a segment's flags select. */
export function tcpFlagClass(flags: number): 0 | 1 | 2 | 3 | 4 | 5 {
  if ((flags & TCP_RST) !== 0) return 4;
  if ((flags & TCP_SYN) !== 0) return (flags & TCP_ACK) !== 0 ? 1 : 0;
  if ((flags & TCP_FIN) !== 0) return 2;
  if ((flags & TCP_ACK) !== 0) return 3;
  return 5;
}

/** The next TCP conntrack state for a segment, `IV` when invalid, `IG` when ignored. */
export function tcpTransition(state: TcpCtState, dir: CtDir, flags: number): Next {
  const row = TCP_TABLE[dir][tcpFlagClass(flags)];
  const next = row?.[COL[state]];
  if (next === undefined) throw new Error(`tcpTransition: no table cell for ${state}/${dir}/${flags}`);
  return next;
}

export function tcpTimeoutSec(state: TcpCtState, t: ConntrackTimeouts): number {
  switch (state) {
    case 'NONE':
    case 'SYN_SENT':
    case 'SYN_SENT2':
      return t.tcpSynSent;
    case 'SYN_RECV':
      return t.tcpSynRecv;
    case 'ESTABLISHED':
      return t.tcpEstablished;
    case 'FIN_WAIT':
      return t.tcpFinWait;
    case 'CLOSE_WAIT':
      return t.tcpCloseWait;
    case 'LAST_ACK':
      return t.tcpLastAck;
    case 'TIME_WAIT':
      return t.tcpTimeWait;
    case 'CLOSE':
      return t.tcpClose;
  }
}

/** A reply counts as a UDP "stream" only once the entry is older than this (`stream_ts`). */
export const UDP_STREAM_AFTER_MS = 2000;

/** A lookup hit: the entry and which of its tuples the packet matched. */
export interface CtHit {
  readonly entry: CtEntry;
  readonly dir: CtDir;
}

export class ConntrackTable {
  private readonly byKey = new Map<string, CtHit>();
  /** Confirmed entries by id; Map iteration order is insertion order, i.e. creation order. */
  private readonly byId = new Map<number, CtEntry>();
  /** Source-NATed entries by original source (`nf_nat_bysource`), for mapping reuse. */
  private readonly bySource = new Map<string, CtEntry[]>();
  private nextId = 1;

  /** Number of confirmed, unexpired entries (after expiring those past `nowMs`). */
  count(nowMs: number): number {
    this.expire(nowMs);
    return this.byId.size;
  }

  /** A new unconfirmed entry for a first packet; not in the table until {@link confirm}. */
  create(orig: Tuple, nowMs: number, timeoutSec: number): CtEntry {
    return {
      id: this.nextId++,
      orig,
      reply: invertTuple(orig),
      tcpState: orig.proto === 6 ? 'NONE' : null,
      seenReply: false,
      assured: false,
      confirmed: false,
      srcNat: false,
      dstNat: false,
      natDoneSrc: false,
      natDoneDst: false,
      masqIface: null,
      mark: 0,
      createdMs: nowMs,
      expiresMs: nowMs + timeoutSec * 1000,
      dying: false,
    };
  }

  /** The confirmed entry holding `t` as its original or reply tuple, unless expired at `nowMs`. */
  find(t: Tuple, nowMs: number): CtHit | undefined {
    const hit = this.byKey.get(tupleKey(t));
    if (hit === undefined) return undefined;
    if (hit.entry.expiresMs <= nowMs || hit.entry.dying) {
      this.remove(hit.entry);
      return undefined;
    }
    return hit;
  }

  /**
   * `nf_conntrack_tuple_taken`: whether a confirmed live entry other than `ignore` already uses
   * `t` as one of its tuples. NAT uses it to keep reply tuples unique.
   */
  isTaken(t: Tuple, ignore: CtEntry | null, nowMs: number): boolean {
    const hit = this.find(t, nowMs);
    return hit !== undefined && hit.entry !== ignore;
  }

  /**
   * Inserts an unconfirmed entry (`__nf_conntrack_confirm`). Fails, leaving the table unchanged,
   * when another live entry already holds either tuple (the kernel's `insert_failed`, which drops
   * the packet).
   */
  confirm(e: CtEntry, nowMs: number): boolean {
    if (e.confirmed) return true;
    const ko = tupleKey(e.orig);
    const kr = tupleKey(e.reply);
    if (this.find(e.orig, nowMs) !== undefined || this.find(e.reply, nowMs) !== undefined) return false;
    e.confirmed = true;
    this.byKey.set(ko, { entry: e, dir: 'original' });
    this.byKey.set(kr, { entry: e, dir: 'reply' });
    this.byId.set(e.id, e);
    if (e.srcNat) {
      const k = sourceKey(e.orig.proto, e.orig.src, e.orig.sport);
      const list = this.bySource.get(k);
      if (list === undefined) this.bySource.set(k, [e]);
      else list.push(e);
    }
    return true;
  }

  /** Live source-NATed entries whose original source is (`proto`, `src`, `sport`), oldest first. */
  findBySource(proto: number, src: Ipv4, sport: number, nowMs: number): readonly CtEntry[] {
    const list = this.bySource.get(sourceKey(proto, src, sport));
    if (list === undefined) return [];
    return list.filter((e) => !e.dying && e.expiresMs > nowMs);
  }

  remove(e: CtEntry): void {
    e.dying = true;
    if (!this.byId.has(e.id)) return;
    this.byId.delete(e.id);
    if (e.srcNat) {
      const k = sourceKey(e.orig.proto, e.orig.src, e.orig.sport);
      const list = this.bySource.get(k);
      if (list !== undefined) {
        const rest = list.filter((x) => x !== e);
        if (rest.length === 0) this.bySource.delete(k);
        else this.bySource.set(k, rest);
      }
    }
    const ko = tupleKey(e.orig);
    const kr = tupleKey(e.reply);
    if (this.byKey.get(ko)?.entry === e) this.byKey.delete(ko);
    if (this.byKey.get(kr)?.entry === e) this.byKey.delete(kr);
  }

  /** Drops every entry whose deadline is at or before `nowMs`. */
  expire(nowMs: number): void {
    for (const e of [...this.byId.values()]) if (e.expiresMs <= nowMs || e.dying) this.remove(e);
  }

  /** Live entries in creation order. */
  list(nowMs: number): readonly CtEntry[] {
    this.expire(nowMs);
    return [...this.byId.values()].sort((a, b) => a.id - b.id);
  }

  /** Removes every entry (`conntrack -F`). */
  flush(): void {
    for (const e of this.byId.values()) e.dying = true;
    this.byId.clear();
    this.byKey.clear();
    this.bySource.clear();
  }

  /** A deep copy (entries copied), for snapshots and forks. */
  clone(): ConntrackTable {
    const c = new ConntrackTable();
    c.nextId = this.nextId;
    for (const e of this.byId.values()) {
      const copy: CtEntry = { ...e, confirmed: false };
      c.confirm(copy, -Infinity);
    }
    return c;
  }
}

const PROTO_NAMES: { readonly [p: number]: string } = { 1: 'icmp', 6: 'tcp', 17: 'udp', 132: 'sctp' };

export function protoName(p: number): string {
  return PROTO_NAMES[p] ?? 'unknown';
}

function tupleText(t: Tuple): string {
  const ports =
    t.proto === 6 || t.proto === 17 ? ` sport=${t.sport} dport=${t.dport}` : t.proto === PROTO_ICMP_NUM ? ` type=${t.dport >>> 8} code=${t.dport & 0xff} id=${t.sport}` : '';
  return `src=${formatIpv4(t.src)} dst=${formatIpv4(t.dst)}${ports}`;
}

/**
 * One entry as `conntrack -L` prints it (conntrack-tools 1.4.7), e.g.
 * `tcp      6 431999 ESTABLISHED src=… dst=… sport=… dport=… src=… … [ASSURED] mark=0 use=1`, or
 * `icmp     1 29 src=… dst=… type=8 code=0 id=7 [UNREPLIED] src=… dst=… type=0 code=0 id=7 mark=0 use=1`.
 * The timeout column is the whole seconds left at `nowMs`, as the kernel reports it.
 */
export function formatCtEntry(e: CtEntry, nowMs: number): string {
  const left = Math.max(0, Math.floor((e.expiresMs - nowMs) / 1000));
  const name = protoName(e.orig.proto);
  const state = e.tcpState !== null && e.tcpState !== 'NONE' ? `${e.tcpState} ` : '';
  const unreplied = e.seenReply ? '' : '[UNREPLIED] ';
  const assured = e.assured ? '[ASSURED] ' : '';
  return `${name.padEnd(8)} ${e.orig.proto} ${left} ${state}${tupleText(e.orig)} ${unreplied}${tupleText(e.reply)} ${assured}mark=${e.mark} use=1`;
}
