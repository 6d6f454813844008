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

interface Flow {
  readonly name: string;
  readonly sourceIP: string;
  readonly destIP: string;
  readonly destPort: number;
  readonly output: string;
  readonly masq: boolean;
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
  return { ruleset, packet, localAddress: [NODE_IP], ctstate: 'NEW', ctmark: 0, seed: 1, unknown: 'stop', skipNat: false, all: false, json: false, allBranches: true, ...over };
}

/** The flow's outcome as kube-proxy's tracer states it: DNAT destinations or filter verdicts, and masq. */
function flow(ruleset: string, f: Flow, startAtUserChains: boolean): { output: string; masq: boolean } {
  const packet = `tcp ${f.sourceIP}:40000 > ${f.destIP}:${f.destPort} in eth0`;
  const nat = runTraceBranches(options(ruleset, packet, startAtUserChains ? { table: 'nat', chain: 'KUBE-SERVICES' } : { hook: 'PREROUTING' }));
  const outputs: string[] = [];
  let masq = false;
  for (const b of nat.branches) {
    const r = b.result.result;
    if ((r.mark & 0x4000) !== 0) masq = true;
    if (r.nat?.kind === 'DNAT' && r.nat.to !== undefined) outputs.push(`${formatIpv4(r.nat.to.minIp ?? 0)}:${r.nat.to.minPort}`);
  }
  const dst = outputs[0]?.split(':')[0] ?? f.destIP;
  const dport = outputs[0]?.split(':')[1] ?? `${f.destPort}`;
  for (const chain of ['KUBE-SERVICES', 'KUBE-EXTERNAL-SERVICES', 'KUBE-NODEPORTS', 'KUBE-PROXY-FIREWALL']) {
    const filter = runTraceBranches(options(ruleset, `tcp ${f.sourceIP}:40000 > ${dst}:${dport} in eth0`, { table: 'filter', chain }));
    for (const b of filter.branches) {
      const r = b.result;
      if (!r.returned && r.result.verdict.kind !== 'unknown') outputs.push(r.result.verdict.kind);
    }
  }
  return { output: outputs.join(', '), masq };
}

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
