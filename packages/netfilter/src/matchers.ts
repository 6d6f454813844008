/**
 * Compiles each `-m` module of a rule into a closure over plain numbers, evaluated as the kernel's
 * xt match evaluates it. Closures read the packet and the walk's mutable state (mark, conntrack
 * bits) and return {@link MATCH}, {@link NOMATCH} or {@link UNDECIDED}; nothing is parsed or
 * looked up by name per packet.
 *
 * @internal
 */
import type { EvalContext, NatRequest, Packet } from './evalTypes.ts';
import { matchModuleOfKind } from './matches.ts';
import { recentMatches } from './recent.ts';
import * as S from './statistic.ts';
import type { AddrType, CtState, Match, Rule } from './types.ts';

export const NOMATCH = 0;
export const MATCH = 1;
/** The module cannot be decided here; `walk.why` says what. */
export const UNDECIDED = 2;
export type MatchResult = typeof NOMATCH | typeof MATCH | typeof UNDECIDED;

/** Conntrack state bits as xt_conntrack computes them (`statebit`). */
export const CT_INVALID = 1;
export const CT_NEW = 2;
export const CT_ESTABLISHED = 4;
export const CT_RELATED = 8;
export const CT_UNTRACKED = 16;
export const CT_SNAT = 32;
export const CT_DNAT = 64;

// Local copies: module transforms turn each access to an imported function into a getter call.
const statisticNthMatches = S.statisticNthMatches;
const statisticRandomMatches = S.statisticRandomMatches;

const CT_BIT: { readonly [S in CtState]: number } = {
  INVALID: CT_INVALID,
  NEW: CT_NEW,
  ESTABLISHED: CT_ESTABLISHED,
  RELATED: CT_RELATED,
  UNTRACKED: CT_UNTRACKED,
  SNAT: CT_SNAT,
  DNAT: CT_DNAT,
};

/** The mutable state of one walk that matchers and targets read and write. @internal */
export interface Walk {
  packet: Packet;
  readonly ctx: EvalContext;
  /** skb->mark now. */
  mark: number;
  /** ct->mark now (meaningful only when `hasCt`). */
  ctmark: number;
  /** Conntrack state bits incl. SNAT/DNAT status, as `--ctstate` tests them. */
  ctBits: number;
  /** The packet has a conntrack entry (CONNMARK acts only then). */
  hasCt: boolean;
  notrack: boolean;
  traced: boolean;
  /** The NAT the nat table's terminal target asked for. */
  nat: NatRequest | null;
  /** Set by a matcher returning UNDECIDED: what could not be decided. */
  why: string;
  /** The first undecidable module of the rule being tested: its name and position. */
  unknownWhy: string;
  unknownAt: number;
  /** What every undecidable module of that rule said (reused: `undecidedCount` entries). */
  readonly undecided: string[];
  undecidedCount: number;
}

export interface ModTest {
  readonly test: (w: Walk) => MatchResult;
  /** Evaluating it changes state (draws from the PRNG, advances a counter). */
  readonly sideEffect: boolean;
  /** It may return UNDECIDED. */
  readonly undecidable: boolean;
}

const ADDR_TYPE_BIT: { readonly [T in AddrType]: number } = {
  UNSPEC: 1 << 0,
  UNICAST: 1 << 1,
  LOCAL: 1 << 2,
  BROADCAST: 1 << 3,
  ANYCAST: 1 << 4,
  MULTICAST: 1 << 5,
  BLACKHOLE: 1 << 6,
  UNREACHABLE: 1 << 7,
  PROHIBIT: 1 << 8,
  THROW: 1 << 9,
  NAT: 1 << 10,
  XRESOLVE: 1 << 11,
};

function typeMask(types: readonly AddrType[]): number {
  let m = 0;
  for (const t of types) m |= ADDR_TYPE_BIT[t];
  return m;
}

function ctMask(states: readonly CtState[]): number {
  let m = 0;
  for (const s of states) m |= CT_BIT[s];
  return m;
}

/** Protocols whose header starts with 16-bit source and destination ports (multiport's list). */
function hasPorts(proto: number): boolean {
  return proto === 6 || proto === 17 || proto === 132 || proto === 136 || proto === 33;
}

function undecided(why: string): ModTest {
  return {
    test: (w) => {
      w.why = why;
      return UNDECIDED;
    },
    sideEffect: false,
    undecidable: true,
  };
}

