/**
 * kube-proxy's own packet-flow tests (pkg/proxy/iptables, TestTracePacket: its ruleset, packets
 * and expected outcomes), answered with `netsim trace --all-branches`. kube-proxy's test tracer
 * walks nat PREROUTING following every `statistic` branch and collects each DNAT destination,
 * then the filter chains KUBE-SERVICES, KUBE-EXTERNAL-SERVICES, KUBE-NODEPORTS and
 * KUBE-PROXY-FIREWALL for the DNATed packet, collecting ACCEPT, DROP or REJECT; "masq" is whether
 * KUBE-MARK-MASQ marked the packet. The same questions here go through netsim's evaluator, once
 * on the dump with its built-in chains and once on the golden shape kube-proxy's tests compare
 * against (no built-in chains: the walk starts at the user chain with --table/--chain).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { formatIpv4 } from '@netsim/netfilter';
import { runTraceBranches, type TraceOptions } from '../src/commands/trace.ts';

const dir = fileURLToPath(new URL('./fixtures/kube-proxy/', import.meta.url));
const NODE_IP = '192.168.0.2';
const EXTERNAL_CLIENT = '203.0.113.2';
const EXTERNAL_CLIENT_BLOCKED = '203.0.113.130';
// kube-proxy's testNodeIPs (IPv4 ones): the addresses its tracer counts as LOCAL.
const NODE_IPS = [NODE_IP, '192.168.1.2', '192.168.99.11'];

interface Flow {
  readonly name: string;
  readonly sourceIP: string;
  readonly destIP: string;
  readonly destPort: number;
  readonly output: string;
  readonly masq: boolean;
  readonly protocol?: 'tcp' | 'udp' | 'sctp';
}

const TRACE_PACKET_FLOWS: readonly Flow[] = [
  { name: 'no match', sourceIP: '10.0.0.2', destIP: '10.0.0.3', destPort: 80, output: '', masq: false },
  { name: 'single endpoint', sourceIP: '10.0.0.2', destIP: '172.30.0.41', destPort: 80, output: '10.180.0.1:80', masq: false },
  { name: 'multiple endpoints', sourceIP: '10.0.0.2', destIP: '172.30.0.44', destPort: 80, output: '10.180.0.4:80, 10.180.0.5:80', masq: false },
  { name: 'LOCAL, KUBE-MARK-MASQ', sourceIP: NODE_IP, destIP: '192.168.99.22', destPort: 80, output: '10.180.0.2:80', masq: true },
  { name: 'DROP', sourceIP: EXTERNAL_CLIENT, destIP: '192.168.99.22', destPort: 80, output: 'DROP', masq: false },
  { name: 'ACCEPT (NodePortHealthCheck)', sourceIP: NODE_IP, destIP: NODE_IP, destPort: 30000, output: 'ACCEPT', masq: false },
  { name: 'REJECT', sourceIP: '10.0.0.2', destIP: '172.30.0.46', destPort: 80, output: 'REJECT', masq: false },
];

function options(ruleset: string, packet: string, over: Partial<TraceOptions>): TraceOptions {
  return { ruleset, packet, localAddress: NODE_IPS, ctstate: 'NEW', ctmark: 0, seed: 1, unknown: 'stop', skipNat: false, all: false, json: false, allBranches: true, ...over };
}

/** The flow's outcome as kube-proxy's tracer states it: DNAT destinations or filter verdicts, and masq. */
function flow(ruleset: string, f: Flow, startAtUserChains: boolean): { output: string; masq: boolean } {
  const proto = f.protocol ?? 'tcp';
  const packet = `${proto} ${f.sourceIP}:40000 > ${f.destIP}:${f.destPort} in eth0`;
  const nat = runTraceBranches(options(ruleset, packet, startAtUserChains ? { table: 'nat', chain: 'KUBE-SERVICES' } : { hook: 'PREROUTING' }));
  const outputs: string[] = [];
  let masq = false;
  for (const b of nat.branches) {
    const r = b.result.result;
    if ((r.mark & 0x4000) !== 0) masq = true;
    if (r.nat?.kind === 'DNAT' && r.nat.to !== undefined) outputs.push(`${formatIpv4(r.nat.to.minIp ?? 0)}:${r.nat.to.minPort}`);
  }
  // As kube-proxy's tracer does: the filter chains see the first DNAT's address, the original port.
  const dst = outputs[0]?.split(':')[0] ?? f.destIP;
  for (const chain of ['KUBE-SERVICES', 'KUBE-EXTERNAL-SERVICES', 'KUBE-NODEPORTS', 'KUBE-PROXY-FIREWALL']) {
    const filter = runTraceBranches(options(ruleset, `${proto} ${f.sourceIP}:40000 > ${dst}:${f.destPort} in eth0`, { table: 'filter', chain }));
    for (const b of filter.branches) {
      const r = b.result;
      if (!r.returned && r.result.verdict.kind !== 'unknown') outputs.push(r.result.verdict.kind);
    }
  }
  return { output: outputs.join(', '), masq };
}

