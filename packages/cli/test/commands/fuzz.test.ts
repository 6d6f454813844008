import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadScenario } from '@netsim/scenario';
import { runFuzz, shardPlan } from '../../src/commands/fuzz.ts';
import { runReplay } from '../../src/commands/replay.ts';

const root = fileURLToPath(new URL('../../../../', import.meta.url));
const toy = `${root}packages/scenario/test/fixtures/toy.ts`;

function capture(): { io: { stdout: (s: string) => void; stderr: (s: string) => void }; out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return { io: { stdout: (s) => void (out += s), stderr: (s) => void (err += s) }, out: () => out, err: () => err };
}

describe('netsim fuzz', () => {
  it('should find, shrink and write a counterexample as a scenario file that replays to the same violation', async () => {
    const out = mkdtempSync(join(tmpdir(), 'netsim-fuzz-'));
    const c = capture();
    expect(await runFuzz({ controller: 'toy-dnat:faulty', runs: 100, seed: 8, out, controllers: toy, progress: false }, c.io)).toBe(1);
    const text = c.out();
    expect(text.split('\n')[0]).toBe('netsim fuzz: seed 8, 100 runs of toy-dnat:faulty against 7 invariants');
    expect(text).toMatch(/^counterexample after \d+ runs and \d+ shrinks \([\d.]+s\): invariant "no stale DNAT" violated at step \d+, t=\d+ms/m);
    expect(text).toMatch(/^history: 2 actions, story: \d+ lines$/m);
    const files = readdirSync(out).sort();
    expect(files).toEqual(['fuzz-toy-dnat-faulty-seed-8.html', 'fuzz-toy-dnat-faulty-seed-8.yaml']);
    const path = join(out, 'fuzz-toy-dnat-faulty-seed-8.yaml');
    expect(text).toContain(`written to ${path}\nreplay with: pnpm netsim replay ${path} --controllers ${toy}\n`);
    const yaml = readFileSync(path, 'utf8');
    expect(yaml.split('\n')[0]).toBe('# Found by: netsim fuzz --controller toy-dnat:faulty --seed 8 --runs 100');
    expect(text).toContain(`report: ${join(out, 'fuzz-toy-dnat-faulty-seed-8.html')}\n`);
    expect(readFileSync(join(out, 'fuzz-toy-dnat-faulty-seed-8.html'), 'utf8')).toContain('VIOLATION: no stale DNAT at t=');
    expect(loadScenario(yaml).expect).toMatchObject({ outcome: 'violation', invariant: 'no stale DNAT' });
    const r = capture();
    expect(await runReplay([path], { controllers: toy }, r.io)).toBe(0);
    expect(r.out()).toContain('1 of 1 scenario met its expectation');
  });

  it('should check the invariants a --controllers module registers, and write them into the counterexample by name', async () => {
    const out = mkdtempSync(join(tmpdir(), 'netsim-fuzz-'));
    const mod = `${root}packages/cli/test/fixtures/custom-invariant.ts`;
    const c = capture();
    expect(await runFuzz({ controller: 'toy-dnat:fixed', runs: 100, seed: 8, out, controllers: mod, progress: false }, c.io)).toBe(1);
    expect(c.out().split('\n')[0]).toBe('netsim fuzz: seed 8, 100 runs of toy-dnat:fixed against 8 invariants');
    expect(c.out()).toMatch(/^counterexample after \d+ runs and \d+ shrinks \([\d.]+s\): invariant "no Pod at all" violated at step \d+, t=\d+ms: 1 Pods exist/m);
    const path = join(out, 'fuzz-toy-dnat-fixed-seed-8.yaml');
    const file = loadScenario(readFileSync(path, 'utf8'));
    expect(file.invariants).toContainEqual({ kind: 'custom', name: 'no Pod at all' });
    const r = capture();
    expect(await runReplay([path], { controllers: mod }, r.io)).toBe(0);
    expect(r.out()).toContain('1 of 1 scenario met its expectation');
  });

  it('should fuzz with a controller alongside, write it into the counterexample and say how to reproduce', async () => {
    const out = mkdtempSync(join(tmpdir(), 'netsim-fuzz-'));
    const c = capture();
    expect(await runFuzz({ controller: 'flannel:faulty', alongside: ['kube-proxy:fixed'], runs: 100, seed: 1, out, progress: false }, c.io)).toBe(1);
    expect(c.out().split('\n')[0]).toBe('netsim fuzz: seed 1, 100 runs of flannel:faulty beside kube-proxy:fixed against 7 invariants');
    expect(c.out()).toContain('reproduce the search with: pnpm netsim fuzz --controller flannel:faulty --alongside kube-proxy:fixed --seed 1 --runs 100');
    const file = loadScenario(readFileSync(join(out, 'fuzz-flannel-faulty-seed-1.yaml'), 'utf8'));
    expect(file.scenario.alongside).toEqual([{ name: 'kube-proxy:fixed' }]);
    const bad = capture();
    expect(await runFuzz({ controller: 'flannel:faulty', alongside: ['nope:fixed'], runs: 1, seed: 1, out, progress: false }, bad.io)).toBe(2);
    expect(bad.err()).toMatch(/^netsim fuzz: unknown controller "nope:fixed" for --alongside \(known: /);
  });

  it('should exit 2 naming the known controllers for an unknown one', async () => {
    const c = capture();
    expect(await runFuzz({ controller: 'nope:faulty', runs: 1, seed: 1, out: '.netsim-out', controllers: toy, progress: false }, c.io)).toBe(2);
    expect(c.err()).toMatch(/^netsim fuzz: unknown controller "nope:faulty" \(known: .*toy-dnat:faulty/);
  });

  it('should split runs over shards with one seed per shard', () => {
    expect([0, 1, 2].map((i) => shardPlan(10, 5, { index: i, count: 3 }))).toEqual([
      { runs: 4, seed: 5 },
      { runs: 3, seed: 6 },
      { runs: 3, seed: 7 },
    ]);
    expect(shardPlan(10, 5, undefined)).toEqual({ runs: 10, seed: 5 });
  });
});