/**
 * `-m sctp` / `-m dccp` with only `--sport`/`--dport` (and their long spellings, each maybe
 * negated): xt_sctp/xt_dccp compare the ports of a first fragment of their protocol exactly as
 * tcp/udp do. Other options (`--chunk-types`, `--dccp-types`…) return null: not decided here.
 */
function portOnlyTest(proto: number, args: readonly string[]): ModTest | null {
  let sFrom = 0;
  let sTo = 65535;
  let sNeg = false;
  let dFrom = 0;
  let dTo = 65535;
  let dNeg = false;
  for (let i = 0; i < args.length; i++) {
    let neg = false;
    if (args[i] === '!') {
      neg = true;
      i++;
    }
    const opt = args[i];
    const value = args[i + 1];
    if (value === undefined) return null;
    const m = /^(\d+)(?::(\d+))?$/.exec(value);
    if (m === null) return null;
    const from = Number(m[1]);
    const to = m[2] === undefined ? from : Number(m[2]);
    if (opt === '--sport' || opt === '--source-port') {
      [sFrom, sTo, sNeg] = [from, to, neg];
    } else if (opt === '--dport' || opt === '--destination-port') {
      [dFrom, dTo, dNeg] = [from, to, neg];
    } else return null;
    i++;
  }
  return {
    test: (w) => {
      const p = w.packet;
      if (p.proto !== proto || p.fragment) return NOMATCH;
      if ((p.sport >= sFrom && p.sport <= sTo) === sNeg) return NOMATCH;
      if ((p.dport >= dFrom && p.dport <= dTo) === dNeg) return NOMATCH;
      return MATCH;
    },
    sideEffect: false,
    undecidable: false,
  };
}

/**
 * The closure for one module of `rule`, or `null` for modules that always match (`comment`).
 */
