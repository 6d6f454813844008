/**
 * Parsing and formatting `iptables-save` text at kube-proxy scale, against the real tool.
 *
 * Run with `pnpm bench parse`. Measures, never asserts. For 1k and 10k services (kubeProxyDump:
 * about 9 rules per service), the median over several runs of:
 * - `parseSave` of the dump (iptables-save form) and `formatSave` of the result;
 * - `restore` of the same ruleset written the way kube-proxy writes it (restore form);
 * - where `iptables-restore` exists and namespaces can be made (root), `iptables-restore --test`
 *   of the same dump inside a throwaway network namespace, deleted afterwards: the real tool's
 *   parse (it builds the ruleset in memory and does not commit).
 * Wall time and this process's CPU time are both reported: the benchmark box is shared, so CPU
 * time is the steadier figure for netsim; the real tool runs in a child process (wall time only).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { formatSave, freshRuleset, parseSave, restore } from '../src/index.ts';
import { kubeProxyDump } from '../src/testing/index.ts';

interface Timing {
  readonly wallMs: number;
  readonly cpuMs: number;
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

function measure(runs: number, fn: () => void): Timing {
  fn(); // warm-up
  const walls: number[] = [];
  const cpus: number[] = [];
  for (let k = 0; k < runs; k++) {
    const cpu = process.cpuUsage();
    const t = process.hrtime.bigint();
    fn();
    walls.push(Number(process.hrtime.bigint() - t) / 1e6);
    const used = process.cpuUsage(cpu);
    cpus.push((used.user + used.system) / 1000);
  }
  return { wallMs: median(walls), cpuMs: median(cpus) };
}

function hasRealTool(): boolean {
  try {
    execFileSync('iptables-restore', ['--version'], { stdio: 'ignore' });
    return process.getuid?.() === 0;
  } catch {
    return false;
  }
}

/**
 * CPU time (ms) of this process's waited-for children, from /proc/self/stat (cutime + cstime, in
 * clock ticks of 10 ms): how the real tool's CPU time is read, since it runs as a child.
 */
function childrenCpuMs(): number | undefined {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // After "pid (comm) ", field 14 of the full line (utime) is index 11 here; cutime and cstime follow stime.
    return (Number(fields[13]) + Number(fields[14])) * 10;
  } catch {
    return undefined;
  }
}

/** Median wall and CPU time of `iptables-restore --test < text` in a fresh namespace (deleted after). */
function realRestoreTest(text: string, runs: number): Timing | undefined {
  const ns = `netsim-bench-${process.pid}`;
  try {
    execFileSync('ip', ['netns', 'add', ns], { stdio: 'ignore' });
  } catch {
    return undefined;
  }
  try {
    const once = (): Timing => {
      const cpu = childrenCpuMs() ?? 0;
      const t = process.hrtime.bigint();
      const r = spawnSync('ip', ['netns', 'exec', ns, 'iptables-restore', '--test'], { input: text, encoding: 'utf8' });
      const wallMs = Number(process.hrtime.bigint() - t) / 1e6;
      if (r.status !== 0) throw new Error(`iptables-restore --test failed: ${r.stderr}`);
      return { wallMs, cpuMs: (childrenCpuMs() ?? 0) - cpu };
    };
    once();
    const times: Timing[] = [];
    for (let k = 0; k < runs; k++) times.push(once());
    return { wallMs: median(times.map((x) => x.wallMs)), cpuMs: median(times.map((x) => x.cpuMs)) };
  } finally {
    execFileSync('ip', ['netns', 'del', ns], { stdio: 'ignore' });
  }
}

const fmt = (ms: number): string => (ms >= 100 ? ms.toFixed(0) : ms.toFixed(1));
const real = hasRealTool();
console.log(`node ${process.version}; iptables-restore ${real ? 'available (root)' : 'not available: real-tool column skipped'}`);
console.log('| services | rules | MB | parseSave wall / cpu | formatSave wall / cpu | restore (kube-proxy form) wall / cpu | iptables-restore --test wall / cpu | real ÷ parseSave, wall / cpu |');
console.log('|---|---|---|---|---|---|---|---|');
for (const [services, runs] of [
  [1000, 15],
  [10000, 9],
] as const) {
  const text = kubeProxyDump({ services });
  const input = kubeProxyDump({ services, format: 'restore' });
  const rules = text.split('\n').filter((l) => l.startsWith('-A ')).length;
  // Each run's result is dropped before the next, so no run pays for marking an earlier one.
  const parse = measure(runs, () => {
    parseSave(text);
  });
  const parsed = parseSave(text);
  const format = measure(runs, () => {
    formatSave(parsed);
  });
  const restored = measure(runs, () => {
    restore(freshRuleset(), input);
  });
  const realT = real ? realRestoreTest(text, runs) : undefined;
  const realCol = realT === undefined ? 'n/a' : `${fmt(realT.wallMs)} / ${fmt(realT.cpuMs)} ms`;
  const ratio = realT === undefined ? 'n/a' : `${(realT.wallMs / parse.wallMs).toFixed(2)}× / ${(realT.cpuMs / parse.cpuMs).toFixed(2)}×`;
  console.log(
    `| ${services} | ${rules} | ${(text.length / 1e6).toFixed(1)} | ${fmt(parse.wallMs)} / ${fmt(parse.cpuMs)} ms | ${fmt(format.wallMs)} / ${fmt(format.cpuMs)} ms | ${fmt(restored.wallMs)} / ${fmt(restored.cpuMs)} ms | ${realCol} | ${ratio} |`,
  );
}
