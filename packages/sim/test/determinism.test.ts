import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { demoTrace } from './fixtures/demoRun.ts';
import { worldTrace } from './fixtures/worldRun.ts';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const script = fileURLToPath(new URL('./fixtures/demoRun.ts', import.meta.url));
const worldScript = fileURLToPath(new URL('./fixtures/worldRun.ts', import.meta.url));

describe('determinism: same seed, same bytes', () => {
  it('should produce byte-identical traces for two runs in one process', async () => {
    const a = await demoTrace(17);
    expect(a.length).toBeGreaterThan(1000);
    expect(await demoTrace(17)).toBe(a);
  });

  it('should produce different traces for different seeds', async () => {
    expect(await demoTrace(17)).not.toBe(await demoTrace(18));
  });

  it('should produce byte-identical traces in a child process', async () => {
    const here = await demoTrace(23);
    const there = execFileSync(process.execPath, ['--import', 'tsx', script, '23'], { cwd: root, encoding: 'utf8' });
    expect(there).toBe(here);
  });

  it('should produce byte-identical traces for a whole world, twice in process and once in a child process', async () => {
    const here = await worldTrace(31);
    expect(here).toContain('"type":"probe.result"');
    expect(here).toContain('"type":"agent.crash"');
    expect(here).toContain('"type":"kube.watch.gap"');
    expect(await worldTrace(31)).toBe(here);
    const there = execFileSync(process.execPath, ['--import', 'tsx', worldScript, '31'], { cwd: root, encoding: 'utf8' });
    expect(there).toBe(here);
    expect(await worldTrace(32)).not.toBe(here);
  }, 60_000);
});
