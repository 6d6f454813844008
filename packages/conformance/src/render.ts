/**
 * A ruleset as `iptables-restore` input, for the subset the generators produce. Not netsim's
 * formatter (that is under test by the format check): a separate, deliberately plain writer whose
 * only job is to give the real tool the same rules netsim evaluates. It throws on anything
 * outside its subset instead of guessing.
 */
import {
  BUILTIN_CHAINS,
  formatCidr,
  formatNatRange,
  type AddrMatch,
  type AddrTypeSel,
  type IfaceMatch,
  type Match,
  type NatRange,
  type PortMatch,
  type PortRange,
  type Rule,
  type Ruleset,
  type TableName,
  type Target,
} from '@netsim/netfilter';

const PROTO_NAMES: { readonly [n: number]: string } = { 0: 'all', 1: 'icmp', 6: 'tcp', 17: 'udp' };
const FLAGS: readonly (readonly [number, string])[] = [
  [0x01, 'FIN'],
  [0x02, 'SYN'],
  [0x04, 'RST'],
  [0x08, 'PSH'],
  [0x10, 'ACK'],
  [0x20, 'URG'],
  [0x40, 'ECE'],
  [0x80, 'CWR'],
];

function neg(n: boolean): string[] {
  return n ? ['!'] : [];
}

function addr(flag: string, a: AddrMatch | undefined): string[] {
  return a === undefined ? [] : [...neg(a.negate), flag, formatCidr(a.cidr)];
}

function iface(flag: string, i: IfaceMatch | undefined): string[] {
  return i === undefined ? [] : [...neg(i.negate), flag, `${i.name}${i.wildcard ? '+' : ''}`];
}

function range(r: PortRange): string {
  return r.from === r.to ? `${r.from}` : `${r.from}:${r.to}`;
}

function port(flag: string, p: PortMatch | undefined): string[] {
  return p === undefined ? [] : [...neg(p.negate), flag, range(p.range)];
}

function flagNames(bits: number): string {
  const names = FLAGS.filter(([b]) => (bits & b) !== 0).map(([, n]) => n);
  return names.length === 0 ? 'NONE' : names.join(',');
}

function hex(n: number): string {
  return `0x${(n >>> 0).toString(16)}`;
}

function typeSel(flag: string, s: AddrTypeSel | undefined): string[] {
  return s === undefined ? [] : [...neg(s.negate), flag, s.types.join(',')];
}

function match(m: Match): string[] {
  switch (m.kind) {
    case 'tcp':
      if (m.option !== undefined) throw new Error('render: --tcp-option is outside the generated subset');
      return [
        '-m',
        'tcp',
        ...port('--sport', m.sport),
        ...port('--dport', m.dport),
        ...(m.flags === undefined ? [] : [...neg(m.flags.negate), '--tcp-flags', flagNames(m.flags.mask), flagNames(m.flags.comp)]),
      ];
    case 'udp':
      return ['-m', 'udp', ...port('--sport', m.sport), ...port('--dport', m.dport)];
    case 'icmp': {
      const t = m.icmp.any === true ? 'any' : m.icmp.code === undefined ? `${m.icmp.type}` : `${m.icmp.type}/${m.icmp.code.from}`;
      return ['-m', 'icmp', ...neg(m.icmp.negate), '--icmp-type', t];
    }
    case 'multiport':
      return ['-m', 'multiport', ...neg(m.negate), `--${m.which}`, m.ports.map(range).join(',')];
    case 'comment':
      if (!/^[\w .:-]*$/.test(m.comment)) throw new Error(`render: comment "${m.comment}" needs quoting beyond the subset`);
      return ['-m', 'comment', '--comment', `"${m.comment}"`];
    case 'mark':
      return ['-m', 'mark', ...neg(m.negate), '--mark', `${hex(m.value)}/${hex(m.mask)}`];
    case 'conntrack':
      if (m.extra !== undefined && m.extra.length > 0) throw new Error('render: conntrack options besides --ctstate are outside the subset');
      if (m.ctstate === undefined) throw new Error('render: conntrack match without --ctstate');
      return ['-m', 'conntrack', ...neg(m.ctstate.negate), '--ctstate', m.ctstate.states.join(',')];
    case 'state':
      return ['-m', 'state', ...neg(m.negate), '--state', m.states.join(',')];
    case 'addrtype':
      return [
        '-m',
        'addrtype',
        ...typeSel('--src-type', m.src),
        ...typeSel('--dst-type', m.dst),
        ...(m.limitIfaceIn ? ['--limit-iface-in'] : []),
        ...(m.limitIfaceOut ? ['--limit-iface-out'] : []),
      ];
    case 'statistic':
    case 'set':
    case 'iprange':
    case 'recent':
    case 'unknown':
      throw new Error(`render: match ${m.kind} is outside the generated subset`);
  }
}

