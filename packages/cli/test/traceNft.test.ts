import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));

function shellWords(line: string): string[] {
  const words: string[] = [];
  const re = /'([^']*)'|(\S+)/g;
  for (let m = re.exec(line); m !== null; m = re.exec(line)) words.push(m[1] ?? m[2] ?? '');
  return words;
}

function netsim(args: readonly string[]) {
  return spawnSync(process.execPath, ['--import', 'tsx', 'packages/cli/src/bin.ts', ...args], { cwd: root, encoding: 'utf8' });
}

describe('netsim trace --nft', () => {
  it('should print exactly what docs/nftables.md shows for each documented trace', () => {
    const doc = readFileSync(join(root, 'docs/nftables.md'), 'utf8');
    const blocks = [...doc.matchAll(/```console\n\$ pnpm netsim (trace [^\n]*)\n([\s\S]*?)```/g)];
    expect(blocks.length).toBe(2);
    for (const [, command, output] of blocks) {
      const stdout = execFileSync(process.execPath, ['--import', 'tsx', 'packages/cli/src/bin.ts', ...shellWords(command ?? '')], { cwd: root, encoding: 'utf8' });
      expect(stdout).toBe(output);
    }
  });

  it('should interleave an iptables dump and an nft ruleset at one hook, nft first at equal priority', () => {
    const r = netsim(['trace', '--nft', 'docs/examples/nft-filter.nft', '--ruleset', 'docs/examples/kube-proxy-nodeport.rules', '--packet', 'tcp 192.0.2.10:40000 > 198.51.100.10:22 in eth0', '--hook', 'INPUT', '--json']);
    expect(r.status).toBe(0);
    const j = JSON.parse(r.stdout) as { verdict: string; steps: { where: string; priority: number }[] };
    expect(j.verdict).toBe('accept');
    expect(j.steps[0]).toMatchObject({ where: 'nft inet filter input', priority: 0 });
  });

  it('should print the real nft error for a bad --nft file and exit 2', () => {
    const dir = mkdtempSync(join(tmpdir(), 'netsim-trace-nft-'));
    try {
      const file = join(dir, 'bad.nft');
      writeFileSync(file, 'table ip f {\n  chain input {\n    type filter hook input priority 0; policy accept;\n    tcp dport 22 acept\n  }\n}\n');
      const r = netsim(['trace', '--nft', file, '--packet', 'tcp 192.0.2.10:40000 > 198.51.100.10:22 in eth0']);
      expect(r.status).toBe(2);
      // What nft 1.0.6 prints for this file.
      expect(r.stderr).toBe(`netsim trace: nft -f ${file} fails:\n${file}:4:23-23: Error: syntax error, unexpected newline\n    tcp dport 22 acept\n                      ^\n`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
