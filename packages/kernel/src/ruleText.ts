/**
 * A rule as an `-A CHAIN …` line for traces. Close to `iptables-save`'s canonical form for the
 * matches and targets the datapath meets; it is a display aid, not the round-trip formatter.
 */
import { formatCidr, formatIpv4, type Match, type NatRange, type PortRange, type Rule, type Target } from '@netsim/netfilter';

function neg(n: boolean): string {
  return n ? '! ' : '';
}

function ports(r: PortRange): string {
  return r.from === r.to ? String(r.from) : `${r.from}:${r.to}`;
}

const PROTOS: { readonly [p: number]: string } = { 1: 'icmp', 6: 'tcp', 17: 'udp', 132: 'sctp' };

function match(m: Match): string {
  switch (m.kind) {
    case 'tcp':
    case 'udp': {
      const parts = [`-m ${m.kind}`];
      if (m.sport !== undefined) parts.push(`${neg(m.sport.negate)}--sport ${ports(m.sport.range)}`);
      if (m.dport !== undefined) parts.push(`${neg(m.dport.negate)}--dport ${ports(m.dport.range)}`);
      if (m.kind === 'tcp' && m.flags !== undefined) parts.push(`${neg(m.flags.negate)}--tcp-flags 0x${m.flags.mask.toString(16)} 0x${m.flags.comp.toString(16)}`);
      return parts.join(' ');
    }
    case 'icmp':
      return `-m icmp ${neg(m.icmp.negate)}--icmp-type ${m.icmp.any === true ? 'any' : m.icmp.type}`;
    case 'multiport':
      return `-m multiport ${neg(m.negate)}--${m.which} ${m.ports.map(ports).join(',')}`;
    case 'comment':
      return `-m comment --comment ${/^[A-Za-z0-9_./:-]+$/.test(m.comment) ? m.comment : JSON.stringify(m.comment)}`;
    case 'mark':
      return `-m mark ${neg(m.negate)}--mark 0x${m.value.toString(16)}${m.mask === 0xffffffff ? '' : `/0x${m.mask.toString(16)}`}`;
    case 'conntrack':
      return `-m conntrack${m.ctstate !== undefined ? ` ${neg(m.ctstate.negate)}--ctstate ${m.ctstate.states.join(',')}` : ''}${m.extra !== undefined ? ` ${m.extra.join(' ')}` : ''}`;
    case 'state':
      return `-m state ${neg(m.negate)}--state ${m.states.join(',')}`;
    case 'addrtype': {
      const parts = ['-m addrtype'];
      if (m.src !== undefined) parts.push(`${neg(m.src.negate)}--src-type ${m.src.types.join(',')}`);
      if (m.dst !== undefined) parts.push(`${neg(m.dst.negate)}--dst-type ${m.dst.types.join(',')}`);
      if (m.limitIfaceIn) parts.push('--limit-iface-in');
      if (m.limitIfaceOut) parts.push('--limit-iface-out');
      return parts.join(' ');
    }
    case 'statistic':
      return m.mode === 'random'
        ? `-m statistic --mode random ${neg(m.negate)}--probability ${m.probability?.text ?? '?'}`
        : `-m statistic --mode nth ${neg(m.negate)}--every ${m.every ?? 0} --packet ${m.packet ?? 0}`;
    case 'set':
      return `-m set ${neg(m.negate)}--match-set ${m.setName} ${m.flags.join(',')}`;
    case 'iprange': {
      const parts = ['-m iprange'];
      if (m.srcRange !== undefined) parts.push(`${neg(m.srcRange.negate)}--src-range ${formatIpv4(m.srcRange.from)}-${formatIpv4(m.srcRange.to)}`);
      if (m.dstRange !== undefined) parts.push(`${neg(m.dstRange.negate)}--dst-range ${formatIpv4(m.dstRange.from)}-${formatIpv4(m.dstRange.to)}`);
      return parts.join(' ');
    }
    case 'unknown':
      return `-m ${m.module}${m.args.length > 0 ? ` ${m.args.join(' ')}` : ''}`;
  }
}

