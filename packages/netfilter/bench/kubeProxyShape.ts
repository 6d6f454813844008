/**
 * A kube-proxy (iptables mode, 1.28+) shaped ruleset built directly as data, for benchmarks: per
 * service one ClusterIP rule in KUBE-SERVICES, a KUBE-SVC chain with one `statistic` rule per
 * endpoint (1/(n-i) probabilities), KUBE-SEP chains (hairpin mark + DNAT), and for the first 2767
 * services a NodePort (KUBE-NODEPORTS → KUBE-EXT → KUBE-MARK-MASQ + KUBE-SVC). Endpoints per
 * service cycle 1, 2, 3 (about 11 rules per service).
 */
import { cidr, emptyRuleset, ipv4, probabilityThreshold31, type Chain, type Match, type Rule, type Ruleset } from '../src/index.ts';

export interface ServiceShape {
  readonly clusterIp: number;
  readonly port: number;
  readonly nodePort: number;
  readonly targetPort: number;
  readonly endpoints: readonly number[];
}

export interface KubeProxyShape {
  readonly ruleset: Ruleset;
  readonly services: readonly ServiceShape[];
}

const MASQ_MARK = 0x4000;
const POD_CIDR = cidr(ipv4(0x0af40000), 16); // 10.244.0.0/16

const comment = (c: string): Match => ({ kind: 'comment', comment: c });
const tcpDport = (port: number): Match => ({ kind: 'tcp', dport: { range: { from: port, to: port }, negate: false } });
const jump = (chain: string) => ({ kind: 'jump', chain }) as const;
const host = (a: number) => ({ cidr: cidr(ipv4(a), 32), negate: false });
const TCP = { proto: 6, negate: false };

function hashName(prefix: string, i: number): string {
  return `${prefix}-${i.toString(36).toUpperCase().padStart(16, 'Q')}`;
}

export function kubeProxyRuleset(o: { services: number; nodeIp: number }): KubeProxyShape {
  const base = emptyRuleset();
  const nat: { [name: string]: Chain } = { ...base.tables.nat.chains };
  const add = (name: string, rules: Rule[]) => {
    nat[name] = { name, rules };
  };
  const services: ServiceShape[] = [];
  const kubeServices: Rule[] = [];
  const nodePorts: Rule[] = [];
  for (let i = 0; i < o.services; i++) {
    const clusterIp = 0x0a600000 + i + 1; // 10.96.0.0/12
    const port = [80, 443, 8080, 53][i % 4] as number;
    const nodePort = i < 2767 ? 30000 + i : 0;
    const targetPort = 8080;
    const n = 1 + (i % 3);
    const endpoints = Array.from({ length: n }, (_, e) => 0x0af40000 + i * 4 + e + 1);
    services.push({ clusterIp, port, nodePort, targetPort, endpoints });
    const name = `ns${i % 50}/svc${i}:p`;
    const svc = hashName('KUBE-SVC', i);
    kubeServices.push({ dst: host(clusterIp), proto: TCP, matches: [comment(`${name} cluster IP`), tcpDport(port)], target: jump(svc) });
    const svcRules: Rule[] = [
      {
        src: { cidr: POD_CIDR, negate: true },
        dst: host(clusterIp),
        proto: TCP,
        matches: [comment(`${name} cluster IP`), tcpDport(port)],
        target: jump('KUBE-MARK-MASQ'),
      },
    ];
    endpoints.forEach((ep, e) => {
      const sep = hashName('KUBE-SEP', i * 4 + e);
      const last = e === n - 1;
      const p = 1 / (n - e);
      const stat: Match[] = last
        ? []
        : [{ kind: 'statistic', mode: 'random', probability: { text: p.toFixed(11), threshold31: probabilityThreshold31(p) }, negate: false }];
      svcRules.push({ matches: [comment(`${name} -> ep${e}:${targetPort}`), ...stat], target: jump(sep) });
      add(sep, [
        { src: host(ep), matches: [comment(name)], target: jump('KUBE-MARK-MASQ') },
        {
          proto: TCP,
          matches: [comment(name), { kind: 'tcp' }],
          target: { kind: 'DNAT', to: { minIp: ipv4(ep), maxIp: ipv4(ep), minPort: targetPort, maxPort: targetPort }, random: false, persistent: false },
        },
      ]);
    });
    add(svc, svcRules);
    if (nodePort !== 0) {
      const ext = hashName('KUBE-EXT', i);
      nodePorts.push({ proto: TCP, matches: [comment(name), tcpDport(nodePort)], target: jump(ext) });
      add(ext, [
        { matches: [comment(`masquerade traffic for ${name} external destinations`)], target: jump('KUBE-MARK-MASQ') },
        { matches: [], target: jump(svc) },
      ]);
    }
  }
  kubeServices.push({
    matches: [
      comment('kubernetes service nodeports; NOTE: this must be the last rule in this chain'),
      { kind: 'addrtype', dst: { types: ['LOCAL'], negate: false }, limitIfaceIn: false, limitIfaceOut: false },
    ],
    target: jump('KUBE-NODEPORTS'),
  });
  add('KUBE-SERVICES', kubeServices);
  add('KUBE-NODEPORTS', nodePorts);
  add('KUBE-MARK-MASQ', [{ matches: [], target: { kind: 'MARK', value: MASQ_MARK, mask: MASQ_MARK } }]);
  add('KUBE-POSTROUTING', [
    { matches: [{ kind: 'mark', value: MASQ_MARK, mask: MASQ_MARK, negate: true }], target: { kind: 'RETURN' } },
    { matches: [], target: { kind: 'MARK', value: MASQ_MARK, mask: 0 } },
    { matches: [comment('kubernetes service traffic requiring SNAT')], target: { kind: 'MASQUERADE', random: false, randomFully: true } },
  ]);
  const portals = { matches: [comment('kubernetes service portals')], target: jump('KUBE-SERVICES') };
  nat.PREROUTING = { ...(nat.PREROUTING as Chain), rules: [portals] };
  nat.OUTPUT = { ...(nat.OUTPUT as Chain), rules: [portals] };
  nat.POSTROUTING = { ...(nat.POSTROUTING as Chain), rules: [{ matches: [comment('kubernetes postrouting rules')], target: jump('KUBE-POSTROUTING') }] };
  return { ruleset: { tables: { ...base.tables, nat: { name: 'nat', chains: nat } } }, services };
}
