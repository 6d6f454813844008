/**
 * The nftables model: what the kernel holds after `nft -f`, in the canonical form `nft list
 * ruleset` prints. Values are typed ({@link DataType}); rules are lists of statements; sets and
 * maps hold typed elements. IPv4 only (`ip` and `inet` families).
 */

/** Families netsim models. `ip6`, `arp`, `bridge`, `netdev` are rejected with a clear error. */
export type Family = 'ip' | 'inet';

export type Hook = 'prerouting' | 'input' | 'forward' | 'output' | 'postrouting';
export type ChainType = 'filter' | 'nat' | 'route';

/** nft's data types (the names `type …` in a set declaration uses). */
export type DataType =
  | 'ipv4_addr'
  | 'inet_proto'
  | 'inet_service'
  | 'mark'
  | 'ifname'
  | 'iface_index'
  | 'verdict'
  | 'ct_state'
  | 'ct_status'
  | 'tcp_flag'
  | 'icmp_type'
  | 'icmpx_code'
  | 'nf_proto'
  | 'fib_addrtype'
  | 'pkt_type'
  | 'integer'
  | 'dscp'
  | 'ecn'
  | 'icmp_code'
  | 'ether_type'
  | 'iface_type'
  | 'devgroup'
  | 'ct_dir'
  | 'uid'
  | 'gid'
  | 'classid'
  | 'time'
  | 'boolean'
  /** Integers of a header field narrower or wider than 32 bits (print as decimal; `u64` counters). */
  | 'u8'
  | 'u16'
  | 'u64';

/** A verdict: `accept`, `drop`, `continue`, `return`, `jump X`, `goto X`, `queue`. */
export type Verdict =
  | { readonly kind: 'accept' }
  | { readonly kind: 'drop' }
  | { readonly kind: 'continue' }
  | { readonly kind: 'return' }
  | { readonly kind: 'queue' }
  | { readonly kind: 'jump'; readonly chain: string }
  | { readonly kind: 'goto'; readonly chain: string };

/**
 * One typed value. Numbers are unsigned (an IPv4 address is its 32-bit value); strings are
 * interface names; verdicts are map data.
 */
export type Value =
  | { readonly type: Exclude<DataType, 'ifname' | 'verdict'>; readonly n: number }
  /** Interface names, and the other NUL-padded strings of 16 bytes (`ct helper "ftp"`). */
  | { readonly type: 'ifname'; readonly s: string }
  | { readonly type: 'verdict'; readonly v: Verdict };

/** A set key part: one value, or an interval [lo, hi] (inclusive) of one numeric type. */
export type KeyPart =
  | { readonly kind: 'value'; readonly value: Value }
  | { readonly kind: 'range'; readonly type: DataType; readonly lo: number; readonly hi: number; readonly form: 'range' | 'prefix' };

/** A set or map element. */
export interface Element {
  /** One part per concatenated key type. */
  readonly key: readonly KeyPart[];
  /** Map data (a value, or for NAT maps a concatenation). */
  readonly data?: readonly Value[];
  readonly timeoutMs?: number;
  readonly comment?: string;
  /** Element counter (sets declared with `counter`). */
  readonly counter?: { readonly packets: number; readonly bytes: number };
}

/** A named set or map. */
export interface NftSet {
  readonly name: string;
  readonly handle: number;
  readonly isMap: boolean;
  readonly keyType: readonly DataType[];
  /** `typeof` source text of the key, when the set was declared with it. */
  readonly keyTypeof?: string;
  readonly dataType?: readonly DataType[];
  readonly dataTypeof?: string;
  readonly flags: readonly SetFlag[];
  readonly timeoutMs?: number;
  readonly gcIntervalMs?: number;
  readonly size?: number;
  readonly counter: boolean;
  readonly comment?: string;
  readonly policy?: 'performance' | 'memory';
  /** `auto-merge`: overlapping and adjacent intervals merge instead of conflicting. */
  readonly autoMerge?: boolean;
  readonly elements: readonly Element[];
}

export type SetFlag = 'constant' | 'interval' | 'timeout' | 'dynamic';

