import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseJsonLines } from '@netsim/sim';
import { runReplay } from '../../src/commands/replay.ts';

const root = fileURLToPath(new URL('../../../../', import.meta.url));
const fixtures = `${root}packages/scenario/test/fixtures`;
const toy = `${fixtures}/toy.ts`;
const toyYaml = `${fixtures}/toy-recreate.yaml`;

function capture(): { io: { stdout: (s: string) => void; stderr: (s: string) => void }; out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return { io: { stdout: (s) => void (out += s), stderr: (s) => void (err += s) }, out: () => out, err: () => err };
}

function tmp(): string {
  return mkdtempSync(join(tmpdir(), 'netsim-replay-'));
}

describe('netsim replay', () => {
  it('should print the seed, a table row per scenario and the story of each violation, and exit 0 when every expectation is met', async () => {
    const c = capture();
    expect(await runReplay([fixtures], { controllers: toy, width: 200 }, c.io)).toBe(0);
    const out = c.out();
    expect(out.split('\n')[0]).toBe('netsim replay: 1 scenario, each with the seed in its file');
    expect(out).toMatch(/^scenario {19}controller {7}seed {2}expected {30}observed {29}verdict$/m);
    expect(out).toMatch(/^toy-recreate-in-watch-gap {2}toy-dnat:faulty {2}7 {5}violation "no stale DNAT" in 7s\.\.10s {2}violation "no stale DNAT" at \d+ms {2}met$/m);
    expect(out).toMatch(/^toy-recreate-in-watch-gap \(toy-dnat:faulty, seed 7\): violation "no stale DNAT" at \d+ms\n1\. t=0ms simulation starts: seed 7$/m);
    expect(out).toMatch(/^\d+\. t=\d+ms VIOLATION of "no stale DNAT": DNAT tcp --dport 61000/m);
    expect(out.trimEnd().split('\n').at(-1)).toBe('1 of 1 scenario met its expectation');
    expect(c.err()).toBe('');
  });

  it('should exit 1 with NOT MET, the reason and a reproduce line when an expectation is not met', async () => {
    const dir = tmp();
    const path = join(dir, 'fixed.yaml');
    writeFileSync(path, readFileSync(toyYaml, 'utf8').replace('name: toy-dnat:faulty', 'name: toy-dnat:fixed'));
    const c = capture();
    expect(await runReplay([path], { controllers: toy, seed: 11, width: 200 }, c.io)).toBe(1);
    const out = c.out();
    expect(out.split('\n')[0]).toBe('netsim replay: 1 scenario, seed 11 (--seed)');
    expect(out).toMatch(/ {2}invariants hold {2}NOT MET$/m);
    expect(out).toContain('toy-recreate-in-watch-gap: NOT MET: expected violation "no stale DNAT" in 7s..10s, but saw invariants hold\n');
    expect(out).toContain(`reproduce with: netsim replay ${path} --seed 11 --controllers ${toy}\n`);
  });

  it('should exit 2 and print file:line:column errors for a scenario that does not load, and still run the others', async () => {
    const dir = tmp();
    writeFileSync(join(dir, 'a-broken.yaml'), readFileSync(toyYaml, 'utf8').replace('at: 2s', 'at: soon'));
    writeFileSync(join(dir, 'b-good.yaml'), readFileSync(toyYaml, 'utf8'));
    const c = capture();
    expect(await runReplay([dir], { controllers: toy }, c.io)).toBe(2);
    expect(c.err()).toContain(`${join(dir, 'a-broken.yaml')} could not be run:\n${join(dir, 'a-broken.yaml')}:16:11: timeline[0].at: expected a duration like "40ms" or "2s", got "soon"\n`);
    expect(c.out()).toMatch(/^toy-recreate-in-watch-gap .* met$/m);
    expect(c.out()).toContain('1 of 2 scenarios met their expectations');
  });

  it('should report an unknown controller as an error row naming the registered ones', async () => {
    const dir = tmp();
    writeFileSync(join(dir, 'x.yaml'), readFileSync(toyYaml, 'utf8').replace('name: toy-dnat:faulty', 'name: nope:faulty'));
    const c = capture();
    expect(await runReplay([dir], { controllers: toy }, c.io)).toBe(2);
    expect(c.err()).toMatch(/scenario controller "nope:faulty" is not registered \(registered: .*toy-dnat:faulty/);
  });

  it('should print a JSON report with --json', async () => {
    const c = capture();
    expect(await runReplay([toyYaml], { controllers: toy, json: true }, c.io)).toBe(0);
    const report = JSON.parse(c.out()) as { ok: boolean; scenarios: { name: string; verdict: string; outcome: { status: string }; story: string[] }[] };
    expect(report.ok).toBe(true);
    expect(report.scenarios).toHaveLength(1);
    expect(report.scenarios[0]).toMatchObject({ name: 'toy-recreate-in-watch-gap', verdict: 'met', outcome: { status: 'violation' } });
    expect(report.scenarios[0]?.story.at(-1)).toMatch(/simulation ends: violation/);
  });

  it('should write the JSON-lines trace to a file with --trace FILE, and to stdout (report on stderr) with --trace', async () => {
    const path = join(tmp(), 'trace.jsonl');
    const c = capture();
    expect(await runReplay([toyYaml], { controllers: toy, trace: path }, c.io)).toBe(0);
    const events = parseJsonLines(readFileSync(path, 'utf8'));
    expect(events[0]).toMatchObject({ type: 'replay.scenario', name: 'toy-recreate-in-watch-gap', seed: 7 });
    expect(events[1]).toMatchObject({ type: 'sim.start', seed: 7 });
    expect(events.at(-1)).toMatchObject({ type: 'sim.end', status: 'violation' });
    const d = capture();
    expect(await runReplay([toyYaml], { controllers: toy, trace: true }, d.io)).toBe(0);
    expect(d.out()).toBe(readFileSync(path, 'utf8'));
    expect(d.err()).toContain('1 of 1 scenario met its expectation');
  });

  it('should run from the bin with its options, through tsx', () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'packages/cli/src/bin.ts', 'replay', toyYaml, '--controllers', toy, '--seed', '7'], { cwd: root, encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('netsim replay: 1 scenario, seed 7 (--seed)');
    const bad = spawnSync(process.execPath, ['--import', 'tsx', 'packages/cli/src/bin.ts', 'replay', '--seed', 'x'], { cwd: root, encoding: 'utf8' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain("error: option '--seed <n>' argument 'x' is invalid. expected a non-negative integer, got \"x\"");
  }, 30_000);
});
