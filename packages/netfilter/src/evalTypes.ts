/**
 * The evaluation contract: what a caller (the host datapath, the trace CLI) hands to the chain
 * evaluator and what it gets back. The evaluator is pure apart from the PRNG and the `nth`
 * counters, both owned by the caller through {@link EvalContext}.
 */
import type { RecentLists } from './xt/recent.ts';
import type { AddrType, CtState, Hook, Ipv4, NatRange, PortRange, RejectWith, Rule, TableName } from './types.ts';

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
  /** The IP TTL as the hook sees it (`recent --rttl`); 64 when absent. */
  readonly ttl?: number;
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

/**
 * Per-caller mutable state the evaluator may advance: `statistic --mode nth` counters.
 * Make one with `createEvalState()` and keep it for as long as the rules live (one per host).
 */
export interface EvalState {
  /**
   * Packets seen so far by each `nth` rule, keyed by the {@link Rule} object. The kernel keeps
   * one counter per rule instance: a rule re-added by a restore starts again from zero, an
   * untouched rule keeps counting. Immutable updates that keep untouched rules (immer's
   * structural sharing) give exactly that, and a WeakMap lets replaced rules be collected.
   */
  readonly nthCounters: WeakMap<Rule, number>;
  /** The host's `-m recent` lists by name (`/proc/net/xt_recent/NAME`). */
  readonly recent: RecentLists;
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
  /**
   * A uniform draw in [0, 2^31) from the seeded PRNG, for `statistic --mode random`. The evaluator
   * passes the 31-bit threshold the draw is compared against (`draw < threshold31` matches, before
   * `!`): a seeded source ignores it; `allBranches` uses it to enumerate both outcomes with their
   * exact probabilities.
   */
  random31(threshold31?: number): number;
  readonly state: EvalState;
  /** The simulated clock in milliseconds, for `-m recent` timestamps; 0 when absent. */
  readonly nowMs?: number;
}

/** A rule by position: `index` is 1-based within the chain, as `iptables -L --line-numbers` counts. */
export interface RuleRef {
  readonly table: TableName;
  readonly chain: string;
  readonly index: number;
}

/** The verdict of one table's walk (or a whole hook). */
export type Verdict =
  | { readonly kind: 'ACCEPT' }
  | { readonly kind: 'DROP'; readonly byPolicy: boolean }
  | { readonly kind: 'REJECT'; readonly with: RejectWith }
  /**
   * A rule could not be decided (unknown match or target, jump to a missing chain, chain nesting
   * the kernel would refuse): the fate is not known. `at` is that rule; `reason` says why in words.
   */
  | { readonly kind: 'unknown'; readonly reason: string; readonly at: RuleRef };

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
      /**
       * What could not be decided: for outcome `unknown` the first undecidable match (`recent`,
       * `tcp --tcp-option`, `set "X" (no such set)`…); for outcome `match` an unknown target
       * (`target TPROXY`) or a jump that cannot be followed.
       */
      readonly unknown?: string;
      /**
       * For outcome `unknown` under an {@link UnknownPolicy} other than `stop`: how the walk went
       * on. `match` under `assume-nomatch` never happens; `nomatch` under `assume-match` happens
       * when a `statistic` match after the unknown one then failed.
       */
      readonly assumed?: 'match' | 'nomatch';
    }
  /**
   * Rules `from`..`to` (1-based, inclusive) of a chain were passed over by the dispatch index: each
   * pins `-d`, `-p` and/or `--dport` to a value this packet does not have, so each is `nomatch`
   * exactly as a linear scan would have recorded it (nothing is drawn or counted for them either).
   */
  | { readonly kind: 'skip'; readonly table: TableName; readonly chain: string; readonly from: number; readonly to: number }
  | { readonly kind: 'policy'; readonly table: TableName; readonly chain: Hook; readonly policy: 'ACCEPT' | 'DROP' }
  /** Left a chain back to its caller: fell off the end of a user chain, or a RETURN rule matched. */
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

/**
 * How a rule whose known matches all match but which has an unknown match is treated: `stop`
 * ends the walk with an `unknown` verdict naming the rule and module (the default);
 * `assume-match`/`assume-nomatch` go on as if it had (not) matched. Every case is in the trace.
 */
export type UnknownPolicy = 'stop' | 'assume-match' | 'assume-nomatch';

/** Options of `evaluateTable` and `evaluateHook`. */
export interface EvalOptions {
  /** Default `stop`. */
  readonly unknown?: UnknownPolicy;
  /**
   * Per-module policies that override `unknown` for an undecidable match of that module, keyed by
   * module name as the trace's `unknown` text starts (`rpfilter`, `socket`, `set`, `conntrack`,
   * `tcp` for `--tcp-option`…). E.g. `{ rpfilter: 'assume-match' }` with `unknown: 'stop'`.
   * A rule with several undecidable modules does not match when one of them is assumed not to;
   * otherwise it stops when one of them stops; otherwise it is assumed to match.
   */
  readonly unknownModules?: Readonly<Record<string, UnknownPolicy>>;
  /**
   * Record the trace (default `true`). With `false` the result's `trace` is empty and the walk
   * allocates nothing per rule: for callers that only need the verdict.
   */
  readonly trace?: boolean;
}

/** Options of `evaluateHook`. */
export interface HookEvalOptions extends EvalOptions {
  /**
   * Skip the nat table: only a connection's first packet traverses nat chains; later packets
   * reuse the binding conntrack stored. The nat table is also skipped, whatever this says, for a
   * packet without a conntrack entry (INVALID, UNTRACKED, or NOTRACK set by the raw table).
   */
  readonly skipNat?: boolean;
  /**
   * What the raw table sees: it runs before conntrack (priority -300 vs -200), so for a packet
   * off the wire there is no entry yet and `--ctstate` sees INVALID (the default). A packet
   * looped back through `lo` still carries the entry its sender's OUTPUT attached.
   */
  readonly rawConntrack?: ConntrackView;
  /**
   * In OUTPUT the filter table runs after nat: it sees the packet as DNAT rewrote it and, when
   * the rewrite changed the destination, the connection with `--ctstate DNAT` (a DNAT to the
   * address and port the packet already has is a null binding in the kernel: no DNAT status).
   * This maps the packet through the NAT the nat table chose;
   * the default takes the first address and port of the range, which is exact for the single
   * address (and port) every common rule gives. The host datapath passes its own NAT mapping.
   */
  readonly natRewrite?: (packet: Packet, nat: NatRequest) => Packet;
}
