/**
 * Rulesets written by hand as data (the model of `@netsim/netfilter/types.ts`), for tests.
 */
import { emptyRuleset, parseCidr, type Match, type Rule, type Ruleset, type TableName, type Target } from '@netsim/netfilter';
import { ip } from './helpers.ts';

/** Appends rules to a chain (creating a user chain when it does not exist). */
export function append(rs: Ruleset, table: TableName, chain: string, ...rules: Rule[]): Ruleset {
  const t = rs.tables[table];
  const old = t.chains[chain] ?? { name: chain, rules: [] };
  return {
    tables: { ...rs.tables, [table]: { ...t, chains: { ...t.chains, [chain]: { ...old, rules: [...old.rules, ...rules] } } } },
  };
}

/** Declares a user chain (as `:CHAIN - [0:0]` does), leaving it as it is when it exists. */
export function declare(rs: Ruleset, table: TableName, ...chains: string[]): Ruleset {
  let out = rs;
  for (const c of chains) if (out.tables[table].chains[c] === undefined) out = append(out, table, c);
  return out;
}

/** Sets a built-in chain's policy. */
export function policy(rs: Ruleset, table: TableName, chain: string, p: 'ACCEPT' | 'DROP'): Ruleset {
  const t = rs.tables[table];
  const old = t.chains[chain];
  if (old === undefined) throw new Error(`no chain ${chain}`);
  return { tables: { ...rs.tables, [table]: { ...t, chains: { ...t.chains, [chain]: { ...old, policy: p } } } } };
}

export interface RuleOpts {
  s?: string;
  d?: string;
  notS?: string;
  notD?: string;
  i?: string;
  o?: string;
  p?: 'tcp' | 'udp' | 'icmp';
  dport?: number;
  sport?: number;
  m?: Match[];
}

export function rule(o: RuleOpts, target?: Target): Rule {
  const matches: Match[] = [];
  if (o.p === 'tcp' || o.p === 'udp') {
    if (o.dport !== undefined || o.sport !== undefined) {
      matches.push({
        kind: o.p,
        ...(o.sport !== undefined ? { sport: { negate: false, range: { from: o.sport, to: o.sport } } } : {}),
        ...(o.dport !== undefined ? { dport: { negate: false, range: { from: o.dport, to: o.dport } } } : {}),
      });
    }
  }
  matches.push(...(o.m ?? []));
  return {
    ...(o.s !== undefined ? { src: { negate: false, cidr: parseCidr(o.s) } } : {}),
    ...(o.notS !== undefined ? { src: { negate: true, cidr: parseCidr(o.notS) } } : {}),
    ...(o.d !== undefined ? { dst: { negate: false, cidr: parseCidr(o.d) } } : {}),
    ...(o.notD !== undefined ? { dst: { negate: true, cidr: parseCidr(o.notD) } } : {}),
    ...(o.i !== undefined ? { inIface: { negate: false, name: o.i.replace(/\+$/, ''), wildcard: o.i.endsWith('+') } } : {}),
    ...(o.o !== undefined ? { outIface: { negate: false, name: o.o.replace(/\+$/, ''), wildcard: o.o.endsWith('+') } } : {}),
    ...(o.p !== undefined ? { proto: { negate: false, proto: o.p === 'tcp' ? 6 : o.p === 'udp' ? 17 : 1 } } : {}),
    matches,
    ...(target !== undefined ? { target } : {}),
  };
}

export const T = {
  accept: { kind: 'ACCEPT' } as Target,
  drop: { kind: 'DROP' } as Target,
  ret: { kind: 'RETURN' } as Target,
  jump: (chain: string): Target => ({ kind: 'jump', chain }),
  reject: (w: 'tcp-reset' | 'icmp-port-unreachable' | 'icmp-host-unreachable' = 'icmp-port-unreachable'): Target => ({ kind: 'REJECT', with: w }),
  dnat: (to: string): Target => {
    const [a, p] = to.split(':');
    return {
      kind: 'DNAT',
      to: { minIp: ip(a ?? ''), maxIp: ip(a ?? ''), ...(p !== undefined ? { minPort: Number(p), maxPort: Number(p) } : {}) },
      random: false,
      persistent: false,
    };
  },
  snat: (to: string): Target => ({ kind: 'SNAT', to: { minIp: ip(to), maxIp: ip(to) }, random: false, randomFully: false, persistent: false }),
  masq: (randomFully = false): Target => ({ kind: 'MASQUERADE', random: false, randomFully }),
  mark: (value: number, mask = 0xffffffff): Target => ({ kind: 'MARK', value, mask }),
  orMark: (bits: number): Target => ({ kind: 'MARK', value: bits, mask: bits }),
  xorMark: (bits: number): Target => ({ kind: 'MARK', value: bits, mask: 0 }),
  notrack: { kind: 'NOTRACK' } as Target,
  connmarkSave: { kind: 'CONNMARK', mode: 'save', value: 0, mask: 0, nfmask: 0xffffffff, ctmask: 0xffffffff } as Target,
  connmarkRestore: { kind: 'CONNMARK', mode: 'restore', value: 0, mask: 0, nfmask: 0xffffffff, ctmask: 0xffffffff } as Target,
};

export const M = {
  markMatch: (value: number, mask = 0xffffffff, negate = false): Match => ({ kind: 'mark', value, mask, negate }),
  ctstate: (...states: ('NEW' | 'ESTABLISHED' | 'RELATED' | 'INVALID' | 'DNAT' | 'SNAT')[]): Match => ({ kind: 'conntrack', ctstate: { negate: false, states } }),
  dstLocal: (): Match => ({ kind: 'addrtype', dst: { negate: false, types: ['LOCAL'] }, limitIfaceIn: false, limitIfaceOut: false }),
  comment: (c: string): Match => ({ kind: 'comment', comment: c }),
};

export { emptyRuleset };
