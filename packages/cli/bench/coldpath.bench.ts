/**
 * The installed CLI, whole process, cold: what a user or a CI job pays for one `netsim` command.
 *
 * `pnpm bench coldpath`. Measures, never asserts. Builds the public packages (`pnpm build`;
 * `NETSIM_BENCH_NO_BUILD=1` skips it when dist/ is fresh), lays them out in a temporary directory
 * as `npm i` of the packed tarballs would (each package.json with its publishConfig applied,
 * its `files`, third-party dependencies linked from the workspace), then runs, interleaved, the
 * median of several runs of each under plain `node`:
 * - `node -e ''` (Node's own start-up) and `netsim --help`;
 * - `netsim ruleset fmt DUMP > FILE` of a kube-proxy dump of 10,000 NodePort Services with 3
 *   endpoints each (190,041 lines), and — as root, where it exists — `iptables-restore --test
 *   DUMP` of the same file in a throwaway network namespace (deleted afterwards);
 * each with its wall time and peak resident set (GNU time's %e and %M).
 * With `--cpu-prof`, also writes a V8 CPU profile of one `ruleset fmt` run and prints where
 * its samples fall (start-up and module loading, compile, parse, format, write, GC).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { kubeProxyDump } from '@netsim/netfilter/testing';
import { publicPackages } from '../../../tools/packages.ts';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const RUNS = Number(process.env['NETSIM_BENCH_RUNS'] ?? 5);

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

/** The packages as `npm i DIR/*.tgz` installs them, in `dir/node_modules`. */
function install(dir: string): string {
  const pkgs = publicPackages(root);
  const nm = join(dir, 'node_modules');
  const linked = new Set<string>();
  for (const p of pkgs) {
    const target = join(nm, p.name);
    mkdirSync(target, { recursive: true });
    const { publishConfig, ...manifest } = JSON.parse(readFileSync(join(p.dir, 'package.json'), 'utf8')) as Record<string, unknown> & { publishConfig?: object };
    writeFileSync(join(target, 'package.json'), JSON.stringify({ ...manifest, ...publishConfig }, null, 2));
    for (const f of p.manifest.files ?? []) if (existsSync(join(p.dir, f))) cpSync(join(p.dir, f), join(target, f), { recursive: true });
    for (const dep of Object.keys(p.manifest.dependencies ?? {})) {
      if (dep.startsWith('@netsim/') || linked.has(dep)) continue;
      linked.add(dep);
      mkdirSync(dirname(join(nm, dep)), { recursive: true });
      symlinkSync(realpathSync(join(p.dir, 'node_modules', dep)), join(nm, dep));
    }
  }
  return join(nm, '@netsim', 'cli', 'dist', 'bin.js');
}

interface Run {
  readonly seconds: number;
  readonly rssMiB: number;
}

