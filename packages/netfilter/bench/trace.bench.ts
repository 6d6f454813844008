/**
 * Trace per packet over kube-proxy-shaped rulesets (1k and 10k services): the `iptables-save` dumps
 * of `kubeProxyDump` (src/testing), parsed with `parseSave`.
 *
 * Run with `pnpm bench trace`. Measures, never asserts. For each size: the cold compile time, then
 * the time per packet of `evaluateHook(PREROUTING)` (raw, mangle, nat) for ClusterIP hits, NodePort
 * hits and misses, with the full trace and with `trace: false`, plus nat POSTROUTING; and one
 * packet over and over, which shows the cost of the walk itself without cache misses. Packets are
 * evaluated in batches of 1000; the report gives the median and the 99th percentile of the
 * per-packet wall time over the batches, and the median per-packet CPU time of the process
 * (`process.cpuUsage`), which leaves out the time the process spent descheduled on a busy machine.
 */
import os from 'node:os';
import {
  compile,
  createEvalState,
  evaluateHook,
  ipv4,
  makePacket,
  parseSave,
  seededRandom31,
  type AddrType,
  type EvalContext,
  type Hook,
  type HookEvalOptions,
  type Packet,
  type Rule,
  type Ruleset,
} from '../src/index.ts';
import { kubeProxyDump } from '../src/testing/index.ts';

/** The node's own address (the dumps use 198.18.0.0/17 for cluster IPs, 198.19.0.0/16 for endpoints). */
const NODE_IP = ipv4(0xc0000201); // 192.0.2.1

/** Destination port of a rule's `-m tcp --dport N`, if any. */
function dportOf(r: Rule): number | undefined {
  for (const m of r.matches) if (m.kind === 'tcp' && m.dport !== undefined) return m.dport.range.from;
  return undefined;
}

/** What the packets of the benchmark aim at, read back from the parsed dump. */
function targets(rs: Ruleset): { clusterIps: [number, number][]; nodePorts: number[]; endpoints: [number, number][] } {
  const nat = rs.tables.nat.chains;
  const clusterIps: [number, number][] = [];
  for (const r of nat['KUBE-SERVICES']?.rules ?? []) {
    const port = dportOf(r);
    if (r.dst !== undefined && port !== undefined) clusterIps.push([r.dst.cidr.addr, port]);
  }
  const nodePorts = (nat['KUBE-NODEPORTS']?.rules ?? []).map(dportOf).filter((p): p is number => p !== undefined);
  const endpoints: [number, number][] = [];
  for (const [name, chain] of Object.entries(nat)) {
    if (!name.startsWith('KUBE-SEP-')) continue;
    for (const r of chain.rules) if (r.target?.kind === 'DNAT' && r.target.to?.minIp !== undefined) endpoints.push([r.target.to.minIp, r.target.to.minPort ?? 0]);
  }
  return { clusterIps, nodePorts, endpoints };
}

function ctxFor(): EvalContext {
  return {
    addrType: (a): AddrType => (a === NODE_IP || a >>> 24 === 127 ? 'LOCAL' : 'UNICAST'),
    conntrack: { state: 'NEW', dnat: false, snat: false, ctmark: 0 },
    random31: seededRandom31(1),
    state: createEvalState(),
  };
}

function packet(dst: number, dport: number, src = 0xcb007107): Packet {
  return makePacket({ src: ipv4(src), dst: ipv4(dst), dport, inIface: 'eth0' });
}

function nowNs(): bigint {
  return process.hrtime.bigint();
}

interface Stat {
  medianNs: number;
  p99Ns: number;
  cpuMedianNs: number;
  traceLen: number;
}

function cpuNs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) * 1000;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

