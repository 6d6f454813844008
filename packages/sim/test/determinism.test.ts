import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { demoTrace } from './fixtures/demoRun.ts';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const script = fileURLToPath(new URL('./fixtures/demoRun.ts', import.meta.url));

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
});