/**
 * More of kube-proxy's packet-flow tests, each on the golden-shape dump its proxier writes for the
 * test's Services (TestOverallIPTablesRules' dump verbatim; the others built by kube-proxy's rules
 * for the test's Services, in the same shape): no built-in chains, kube-proxy's own word order.
 */
const GOLDEN_FLOWS: readonly (readonly [file: string, flows: readonly Flow[]])[] = [
  [
    'overall-rules.rules',
    [
      { name: 'ClusterIP', sourceIP: '10.0.0.2', destIP: '172.30.0.41', destPort: 80, output: '10.180.0.1:80', masq: false },
      { name: 'ClusterIP from outside the pod CIDR', sourceIP: '192.168.1.5', destIP: '172.30.0.41', destPort: 80, output: '10.180.0.1:80', masq: true },
      { name: 'hairpin to ClusterIP', sourceIP: '10.180.0.1', destIP: '172.30.0.41', destPort: 80, output: '10.180.0.1:80', masq: true },
      { name: 'Local LB with no local endpoints, external', sourceIP: EXTERNAL_CLIENT, destIP: '1.2.3.4', destPort: 80, output: 'DROP', masq: false },
      { name: 'Local LB from a pod goes to the cluster chain', sourceIP: '10.0.0.2', destIP: '1.2.3.4', destPort: 80, output: '10.180.0.2:80', masq: false },
      { name: 'Local external IP from the node', sourceIP: NODE_IP, destIP: '192.168.99.22', destPort: 80, output: '10.180.0.2:80', masq: true },
      { name: 'Local NodePort from outside, no local endpoints', sourceIP: EXTERNAL_CLIENT, destIP: NODE_IP, destPort: 3001, output: 'DROP', masq: false },
      { name: 'NodePort (Cluster)', sourceIP: EXTERNAL_CLIENT, destIP: NODE_IP, destPort: 3003, output: '10.180.0.3:80', masq: true },
      { name: 'NodePort on the alternate node IP', sourceIP: EXTERNAL_CLIENT, destIP: '192.168.1.2', destPort: 3003, output: '10.180.0.3:80', masq: true },
      { name: 'localhost NodePort', sourceIP: '127.0.0.1', destIP: '127.0.0.1', destPort: 3003, output: '10.180.0.3:80', masq: true },
      { name: 'external IP (Cluster), both endpoints', sourceIP: EXTERNAL_CLIENT, destIP: '192.168.99.33', destPort: 80, output: '10.180.0.4:80, 10.180.0.5:80', masq: true },
      { name: 'LB with source ranges, allowed', sourceIP: EXTERNAL_CLIENT, destIP: '5.6.7.8', destPort: 80, output: '10.180.0.3:80', masq: true },
      { name: 'LB with source ranges, blocked', sourceIP: EXTERNAL_CLIENT_BLOCKED, destIP: '5.6.7.8', destPort: 80, output: 'DROP', masq: false },
      { name: 'sessionAffinity ClusterIP (no affinity yet)', sourceIP: '10.0.0.2', destIP: '172.30.0.45', destPort: 80, output: '10.180.0.3:80', masq: false },
      { name: 'NodePort of the affinity LB', sourceIP: EXTERNAL_CLIENT, destIP: NODE_IP, destPort: 3002, output: '10.180.0.3:80', masq: true },
      { name: 'no endpoints', sourceIP: '10.0.0.2', destIP: '172.30.0.46', destPort: 80, output: 'REJECT', masq: false },
      { name: 'health check node port', sourceIP: EXTERNAL_CLIENT, destIP: NODE_IP, destPort: 30000, output: 'ACCEPT', masq: false },
      { name: 'wrong port', sourceIP: '10.0.0.2', destIP: '172.30.0.41', destPort: 443, output: '', masq: false },
    ],
  ],
  [
    'no-endpoints-reject.rules',
    [
      { name: 'pod to cluster IP with no endpoints', sourceIP: '10.0.0.2', destIP: '172.30.0.41', destPort: 80, output: 'REJECT', masq: false },
      { name: 'external to external IP with no endpoints', sourceIP: EXTERNAL_CLIENT, destIP: '192.168.99.11', destPort: 80, output: 'REJECT', masq: false },
      { name: 'pod to NodePort with no endpoints', sourceIP: '10.0.0.2', destIP: NODE_IP, destPort: 3001, output: 'REJECT', masq: false },
      { name: 'external to NodePort with no endpoints', sourceIP: EXTERNAL_CLIENT, destIP: NODE_IP, destPort: 3001, output: 'REJECT', masq: false },
      { name: 'pod to LoadBalancer IP with no endpoints', sourceIP: '10.0.0.2', destIP: '1.2.3.4', destPort: 80, output: 'REJECT', masq: false },
      { name: 'external to LoadBalancer IP with no endpoints', sourceIP: EXTERNAL_CLIENT, destIP: '1.2.3.4', destPort: 80, output: 'REJECT', masq: false },
    ],
  ],
  [
    'cluster-ip-general.rules',
    [
      { name: 'simple clusterIP', sourceIP: '10.180.0.2', destIP: '172.30.0.41', destPort: 80, output: '10.180.0.1:80', masq: false },
      { name: 'hairpin to cluster IP', sourceIP: '10.180.0.1', destIP: '172.30.0.41', destPort: 80, output: '10.180.0.1:80', masq: true },
      { name: 'clusterIP with multiple endpoints', sourceIP: '10.180.0.2', destIP: '172.30.0.42', destPort: 80, output: '10.180.0.1:80, 10.180.2.1:80', masq: false },
      { name: 'clusterIP with TargetPort', sourceIP: '10.180.0.2', destIP: '172.30.0.42', destPort: 443, output: '10.180.0.1:8443, 10.180.2.1:8443', masq: false },
      { name: 'TCP, UDP and SCTP on the same port (TCP)', sourceIP: '10.180.0.2', destIP: '172.30.0.42', destPort: 53, output: '10.180.0.1:5353, 10.180.2.1:5353', masq: false, protocol: 'tcp' },
      { name: 'TCP, UDP and SCTP on the same port (UDP)', sourceIP: '10.180.0.2', destIP: '172.30.0.42', destPort: 53, output: '10.180.0.1:53, 10.180.2.1:53', masq: false, protocol: 'udp' },
      { name: 'TCP, UDP and SCTP on the same port (SCTP)', sourceIP: '10.180.0.2', destIP: '172.30.0.42', destPort: 53, output: '10.180.0.1:53, 10.180.2.1:53', masq: false, protocol: 'sctp' },
      { name: 'TCP-only port does not match UDP traffic', sourceIP: '10.180.0.2', destIP: '172.30.0.42', destPort: 80, output: '', masq: false, protocol: 'udp' },
      { name: "svc1 does not accept svc2's ports", sourceIP: '10.180.0.2', destIP: '172.30.0.41', destPort: 443, output: '', masq: false },
    ],
  ],
  [
    'load-balancer.rules',
    [
      { name: 'pod to cluster IP', sourceIP: '10.0.0.2', destIP: '172.30.0.41', destPort: 80, output: '10.180.0.1:80', masq: false },
      { name: 'external to nodePort', sourceIP: EXTERNAL_CLIENT, destIP: NODE_IP, destPort: 3001, output: '10.180.0.1:80', masq: true },
      { name: 'nodePort bypasses LoadBalancerSourceRanges', sourceIP: EXTERNAL_CLIENT_BLOCKED, destIP: NODE_IP, destPort: 3001, output: '10.180.0.1:80', masq: true },
      { name: 'accepted external to LB1', sourceIP: EXTERNAL_CLIENT, destIP: '1.2.3.4', destPort: 80, output: '10.180.0.1:80', masq: true },
      { name: 'accepted external to LB2', sourceIP: EXTERNAL_CLIENT, destIP: '5.6.7.8', destPort: 80, output: '10.180.0.1:80', masq: true },
      { name: 'blocked external to LB1', sourceIP: EXTERNAL_CLIENT_BLOCKED, destIP: '1.2.3.4', destPort: 80, output: 'DROP', masq: false },
      { name: 'blocked external to LB2', sourceIP: EXTERNAL_CLIENT_BLOCKED, destIP: '5.6.7.8', destPort: 80, output: 'DROP', masq: false },
      { name: 'pod to LB1 (blocked by LoadBalancerSourceRanges)', sourceIP: '10.0.0.2', destIP: '1.2.3.4', destPort: 80, output: 'DROP', masq: false },
      { name: 'pod to LB2 (blocked by LoadBalancerSourceRanges)', sourceIP: '10.0.0.2', destIP: '5.6.7.8', destPort: 80, output: 'DROP', masq: false },
      { name: 'node to LB1 (allowed by LoadBalancerSourceRanges)', sourceIP: NODE_IP, destIP: '1.2.3.4', destPort: 80, output: '10.180.0.1:80', masq: true },
      { name: 'node to LB2 (allowed by LoadBalancerSourceRanges)', sourceIP: NODE_IP, destIP: '5.6.7.8', destPort: 80, output: '10.180.0.1:80', masq: true },
      { name: 'same node to LB1, SNATted to LB1 (implicitly allowed)', sourceIP: '1.2.3.4', destIP: '1.2.3.4', destPort: 80, output: '10.180.0.1:80', masq: true },
      { name: 'same node to LB2, SNATted to LB2 (implicitly allowed)', sourceIP: '5.6.7.8', destIP: '5.6.7.8', destPort: 80, output: '10.180.0.1:80', masq: true },
    ],
  ],
];

