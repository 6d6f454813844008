import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// Exit statuses as a CI job sees them: 0 success, 1 an expectation not met, 2 bad usage or bad
// input (one line on stderr, never a stack trace, nothing on stdout).
const root = fileURLToPath(new URL('../../../', import.meta.url));
const bin = 'packages/cli/src/bin.ts';
const version = (JSON.parse(readFileSync(`${root}packages/cli/package.json`, 'utf8')) as { version: string }).version;
const scenario = 'scenarios/npl-multi-port-cleanup-fixed.yaml';
/** Each case starts node with tsx, several times; generous for a shared machine (not a speed assertion). */
const SPAWN_TIMEOUT_MS = 120_000;

function netsim(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', bin, ...args], { cwd: root, encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function module(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'netsim-controllers-'));
  writeFileSync(join(dir, 'mine.mjs'), text);
  return join(dir, 'mine.mjs');
}

function expectUsageError(r: { status: number | null; stdout: string; stderr: string }, message: string | RegExp): void {
  expect(r.status).toBe(2);
  expect(r.stdout).toBe('');
  expect(r.stderr).toMatch(message);
  expect(r.stderr).not.toMatch(/^\s+at /m);
}

describe('netsim exit statuses', () => {
  it('should exit 0 for --help and --version, printing the package version', () => {
    const help = netsim('--help');
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^Usage: netsim/);
    const v = netsim('--version');
    expect(v.status).toBe(0);
    expect(v.stdout).toBe(`${version}\n`);
  }, SPAWN_TIMEOUT_MS);

  it("should exit 2 on commander's usage errors: unknown option, unknown command, bad option value", () => {
    expectUsageError(netsim('replay', '--bogus'), "error: unknown option '--bogus'");
    expectUsageError(netsim('replya'), "error: unknown command 'replya'");
    expectUsageError(netsim('replay', '--seed', 'abc'), /option '--seed <n>' argument 'abc' is invalid/);
  }, SPAWN_TIMEOUT_MS);

  it('should exit 2 naming a --controllers module that is missing, throws while loading or exports the wrong shape', () => {
    expectUsageError(netsim('replay', scenario, '--controllers', 'no/such.mjs'), /^netsim: --controllers no\/such\.mjs: no such file \(.*no\/such\.mjs\)\n$/);
    const throws = module("throw Object.create(null);\n");
    expectUsageError(netsim('replay', scenario, '--controllers', throws), `netsim: --controllers ${throws}: the module failed to load: [object Object]\n`);
    const noRegistry = module('export const controllers = 5;\n');
    expectUsageError(netsim('replay', scenario, '--controllers', noRegistry), `netsim: --controllers ${noRegistry}: the module exports no "controllers" registry (an object of controller factories by name)\n`);
    const notFactory = module("export const controllers = { 'mine:fixed': { name: 'mine' } };\n");
    expectUsageError(netsim('replay', scenario, '--controllers', notFactory), `netsim: --controllers ${notFactory}: controllers["mine:fixed"] is object, not a factory function (options) => Controller\n`);
  }, SPAWN_TIMEOUT_MS);

  it('should stop quietly when the reader of its output goes away (piped into head)', () => {
    const r = spawnSync('bash', ['-c', `set -o pipefail; ${JSON.stringify(process.execPath)} --import tsx ${bin} replay ${scenario} --stories | head -c 1`], { cwd: root, encoding: 'utf8' });
    expect(r.stdout).toBe('n');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  }, SPAWN_TIMEOUT_MS);
});

describe('netsim fuzz exit statuses', () => {
  it('should exit 2 on a bad --seed, --time-budget or --shard, and on an --out that is a file, before running', () => {
    expectUsageError(netsim('fuzz', '--controller', 'npl:fixed', '--seed', 'abc'), `error: option '--seed <n>' argument 'abc' is invalid. expected an integer >= 0 or "random", got "abc"`);
    expectUsageError(netsim('fuzz', '--controller', 'npl:fixed', '--time-budget', '5x'), `error: option '--time-budget <duration>' argument '5x' is invalid. expected a duration like 90, 90s, 15m or 1h30m, got "5x"`);
    expectUsageError(netsim('fuzz', '--controller', 'npl:fixed', '--shard', '4/4'), /option '--shard <i\/n>' argument '4\/4' is invalid/);
    const file = module('// not a directory\n');
    expectUsageError(netsim('fuzz', '--controller', 'npl:fixed', '--out', file), `netsim fuzz: --out ${file}: is a file, not a directory\n`);
  }, SPAWN_TIMEOUT_MS);

  it('should refuse a scenario the API server would reject, and an alias bomb, with exit 2 and file:line:col', () => {
    const dir = mkdtempSync(join(tmpdir(), 'netsim-bad-'));
    const bomb = join(dir, 'laughs.yaml');
    writeFileSync(bomb, ['a: &a [x, x, x, x, x, x, x, x, x]', 'b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]', 'c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]', 'd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]', 'e: [*d, *d, *d, *d, *d, *d, *d, *d, *d]', ''].join('\n'));
    const r = netsim('replay', bomb);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`${bomb}:2:8: invalid YAML: its aliases expand to more than 1000 references (an alias bomb, "billion laughs")`);
    expect(r.stderr).not.toMatch(/^\s+at /m);
    const rejected = join(dir, 'rejected.yaml');
    writeFileSync(rejected, readFileSync(`${root}scenarios/nodeport-external-policy-local.yaml`, 'utf8').replace('nodePort: 30080', 'nodePort: 40000'));
    const s = netsim('replay', rejected);
    expect(s.status).toBe(2);
    expect(s.stderr).toMatch(/rejected\.yaml:21:\d+: cluster\.services\[0\]\.ports\[0\]\.nodePort: Service "web" is invalid: spec\.ports\[0\]\.nodePort: Invalid value: 40000: provided port is not in the valid range\. The range of valid ports is 30000-32767/);
  }, SPAWN_TIMEOUT_MS);
});