/** Expressions that read the packet (left-hand sides). */
export type Expr =
  /** A header field: `ip saddr`, `tcp dport`, `icmp code`, `sctp vtag`… (evaluation reads the ones a packet of netsim carries). */
  | { readonly kind: 'payload'; readonly proto: string; readonly field: string; readonly type: DataType }
  | { readonly kind: 'meta'; readonly key: string; readonly type: DataType; readonly bare: boolean }
  /**
   * A conntrack key: `ct state|status|mark` (evaluated), and the ones kept for listing (`ct
   * direction`, `ct zone`, `ct helper`, `ct original ip saddr` with `dir` and `key` `ip saddr`…).
   */
  | { readonly kind: 'ct'; readonly key: string; readonly dir?: 'original' | 'reply'; readonly type: DataType }
  /** `fib FLAGS type|oif|oifname`; only `type` is evaluated. */
  | { readonly kind: 'fib'; readonly flags: readonly string[]; readonly result: 'type' | 'oif' | 'oifname'; readonly type: DataType }
  /** `tcp option NAME [FIELD]` (kept for listing, not evaluated). */
  | { readonly kind: 'exthdr'; readonly option: string; readonly field?: string; readonly type: DataType }
  | { readonly kind: 'numgen'; readonly mode: 'random' | 'inc'; readonly mod: number; readonly offset: number; readonly type: DataType }
  | { readonly kind: 'concat'; readonly parts: readonly Expr[]; readonly type: DataType }
  | { readonly kind: 'binop'; readonly op: '&' | '|' | '^'; readonly left: Expr; readonly right: Value; readonly type: DataType };

/** Right-hand sides of matches and sources of set statements. */
export type Rhs =
  | { readonly kind: 'value'; readonly value: Value }
  | { readonly kind: 'values'; readonly values: readonly Value[] }
  | { readonly kind: 'range'; readonly type: DataType; readonly lo: number; readonly hi: number }
  | { readonly kind: 'prefix'; readonly type: DataType; readonly addr: number; readonly len: number }
  | { readonly kind: 'mask'; readonly value: Value; readonly mask: Value }
  | { readonly kind: 'set'; readonly elements: readonly Element[]; readonly keyType: readonly DataType[] }
  | { readonly kind: 'setref'; readonly name: string };

export type MatchOp = 'implicit' | '==' | '!=' | '<' | '>' | '<=' | '>=';

/** A map lookup (`EXPR map { … }` / `EXPR map @m`), as a statement argument. */
export interface MapLookup {
  readonly key: Expr;
  readonly map: { readonly kind: 'anon'; readonly elements: readonly Element[]; readonly keyType: readonly DataType[] } | { readonly kind: 'ref'; readonly name: string };
}

/** A value a statement writes: a constant, an expression, or a map lookup. */
export type Source =
  | { readonly kind: 'value'; readonly value: Value }
  | { readonly kind: 'expr'; readonly expr: Expr }
  | { readonly kind: 'map'; readonly lookup: MapLookup };

export type NatKind = 'dnat' | 'snat' | 'masquerade' | 'redirect';
export type NatFlag = 'random' | 'fully-random' | 'persistent';

