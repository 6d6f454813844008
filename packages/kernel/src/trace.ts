/**
 * The datapath trace: every decision a packet met, in order, as plain JSON-serialisable data,
 * and a human rendering in the spirit of `iptables -j TRACE` lines.
 */
import type { Hook, TableName } from '@netsim/netfilter';
import { formatPacketView, type PacketView } from './packet.ts';

/** A rule that matched during a walk. `index` is 1-based in its chain; `rule` is its `-A` line. */
export interface MatchedRule {
  readonly table: TableName;
  readonly chain: string;
  readonly index: number;
  readonly rule: string;
}

/** Where a packet died. */
export type DropSite =
  | {
      readonly stage: 'hook';
      /** DROP (a rule or the policy), REJECT (a reply was sent), or unknown (an undecidable rule). */
      readonly verdict: 'DROP' | 'REJECT' | 'unknown';
      readonly hook: Hook;
      readonly table: TableName;
      readonly chain: string;
      /** 1-based rule index, or null when the chain policy dropped it. */
      readonly index: number | null;
      readonly rule: string | null;
    }
  | {
      readonly stage: 'routing';
      readonly check:
        | 'no-route'
        | 'ip_forward'
        | 'rp_filter'
        | 'martian-source'
        | 'martian-destination'
        | 'blackhole'
        | 'unreachable-route'
        | 'prohibit-route'
        | 'reroute';
    }
  | {
      readonly stage: 'nft';
      /** `drop` (a rule or the chain policy), `reject` (a reply was sent), or `unsupported` (e.g. `queue`: fate unknown). */
      readonly verdict: 'drop' | 'reject' | 'unsupported';
      readonly hook: Hook;
      readonly family: string;
      readonly table: string;
      readonly chain: string;
      /** The deciding rule's handle, or null when the base chain's policy dropped it. */
      readonly handle: number | null;
      /** The rule as `nft list` prints it, or null for the policy. */
      readonly rule: string | null;
    }
  | { readonly stage: 'conntrack'; readonly check: 'insert-failed' | 'masquerade-oif-changed' }
  | { readonly stage: 'nat'; readonly check: 'masquerade-no-address' }
  | { readonly stage: 'neighbour'; readonly check: 'no-neighbour' | 'link-down' }
  | { readonly stage: 'overlay'; readonly check: 'no-fdb-entry' }
  | { readonly stage: 'stack'; readonly check: 'no-socket' | 'unexpected-segment' | 'not-modelled' };

export type TraceStep =
  | {
      /** A packet enters a host: off a wire, looped back, unwrapped from an overlay, or sent by it. */
      readonly kind: 'enter';
      readonly host: string;
      readonly via: 'wire' | 'loopback' | 'overlay' | 'local';
      readonly iface: string | null;
      readonly packet: PacketView;
    }
  | {
      /** One table's walk at one hook. */
      readonly kind: 'table';
      readonly host: string;
      readonly hook: Hook;
      readonly table: TableName;
      readonly verdict: string;
      readonly matched: readonly MatchedRule[];
      /** Rules examined (including ones the dispatch index passed over). */
      readonly examined: number;
    }
  | {
      /**
       * One nft base chain at its hook, with `nft monitor trace` lines (`trace id ID FAMILY TABLE
       * CHAIN packet: …`, then `rule … (verdict …)`, `verdict continue`, `policy …`).
       */
      readonly kind: 'nft';
      readonly host: string;
      readonly hook: Hook;
      readonly family: string;
      readonly table: string;
      readonly chain: string;
      readonly priority: number;
      /** What the chain decided: `accept`, `drop`, `reject`, `unsupported (…)`, or `accept (dnat)` for a NAT statement. */
      readonly verdict: string;
      readonly lines: readonly string[];
    }
  | {
      /** A nat table not walked: only a connection's first packet traverses nat chains. */
      readonly kind: 'nat-skip';
      readonly host: string;
      readonly hook: Hook;
      readonly reason: 'binding-exists' | 'no-conntrack';
    }
  | {
      readonly kind: 'conntrack';
      readonly host: string;
      readonly event: 'new' | 'established' | 'related' | 'invalid' | 'untracked' | 'confirmed' | 'destroyed' | 'reopened' | 'closing';
      readonly dir?: 'original' | 'reply';
      /** The entry as `conntrack -L` prints it, when there is one. */
      readonly entry: string | null;
      readonly detail?: string;
    }
  | {
      readonly kind: 'nat';
      readonly host: string;
      readonly hook: Hook;
      readonly manip: 'src' | 'dst';
      /** `bound`: a new binding; `null-binding`: the walk asked for no NAT; `rewrite`: an existing binding applied. */
      readonly action: 'bound' | 'null-binding' | 'rewrite';
      readonly from: string;
      readonly to: string;
      readonly target?: string;
    }
  | {
      readonly kind: 'route';
      readonly host: string;
      readonly lookup: 'input' | 'output' | 'reroute';
      readonly dst: string;
      readonly src: string;
      readonly result: string;
      readonly iface: string | null;
      readonly nexthop: string | null;
    }
  | {
      readonly kind: 'rp_filter';
      readonly host: string;
      readonly iface: string;
      readonly mode: 'off' | 'strict' | 'loose';
      /** max(conf/all, conf/<iface>). */
      readonly value: number;
      readonly pass: boolean;
      readonly detail: string;
    }
  | {
      readonly kind: 'wire';
      readonly from: { readonly host: string; readonly iface: string };
      readonly to: { readonly host: string; readonly iface: string };
      readonly packet: PacketView;
    }
  | { readonly kind: 'encap'; readonly host: string; readonly iface: string; readonly underlay: string; readonly packet: PacketView }
  | { readonly kind: 'drop'; readonly host: string; readonly packet: PacketView; readonly site: DropSite; readonly reason: string }
  | {
      /** The host's own TCP/UDP stack: a socket answered, refused or took a packet. */
      readonly kind: 'stack';
      readonly host: string;
      readonly event: string;
      readonly detail: string;
    }
  | {
      /** A packet leaves the hooks: to a local socket, or out of an interface. */
      readonly kind: 'fate';
      readonly host: string;
      readonly fate: 'delivered' | 'transmitted';
      readonly iface: string | null;
      readonly packet: PacketView;
    }
  | { readonly kind: 'note'; readonly host: string; readonly text: string };