function natRange(r: NatRange | undefined): string {
  if (r === undefined) return '';
  let s = '';
  if (r.minIp !== undefined) s += formatIpv4(r.minIp) + (r.maxIp !== undefined && r.maxIp !== r.minIp ? `-${formatIpv4(r.maxIp)}` : '');
  if (r.minPort !== undefined) s += `:${r.minPort}${r.maxPort !== undefined && r.maxPort !== r.minPort ? `-${r.maxPort}` : ''}`;
  return s;
}

/** The `-j …` part of a rule. */
export function targetText(t: Target): string {
  switch (t.kind) {
    case 'ACCEPT':
    case 'DROP':
    case 'RETURN':
    case 'NOTRACK':
    case 'TRACE':
      return `-j ${t.kind}`;
    case 'jump':
      return `-j ${t.chain}`;
    case 'goto':
      return `-g ${t.chain}`;
    case 'REJECT':
      return `-j REJECT --reject-with ${t.with}`;
    case 'DNAT':
      return `-j DNAT --to-destination ${natRange(t.to)}${t.random ? ' --random' : ''}${t.persistent ? ' --persistent' : ''}`;
    case 'SNAT':
      return `-j SNAT --to-source ${natRange(t.to)}${t.random ? ' --random' : ''}${t.randomFully ? ' --random-fully' : ''}${t.persistent ? ' --persistent' : ''}`;
    case 'MASQUERADE':
      return `-j MASQUERADE${t.toPorts !== undefined ? ` --to-ports ${t.toPorts.from}${t.toPorts.to !== t.toPorts.from ? `-${t.toPorts.to}` : ''}` : ''}${t.random ? ' --random' : ''}${t.randomFully ? ' --random-fully' : ''}`;
    case 'MARK':
      return `-j MARK --set-xmark 0x${t.value.toString(16)}/0x${t.mask.toString(16)}`;
    case 'CONNMARK':
      return t.mode === 'set-xmark' ? `-j CONNMARK --set-xmark 0x${t.value.toString(16)}/0x${t.mask.toString(16)}` : `-j CONNMARK --${t.mode}-mark`;
    case 'LOG':
      return `-j LOG${t.prefix !== undefined ? ` --log-prefix ${JSON.stringify(t.prefix)}` : ''}`;
    case 'NFLOG':
      return `-j NFLOG ${t.args.join(' ')}`.trimEnd();
    case 'CT':
      return t.notrack ? '-j CT --notrack' : `-j CT ${t.args.join(' ')}`.trimEnd();
    case 'unknown':
      return `-j ${t.name}${t.args.length > 0 ? ` ${t.args.join(' ')}` : ''}`;
  }
}

/** `-A CHAIN -s … -d … -i … -o … -p … -m … -j …`. */
export function ruleLine(chain: string, r: Rule): string {
  const parts = [`-A ${chain}`];
  if (r.src !== undefined) parts.push(`${neg(r.src.negate)}-s ${formatCidr(r.src.cidr)}`);
  if (r.dst !== undefined) parts.push(`${neg(r.dst.negate)}-d ${formatCidr(r.dst.cidr)}`);
  if (r.inIface !== undefined) parts.push(`${neg(r.inIface.negate)}-i ${r.inIface.name}${r.inIface.wildcard ? '+' : ''}`);
  if (r.outIface !== undefined) parts.push(`${neg(r.outIface.negate)}-o ${r.outIface.name}${r.outIface.wildcard ? '+' : ''}`);
  if (r.proto !== undefined) parts.push(`${neg(r.proto.negate)}-p ${PROTOS[r.proto.proto] ?? String(r.proto.proto)}`);
  if (r.fragment !== undefined) parts.push(`${neg(r.fragment.negate)}-f`);
  for (const m of r.matches) parts.push(match(m));
  if (r.target !== undefined) parts.push(targetText(r.target));
  return parts.join(' ');
}
