import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { nftDiff, nftFmt } from '../../src/commands/nft.ts';

const root = fileURLToPath(new URL('../../../../', import.meta.url));

interface Recorded {
  readonly name: string;
  readonly files: readonly { readonly name: string; readonly text: string }[];
  readonly steps: readonly { readonly rc: number; readonly stderr: string }[];
  readonly listing: string;
}
// Real nft 1.0.6 output for these inputs (packages/nftables/test/fixtures/record.ts).
const cases = JSON.parse(readFileSync(`${root}packages/nftables/test/fixtures/cases.json`, 'utf8')) as Recorded[];
const byName = (n: string): Recorded => cases.find((c) => c.name === n) as Recorded;

function run(fn: (io: { stdout: (s: string) => void; stderr: (s: string) => void; readFile: (p: string) => string }) => number, files: Readonly<Record<string, string>>) {
  let stdout = '';
  let stderr = '';
  const status = fn({ stdout: (s) => (stdout += s), stderr: (s) => (stderr += s), readFile: (p) => files[p] ?? (() => { throw new Error(`ENOENT: no such file or directory, open '${p}'`); })() });
  return { status, stdout, stderr };
}

describe('netsim nft fmt', () => {
  it('applies the files in order and prints what nft list ruleset printed (kube-proxy full, partial, full sync)', () => {
    const c = byName('kube-proxy-full-partial-full');
    const files = Object.fromEntries(c.files.map((f) => [f.name, f.text]));
    const r = run((io) => nftFmt(c.files.map((f) => f.name), {}, io), files);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(c.listing);
  });

  it('stops at a failing file with exit 1 and exactly the real error', () => {
    const c = byName('transaction-atomic');
    const files = Object.fromEntries(c.files.map((f) => [f.name, f.text]));
    const r = run((io) => nftFmt(c.files.map((f) => f.name), {}, io), files);
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(c.steps[1]?.stderr);
  });

  it('accepts destroy only with --nft-version 1.0.7', () => {
    // The recorded 1.0.6 case is the first two lines: nft 1.0.6 reports every `destroy` line.
    const recorded = byName('syntax-destroy-106');
    expect(run((io) => nftFmt(['a.nft'], {}, io), { 'a.nft': recorded.files[0]?.text ?? '' }).stderr).toBe(recorded.steps[0]?.stderr);
    const files = { 'a.nft': 'table ip t\ndestroy table ip t\ndestroy table ip nope\n' };
    const r = run((io) => nftFmt(['a.nft'], { nftVersion: '1.0.7' }, io), files);
    expect(r).toEqual({ status: 0, stdout: '', stderr: '' });
  });

  it('is registered in the netsim binary', () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'packages/cli/src/bin.ts', 'nft', 'fmt', '-'], { cwd: root, encoding: 'utf8', input: 'table inet f {\n\tchain input {\n\t\ttype filter hook input priority 0; policy drop;\n\t\tct state established,related accept\n\t}\n}\n' });
    expect(r.stdout).toBe('table inet f {\n\tchain input {\n\t\ttype filter hook input priority filter; policy drop;\n\t\tct state established,related accept\n\t}\n}\n');
    expect(r.status).toBe(0);
  }, 30_000);
});

describe('netsim nft diff', () => {
  it('prints the rules that differ per chain, exit 1; exit 0 for the same ruleset written differently', () => {
    const files = {
      'a.nft': 'table ip t {\n\tchain c {\n\t\tip saddr 192.0.2.1 accept\n\t\ttcp dport 22 accept\n\t}\n}\n',
      'b.nft': 'add table ip t\nadd chain ip t c\nadd rule ip t c ip saddr 192.0.2.1/32 accept\nadd rule ip t c tcp dport ssh drop\n',
      'c.nft': 'add table ip t\nadd chain ip t c\nadd rule ip t c ip saddr 192.0.2.1/32 accept\nadd rule ip t c ip protocol tcp tcp dport ssh accept\n',
    };
    expect(run((io) => nftDiff('a.nft', 'b.nft', {}, io), files)).toEqual({ status: 1, stdout: 'table ip t chain c\n- tcp dport 22 accept\n+ tcp dport 22 drop\n', stderr: '' });
    expect(run((io) => nftDiff('a.nft', 'c.nft', {}, io), files)).toEqual({ status: 0, stdout: '', stderr: '' });
  });

  it('exits 2 when a file does not apply or cannot be read', () => {
    const files = { 'a.nft': 'table ip t\n', 'bad.nft': 'add rule ip t nope accept\n' };
    const r = run((io) => nftDiff('a.nft', 'bad.nft', {}, io), files);
    expect(r.status).toBe(2);
    // Each file applies on its own fresh host: the table is missing, and the kernel names it.
    expect(r.stderr).toBe('bad.nft:1:13-13: Error: Could not process rule: No such file or directory\nadd rule ip t nope accept\n            ^\n');
    expect(run((io) => nftDiff('a.nft', 'missing.nft', {}, io), files).status).toBe(2);
  });
});
