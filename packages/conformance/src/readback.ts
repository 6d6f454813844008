/**
 * Reading back what the kernel did: per-rule packet counters from `iptables-save -c` and the
 * conntrack table from `conntrack -L`. Deliberately small parsers that read only what the
 * comparison needs (rule positions and counters; tuples and flags), so they do not depend on
 * netsim's own parser, which is one of the things under test.
 */
import { parseIpv4, type Ipv4, type TableName } from '@netsim/netfilter';

/** Counters of one saved table: `chains[name]` has the policy counter and one entry per rule. */
export interface SavedTable {
  readonly chains: { readonly [name: string]: SavedChain };
  /** Chain names in the order `iptables-save` printed them. */
  readonly order: readonly string[];
}

export interface SavedChain {
  /** `ACCEPT`/`DROP` for built-in chains, `-` for user chains. */
  readonly policy: string;
  readonly policyPackets: number;
  /** Per rule, in chain order: the packet counter and the rule text after `-A CHAIN `. */
  readonly rules: readonly { readonly packets: number; readonly spec: string }[];
}

export type SavedCounters = { readonly [T in TableName]?: SavedTable };

/** Parses `iptables-save -c` output. Throws on a line it does not understand, naming it. */
export function parseSaveCounters(text: string): SavedCounters {
  const out: { [T in TableName]?: SavedTable } = {};
  let table: TableName | null = null;
  let chains: { [name: string]: { policy: string; policyPackets: number; rules: { packets: number; spec: string }[] } } = {};
  let order: string[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (line === '' || line.startsWith('#')) continue;
    const where = `iptables-save -c line ${i + 1}`;
    if (line.startsWith('*')) {
      const name = line.slice(1);
      if (name !== 'raw' && name !== 'mangle' && name !== 'nat' && name !== 'filter') {
        if (name === 'security') {
          table = null;
          continue;
        }
        throw new Error(`${where}: unknown table "${name}"`);
      }
      table = name;
      chains = {};
      order = [];
      continue;
    }
    if (line === 'COMMIT') {
      if (table !== null) out[table] = { chains, order };
      table = null;
      continue;
    }
    if (table === null) continue;
    const chainLine = /^:(\S+) (\S+) \[(\d+):(\d+)\]$/.exec(line);
    if (chainLine !== null) {
      const name = chainLine[1] as string;
      chains[name] = { policy: chainLine[2] as string, policyPackets: Number(chainLine[3]), rules: [] };
      order.push(name);
      continue;
    }
    const ruleLine = /^\[(\d+):(\d+)\] -A (\S+) ?(.*)$/.exec(line);
    if (ruleLine !== null) {
      const chain = chains[ruleLine[3] as string];
      if (chain === undefined) throw new Error(`${where}: rule for undeclared chain "${ruleLine[3]}": ${line}`);
      chain.rules.push({ packets: Number(ruleLine[1]), spec: ruleLine[4] as string });
      continue;
    }
    throw new Error(`${where}: cannot read "${line}"`);
  }
  return out;
}

/** One direction of a conntrack entry. For ICMP, `sport`/`dport` hold the echo id (both). */
export interface CtTuple {
  readonly src: Ipv4;
  readonly dst: Ipv4;
  readonly sport: number;
  readonly dport: number;
}

export interface ConntrackEntry {
  readonly proto: number;
  /** TCP state (`SYN_SENT`, `ESTABLISHED`, …); absent for other protocols. */
  readonly tcpState?: string;
  readonly orig: CtTuple;
  readonly reply: CtTuple;
  readonly unreplied: boolean;
  readonly assured: boolean;
  readonly mark: number;
  /** For ICMP: type/code of the original direction. */
  readonly icmpType?: number;
  readonly icmpCode?: number;
}

function tupleFrom(kv: Map<string, string>, line: string): CtTuple {
  const get = (k: string): string => {
    const v = kv.get(k);
    if (v === undefined) throw new Error(`conntrack -L: no ${k}= in "${line}"`);
    return v;
  };
  const id = kv.get('id');
  return {
    src: parseIpv4(get('src')),
    dst: parseIpv4(get('dst')),
    sport: Number(id ?? kv.get('sport') ?? 0),
    dport: Number(id ?? kv.get('dport') ?? 0),
  };
}

/**
 * Parses `conntrack -L` lines such as
 * `tcp      6 119 SYN_SENT src=192.0.2.2 dst=198.18.0.5 sport=40000 dport=80 [UNREPLIED] src=… mark=0 use=1`.
 */
export function parseConntrack(text: string): ConntrackEntry[] {
  const out: ConntrackEntry[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '') continue;
    const tokens = line.split(/\s+/);
    const proto = Number(tokens[1]);
    if (!Number.isInteger(proto)) throw new Error(`conntrack -L: cannot read "${line}"`);
    let i = 3;
    let tcpState: string | undefined;
    if (tokens[i] !== undefined && !(tokens[i] as string).includes('=') && !(tokens[i] as string).startsWith('[')) {
      tcpState = tokens[i];
      i++;
    }
    const groups: Map<string, string>[] = [new Map<string, string>()];
    let unreplied = false;
    let assured = false;
    let mark = 0;
    for (; i < tokens.length; i++) {
      const t = tokens[i] as string;
      if (t === '[UNREPLIED]') unreplied = true;
      else if (t === '[ASSURED]') assured = true;
      else if (t.startsWith('[')) continue;
      else {
        const eq = t.indexOf('=');
        if (eq < 0) continue;
        const k = t.slice(0, eq);
        const v = t.slice(eq + 1);
        if (k === 'mark') mark = Number(v);
        else if (k === 'use' || k === 'zone' || k === 'secctx') continue;
        else {
          let g = groups[groups.length - 1] as Map<string, string>;
          if (k === 'src' && g.has('src')) {
            g = new Map<string, string>();
            groups.push(g);
          }
          g.set(k, v);
        }
      }
    }
    const [o, r] = groups;
    if (o === undefined || r === undefined) throw new Error(`conntrack -L: expected two tuples in "${line}"`);
    const entry: ConntrackEntry = {
      proto,
      orig: tupleFrom(o, line),
      reply: tupleFrom(r, line),
      unreplied,
      assured,
      mark,
      ...(tcpState === undefined ? {} : { tcpState }),
      ...(proto === 1 ? { icmpType: Number(o.get('type') ?? 0), icmpCode: Number(o.get('code') ?? 0) } : {}),
    };
    out.push(entry);
  }
  return out;
}
