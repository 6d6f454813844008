import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../../', import.meta.url));

describe('netsim bin', () => {
  it('should run through pnpm-free tsx from a clone and print its usage', () => {
    const out = execFileSync(process.execPath, ['--import', 'tsx', 'packages/cli/src/bin.ts', '--help'], { cwd: root, encoding: 'utf8' });
    expect(out).toContain('Usage: netsim');
  });
});
