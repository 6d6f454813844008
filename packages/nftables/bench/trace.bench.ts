/**
 * Packets through a kube-proxy nftables ruleset (`kubeProxyFullSync`) at 1k and 10k services:
 * `evaluateHook` at prerouting (filter-prerouting-pre-dnat, nat-prerouting → services → the
 * `service-ips` verdict map → service chain → numgen vmap → endpoint chain → dnat).
 *
 * Run with `pnpm bench nftables/bench/trace`. Measures, never asserts. Packets are evaluated in
 * batches of 1000; the report gives the median per-packet wall and CPU time over the batches for
 * ClusterIP packets spread over every Service (cold caches), for one packet over and over (the walk
 * itself), and with the full trace. A verdict map makes the walk constant in the number of Services;
 * what grows is the memory the spread packets touch. Chains run compiled (closures built per table,
 * each chain on its first packet): the first pass over every Service pays for that and is reported
 * on its own; the warm-up then covers every packet once more before the timed batches.
 */
import { createNftEvalState, emptyRuleset, evaluateHook, nftApply, type NftEvalContext, type NftPacket, type Ruleset } from '../src/index.ts';
import { clusterIp, kubeProxyFullSync } from '../src/testing/index.ts';

const ip = (s: string): number => s.split('.').reduce((a, o) => a * 256 + Number(o), 0);

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

let seed = 1;
const base: Omit<NftEvalContext, 'trace'> = {
  hook: 'prerouting',
  conntrack: { state: 'new', status: 0, mark: 0 },
  fibAddrType: (a) => (a === ip('192.0.2.10') ? 2 : 1),
  // A fixed linear congruential sequence: the benchmark's own seeded source.
  random32: () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0),
};

function perPacket(rs: Ruleset, packets: readonly NftPacket[], ctx: NftEvalContext, batches: number): { wallUs: number; cpuUs: number } {
  const state = createNftEvalState();
  for (let i = 0; i < Math.max(5000, packets.length); i++) evaluateHook(rs, packets[i % packets.length] as NftPacket, ctx, state);
  const walls: number[] = [];
  const cpus: number[] = [];
  let k = 0;
  for (let b = 0; b < batches; b++) {
    const c = process.cpuUsage();
    const t = process.hrtime.bigint();
    for (let i = 0; i < 1000; i++) evaluateHook(rs, packets[k++ % packets.length] as NftPacket, ctx, state);
    walls.push(Number(process.hrtime.bigint() - t) / 1e6);
    const u = process.cpuUsage(c);
    cpus.push((u.user + u.system) / 1000);
  }
  return { wallUs: median(walls), cpuUs: median(cpus) };
}

console.log(`node ${process.version}`);
console.log('| services | packets | median µs/packet wall / cpu |');
console.log('|---|---|---|');
for (const services of [1000, 10000]) {
  const rs = nftApply(emptyRuleset(), kubeProxyFullSync({ services }));
  const spread: NftPacket[] = [];
  for (let i = 0; i < services; i++) {
    if (i % 10 === 9) continue; // no endpoints: rejected later in filter, not DNATed here
    spread.push({ saddr: ip('10.0.0.5'), daddr: ip(clusterIp(i)), protocol: 6, sport: 40000 + (i % 20000), dport: 80, tcpFlags: 2, mark: 0, iifname: 'cni0' });
  }
  const one = [spread[0] as NftPacket];
  {
    const c = process.cpuUsage();
    const t = process.hrtime.bigint();
    const state = createNftEvalState();
    for (const p of spread) evaluateHook(rs, p, base, state);
    const wall = Number(process.hrtime.bigint() - t) / 1e3 / spread.length;
    const u = process.cpuUsage(c);
    console.log(`| ${services} | first pass over every Service (compiles each chain it reaches) | ${wall.toFixed(2)} / ${((u.user + u.system) / spread.length).toFixed(2)} |`);
  }
  for (const [name, packets, trace] of [
    ['ClusterIP, spread over every Service', spread, false],
    ['one ClusterIP packet, repeated', one, false],
    ['ClusterIP, spread, with trace', spread, true],
  ] as const) {
    const r = perPacket(rs, packets, { ...base, trace }, 30);
    console.log(`| ${services} | ${name} | ${r.wallUs.toFixed(2)} / ${r.cpuUs.toFixed(2)} |`);
  }
}
