/**
 * The netfilter data model: rules as plain, immutable data.
 *
 * A {@link Ruleset} holds tables; a table holds chains (built-in ones with a policy, user chains
 * without); a chain holds {@link Rule}s. A rule is the IP-header part every iptables rule has
 * (`-s -d -i -o -p -f`), then the `-m` modules in the order given, then an optional target.
 * Matches and targets are discriminated unions tagged by `kind`. Everything here is data: parsing,
 * formatting, restore, argv execution and evaluation are functions over it.
 *
 * IPv4 addresses are unsigned 32-bit integers (see `ip.ts`) so that matching is integer work.
 */

/** An IPv4 address as an unsigned 32-bit integer (0..2^32-1). Build with `parseIpv4`/`ipv4`. */
export type Ipv4 = number & { readonly __brand: 'Ipv4' };

/** `addr/prefix`, with `addr` already masked to the prefix (iptables masks on input). */
export interface Cidr {
  readonly addr: Ipv4;
  readonly prefix: number;
}

export type TableName = 'raw' | 'mangle' | 'nat' | 'filter';
export const TABLE_NAMES: readonly TableName[] = ['raw', 'mangle', 'nat', 'filter'];

export type Hook = 'PREROUTING' | 'INPUT' | 'FORWARD' | 'OUTPUT' | 'POSTROUTING';
export const HOOKS: readonly Hook[] = ['PREROUTING', 'INPUT', 'FORWARD', 'OUTPUT', 'POSTROUTING'];

/** Built-in chains of each table, in the order `iptables-save` prints them. */
export const BUILTIN_CHAINS: { readonly [T in TableName]: readonly Hook[] } = {
  raw: ['PREROUTING', 'OUTPUT'],
  mangle: ['PREROUTING', 'INPUT', 'FORWARD', 'OUTPUT', 'POSTROUTING'],
  nat: ['PREROUTING', 'INPUT', 'OUTPUT', 'POSTROUTING'],
  filter: ['INPUT', 'FORWARD', 'OUTPUT'],
};

export type Policy = 'ACCEPT' | 'DROP';

export interface Counters {
  readonly packets: number;
  readonly bytes: number;
}

/** Something that may be inverted with `!`. */
export interface Negatable {
  readonly negate: boolean;
}

export interface AddrMatch extends Negatable {
  readonly cidr: Cidr;
}

/** `-i`/`-o`: `name` without the trailing `+`; `wildcard` when the `+` was given. */
export interface IfaceMatch extends Negatable {
  readonly name: string;
  readonly wildcard: boolean;
}

/** `-p`: protocol number (0 = all). `name` keeps how the user spelled it for round trips. */
export interface ProtoMatch extends Negatable {
  readonly proto: number;
}

/** An inclusive port range; a single port has `from === to`. */
export interface PortRange {
  readonly from: number;
  readonly to: number;
}

export interface PortMatch extends Negatable {
  readonly range: PortRange;
}

export type TcpFlag = 'FIN' | 'SYN' | 'RST' | 'PSH' | 'ACK' | 'URG' | 'ECE' | 'CWR';

export interface TcpFlagsMatch extends Negatable {
  /** Bit set (FIN=0x01 … CWR=0x80) of flags to examine. */
  readonly mask: number;
  /** Bit set of flags that must be set among `mask`. */
  readonly comp: number;
}

/** Conntrack states as `--ctstate` names them (`state` accepts the first four and UNTRACKED). */
export type CtState = 'INVALID' | 'NEW' | 'ESTABLISHED' | 'RELATED' | 'UNTRACKED' | 'SNAT' | 'DNAT';

export type AddrType =
  | 'UNSPEC'
  | 'UNICAST'
  | 'LOCAL'
  | 'BROADCAST'
  | 'ANYCAST'
  | 'MULTICAST'
  | 'BLACKHOLE'
  | 'UNREACHABLE'
  | 'PROHIBIT'
  | 'THROW'
  | 'NAT'
  | 'XRESOLVE';

export interface AddrTypeSel extends Negatable {
  readonly types: readonly AddrType[];
}

