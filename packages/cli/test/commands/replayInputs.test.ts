import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bundledScenarios, runReplay, tableLines } from '../../src/commands/replay.ts';
import { userCwd } from '../../src/cwd.ts';

function capture(): { io: { stdout: (s: string) => void; stderr: (s: string) => void }; out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return { io: { stdout: (s) => void (out += s), stderr: (s) => void (err += s) }, out: () => out, err: () => err };
}

function tmp(): string {
  return mkdtempSync(join(tmpdir(), 'netsim-replay-inputs-'));
}

describe('netsim replay inputs', () => {
  it('should default to the incident scenarios shipped with the CLI', () => {
    const files = readdirSync(bundledScenarios()).filter((f) => f.endsWith('.yaml'));
    expect(files).toContain('npl-recreate-in-watch-gap-faulty.yaml');
  });

  it('should exit 2 on a directory without scenarios, saying so on stderr only', async () => {
    const dir = tmp();
    const c = capture();
    expect(await runReplay([dir], {}, c.io)).toBe(2);
    expect(c.err()).toBe(`netsim replay: ${dir}: no scenario files (*.yaml, *.yml) in this directory\n`);
    expect(c.out()).toBe('');
  });

  it('should exit 2 before running anything when --trace points into a missing directory or at a directory', async () => {
    const dir = tmp();
    const missing = capture();
    expect(await runReplay([dir], { trace: join(dir, 'nope', 'trace.jsonl') }, missing.io)).toBe(2);
    expect(missing.err()).toBe(`netsim replay: --trace ${join(dir, 'nope', 'trace.jsonl')}: the directory ${join(dir, 'nope')} does not exist\n`);
    mkdirSync(join(dir, 'sub'));
    const isDir = capture();
    expect(await runReplay([dir], { trace: join(dir, 'sub') }, isDir.io)).toBe(2);
    expect(isDir.err()).toBe(`netsim replay: --trace ${join(dir, 'sub')}: is a directory, not a file\n`);
    writeFileSync(join(dir, 'file'), '');
    const underFile = capture();
    expect(await runReplay([dir], { trace: join(dir, 'file', 't.jsonl') }, underFile.io)).toBe(2);
    expect(underFile.err()).toBe(`netsim replay: --trace ${join(dir, 'file', 't.jsonl')}: ${join(dir, 'file')} is not a directory\n`);
    expect(missing.out() + isDir.out() + underFile.out()).toBe('');
  });

  it("should resolve paths from INIT_CWD when a package script started it in the package's directory", () => {
    expect(userCwd({ INIT_CWD: '/srv/u/repo/sub', npm_package_json: '/srv/u/repo/package.json' }, '/srv/u/repo')).toBe('/srv/u/repo/sub');
    // The script changed directory itself: its own directory wins.
    expect(userCwd({ INIT_CWD: '/srv/u/repo', npm_package_json: '/srv/u/repo/package.json' }, '/srv/u/repo/sub')).toBe('/srv/u/repo/sub');
    expect(userCwd({}, '/work')).toBe('/work');
  });
});

describe('netsim replay table', () => {
  it('should fit a 100-column terminal: the outcomes move under their row when six columns do not fit', async () => {
    const c = capture();
    expect(await runReplay([bundledScenarios()], { width: 100 }, c.io)).toBe(0);
    const table = c.out().split('\n\n')[1] ?? '';
    expect(table.split('\n').every((l) => l.length <= 100)).toBe(true);
    expect(table).toMatch(/^flannel-restart-empties-chain-faulty +flannel:faulty +1 +met\n {4}expected violation "FLANNEL-POSTRTG never empty once programmed" in 13s\.\.14s\n {4}observed violation "FLANNEL-POSTRTG never empty once programmed" at 13016ms$/m);
  });

  it('should wrap a cell at spaces when even the narrow table is too wide', () => {
    const t = tableLines(['a', 'b'], [['one two three four', 'x']], 12);
    expect(t.rows[0]).toEqual(['one two    x', 'three', 'four']);
    expect([...t.head, ...(t.rows[0] ?? [])].every((l) => l.length <= 12)).toBe(true);
  });
});