describe("kube-proxy's packet-flow tests on its golden-shape dumps", () => {
  for (const [file, flows] of GOLDEN_FLOWS) {
    for (const f of flows) {
      it(`should agree on "${f.name}" (${file})`, () => {
        expect(flow(`${dir}${file}`, f, true)).toEqual({ output: f.output, masq: f.masq });
      });
    }
  }
});

describe("kube-proxy's TestTracePacket flows through netsim", () => {
  for (const [shape, file, userChains] of [
    ['the dump with its built-in chains', 'trace-packet.rules', false],
    ['the golden shape without built-in chains', 'overall-golden.rules', true],
  ] as const) {
    for (const f of TRACE_PACKET_FLOWS) {
      it(`should agree on "${f.name}" (${shape})`, () => {
        expect(flow(`${dir}${file}`, f, userChains)).toEqual({ output: f.output, masq: f.masq });
      });
    }
  }

  it('should give the two endpoints of ns4/svc4 one half each, exactly', () => {
    const run = runTraceBranches(options(`${dir}overall-golden.rules`, 'tcp 10.0.0.2:40000 > 172.30.0.44:80 in eth0', { table: 'nat', chain: 'KUBE-SERVICES' }));
    expect(run.branches.map((b) => `${b.probability.num}/${b.probability.den}`)).toEqual(['1/2', '1/2']);
    expect(readFileSync(`${dir}overall-golden.rules`, 'utf8')).not.toContain(':PREROUTING');
  });
});
