/**
 * What a match module's evaluation is compiled into: a closure over plain numbers, evaluated as
 * the kernel's xt match evaluates it. Closures read the packet and the walk's mutable state (mark,
 * conntrack bits) and return {@link MATCH}, {@link NOMATCH} or {@link UNDECIDED}; nothing is
 * parsed or looked up by name per packet. Each module compiles its own (`MatchModule.compile`).
 *
 * @internal
 */
import type { EvalContext, NatRequest, Packet } from './evalTypes.ts';

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

/** A module netsim cannot decide here: every packet reaching it is undecided, saying `why`. */
export function undecided(why: string): ModTest {
  return {
    test: (w) => {
      w.why = why;
      return UNDECIDED;
    },
    sideEffect: false,
    undecidable: true,
  };
}
