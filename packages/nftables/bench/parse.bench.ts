/**
 * Applying a kube-proxy nftables full sync (knftables' shape, `kubeProxyFullSync`) at 1k and 10k
 * services, against the real `nft -c -f` of the same file in the same run.
 *
 * Run with `pnpm bench nftables/bench/parse`. Measures, never asserts. `nftApply` is netsim's whole
 * `nft -f`: parse, evaluate, commit checks. `nft -c -f` (check only: parse, evaluate and the
 * kernel's validation of the batch, nothing committed) runs in a throwaway network namespace,
 * deleted afterwards, when nft exists and namespaces can be made (root). Wall and CPU time: the
 * box is shared, CPU time is the steadier figure; the real tool's is its child CPU time. At 1k the
 * first call in the process is shown too: it includes compiling the parser, netsim's fixed start
 * cost; the warm figure is the median after three warm-up calls.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { emptyRuleset, nftApply } from '../src/index.ts';
import { kubeProxyFullSync } from '../src/testing/index.ts';

interface Timing {
  readonly wallMs: number;
  readonly cpuMs: number;
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

/** The first call's time: a fresh process pays for compiling the parser (its fixed start cost). */
function once(fn: () => void): Timing {
  const cpu = process.cpuUsage();
  const t = process.hrtime.bigint();
  fn();
  const wallMs = Number(process.hrtime.bigint() - t) / 1e6;
  const used = process.cpuUsage(cpu);
  return { wallMs, cpuMs: (used.user + used.system) / 1000 };
}

function measure(runs: number, fn: () => void): Timing {
  for (let k = 0; k < 3; k++) fn();
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

/** Children's CPU time (ms) from /proc/self/stat (cutime + cstime, 10 ms ticks). */
function childrenCpuMs(): number {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[13]) + Number(f[14])) * 10;
  } catch {
    return 0;
  }
}

function realCheck(text: string, runs: number): Timing | undefined {
  if (process.getuid?.() !== 0) return undefined;
  try {
    execFileSync('nft', ['--version'], { stdio: 'ignore' });
  } catch {
    return undefined;
  }
  const ns = `netsim-nftbench-${process.pid}`;
  const dir = mkdtempSync(join(tmpdir(), 'netsim-nftbench-'));
  const file = join(dir, 'sync.nft');
  writeFileSync(file, text);
  execFileSync('ip', ['netns', 'add', ns]);
  try {
    const once = (): Timing => {
      const c0 = childrenCpuMs();
      const t = process.hrtime.bigint();
      const r = spawnSync('ip', ['netns', 'exec', ns, 'nft', '-c', '-f', file], { encoding: 'utf8' });
      const wallMs = Number(process.hrtime.bigint() - t) / 1e6;
      if (r.status !== 0) throw new Error(`nft -c -f failed: ${r.stderr.slice(0, 500)}`);
      return { wallMs, cpuMs: childrenCpuMs() - c0 };
    };
    const times: Timing[] = [];
    for (let k = 0; k < runs; k++) times.push(once());
    return { wallMs: median(times.map((x) => x.wallMs)), cpuMs: median(times.map((x) => x.cpuMs)) };
  } finally {
    execFileSync('ip', ['netns', 'del', ns]);
    rmSync(dir, { recursive: true, force: true });
  }
}

const fmt = (ms: number): string => (ms >= 100 ? ms.toFixed(0) : ms.toFixed(1));
console.log(`node ${process.version}`);
console.log('| services | lines | MB | nftApply first call, wall / cpu | nftApply warm, wall / cpu | nft -c -f wall / cpu | real ÷ netsim warm, wall / cpu |');
console.log('|---|---|---|---|---|---|---|');
for (const [services, runs] of [
  [1000, 5],
  [10000, 3],
] as const) {
  const text = kubeProxyFullSync({ services });
  const first = services === 1000 ? once(() => nftApply(emptyRuleset(), text)) : undefined;
  const ours = measure(runs, () => {
    nftApply(emptyRuleset(), text);
  });
  const real = realCheck(text, runs);
  const realCol = real === undefined ? 'n/a' : `${fmt(real.wallMs)} / ${fmt(real.cpuMs)} ms`;
  const ratio = real === undefined ? 'n/a' : `${(real.wallMs / ours.wallMs).toFixed(2)}× / ${(real.cpuMs / ours.cpuMs).toFixed(2)}×`;
  const firstCol = first === undefined ? '—' : `${fmt(first.wallMs)} / ${fmt(first.cpuMs)} ms`;
  console.log(`| ${services} | ${text.split('\n').length - 1} | ${(text.length / 1e6).toFixed(1)} | ${firstCol} | ${fmt(ours.wallMs)} / ${fmt(ours.cpuMs)} ms | ${realCol} | ${ratio} |`);
}
