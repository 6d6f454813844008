import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadScenario } from '@netsim/scenario';
import { durationArg, runFuzz, shardPlan } from '../../src/commands/fuzz.ts';
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
    expect(text.split('\n')[0]).toBe('netsim fuzz: seed 8, 100 runs of toy-dnat:faulty against 8 invariants');
    expect(text).toMatch(/^counterexample after \d+ runs and \d+ shrinks \([\d.]+s\): invariant "no stale DNAT" violated at step \d+, t=\d+ms/m);
    expect(text).toMatch(/^history: 2 actions, story: \d+ lines$/m);
    const files = readdirSync(out).sort();
    expect(files).toEqual(['fuzz-toy-dnat-faulty-seed-8.html', 'fuzz-toy-dnat-faulty-seed-8.yaml']);
    const path = join(out, 'fuzz-toy-dnat-faulty-seed-8.yaml');
    expect(text).toContain(`written to ${path}\nreplay with: netsim replay ${path} --controllers ${toy}\n`);
    const yaml = readFileSync(path, 'utf8');
    // Editors find the schema from the file; the search that found it is recorded with every flag.
    expect(yaml.split('\n')[0]).toMatch(/^# yaml-language-server: \$schema=(\.\.\/)+.*packages\/scenario\/schema\/scenario\.schema\.json$/);
    expect(yaml.split('\n')[1]).toBe(`# Found by: netsim fuzz --controller toy-dnat:faulty --controllers ${toy} --seed 8 --runs 100 --out ${out}`);
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
    expect(c.out().split('\n')[0]).toBe('netsim fuzz: seed 8, 100 runs of toy-dnat:fixed against 9 invariants');
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
    expect(c.out()).toContain(`reproduce with: netsim fuzz --controller flannel:faulty --alongside kube-proxy:fixed --seed 1 --runs 100 --out ${out}\n`);
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

/** A --controllers module whose controller programs nothing: every counting invariant examines nothing. */
function idleModule(): string {
  const dir = mkdtempSync(join(tmpdir(), 'netsim-idle-'));
  const path = join(dir, 'idle.mjs');
  writeFileSync(
    path,
    `export const controllers = { 'idle:fixed': () => ({ name: 'idle', create: () => ({ start: async () => {} }) }) };
export const fuzzProfiles = { idle: { scenarios: { cluster: { nodes: { min: 1, max: 1 }, initialPods: 1 }, pods: { poolSize: 1, maxPorts: 1 }, timeline: { kinds: ['pod.recreate'], maxActions: 2 }, horizonMs: 4000, settleMs: 1000 }, invariants: [{ kind: 'builtin', check: 'stale-dnat' }] } };
`,
  );
  return path;
}

describe('netsim fuzz for CI', () => {
  it('should draw a --seed random, print it first, and reproduce with the drawn seed', async () => {
    const c = capture();
    expect(await runFuzz({ controller: 'toy-dnat:fixed', runs: 3, seed: 'random', out: '.netsim-out', controllers: toy, progress: false }, c.io)).toBe(0);
    const m = /^netsim fuzz: seed (\d+) \(--seed random\), 3 runs of toy-dnat:fixed against \d+ invariants\n/.exec(c.out());
    expect(m).not.toBeNull();
    expect(c.out()).toContain(`\nreproduce with: netsim fuzz --controller toy-dnat:fixed --controllers ${toy} --seed ${m?.[1]} --runs 3\n`);
  });

  it('should print what the campaign generated and what each counting invariant examined', async () => {
    const c = capture();
    expect(await runFuzz({ controller: 'toy-dnat:fixed', runs: 10, seed: 3, out: '.netsim-out', controllers: toy, progress: false }, c.io)).toBe(0);
    const text = c.out();
    expect(text).toMatch(/^coverage over 10 runs:$/m);
    // Every kind the profile generates is listed, faults apart, with how many were generated.
    const actions = /^ {2}actions generated: pod\.recreate (\d+)$/m.exec(text);
    const faults = /^ {2}faults generated: watch\.gap (\d+)$/m.exec(text);
    expect(Number(actions?.[1]) + Number(faults?.[1])).toBeGreaterThan(0);
    expect(text).toMatch(/^ {4}no duplicate rules in any table: \d+\/10 runs, [1-9]\d* examined$/m);
    // The toy's DNAT chain is hooked nowhere and it declares nothing: the built-ins that look at
    // reachable DNAT and declared chains have nothing of it to examine, and say so.
    expect(text).toMatch(/^ {4}no stale DNAT anywhere: 0\/10 runs, 0 examined {2}\(built-in: nothing to examine in these runs\)$/m);
    expect(text).toMatch(/^ {2}not counting what they examine: no stale DNAT$/m);
    expect(text).not.toMatch(/^vacuous/m);
  });

  it('should count history shapes by the runs whose swarm turned them on, apart from the actions they expand into', async () => {
    const c = capture();
    expect(await runFuzz({ controller: 'flannel:fixed', runs: 8, seed: 2, out: '.netsim-out', progress: false }, c.io)).toBe(0);
    const text = c.out();
    const line = /^ {2}history shapes \(runs whose swarm turned them on\): (.*)$/m.exec(text)?.[1] ?? '';
    const counts = line.split(', ').map((e) => /^([a-z-]+) (\d+)$/.exec(e));
    expect(counts.length).toBeGreaterThan(2);
    for (const m of counts) expect(Number(m?.[2]), line).toBeLessThanOrEqual(8);
    expect(counts.some((m) => Number(m?.[2]) > 0), line).toBe(true);
    // A shape is not an action kind: the actions line lists only what the timeline holds.
    expect(/^ {2}actions generated: (.*)$/m.exec(text)?.[1]).not.toMatch(/failing-start|blind-churn/);
  });

  it('should fail a campaign in which an invariant examined nothing in every run, with its own message', async () => {
    const idle = idleModule();
    const c = capture();
    const json = join(mkdtempSync(join(tmpdir(), 'netsim-json-')), 'fuzz.json');
    expect(await runFuzz({ controller: 'idle:fixed', runs: 3, seed: 1, out: '.netsim-out', controllers: idle, progress: false, reportJson: json }, c.io)).toBe(1);
    expect(c.out()).toMatch(/^no counterexample in 3 runs/m);
    expect(c.out()).toMatch(/^vacuous: "no stale DNAT anywhere" examined nothing in any of the 3 runs: the campaign could not have caught a violation of it /m);
    expect(c.out()).toMatch(/^ {4}no stale DNAT anywhere: 0\/3 runs, 0 examined {2}<- examined nothing$/m);
    const report = JSON.parse(readFileSync(json, 'utf8')) as { ok: boolean; status: string; vacuous: string[] };
    expect(report).toMatchObject({ ok: false, status: 'vacuous' });
    expect(report.vacuous).toContain('no stale DNAT anywhere');
  });

  it('should write a JSON and a JUnit report of a counterexample, the violated invariant failing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'netsim-ci-'));
    const c = capture();
    expect(await runFuzz({ controller: 'toy-dnat:faulty', runs: 100, seed: 8, out: dir, controllers: toy, progress: false, reportJson: join(dir, 'r.json'), junit: join(dir, 'junit.xml') }, c.io)).toBe(1);
    const report = JSON.parse(readFileSync(join(dir, 'r.json'), 'utf8')) as Record<string, unknown> & { counterexample: Record<string, unknown>; invariants: string[] };
    expect(report).toMatchObject({ format: 'netsim.fuzz/v1', ok: false, status: 'counterexample', controller: 'toy-dnat:faulty', seed: 8, runsPlanned: 100 });
    expect(report.counterexample).toMatchObject({ signature: 'violation:no stale DNAT', file: join(dir, 'fuzz-toy-dnat-faulty-seed-8.yaml') });
    expect(report.invariants).toContain('no stale DNAT');
    expect(report['reproduce']).toBe(`netsim fuzz --controller toy-dnat:faulty --controllers ${toy} --seed 8 --runs 100 --out ${dir}`);
    const xml = readFileSync(join(dir, 'junit.xml'), 'utf8');
    expect(xml).toMatch(/^<\?xml version="1\.0" encoding="UTF-8"\?>\n<testsuites name="netsim fuzz" tests="(\d+)" failures="1" /);
    expect(xml).toMatch(/<testcase classname="netsim fuzz toy-dnat:faulty" name="no stale DNAT" time="0">\n {6}<failure message="invariant &quot;no stale DNAT&quot; violated at step \d+/);
    expect(xml).toContain('<testcase classname="netsim fuzz toy-dnat:faulty" name="no duplicate rules in any table" time="0"/>');
  });

  it('should stop at the time budget and reproduce with the runs it allowed', async () => {
    const c = capture();
    expect(await runFuzz({ controller: 'toy-dnat:fixed', timeBudget: 1, timeBudgetText: '1ms', seed: 2, out: '.netsim-out', controllers: toy, progress: false }, c.io)).toBe(0);
    expect(c.out().split('\n')[0]).toMatch(/^netsim fuzz: seed 2, runs for 1ms of toy-dnat:fixed against/);
    const m = /^no counterexample in (\d+) runs \([\d.]+s, the time budget ran out\)$/m.exec(c.out());
    expect(m).not.toBeNull();
    expect(c.out()).toContain(`reproduce with: netsim fuzz --controller toy-dnat:fixed --controllers ${toy} --seed 2 --runs ${m?.[1]}\n`);
  });

  it('should print plain progress lines on stderr when it is not a terminal', async () => {
    const c = capture();
    expect(await runFuzz({ controller: 'toy-dnat:fixed', runs: 20, seed: 1, out: '.netsim-out', controllers: toy }, c.io)).toBe(0);
    expect(c.err().split('\n').filter((l) => l !== '')).toHaveLength(10);
    expect(c.err()).toMatch(/^toy-dnat:fixed: 2\/20 runs, [\d.]+ runs\/s, \d+s\n/);
    const quiet = capture();
    expect(await runFuzz({ controller: 'toy-dnat:fixed', runs: 2, seed: 1, out: '.netsim-out', controllers: toy, progress: false }, quiet.io)).toBe(0);
    expect(quiet.err()).toBe('');
  });

  it('should refuse, before running, an --out that is a file and report files in a missing directory', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'netsim-out-'));
    const file = join(dir, 'a-file');
    writeFileSync(file, '');
    for (const [opts, message] of [
      [{ out: file }, `netsim fuzz: --out ${file}: is a file, not a directory\n`],
      [{ out: join(file, 'sub') }, `netsim fuzz: --out ${join(file, 'sub')}: ${file} is a file, not a directory\n`],
      [{ out: dir, reportJson: join(dir, 'no', 'r.json') }, `netsim fuzz: --report-json ${join(dir, 'no', 'r.json')}: the directory ${join(dir, 'no')} does not exist\n`],
      [{ out: dir, junit: dir }, `netsim fuzz: --junit ${dir}: is a directory, not a file\n`],
    ] as const) {
      const c = capture();
      expect(await runFuzz({ controller: 'toy-dnat:faulty', runs: 100, seed: 8, controllers: toy, progress: false, ...opts }, c.io)).toBe(2);
      expect(c.err()).toBe(message);
      expect(c.out()).toBe('');
    }
  });

  it('should read time budgets as seconds, minutes and hours', () => {
    expect(['90', '90s', '15m', '1h30m', '2h'].map(durationArg)).toEqual([90_000, 90_000, 900_000, 5_400_000, 7_200_000]);
    for (const bad of ['', '0', 'abc', '1.5s', '-1', '5d']) expect(() => durationArg(bad)).toThrow(/expected a duration like 90, 90s, 15m or 1h30m/);
  });
});
