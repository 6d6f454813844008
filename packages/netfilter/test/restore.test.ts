import { describe, expect, it } from 'vitest';
import { exec, formatSave, freshRuleset, isNetfilterError, parseSave, restore, tryRestore, type Ruleset } from '../src/index.ts';
import { fixture } from './fixtures.ts';

// fixtures/restore-cases.json was recorded by fixtures/record.ts from fixtures/restore-cases.txt:
// for each case, in a fresh network namespace, the `# pre:` commands were run with `iptables`,
// then `iptables-restore [args]` (1.8.9, nf_tables) read the case's input; its exit status and
// stderr were kept, and `iptables-save` (with -c when --counters was given) afterwards.

interface RestoreCase {
  readonly name: string;
  readonly args: readonly string[];
  readonly pre: readonly (readonly string[])[];
  readonly input: string;
  readonly exitCode: number;
  readonly stderr: string;
  readonly save: string;
}

const cases = JSON.parse(fixture('restore-cases.json')) as RestoreCase[];

function prepared(pre: readonly (readonly string[])[]): Ruleset {
  let r = freshRuleset();
  for (const argv of pre) {
    const res = exec(r, argv);
    expect(res.stderr, argv.join(' ')).toBe('');
    r = res.ruleset;
  }
  return r;
}

describe('restore against recorded iptables-restore runs', () => {
  for (const c of cases) {
    it(`should match the real tool: ${c.name}`, () => {
      const before = prepared(c.pre);
      const counters = c.args.includes('--counters');
      const result = tryRestore(before, c.input, { noflush: c.args.includes('--noflush'), counters, version: '1.8.9', ipsets: [] });
      if ('error' in result) {
        expect(result.error.exitCode).toBe(c.exitCode);
        expect(result.error.stderr).toBe(c.stderr);
      } else {
        expect(c.exitCode).toBe(0);
        expect(c.stderr).toBe('');
      }
      expect(formatSave(result.ruleset, { counters })).toBe(c.save);
    });
  }
});

describe('restore', () => {
  it('should never modify the ruleset it is given', () => {
    const before = parseSave('*filter\n:INPUT DROP [1:2]\n-A INPUT -j ACCEPT\nCOMMIT\n');
    const snapshot = JSON.stringify(before);
    restore(before, '*filter\n-A INPUT -j DROP\nCOMMIT\n');
    restore(before, '*filter\n-F INPUT\n-P INPUT ACCEPT\nCOMMIT\n', { noflush: true });
    expect(JSON.stringify(before)).toBe(snapshot);
  });

  it('should throw a typed error naming the line, column and token, with the real stderr', () => {
    const input = '*filter\n-A INPUT -j ACCEPT\nCOMMIT\n*nat\n-A POSTROUTING -j ACCEPT\n-A POSTROUTING -p tcp --dport 80 --bogus\nCOMMIT\n';
    let err: unknown;
    try {
      restore(freshRuleset(), input, { file: 'in.rules', version: '1.8.9' });
    } catch (e) {
      err = e;
    }
    expect(isNetfilterError(err)).toBe(true);
    if (!isNetfilterError(err)) return;
    expect(err.code).toBe('parse');
    expect(err.exitCode).toBe(2);
    expect(err.location).toEqual({ file: 'in.rules', line: 6, column: 34, token: '--bogus' });
    expect(err.message).toBe('iptables-restore: in.rules:6:34: unknown option "--bogus" (at "--bogus")');
  });

  it('should report refusals as restore errors at the line of the command', () => {
    const r = tryRestore(freshRuleset(), '*filter\n:FOO - [0:0]\n-A INPUT -j FOO\n-X FOO\nCOMMIT\n');
    expect('error' in r && r.error.code).toBe('restore');
    expect('error' in r && r.error.location).toEqual({ line: 4, column: 4, token: 'FOO' });
  });

  it('should keep tables committed before a failing one, as the real tool does', () => {
    const r = tryRestore(freshRuleset(), '*filter\n-A INPUT -j ACCEPT\nCOMMIT\n*nat\n-A BOGUS -j ACCEPT\nCOMMIT\n');
    expect('error' in r).toBe(true);
    expect(r.ruleset.tables.filter.chains['INPUT']?.rules).toHaveLength(1);
    expect(r.ruleset.tables.nat.absent).toBe(true);
  });

  it('should replace a NodePortLocal chain atomically with a noflush chain line', () => {
    let r = freshRuleset();
    for (const argv of [
      ['-t', 'nat', '-N', 'ANTREA-NODE-PORT-LOCAL'],
      ['-t', 'nat', '-A', 'ANTREA-NODE-PORT-LOCAL', '-p', 'tcp', '--dport', '61001', '-j', 'DNAT', '--to-destination', '198.18.5.5:8080'],
      ['-t', 'nat', '-A', 'ANTREA-NODE-PORT-LOCAL', '-p', 'tcp', '--dport', '61002', '-j', 'DNAT', '--to-destination', '198.18.5.5:8081'],
    ]) {
      r = exec(r, argv).ruleset;
    }
    const next = restore(r, '*nat\n:ANTREA-NODE-PORT-LOCAL - [0:0]\n-A ANTREA-NODE-PORT-LOCAL -p tcp --dport 61001 -j DNAT --to-destination 198.18.5.9:8080\nCOMMIT\n', {
      noflush: true,
    });
    const rules = next.tables.nat.chains['ANTREA-NODE-PORT-LOCAL']?.rules ?? [];
    expect(rules).toHaveLength(1);
    expect(rules[0]?.target).toEqual({ kind: 'DNAT', to: { minIp: 0xc6120509, maxIp: 0xc6120509, minPort: 8080, maxPort: 8080 }, random: false, persistent: false });
  });
});