function natRange(r: NatRange | undefined): string {
  if (r === undefined) throw new Error('render: NAT target without a range');
  return formatNatRange(r);
}

function target(t: Target): string[] {
  switch (t.kind) {
    case 'ACCEPT':
    case 'DROP':
    case 'RETURN':
      return ['-j', t.kind];
    case 'jump':
      return ['-j', t.chain];
    case 'goto':
      return ['-g', t.chain];
    case 'REJECT':
      return ['-j', 'REJECT', '--reject-with', t.with];
    case 'DNAT':
      return ['-j', 'DNAT', '--to-destination', natRange(t.to), ...(t.random ? ['--random'] : []), ...(t.persistent ? ['--persistent'] : [])];
    case 'SNAT':
      return [
        '-j',
        'SNAT',
        '--to-source',
        natRange(t.to),
        ...(t.random ? ['--random'] : []),
        ...(t.randomFully ? ['--random-fully'] : []),
        ...(t.persistent ? ['--persistent'] : []),
      ];
    case 'MASQUERADE':
      return [
        '-j',
        'MASQUERADE',
        ...(t.toPorts === undefined ? [] : ['--to-ports', t.toPorts.from === t.toPorts.to ? `${t.toPorts.from}` : `${t.toPorts.from}-${t.toPorts.to}`]),
        ...(t.random ? ['--random'] : []),
        ...(t.randomFully ? ['--random-fully'] : []),
      ];
    case 'MARK':
      return ['-j', 'MARK', '--set-xmark', `${hex(t.value)}/${hex(t.mask)}`];
    case 'CONNMARK':
      if (t.mode === 'set-xmark') return ['-j', 'CONNMARK', '--set-xmark', `${hex(t.value)}/${hex(t.mask)}`];
      return ['-j', 'CONNMARK', t.mode === 'save' ? '--save-mark' : '--restore-mark', '--nfmask', hex(t.nfmask ?? 0xffffffff), '--ctmask', hex(t.ctmask ?? 0xffffffff)];
    case 'NOTRACK':
      return ['-j', 'CT', '--notrack'];
    case 'CT':
      if (!t.notrack || t.args.length > 0) throw new Error('render: CT options besides --notrack are outside the subset');
      return ['-j', 'CT', '--notrack'];
    case 'LOG':
    case 'NFLOG':
    case 'TRACE':
    case 'unknown':
      throw new Error(`render: target ${t.kind} is outside the generated subset`);
  }
}

/** One rule's arguments after `-A CHAIN`. */
export function renderRule(r: Rule): string {
  if (r.fragment !== undefined) throw new Error('render: -f is outside the generated subset');
  const proto = r.proto === undefined ? [] : [...neg(r.proto.negate), '-p', PROTO_NAMES[r.proto.proto] ?? `${r.proto.proto}`];
  const parts = [
    ...addr('-s', r.src),
    ...addr('-d', r.dst),
    ...iface('-i', r.inIface),
    ...iface('-o', r.outIface),
    ...proto,
    ...r.matches.flatMap(match),
    ...(r.target === undefined ? [] : target(r.target)),
  ];
  return parts.join(' ');
}

/** `iptables-restore` input replacing every table of `rs` (built-in chains first, then user chains by name). */
export function renderRestore(rs: Ruleset): string {
  const lines: string[] = [];
  for (const name of ['raw', 'mangle', 'nat', 'filter'] as const satisfies readonly TableName[]) {
    const table = rs.tables[name];
    lines.push(`*${name}`);
    const builtins: readonly string[] = BUILTIN_CHAINS[name];
    const users = Object.keys(table.chains)
      .filter((c) => !builtins.includes(c))
      .sort();
    const chains = [...builtins, ...users];
    for (const c of chains) {
      const chain = table.chains[c];
      lines.push(`:${c} ${chain?.policy ?? '-'} [0:0]`);
    }
    for (const c of chains) {
      for (const r of table.chains[c]?.rules ?? []) {
        const spec = renderRule(r);
        lines.push(spec === '' ? `-A ${c}` : `-A ${c} ${spec}`);
      }
    }
    lines.push('COMMIT');
  }
  return lines.join('\n') + '\n';
}