export type Stmt =
  | {
      readonly kind: 'match';
      readonly left: Expr;
      readonly op: MatchOp;
      readonly right: Rhs;
      /** A protocol match nft treats as the implicit dependency of a later one: not printed. */
      readonly hidden?: boolean;
    }
  | { readonly kind: 'verdict'; readonly verdict: Verdict }
  | { readonly kind: 'vmap'; readonly lookup: MapLookup }
  | { readonly kind: 'counter'; readonly packets: number; readonly bytes: number }
  | {
      readonly kind: 'log';
      readonly prefix?: string;
      readonly level?: string;
      /** Bits: tcp sequence 1, tcp options 2, ip options 4, skuid 8, ether 32 (`all` is all five). */
      readonly flags?: number;
      readonly group?: number;
      readonly snaplen?: number;
      readonly queueThreshold?: number;
    }
  /** `limit rate`: packets per unit, or with `bytes` set, bytes per unit (rate and burst in bytes). */
  | { readonly kind: 'limit'; readonly over: boolean; readonly rate: number; readonly unit: string; readonly burst: number; readonly bytes?: boolean }
  | { readonly kind: 'meta-set'; readonly key: 'mark'; readonly source: Source }
  | { readonly kind: 'ct-set'; readonly key: 'mark'; readonly source: Source }
  | {
      readonly kind: 'nat';
      readonly nat: NatKind;
      /** `dnat ip to` in the inet family. */
      readonly ipFamily: boolean;
      readonly addr?: Source | { readonly kind: 'range'; readonly lo: number; readonly hi: number };
      readonly port?: { readonly lo: number; readonly hi: number };
      readonly flags: readonly NatFlag[];
    }
  | { readonly kind: 'reject'; readonly with?: { readonly kind: 'icmp' | 'icmpx'; readonly code: string } | { readonly kind: 'tcp-reset' } }
  | { readonly kind: 'notrack' }
  | { readonly kind: 'set-update'; readonly op: 'add' | 'update'; readonly set: string; readonly key: Expr; readonly timeoutMs?: number }
  /** `quota [over|until] N UNIT [used N UNIT]`: netsim carries no bytes, so a quota is never used up. */
  | { readonly kind: 'quota'; readonly over: boolean; readonly bytes: number; readonly used: number }
  /** `ct count [over] N`. Kept for listing; evaluation takes the count as under the limit. */
  | { readonly kind: 'ct-count'; readonly over: boolean; readonly count: number }
  /**
   * A write netsim keeps for listing but does not model (`meta priority set`, `ct zone set`,
   * `ip dscp set`, `tcp option maxseg size set rt mtu`…).
   */
  | { readonly kind: 'field-set'; readonly target: Expr; readonly source: Source | { readonly kind: 'text'; readonly text: string } }
  /** `synproxy …`, kept as its canonical text. */
  | { readonly kind: 'synproxy'; readonly text: string }
  /** `counter name "x"`, `quota name "x"`, `limit name "x"`, `ct helper set "x"`: a named stateful object. */
  | { readonly kind: 'objref'; readonly type: NftObject['kind']; readonly name: string };

export interface Rule {
  readonly handle: number;
  readonly stmts: readonly Stmt[];
  readonly comment?: string;
}

export interface BaseChainSpec {
  readonly type: ChainType;
  readonly hook: Hook;
  readonly priority: number;
  readonly policy: 'accept' | 'drop';
}

export interface Chain {
  readonly name: string;
  readonly handle: number;
  readonly base?: BaseChainSpec;
  readonly comment?: string;
  readonly rules: readonly Rule[];
}

/** A named stateful object of a table (`counter`, `quota`, `limit`, `ct helper`). */
export type NftObject = {
  readonly name: string;
  readonly handle: number;
  readonly comment?: string;
} & (
  | { readonly kind: 'counter'; readonly packets: number; readonly bytes: number }
  | { readonly kind: 'quota'; readonly over: boolean; readonly bytes: number; readonly used: number }
  | { readonly kind: 'limit'; readonly over: boolean; readonly rate: number; readonly unit: string; readonly burst: number; readonly bytes?: boolean }
  | { readonly kind: 'ct helper'; readonly helper: string; readonly protocol: 'tcp' | 'udp'; readonly l3proto: 'ip' | 'inet' | 'ip6' }
);

export interface Table {
  readonly family: Family;
  readonly name: string;
  readonly handle: number;
  readonly comment?: string;
  readonly dormant: boolean;
  /** Stateful objects in creation order (listed first). */
  readonly objects?: readonly NftObject[];
  /** Sets and maps in creation order. */
  readonly sets: readonly NftSet[];
  /** Chains in creation order. */
  readonly chains: readonly Chain[];
  /** The next handle the kernel hands out in this table. */
  readonly nextHandle: number;
}

/** The whole ruleset: tables in creation order. */
export interface Ruleset {
  readonly tables: readonly Table[];
}

/** The nft release whose behaviour and messages to imitate. */
export type NftVersion = '1.0.6' | '1.0.7';
export const DEFAULT_NFT_VERSION: NftVersion = '1.0.6';

/** An empty ruleset, as on a fresh host. */
export function emptyRuleset(): Ruleset {
  return { tables: [] };
}