function hostTag(h: string): string {
  return `[${h}]`;
}

/** One human line per step. */
export function formatStep(s: TraceStep): string {
  switch (s.kind) {
    case 'enter': {
      const how = s.via === 'local' ? 'sends' : s.via === 'wire' ? `<- ${s.iface ?? '?'}` : `<- ${s.iface ?? '?'} (${s.via})`;
      return `${hostTag(s.host)} ${how} ${formatPacketView(s.packet)}`;
    }
    case 'table': {
      const rules = s.matched.map((m) => `\n    TRACE: ${m.table}:${m.chain}:rule:${m.index}  ${m.rule}`).join('');
      return `${hostTag(s.host)} ${s.table} ${s.hook}: ${s.verdict}${rules}`;
    }
    case 'nft': {
      const lines = s.lines.map((l) => `\n    ${l}`).join('');
      return `${hostTag(s.host)} nft ${s.family} ${s.table} ${s.chain} (${s.hook}, priority ${s.priority}): ${s.verdict}${lines}`;
    }
    case 'nat-skip':
      return `${hostTag(s.host)} nat ${s.hook}: not walked (${s.reason === 'binding-exists' ? 'NAT already decided for this connection' : 'no conntrack entry'})`;
    case 'conntrack':
      return `${hostTag(s.host)} conntrack ${s.event}${s.dir !== undefined ? ` (${s.dir})` : ''}${s.detail !== undefined ? ` ${s.detail}` : ''}${s.entry !== null ? `: ${s.entry}` : ''}`;
    case 'nat':
      return `${hostTag(s.host)} ${s.manip === 'dst' ? 'DNAT' : 'SNAT'} ${s.action} at ${s.hook}: ${s.from} -> ${s.to}${s.target !== undefined ? ` (${s.target})` : ''}`;
    case 'route':
      return `${hostTag(s.host)} route ${s.lookup} ${s.src} -> ${s.dst}: ${s.result}`;
    case 'rp_filter':
      return `${hostTag(s.host)} rp_filter on ${s.iface} (${s.mode}, ${s.value}): ${s.pass ? 'pass' : 'DROP'} — ${s.detail}`;
    case 'wire':
      return `  ${s.from.host}/${s.from.iface} => ${s.to.host}/${s.to.iface}: ${formatPacketView(s.packet)}`;
    case 'encap':
      return `${hostTag(s.host)} ${s.iface}: encapsulated to underlay ${s.underlay}: ${formatPacketView(s.packet)}`;
    case 'drop':
      return `${hostTag(s.host)} DROP ${formatPacketView(s.packet)}: ${s.reason}`;
    case 'stack':
      return `${hostTag(s.host)} stack ${s.event}: ${s.detail}`;
    case 'fate':
      return `${hostTag(s.host)} ${s.fate === 'delivered' ? 'delivered locally' : `out ${s.iface ?? '?'}`}: ${formatPacketView(s.packet)}`;
    case 'note':
      return `${hostTag(s.host)} ${s.text}`;
  }
}

/** The whole trace, one step per line. */
export function formatTrace(steps: readonly TraceStep[]): string {
  return steps.map(formatStep).join('\n');
}