export function compileMatch(m: Match, rule: Rule): ModTest | null {
  const own = matchModuleOfKind(m.kind)?.compile;
  if (own !== undefined) return own(m, rule);
  switch (m.kind) {
    case 'tcp':
    case 'udp': {
      const proto = m.kind === 'tcp' ? 6 : 17;
      const s = m.sport;
      const d = m.dport;
      const sFrom = s?.range.from ?? 0;
      const sTo = s?.range.to ?? 65535;
      const sNeg = s?.negate ?? false;
      const dFrom = d?.range.from ?? 0;
      const dTo = d?.range.to ?? 65535;
      const dNeg = d?.negate ?? false;
      const flags = m.kind === 'tcp' ? m.flags : undefined;
      const fMask = flags?.mask ?? 0;
      const fComp = flags?.comp ?? 0;
      const fNeg = flags?.negate ?? false;
      const option = m.kind === 'tcp' && m.option !== undefined;
      // tcp_mt/udp_mt: a non-first fragment has no transport header: no match.
      return {
        test: (w) => {
          const p = w.packet;
          if (p.proto !== proto || p.fragment) return NOMATCH;
          if ((p.sport >= sFrom && p.sport <= sTo) === sNeg) return NOMATCH;
          if ((p.dport >= dFrom && p.dport <= dTo) === dNeg) return NOMATCH;
          if (((p.tcpFlags & fMask) === fComp) === fNeg) return NOMATCH;
          if (option) {
            w.why = 'tcp --tcp-option';
            return UNDECIDED;
          }
          return MATCH;
        },
        sideEffect: false,
        undecidable: option,
      };
    }
    case 'multiport': {
      const n = m.ports.length;
      const from = new Int32Array(n);
      const to = new Int32Array(n);
      m.ports.forEach((r, i) => {
        from[i] = r.from;
        to[i] = r.to;
      });
      const src = m.which !== 'dports';
      const dst = m.which !== 'sports';
      const negate = m.negate;
      return {
        test: (w) => {
          const p = w.packet;
          if (!hasPorts(p.proto) || p.fragment) return NOMATCH;
          let hit = false;
          for (let i = 0; i < n; i++) {
            const lo = from[i] as number;
            const hi = to[i] as number;
            if ((src && p.sport >= lo && p.sport <= hi) || (dst && p.dport >= lo && p.dport <= hi)) {
              hit = true;
              break;
            }
          }
          return hit !== negate ? MATCH : NOMATCH;
        },
        sideEffect: false,
        undecidable: false,
      };
    }
    case 'conntrack': {
      const cs = m.ctstate;
      const mask = cs === undefined ? 0 : ctMask(cs.states);
      const negate = cs?.negate ?? false;
      const has = cs !== undefined;
      const extra = m.extra !== undefined && m.extra.length > 0 ? `conntrack ${m.extra.join(' ')}` : undefined;
      return {
        test: (w) => {
          if (has && ((w.ctBits & mask) !== 0) === negate) return NOMATCH;
          if (extra !== undefined) {
            w.why = extra;
            return UNDECIDED;
          }
          return MATCH;
        },
        sideEffect: false,
        undecidable: extra !== undefined,
      };
    }
    case 'state': {
      // xt_state sees no NAT pseudo-states.
      const mask = ctMask(m.states);
      const negate = m.negate;
      return {
        test: (w) => (((w.ctBits & mask & 31) !== 0) !== negate ? MATCH : NOMATCH),
        sideEffect: false,
        undecidable: false,
      };
    }
    case 'addrtype': {
      const srcMask = m.src === undefined ? 0 : typeMask(m.src.types);
      const srcNeg = m.src?.negate ?? false;
      const hasSrc = m.src !== undefined;
      const dstMask = m.dst === undefined ? 0 : typeMask(m.dst.types);
      const dstNeg = m.dst?.negate ?? false;
      const hasDst = m.dst !== undefined;
      const limitIn = m.limitIfaceIn;
      const limitOut = m.limitIfaceOut;
      return {
        test: (w) => {
          const p = w.packet;
          const dev = limitIn ? p.inIface : limitOut ? p.outIface : null;
          if (hasSrc && ((ADDR_TYPE_BIT[w.ctx.addrType(p.src, dev)] & srcMask) !== 0) === srcNeg) return NOMATCH;
          if (hasDst && ((ADDR_TYPE_BIT[w.ctx.addrType(p.dst, dev)] & dstMask) !== 0) === dstNeg) return NOMATCH;
          return MATCH;
        },
        sideEffect: false,
        undecidable: false,
      };
    }
    case 'statistic': {
      const negate = m.negate;
      if (m.mode === 'random') {
        if (m.probability === undefined) return undecided('statistic --mode random without --probability');
        const threshold = m.probability.threshold31;
        return {
          test: (w) => (statisticRandomMatches(threshold, negate, w.ctx.random31(threshold)) ? MATCH : NOMATCH),
          sideEffect: true,
          undecidable: false,
        };
      }
      const every = m.every ?? 0;
      const packet = m.packet ?? 0;
      if (every < 1) return undecided('statistic --mode nth without a valid --every');
      return {
        test: (w) => (statisticNthMatches(w.ctx.state, rule, every, packet, negate) ? MATCH : NOMATCH),
        sideEffect: true,
        undecidable: false,
      };
    }
    case 'set': {
      const { setName, flags, negate } = m;
      if (m.extra !== undefined && m.extra.length > 0) return undecided(`set ${m.extra.join(' ')}`);
      const missing = `set "${setName}" (no such ipset)`;
      return {
        test: (w) => {
          const has = w.ctx.ipsetHas?.(setName, flags, w.packet);
          if (has === undefined) {
            w.why = missing;
            return UNDECIDED;
          }
          return has !== negate ? MATCH : NOMATCH;
        },
        sideEffect: false,
        undecidable: true,
      };
    }
    case 'recent': {
      const dest = m.side === 'dest';
      return {
        test: (w) => {
          const p = w.packet;
          // xt_recent compares the TTL as it was before forwarding decremented it.
          const ttl = (p.ttl ?? 64) + (p.inIface !== null && p.outIface !== null ? 1 : 0);
          const input = { addr: dest ? p.dst : p.src, ttl, nowMs: w.ctx.nowMs ?? 0 };
          return recentMatches(w.ctx.state.recent, m, input) ? MATCH : NOMATCH;
        },
        sideEffect: true,
        undecidable: false,
      };
    }
    case 'unknown':
      if (m.module === 'sctp' || m.module === 'dccp') {
        const ports = portOnlyTest(m.module === 'sctp' ? 132 : 33, m.args);
        if (ports !== null) return ports;
      }
      // nfacct only counts (a quota lives in the accounting object, which netsim does not model).
      if (m.module === 'nfacct') return null;
      return undecided(m.module);
    case 'mark':
    case 'iprange':
    case 'icmp':
    case 'comment':
      throw new Error(`${m.kind} is compiled by its module`);
  }
}
