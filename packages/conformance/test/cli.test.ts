import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, inject, it } from 'vitest';

const env = inject('conformanceEnv');
const root = fileURLToPath(new URL('../../../', import.meta.url));
const cli = fileURLToPath(new URL('../src/cli.ts', import.meta.url));

function conformance(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', cli, ...args], { cwd: root, encoding: 'utf8', timeout: 120_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('pnpm conformance (the campaign command)', () => {
  it('should refuse a bad argument with exit status 2 and the usage', () => {
    const r = conformance('--runs', 'many');
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('--runs needs a non-negative integer, got "many"');
    expect(r.stderr).toContain('usage: pnpm conformance');
    expect(conformance('--profiles', 'forward,sideways').stderr).toContain('unknown: sideways');
    expect(conformance('--replay', '3').stderr).toContain('--replay needs --part');
  });

  it.skipIf(!env.ok)('should run a short campaign and print progress and a summary', () => {
    const r = conformance('--runs', '4', '--seed', '7', '--no-shrink', '--profiles', 'forward', '--part', 'netfilter');
    expect(r.stdout).toMatch(/^conformance: seed 7, 4 cases per part \(netfilter\), iptables/);
    expect(r.stdout).toContain('netfilter [4/4] agreed');
    expect(r.stdout).toContain('conformance summary: seed 7');
    expect(r.stdout).toContain('netfilter level (evaluator through the lab\'s hooks), profiles forward:');
    expect(r.stdout).toMatch(/cases run: 4\n {2}agreed: {4}\d/);
    expect(r.stdout).toContain('NEW disagreements: 0');
    expect(r.status).toBe(0);
  });

  it.skipIf(!env.ok)('should replay one case of one part alone', () => {
    const r = conformance('--seed', '7', '--part', 'host', '--replay', '2');
    expect(r.stdout).toContain('replaying case 2 (host)');
    expect(r.stdout).toMatch(/whole host[^\n]*\n {2}cases run: 1\n/);
  });
});