/** One `-m` module with its options. Unknown modules keep their argv tokens verbatim. */
export type Match =
  | {
      readonly kind: 'tcp';
      readonly sport?: PortMatch;
      readonly dport?: PortMatch;
      readonly flags?: TcpFlagsMatch;
      /** `--tcp-option N`, kept for round trips; evaluated as unknown. */
      readonly option?: Negatable & { readonly value: number };
    }
  | { readonly kind: 'udp'; readonly sport?: PortMatch; readonly dport?: PortMatch }
  | {
      readonly kind: 'icmp';
      /** `type` 0..255, or 255 with `any` for `--icmp-type any`; `code` absent for "any code". */
      readonly icmp: Negatable & { readonly type: number; readonly code?: PortRange; readonly any?: boolean };
    }
  | {
      readonly kind: 'multiport';
      readonly which: 'sports' | 'dports' | 'ports';
      readonly ports: readonly PortRange[];
      readonly negate: boolean;
    }
  | { readonly kind: 'comment'; readonly comment: string }
  | { readonly kind: 'mark'; readonly value: number; readonly mask: number; readonly negate: boolean }
  | {
      readonly kind: 'conntrack';
      readonly ctstate?: Negatable & { readonly states: readonly CtState[] };
      /** Other conntrack options (`--ctorigdst`, `--ctstatus`, …) kept verbatim; evaluated as unknown. */
      readonly extra?: readonly string[];
    }
  | { readonly kind: 'state'; readonly states: readonly CtState[]; readonly negate: boolean }
  | {
      readonly kind: 'addrtype';
      readonly src?: AddrTypeSel;
      readonly dst?: AddrTypeSel;
      readonly limitIfaceIn: boolean;
      readonly limitIfaceOut: boolean;
    }
  | {
      readonly kind: 'statistic';
      readonly mode: 'random' | 'nth';
      /** random: probability as printed (`%.11f` in iptables-save) and as kernel 31-bit threshold. */
      readonly probability?: { readonly text: string; readonly threshold31: number };
      /** nth: `--every`, `--packet` (0-based start). */
      readonly every?: number;
      readonly packet?: number;
      readonly negate: boolean;
    }
  | {
      readonly kind: 'set';
      readonly setName: string;
      /** `src`/`dst` per dimension of the set, as in `--match-set NAME src,dst`. */
      readonly flags: readonly ('src' | 'dst')[];
      readonly negate: boolean;
      /** Further options (`--return-nomatch`, counters, …) verbatim; evaluated as unknown when present. */
      readonly extra?: readonly string[];
    }
  | {
      readonly kind: 'iprange';
      readonly srcRange?: Negatable & { readonly from: Ipv4; readonly to: Ipv4 };
      readonly dstRange?: Negatable & { readonly from: Ipv4; readonly to: Ipv4 };
    }
  | RecentMatch
  | {
      /** A module netsim parses and prints but does not evaluate: reported as `unknown` in traces. */
      readonly kind: 'unknown';
      readonly module: string;
      /** The option tokens after `-m module`, in canonical printed form, unquoted. */
      readonly args: readonly string[];
    };

export type MatchKind = Match['kind'];

/**
 * `-m recent`: a per-host list of addresses, by name, with the times each was seen. `mode` is
 * what the rule does with the packet's address (`--set` adds or refreshes it, `--rcheck` tests
 * it, `--update` tests and refreshes it, `--remove` tests and removes it).
 */
export interface RecentMatch {
  readonly kind: 'recent';
  readonly mode: 'set' | 'rcheck' | 'update' | 'remove';
  readonly negate: boolean;
  /** `--seconds`: only timestamps this recent count (1..2^32-1); absent: any age. */
  readonly seconds?: number;
  /** `--reap`: drop the list's oldest entry when it has aged out (needs `seconds`). */
  readonly reap: boolean;
  /** `--hitcount`: at least this many timestamps (0 = absent, as the kernel stores it). */
  readonly hitcount: number;
  /** `--rttl`: the entry must also have been seen with this packet's TTL. */
  readonly rttl: boolean;
  /** `--name`, default `DEFAULT`, at most 199 characters (the tool cuts longer ones). */
  readonly name: string;
  /** `--mask`: applied to the address before it is looked up or stored. */
  readonly mask: Ipv4;
  /** `--rsource` (default) or `--rdest`. */
  readonly side: 'source' | 'dest';
}

/** `--to-destination`/`--to-source`: `ip[-ip][:port[-port]]`; either side may be absent. */
export interface NatRange {
  readonly minIp?: Ipv4;
  readonly maxIp?: Ipv4;
  readonly minPort?: number;
  readonly maxPort?: number;
}

export type RejectWith =
  | 'icmp-net-unreachable'
  | 'icmp-host-unreachable'
  | 'icmp-port-unreachable'
  | 'icmp-proto-unreachable'
  | 'icmp-net-prohibited'
  | 'icmp-host-prohibited'
  | 'icmp-admin-prohibited'
  | 'tcp-reset';

