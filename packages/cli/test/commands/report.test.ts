import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runReplay } from '../../src/commands/replay.ts';
import { runReport } from '../../src/commands/report.ts';

const root = fileURLToPath(new URL('../../../../', import.meta.url));
const faulty = join(root, 'scenarios/flannel-restart-empties-chain-faulty.yaml');
const fixed = join(root, 'scenarios/flannel-restart-empties-chain-fixed.yaml');

function capture(): { io: { stdout: (s: string) => void; stderr: (s: string) => void }; out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return { io: { stdout: (s) => void (out += s), stderr: (s) => void (err += s) }, out: () => out, err: () => err };
}

describe('netsim replay --report and netsim report', () => {
  it('should write a report per scenario and an index linking them, and the same report from the saved trace', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'netsim-report-'));
    const trace = join(dir, 'faulty.jsonl');
    const c = capture();
    expect(await runReplay([faulty, fixed], { report: join(dir, 'out'), trace }, c.io)).toBe(0);
    expect(readdirSync(join(dir, 'out')).sort()).toEqual(['flannel-restart-empties-chain-faulty.html', 'flannel-restart-empties-chain-fixed.html', 'index.html']);
    const index = readFileSync(join(dir, 'out/index.html'), 'utf8');
    expect(index).toContain('<a href="flannel-restart-empties-chain-faulty.html">flannel-restart-empties-chain-faulty</a>');
    expect(index).toContain('<td>met</td>');
    const fromReplay = readFileSync(join(dir, 'out/flannel-restart-empties-chain-faulty.html'), 'utf8');
    expect(fromReplay).toContain('VIOLATION: FLANNEL-POSTRTG never empty once programmed at t=13016ms');

    // The saved trace holds both runs: `report` names them until one is picked.
    const r1 = capture();
    expect(runReport(trace, { output: join(dir, 'x.html') }, r1.io)).toBe(2);
    expect(r1.err()).toBe(`netsim report: ${trace}: the trace holds 2 runs (flannel-restart-empties-chain-faulty, flannel-restart-empties-chain-fixed): name one\n`);
    const r2 = capture();
    expect(runReport(trace, { output: join(dir, 'x.html'), scenario: 'flannel-restart-empties-chain-faulty' }, r2.io)).toBe(0);
    expect(r2.out()).toBe(`netsim report: wrote ${join(dir, 'x.html')}\n`);
    expect(readFileSync(join(dir, 'x.html'), 'utf8')).toBe(fromReplay);
  });

  it('should refuse a file that is not a trace, naming its line', () => {
    const dir = mkdtempSync(join(tmpdir(), 'netsim-report-'));
    writeFileSync(join(dir, 'bad.jsonl'), '{"step":0,"t":0,"type":"sim.start"}\nnot json\n');
    const c = capture();
    expect(runReport(join(dir, 'bad.jsonl'), { output: join(dir, 'x.html') }, c.io)).toBe(2);
    expect(c.err()).toMatch(/^netsim report: .*bad\.jsonl: trace line 2: not JSON/);
  });
});
