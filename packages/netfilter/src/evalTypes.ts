/**
 * The evaluation contract: what a caller (the host datapath, the trace CLI) hands to the chain
 * evaluator and what it gets back. The evaluator is pure apart from the PRNG and the `nth`
 * counters, both owned by the caller through {@link EvalContext}.
 */
import type { AddrType, CtState, Hook, Ipv4, NatRange, PortRange, RejectWith, TableName } from './types.ts';

/** A packet as netfilter sees it at a hook. Ports are 0 for protocols without ports. */
export interface Packet {
  readonly src: Ipv4;
  readonly dst: Ipv4;
  /** IP protocol number: 1 icmp, 6 tcp, 17 udp. */
  readonly proto: number;
  readonly sport: number;
  readonly dport: number;
  /** TCP flag bits (FIN=0x01, SYN=0x02, RST=0x04, PSH=0x08, ACK=0x10, URG=0x20, ECE=0x40, CWR=0x80). */
  readonly tcpFlags: number;
  readonly icmpType: number;
  readonly icmpCode: number;
  /** Incoming interface (PREROUTING, INPUT, FORWARD) or null. */
  readonly inIface: string | null;
  /** Outgoing interface (FORWARD, OUTPUT after routing, POSTROUTING) or null. */
  readonly outIface: string | null;
  /** skb->mark as the packet enters this evaluation. */
  readonly mark: number;
  readonly lengthBytes: number;
  /** A non-first fragment (`-f`). */
  readonly fragment: boolean;
}

/** What conntrack knows about the packet's connection at this point. */
export interface ConntrackView {
  /** INVALID, NEW, ESTABLISHED, RELATED or UNTRACKED (as `--ctstate` sees it). */
  readonly state: Exclude<CtState, 'SNAT' | 'DNAT'>;
  /** The connection has destination NAT (`--ctstate DNAT`). */
  readonly dnat: boolean;
  /** The connection has source NAT (`--ctstate SNAT`). */
  readonly snat: boolean;
  /** ct->mark, for CONNMARK. */
  readonly ctmark: number;
}

/** Per-caller mutable state the evaluator may advance: `statistic --mode nth` counters. */
export interface EvalState {
  /** Keyed by the rule's stable id within a compiled ruleset. */
  readonly nthCounters: Map<string, number>;
}

export interface EvalContext {
  /**
   * The routing type of an address as `addrtype` asks the kernel (`LOCAL` for the host's own
   * addresses, `BROADCAST`, `MULTICAST`, else `UNICAST`). `iface` is given for
   * `--limit-iface-in/out`: then only addresses local to that interface count as LOCAL.
   */
  addrType(addr: Ipv4, iface: string | null): AddrType;
  readonly conntrack: ConntrackView;
  /**
   * ipset membership for `-m set`: `true`/`false`, or `undefined` when no set has that name
   * (the real kernel refuses such a rule; a trace reports it as unknown).
   */
  ipsetHas?(name: string, dims: readonly ('src' | 'dst')[], packet: Packet): boolean | undefined;
  /** A uniform draw in [0, 2^31) from the seeded PRNG, for `statistic --mode random`. */
  random31(): number;
  readonly state: EvalState;
}

/** The verdict of one table's walk (or a whole hook). */
export type Verdict =
  | { readonly kind: 'ACCEPT' }
  | { readonly kind: 'DROP'; readonly byPolicy: boolean }
  | { readonly kind: 'REJECT'; readonly with: RejectWith }
  /** A rule could not be decided (unknown match or target): the fate is not known. */
  | { readonly kind: 'unknown'; readonly reason: string };

/** The NAT a nat-table walk asked for (its terminal target); absent means "no NAT" binding. */
export type NatRequest =
  | { readonly kind: 'DNAT'; readonly to?: NatRange; readonly random: boolean; readonly persistent: boolean }
  | {
      readonly kind: 'SNAT';
      readonly to?: NatRange;
      readonly random: boolean;
      readonly randomFully: boolean;
      readonly persistent: boolean;
    }
  | {
      readonly kind: 'MASQUERADE';
      readonly toPorts?: PortRange;
      readonly random: boolean;
      readonly randomFully: boolean;
    };

export type RuleOutcome = 'match' | 'nomatch' | 'unknown';

/** One step of the walk, in the order it happened. `index` is 1-based within the chain. */
export type EvalTraceEntry =
  | {
      readonly kind: 'rule';
      readonly table: TableName;
      readonly chain: string;
      readonly index: number;
      readonly outcome: RuleOutcome;
      /** For `unknown`: which module or target could not be decided. */
      readonly unknown?: string;
    }
  | { readonly kind: 'policy'; readonly table: TableName; readonly chain: Hook; readonly policy: 'ACCEPT' | 'DROP' }
  /** Fell off the end of a user chain (or RETURN): back to the caller. */
  | { readonly kind: 'return'; readonly table: TableName; readonly chain: string };

export interface EvalResult {
  readonly verdict: Verdict;
  readonly nat?: NatRequest;
  /** skb->mark after the walk. */
  readonly mark: number;
  /** ct->mark after the walk (CONNMARK). */
  readonly ctmark: number;
  /** NOTRACK / CT --notrack was hit (raw table). */
  readonly notrack: boolean;
  /** TRACE target was hit. */
  readonly traced: boolean;
  readonly trace: readonly EvalTraceEntry[];
}

/** How a rule whose known matches all match but which has an unknown match is treated. */
export type UnknownPolicy = 'stop' | 'assume-match' | 'assume-nomatch';