/** Wall time and peak RSS of one command (GNU time), stdout to `out`. */
function timed(argv: readonly string[], out: string): Run {
  const r = spawnSync('/usr/bin/time', ['-f', '%e %M', '-o', `${out}.time`, 'sh', '-c', '"$@" > "$0"', out, ...argv], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${argv.join(' ')} failed (${r.status}): ${r.stderr}`);
  const [e, m] = readFileSync(`${out}.time`, 'utf8').trim().split('\n').at(-1)!.split(' ');
  return { seconds: Number(e), rssMiB: Number(m) / 1024 };
}

function hasRealTool(): boolean {
  try {
    execFileSync('iptables-restore', ['--version'], { stdio: 'ignore' });
    return process.getuid?.() === 0;
  } catch {
    return false;
  }
}

if (process.env['NETSIM_BENCH_NO_BUILD'] !== '1') execFileSync('pnpm', ['-s', 'build'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
const work = mkdtempSync(join(tmpdir(), 'netsim-coldpath-'));
const ns = `netsim-cold-${process.pid}`;
let nsMade = false;
try {
  const bin = install(work);
  const dump = join(work, 'kube-proxy-10k.rules');
  const text = kubeProxyDump({ services: 10000, endpoints: 3, nodePortEvery: 1 });
  writeFileSync(dump, text);
  const lines = text.split('\n').length - 1;
  const out = join(work, 'out');
  const real = hasRealTool();
  if (real) {
    execFileSync('ip', ['netns', 'add', ns], { stdio: 'ignore' });
    nsMade = true;
  }
  const node = process.execPath;
  const cases: { readonly name: string; readonly argv: readonly string[] }[] = [
    { name: "node -e ''", argv: [node, '-e', ''] },
    { name: 'netsim --help', argv: [node, bin, '--help'] },
    { name: `netsim ruleset fmt (${lines} lines)`, argv: [node, bin, 'ruleset', 'fmt', dump] },
    ...(real ? [{ name: `iptables-restore --test (${lines} lines)`, argv: ['ip', 'netns', 'exec', ns, 'iptables-restore', '--test', dump] }] : []),
  ];
  const runs = new Map<string, Run[]>(cases.map((c) => [c.name, []]));
  for (const c of cases) timed(c.argv, out); // warm the page cache
  for (let k = 0; k < RUNS; k++) for (const c of cases) runs.get(c.name)!.push(timed(c.argv, out));
  // The formatted dump is the dump: netsim's fmt of iptables-save output prints it back.
  timed(cases[2]!.argv, out);
  const same = readFileSync(out, 'utf8') === text;
  console.log(`node ${process.version}; ${RUNS} runs each, interleaved; median wall time and peak RSS`);
  console.log('| command | wall | peak RSS |');
  console.log('|---|---|---|');
  const med = (name: string): Run => ({ seconds: median(runs.get(name)!.map((r) => r.seconds)), rssMiB: median(runs.get(name)!.map((r) => r.rssMiB)) });
  for (const c of cases) {
    const m = med(c.name);
    console.log(`| ${c.name} | ${m.seconds.toFixed(2)} s | ${m.rssMiB.toFixed(0)} MiB |`);
  }
  if (real) {
    const n = med(cases[2]!.name);
    const r = med(cases[3]!.name);
    console.log(`iptables-restore ÷ netsim, wall: ${(r.seconds / n.seconds).toFixed(2)}×; peak RSS netsim ÷ iptables-restore: ${(n.rssMiB / r.rssMiB).toFixed(2)}×`);
  }
  if (!real) console.log('iptables-restore --test: skipped (needs root and iptables-restore)');
  console.log(`ruleset fmt output identical to the dump: ${same}`);
  if (process.argv.includes('--cpu-prof')) {
    const dir = join(work, 'prof');
    execFileSync(node, ['--cpu-prof', '--cpu-prof-dir', dir, bin, 'ruleset', 'fmt', dump], { stdio: ['ignore', 'ignore', 'inherit'] });
    const file = join(dir, readdirSync(dir)[0]!);
    cpSync(file, join(root, '.reports', 'coldpath.cpuprofile'));
    console.log(`CPU profile: .reports/coldpath.cpuprofile`);
    summarize(JSON.parse(readFileSync(file, 'utf8')) as Profile);
  }
} finally {
  if (nsMade) execFileSync('ip', ['netns', 'del', ns], { stdio: 'ignore' });
  rmSync(work, { recursive: true, force: true });
}

interface Profile {
  readonly nodes: readonly { readonly id: number; readonly callFrame: { readonly functionName: string; readonly url: string }; readonly children?: readonly number[] }[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** Self time by where it falls: Node internals, each package's files, the GC, the compiler. */
function summarize(p: Profile): void {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  p.samples.forEach((s, i) => self.set(s, (self.get(s) ?? 0) + (p.timeDeltas[i] ?? 0)));
  const where = new Map<string, number>();
  for (const [id, us] of self) {
    const f = byId.get(id)!.callFrame;
    const m = /node_modules\/((?:@[^/]+\/)?[^/]+)\/(.*)$/.exec(f.url);
    const key = m !== null ? `${m[1]}/${m[2]}` : f.url.startsWith('node:') ? 'node internals (module loading, fs, streams)' : f.url === '' ? `(${f.functionName || 'native'})` : f.url;
    where.set(key, (where.get(key) ?? 0) + us);
  }
  const total = [...where.values()].reduce((a, b) => a + b, 0);
  for (const [k, us] of [...where].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(`  ${(us / 1000).toFixed(0).padStart(5)} ms ${((us / total) * 100).toFixed(1).padStart(5)}%  ${k}`);
}
