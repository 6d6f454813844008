/**
 * `pnpm bench [filter]`: runs every `packages/<pkg>/bench/*.bench.ts` in its own process (so one
 * benchmark's heap and JIT state cannot skew another's) and prints their reports in order.
 * Benchmarks measure; they never assert wall-clock limits. Results are recorded by hand in
 * docs/performance.md from these runs.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../', import.meta.url));
const filter = process.argv[2];
const files: string[] = [];
for (const pkg of readdirSync(join(root, 'packages')).sort()) {
  const dir = join(root, 'packages', pkg, 'bench');
  let names: string[];
  try {
    if (!statSync(dir).isDirectory()) continue;
    names = readdirSync(dir);
  } catch {
    continue; // packages without benchmarks
  }
  for (const n of names.sort()) if (n.endsWith('.bench.ts')) files.push(join('packages', pkg, 'bench', n));
}
const selected = filter === undefined ? files : files.filter((f) => f.includes(filter));
if (selected.length === 0) {
  console.error(filter === undefined ? 'no benchmarks found under packages/*/bench' : `no benchmark matches "${filter}"`);
  process.exit(1);
}
for (const f of selected) {
  console.log(`\n=== ${f}`);
  execFileSync(process.execPath, ['--expose-gc', '--import', 'tsx', f], { cwd: root, stdio: 'inherit' });
}
