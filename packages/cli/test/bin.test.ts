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

describe('netsim --help without loading the commands', () => {
  it('should list every subcommand exactly as the fully loaded program does', async () => {
    const { COMMANDS, program, programFor } = await import('../src/program.ts');
    const full = await program();
    const light = await programFor(['node', 'netsim', '--help']);
    expect(light.helpInformation()).toBe(full.helpInformation());
    // The table names each registered command once, in order, with the command's own description.
    expect(COMMANDS.map((c) => c.name)).toEqual(full.commands.map((c) => c.name()));
    expect(COMMANDS.map((c) => c.description)).toEqual(full.commands.map((c) => c.description()));
  });

  it('should register the real command for the subcommand named, also under `help NAME`', async () => {
    const { programFor } = await import('../src/program.ts');
    for (const argv of [['node', 'netsim', 'fuzz', '--help'], ['node', 'netsim', 'help', 'fuzz']]) {
      const p = await programFor(argv);
      const fuzz = p.commands.find((c) => c.name() === 'fuzz');
      expect(fuzz?.options.map((o) => o.long)).toContain('--controller');
      expect(p.commands.find((c) => c.name() === 'replay')?.options).toEqual([]);
    }
  });
});

describe('the command lines netsim prints', () => {
  it('should name netsim as the user ran it: the bin, or the package script that ran it', async () => {
    const { invokedAs } = await import('../src/cwd.ts');
    expect(invokedAs({})).toBe('netsim');
    expect(invokedAs({ npm_lifecycle_event: 'npx', npm_config_user_agent: 'npm/10.8.2 node/v20.20.2 linux x64' })).toBe('netsim');
    expect(invokedAs({ npm_lifecycle_event: 'netsim', npm_config_user_agent: 'pnpm/10.34.9 npm/? node/v20.20.2 linux x64' })).toBe('pnpm netsim');
    expect(invokedAs({ npm_lifecycle_event: 'netsim', npm_config_user_agent: 'npm/10.8.2 node/v20.20.2 linux x64' })).toBe('npm run netsim');
  });
});
