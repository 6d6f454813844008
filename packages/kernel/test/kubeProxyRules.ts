/**
 * kube-proxy's iptables-mode rules for one NodePort Service, written by hand as data (the shape of
 * DOMAIN.md §1 "NodePort connections reset"): KUBE-SERVICES → KUBE-NODEPORTS → KUBE-EXT-* →
 * (Cluster: KUBE-MARK-MASQ then KUBE-SVC-*; Local: KUBE-SVL-*) → KUBE-SEP-* DNAT, and
 * KUBE-POSTROUTING masquerading marked packets. Hashes are fixed strings for readability.
 */
import type { Ruleset } from '@netsim/netfilter';
import { append, declare, emptyRuleset, M, rule, T } from './rules.ts';

export interface NodePortSpec {
  readonly nodePort: number;
  readonly policy: 'Cluster' | 'Local';
  /** Endpoints, each with whether it runs on this node. Empty: the Service has no endpoints. */
  readonly endpoints: readonly { readonly ip: string; readonly port: number; readonly local: boolean }[];
  /** Skip the KUBE-POSTROUTING MASQUERADE (a proxy or masquerade defect). */
  readonly noMasquerade?: boolean;
}

const MASQ_BIT = 0x4000;

export function kubeProxyNodePort(spec: NodePortSpec, base: Ruleset = emptyRuleset()): Ruleset {
  // kube-proxy declares every chain it uses in its restore input, empty or not.
  let rs = declare(base, 'nat', 'KUBE-SERVICES', 'KUBE-NODEPORTS', 'KUBE-POSTROUTING', 'KUBE-MARK-MASQ', 'KUBE-EXT-WEB', 'KUBE-SVC-WEB', 'KUBE-SVL-WEB');
  rs = declare(rs, 'filter', 'KUBE-EXTERNAL-SERVICES');
  const nat = (chain: string, ...r: Parameters<typeof rule>[]): void => {
    for (const [o, t] of r) rs = append(rs, 'nat', chain, rule(o, t));
  };
  nat('PREROUTING', [{ m: [M.comment('kubernetes service portals')] }, T.jump('KUBE-SERVICES')]);
  nat('OUTPUT', [{ m: [M.comment('kubernetes service portals')] }, T.jump('KUBE-SERVICES')]);
  nat('POSTROUTING', [{ m: [M.comment('kubernetes postrouting rules')] }, T.jump('KUBE-POSTROUTING')]);
  nat('KUBE-MARK-MASQ', [{}, T.orMark(MASQ_BIT)]);
  if (spec.noMasquerade !== true) {
    nat(
      'KUBE-POSTROUTING',
      [{ m: [M.markMatch(MASQ_BIT, MASQ_BIT, true)] }, T.ret],
      [{}, T.xorMark(MASQ_BIT)],
      [{ m: [M.comment('kubernetes service traffic requiring SNAT')] }, T.masq(true)],
    );
  } else {
    nat('KUBE-POSTROUTING', [{ m: [M.markMatch(MASQ_BIT, MASQ_BIT, true)] }, T.ret], [{}, T.xorMark(MASQ_BIT)]);
  }
  nat('KUBE-SERVICES', [{ m: [M.comment('kubernetes service nodeports'), M.dstLocal()] }, T.jump('KUBE-NODEPORTS')]);
  const eps = spec.policy === 'Local' ? spec.endpoints.filter((e) => e.local) : spec.endpoints;
  if (spec.endpoints.length === 0) {
    rs = append(
      rs,
      'filter',
      'INPUT',
      rule({ m: [M.ctstate('NEW'), M.comment('kubernetes externally-visible service portals')] }, T.jump('KUBE-EXTERNAL-SERVICES')),
    );
    rs = append(
      rs,
      'filter',
      'KUBE-EXTERNAL-SERVICES',
      rule({ p: 'tcp', dport: spec.nodePort, m: [M.comment('default/web has no endpoints'), M.dstLocal()] }, T.reject('icmp-port-unreachable')),
    );
    return rs;
  }
  nat('KUBE-NODEPORTS', [{ p: 'tcp', dport: spec.nodePort, m: [M.comment('default/web')] }, T.jump('KUBE-EXT-WEB')]);
  if (spec.policy === 'Cluster') {
    nat('KUBE-EXT-WEB', [{ m: [M.comment('masquerade traffic for default/web external destinations')] }, T.jump('KUBE-MARK-MASQ')], [{}, T.jump('KUBE-SVC-WEB')]);
  } else {
    nat('KUBE-EXT-WEB', [{ s: '203.0.113.0/24', m: [M.comment('pod traffic for default/web external destinations')] }, T.jump('KUBE-SVC-WEB')], [{}, T.jump('KUBE-SVL-WEB')]);
  }
  const chains: [string, readonly { ip: string; port: number }[]][] = [['KUBE-SVC-WEB', spec.endpoints], ['KUBE-SVL-WEB', eps]];
  for (const [svc, list] of chains) {
    if (list.length === 0 && svc === 'KUBE-SVL-WEB' && spec.policy === 'Local') {
      rs = append(rs, 'filter', 'INPUT', rule({ m: [M.ctstate('NEW')] }, T.jump('KUBE-EXTERNAL-SERVICES')));
      rs = append(
        rs,
        'filter',
        'KUBE-EXTERNAL-SERVICES',
        rule({ p: 'tcp', dport: spec.nodePort, m: [M.comment('default/web has no local endpoints'), M.dstLocal()] }, T.drop),
      );
    }
    list.forEach((e, i) => {
      const sep = `KUBE-SEP-${e.ip.replaceAll('.', '')}`;
      const left = list.length - i;
      const m = left > 1 ? [{ kind: 'statistic', mode: 'random', probability: { text: (1 / left).toFixed(10), threshold31: Math.floor((1 / left) * 0x80000000 + 0.5) }, negate: false } as const] : [];
      nat(svc, [{ m: [M.comment(`default/web -> ${e.ip}:${e.port}`), ...m] }, T.jump(sep)]);
      if ((rs.tables.nat.chains[sep]?.rules.length ?? 0) === 0) {
        nat(sep, [{ s: `${e.ip}/32` }, T.jump('KUBE-MARK-MASQ')], [{ p: 'tcp' }, T.dnat(`${e.ip}:${e.port}`)]);
      }
    });
  }
  return rs;
}
