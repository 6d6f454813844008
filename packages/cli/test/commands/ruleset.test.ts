import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../../../', import.meta.url));
const saveFixtures = `${root}packages/netfilter/test/fixtures/save/`;

function netsim(args: readonly string[], input = ''): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'packages/cli/src/bin.ts', ...args], { cwd: root, encoding: 'utf8', input });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('netsim ruleset fmt', () => {
  // The .expected files are real iptables-save output after iptables-restore of the .rules file on
  // a fresh host (see packages/netfilter/test/fixtures/record.ts).
  const names = readdirSync(saveFixtures)
    .filter((f) => f.endsWith('.rules'))
    .map((f) => f.slice(0, -6));

  it('should print exactly what iptables-save printed for every recorded fixture', () => {
    for (const name of names) {
      const r = netsim(['ruleset', 'fmt', `${saveFixtures}${name}.rules`]);
      expect(r.stderr, name).toBe('');
      expect(r.status, name).toBe(0);
      expect(r.stdout, name).toBe(readFileSync(`${saveFixtures}${name}.expected`, 'utf8'));
    }
  }, 60_000);

  it('should read standard input for "-" and by default', () => {
    const input = '*filter\n-A INPUT -p tcp --dport 22 -s 192.0.2.1 -j ACCEPT\nCOMMIT\n';
    const expected = '*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n-A INPUT -s 192.0.2.1/32 -p tcp -m tcp --dport 22 -j ACCEPT\nCOMMIT\n';
    expect(netsim(['ruleset', 'fmt', '-'], input).stdout).toBe(expected);
    expect(netsim(['ruleset', 'fmt'], input).stdout).toBe(expected);
  }, 30_000);

  it('should reject invalid input with exit 2, naming file, line, column and token, then the real message', () => {
    const r = netsim(['ruleset', 'fmt', '--iptables-version', '1.8.9', '-'], '*filter\n-A INPUT -j ACCEPT\n-A INPUT -p tcp --dport 80 --bogus\nCOMMIT\n');
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      [
        'netsim ruleset fmt: iptables-restore: <stdin>:3:28: unknown option "--bogus" (at "--bogus")',
        'iptables-restore v1.8.9 (nf_tables): unknown option "--bogus"',
        'Error occurred at line: 3',
        "Try `iptables-restore -h' or 'iptables-restore --help' for more information.",
        '',
      ].join('\n'),
    );
  }, 30_000);

  it('should reject what the kernel would refuse, and a missing file', () => {
    const r = netsim(['ruleset', 'fmt'], '*nat\n-A POSTROUTING -j DNAT --to-destination 192.0.2.1\nCOMMIT\n');
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('<stdin>:2:19: RULE_APPEND failed (Invalid argument): rule in chain POSTROUTING (at "DNAT")');
    const missing = netsim(['ruleset', 'fmt', `${root}no/such/file.rules`]);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain('ENOENT');
  }, 30_000);
});

describe('netsim ruleset diff', () => {
  it('should exit 0 and print nothing for the same ruleset spelled two ways', () => {
    const r = netsim(['ruleset', 'diff', `${saveFixtures}kube-proxy-restore.rules`, `${saveFixtures}kube-proxy-restore.expected`]);
    expect(r).toEqual({ status: 0, stdout: '', stderr: '' });
  }, 30_000);

  it('should exit 1 and print rule-level changes', () => {
    const a = `${saveFixtures}docker-host-topos1.expected`;
    const r = netsim(['ruleset', 'diff', a, '-'], readFileSync(a, 'utf8').replace('-A DOCKER -i docker0 -j RETURN\n', ''));
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('*nat\n- [2] -A DOCKER -i docker0 -j RETURN\n');
  }, 30_000);
});