function measure(rs: Ruleset, hook: Hook, packets: readonly Packet[], opts: HookEvalOptions & { linear?: boolean }, batches: number): Stat {
  const ctx = ctxFor();
  const compiled = compile(rs, { index: opts.linear !== true });
  const batch = 1000;
  // Warm-up: let the JIT settle on this path.
  let sink = 0;
  for (let i = 0; i < 20_000; i++) sink += evaluateHook(compiled, hook, packets[i % packets.length] as Packet, ctx, opts).trace.length;
  const wall: number[] = [];
  const cpu: number[] = [];
  let k = 0;
  for (let b = 0; b < batches; b++) {
    const c0 = cpuNs();
    const t0 = nowNs();
    for (let i = 0; i < batch; i++) {
      sink += evaluateHook(compiled, hook, packets[k] as Packet, ctx, opts).trace.length;
      k = (k + 1) % packets.length;
    }
    wall.push(Number(nowNs() - t0) / batch);
    cpu.push((cpuNs() - c0) / batch);
  }
  wall.sort((a, b) => a - b);
  const traceLen = evaluateHook(compiled, hook, packets[0] as Packet, ctx, opts).trace.length;
  if (sink < 0) console.log('unreachable');
  return {
    medianNs: median(wall),
    p99Ns: wall[Math.min(wall.length - 1, Math.floor(wall.length * 0.99))] as number,
    cpuMedianNs: median(cpu),
    traceLen,
  };
}

function fmt(ns: number): string {
  return ns >= 1000 ? `${(ns / 1000).toFixed(2)} µs` : `${ns.toFixed(0)} ns`;
}

function pick<T>(xs: readonly T[], n: number, seed: number): T[] {
  const r = seededRandom31(seed);
  return Array.from({ length: n }, () => xs[r() % xs.length] as T);
}

function rulesCount(rs: Ruleset): number {
  let n = 0;
  for (const t of Object.values(rs.tables)) for (const c of Object.values(t.chains)) n += c.rules.length;
  return n;
}

const rows: string[] = [];
for (const services of [1000, 10_000]) {
  const rs = parseSave(kubeProxyDump({ services }));
  const t0 = nowNs();
  compile(rs);
  const compileMs = Number(nowNs() - t0) / 1e6;
  console.log(`\n${services} services, ${rulesCount(rs)} rules: compile ${compileMs.toFixed(1)} ms (cold)`);
  const t = targets(rs);
  const clusterIp = pick(t.clusterIps, 4096, 1).map(([dst, port]) => packet(dst, port));
  const nodePort = pick(t.nodePorts, 4096, 2).map((port) => packet(NODE_IP, port));
  const miss = Array.from({ length: 4096 }, (_, i) => packet(0xcb007100 + (i & 0xff), 9999));
  const post = pick(t.endpoints, 4096, 3).map(([ep, port]) => ({ ...packet(ep, port), mark: 0x4000, inIface: null, outIface: 'eth0' }));
  const cases: [string, Hook, readonly Packet[], HookEvalOptions & { linear?: boolean }][] = [
    ['PREROUTING ClusterIP hit, one service (cache-hot)', 'PREROUTING', clusterIp.slice(0, 1), {}],
    ['PREROUTING ClusterIP hit, full trace', 'PREROUTING', clusterIp, {}],
    ['PREROUTING ClusterIP hit, trace off', 'PREROUTING', clusterIp, { trace: false }],
    ['PREROUTING NodePort hit, full trace', 'PREROUTING', nodePort, {}],
    ['PREROUTING no service, full trace', 'PREROUTING', miss, {}],
    ['PREROUTING ClusterIP hit, linear scan (index off), trace off', 'PREROUTING', clusterIp, { linear: true, trace: false }],
    ['POSTROUTING masquerade, full trace', 'POSTROUTING', post, {}],
  ];
  for (const [name, hook, packets, opts] of cases) {
    const s = measure(rs, hook, packets, opts, opts.linear === true ? 20 : 200);
    const line = `| ${services} | ${name} | ${fmt(s.medianNs)} | ${fmt(s.cpuMedianNs)} | ${fmt(s.p99Ns)} | ${s.traceLen} |`;
    console.log(line);
    rows.push(line);
  }
}
console.log(`\nload average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')} on ${os.cpus().length} CPUs`);
console.log('| services | case | median per packet (wall) | median per packet (CPU) | p99 (wall) | trace entries |');
console.log('|---|---|---|---|---|---|');
for (const r of rows) console.log(r);