/** The ICMP destination-unreachable code (type 3) each ICMP `--reject-with` answers with, as ipt_REJECT sends it. */
export const REJECT_ICMP_CODE: { readonly [W in Exclude<RejectWith, 'tcp-reset'>]: number } = {
  'icmp-net-unreachable': 0,
  'icmp-host-unreachable': 1,
  'icmp-proto-unreachable': 2,
  'icmp-port-unreachable': 3,
  'icmp-net-prohibited': 9,
  'icmp-host-prohibited': 10,
  'icmp-admin-prohibited': 13,
};

/** The target (`-j`/`-g`). `jump` and `goto` name a user chain. */
export type Target =
  | { readonly kind: 'ACCEPT' }
  | { readonly kind: 'DROP' }
  | { readonly kind: 'RETURN' }
  | { readonly kind: 'jump'; readonly chain: string }
  | { readonly kind: 'goto'; readonly chain: string }
  | { readonly kind: 'REJECT'; readonly with: RejectWith }
  | {
      readonly kind: 'DNAT';
      readonly to?: NatRange;
      readonly random: boolean;
      readonly persistent: boolean;
    }
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
    }
  | {
      /** Every MARK option normalises to `--set-xmark value/mask`: mark = (mark & ~mask) ^ value. */
      readonly kind: 'MARK';
      readonly value: number;
      readonly mask: number;
    }
  | {
      readonly kind: 'CONNMARK';
      readonly mode: 'set-xmark' | 'save' | 'restore';
      /** set-xmark: value/mask; save/restore: nfmask/ctmask. */
      readonly value: number;
      readonly mask: number;
      readonly nfmask?: number;
      readonly ctmask?: number;
    }
  | {
      readonly kind: 'LOG';
      readonly prefix?: string;
      readonly level?: string;
      readonly flags?: readonly string[];
    }
  | { readonly kind: 'NFLOG'; readonly args: readonly string[] }
  | { readonly kind: 'NOTRACK' }
  | { readonly kind: 'CT'; readonly notrack: boolean; readonly args: readonly string[] }
  | { readonly kind: 'TRACE' }
  | {
      /** A target netsim parses and prints but does not evaluate: the verdict is `unknown`. */
      readonly kind: 'unknown';
      readonly name: string;
      readonly args: readonly string[];
    };

export type TargetKind = Target['kind'];

/**
 * One rule. The IP-header fields are separate from `-m` modules because iptables prints them first
 * and in a fixed order, whatever order they were given in.
 */
export interface Rule {
  readonly src?: AddrMatch;
  readonly dst?: AddrMatch;
  readonly inIface?: IfaceMatch;
  readonly outIface?: IfaceMatch;
  readonly proto?: ProtoMatch;
  /** `-f` / `! -f`: second and further fragments. */
  readonly fragment?: Negatable;
  readonly matches: readonly Match[];
  /** No target: the rule only counts packets. */
  readonly target?: Target;
  readonly counters?: Counters;
}

export interface Chain {
  readonly name: string;
  /** Present exactly for built-in chains. */
  readonly policy?: Policy;
  /** Chain counters (the `[p:b]` of a chain line); built-in chains only in the real tool. */
  readonly counters?: Counters;
  readonly rules: readonly Rule[];
}

export interface Table {
  readonly name: TableName;
  /**
   * `true` when the table does not exist in the kernel yet. With nf_tables a table is created on
   * first use (`-A`, `-I`, `-N`, `-P`, `-F CHAIN`, an `iptables-restore` of `*table`), and
   * `iptables-save` prints only tables that exist. An absent table holds just its built-in chains
   * (policy ACCEPT, no rules) and evaluates like an empty table. Absent from the object otherwise.
   */
  readonly absent?: true;
  /**
   * Chains by name. Built-in chains always exist; user chains print in name order in
   * `iptables-save` (strcmp order), which the formatter applies, so no order is stored here.
   */
  readonly chains: { readonly [name: string]: Chain };
}

export interface Ruleset {
  readonly tables: { readonly [T in TableName]: Table };
}

/** An ipset as the `set` match sees it: membership by address (hash:ip, hash:net) or by tuple. */
export interface IpSet {
  readonly name: string;
  readonly type: 'hash:ip' | 'hash:net' | 'hash:ip,port' | 'hash:net,port' | 'hash:ip,port,ip';
  /** Entries in `ipset save` member syntax, e.g. `10.0.0.1`, `10.0.0.0/24`, `10.0.0.1,tcp:80`. */
  readonly members: readonly string[];
}
