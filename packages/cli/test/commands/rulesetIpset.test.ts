import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { rulesetDiff, rulesetFmt } from '../../src/commands/ruleset.ts';

const sets = fileURLToPath(new URL('../fixtures/list/ipsets.txt', import.meta.url));
const DUMP = [
  '*nat',
  ':cali-nat-outgoing - [0:0]',
  '-A cali-nat-outgoing -m comment --comment "cali:flqWnvo8yq4ULQLa" -m set --match-set cali40all-ipam-pools src -m set ! --match-set cali40all-ipam-pools dst -j MASQUERADE --random-fully',
  'COMMIT',
  '',
].join('\n');

function io(files: Record<string, string>) {
  const out = { stdout: '', stderr: '' };
  return {
    out,
    io: {
      stdout: (s: string) => void (out.stdout += s),
      stderr: (s: string) => void (out.stderr += s),
      readFile: (p: string) => files[p] ?? readFileSync(p, 'utf8'),
    },
  };
}

describe('netsim ruleset fmt --ipset', () => {
  it('should refuse -m set of a set the host lacks, as iptables-restore does, and accept it with --ipset', () => {
    const without = io({ 'a.rules': DUMP });
    expect(rulesetFmt('a.rules', { iptablesVersion: '1.8.9' }, without.io)).toBe(2);
    // Recorded: iptables-restore v1.8.9 on a host without the set.
    expect(without.out.stderr).toContain("iptables-restore v1.8.9 (nf_tables): Set cali40all-ipam-pools doesn't exist.\n");
    const withSets = io({ 'a.rules': DUMP });
    expect(rulesetFmt('a.rules', { ipset: sets }, withSets.io)).toBe(0);
    expect(withSets.out.stdout).toContain('-m set --match-set cali40all-ipam-pools src -m set ! --match-set cali40all-ipam-pools dst -j MASQUERADE --random-fully');
  });

  it('should name the line of a bad ipset file', () => {
    const r = io({ 'a.rules': DUMP, 'bad.sets': 'create x hash:ip\nadd y 10.0.0.1\n' });
    expect(rulesetFmt('a.rules', { ipset: 'bad.sets' }, r.io)).toBe(2);
    expect(r.out.stderr).toBe('netsim ruleset fmt: bad.sets:2: add to set "y" before its create line\n');
  });
});

describe('netsim ruleset diff --ipset', () => {
  it('should compare dumps whose sets exist, and refuse one naming a missing set', () => {
    const other = DUMP.replace('--random-fully', '');
    const ok = io({ 'a.rules': DUMP, 'b.rules': other });
    expect(rulesetDiff('a.rules', 'b.rules', ok.io, { ipset: sets })).toBe(1);
    expect(ok.out.stdout).toContain('cali-nat-outgoing');
    const missing = io({ 'a.rules': DUMP, 'b.rules': DUMP.replaceAll('cali40all-ipam-pools', 'cali40masq-ipam-pools') });
    expect(rulesetDiff('a.rules', 'b.rules', missing.io, { ipset: sets })).toBe(2);
    expect(missing.out.stderr).toContain("Set cali40masq-ipam-pools doesn't exist.");
    // Without --ipset, set names are not checked.
    expect(rulesetDiff('a.rules', 'b.rules', io({ 'a.rules': DUMP, 'b.rules': DUMP }).io)).toBe(0);
  });
});
