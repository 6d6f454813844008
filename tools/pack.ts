/**
 * `pnpm pack:all DIR`: builds every public package (each `packages/<name>` whose package.json is
 * not `private`) and writes one installable tarball per package into DIR. DIR resolves from the
 * directory the command was run in (`INIT_CWD` under pnpm).
 *
 * `pnpm pack` applies each package's `publishConfig` (exports and bin pointing at `dist/`) and
 * replaces `workspace:*` with the lockstep version, so the tarballs install with `npm i DIR/*.tgz`
 * into any project. Packages other sessions add are picked up by the same rule; what their
 * package.json must contain is checked by tools/test/packages.test.ts.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { publicPackages } from './packages.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const arg = process.argv[2];
if (arg === undefined || arg === '') {
  process.stderr.write('usage: pnpm pack:all DIR\n');
  process.exit(2);
}
const dir = resolve(process.env['INIT_CWD'] ?? process.cwd(), arg);
mkdirSync(dir, { recursive: true });

const pkgs = publicPackages(root);
for (const p of pkgs) rmSync(join(p.dir, 'dist'), { recursive: true, force: true });
// `pnpm -r` runs the build scripts in dependency order, so each build reads the declarations
// of the packages it imports from their fresh dist/.
execFileSync('pnpm', ['-r', ...pkgs.flatMap((p) => ['--filter', p.name]), 'run', 'build'], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
for (const p of pkgs) {
  if (!existsSync(join(p.dir, 'dist'))) throw new Error(`${p.name}: the build wrote no dist/`);
  execFileSync('pnpm', ['pack', '--pack-destination', dir], { cwd: p.dir, stdio: ['ignore', 'ignore', 'inherit'] });
}
const tarballs = readdirSync(dir).filter((f) => f.endsWith('.tgz'));
process.stdout.write(`${pkgs.length} packages packed into ${dir}:\n${tarballs.map((t) => `  ${t}\n`).join('')}`);
