import { describe, expect, it } from 'vitest';
import { exec, formatSave, freshRuleset, parseSave, type Ruleset } from '../src/index.ts';
import { fixture } from './fixtures.ts';

// fixtures/exec-cases.json was recorded by fixtures/record.ts from fixtures/exec-cases.txt: each
// case is a sequence of `iptables` commands (1.8.9, nf_tables) run in one fresh network
// namespace, with every command's exit status, stdout and stderr, and `iptables-save` at the end.

interface ExecCase {
  readonly name: string;
  readonly steps: readonly { readonly argv: readonly string[]; readonly exitCode: number; readonly stdout: string; readonly stderr: string }[];
  readonly save: string;
}

const cases = JSON.parse(fixture('exec-cases.json')) as ExecCase[];

describe('exec against recorded iptables runs', () => {
  for (const c of cases) {
    describe(c.name, () => {
      let r: Ruleset = freshRuleset();
      c.steps.forEach((step, k) => {
        it(`should match the real tool at step ${k + 1}: iptables ${step.argv.join(' ')}`, () => {
          const res = exec(r, step.argv, { version: '1.8.9' });
          expect({ exitCode: res.exitCode, stdout: res.stdout, stderr: res.stderr }).toEqual({
            exitCode: step.exitCode,
            stdout: step.stdout,
            stderr: step.stderr,
          });
          if (res.exitCode !== 0) expect(res.ruleset).toBe(r);
          r = res.ruleset;
        });
      });
      it('should end with the same iptables-save output', () => {
        expect(formatSave(r)).toBe(c.save);
      });
    });
  }
});

describe('exec', () => {
  it('should leave the input ruleset untouched and return a new one', () => {
    const r0 = freshRuleset();
    const res = exec(r0, ['-A', 'INPUT', '-j', 'ACCEPT']);
    expect(res.exitCode).toBe(0);
    expect(r0.tables.filter.chains['INPUT']?.rules).toHaveLength(0);
    expect(res.ruleset.tables.filter.chains['INPUT']?.rules).toHaveLength(1);
  });

  it('should not create a table for listing commands', () => {
    const res = exec(freshRuleset(), ['-t', 'nat', '-L', '-n']);
    expect(res.ruleset.tables.nat.absent).toBe(true);
    expect(formatSave(res.ruleset)).toBe('');
  });

  it('should use the 1.8.10 version string by default', () => {
    expect(exec(freshRuleset(), ['-Q']).stderr).toBe("iptables v1.8.10 (nf_tables): unknown option \"-Q\"\nTry `iptables -h' or 'iptables --help' for more information.\n");
  });

  it('should refuse -m set for a missing ipset when the host ipsets are given', () => {
    const argv = ['-A', 'INPUT', '-m', 'set', '--match-set', 'KUBE-X', 'src', '-j', 'DROP'];
    expect(exec(freshRuleset(), argv).exitCode).toBe(0);
    const res = exec(freshRuleset(), argv, { ipsets: ['OTHER'], version: '1.8.9' });
    expect(res.exitCode).toBe(2);
    expect(res.stderr).toBe("iptables v1.8.9 (nf_tables): Set KUBE-X doesn't exist.\n\nTry `iptables -h' or 'iptables --help' for more information.\n");
    expect(exec(freshRuleset(), argv, { ipsets: ['KUBE-X'] }).exitCode).toBe(0);
  });

  it('should answer repeated -C and -D by the rules as they are now, after renames and deletions', () => {
    let r = freshRuleset();
    for (const argv of [['-N', 'A'], ['-N', 'B'], ['-A', 'INPUT', '-p', 'tcp', '--dport', '22', '-j', 'A'], ['-A', 'INPUT', '-s', '192.0.2.1', '-j', 'B']]) r = exec(r, argv).ruleset;
    const check = (argv: readonly string[]): number => exec(r, ['-C', 'INPUT', ...argv]).exitCode;
    for (let k = 0; k < 3; k++) {
      expect(check(['-p', 'tcp', '--dport', '22', '-j', 'A'])).toBe(0);
      expect(check(['-p', 'tcp', '--dport', '23', '-j', 'A'])).toBe(1);
    }
    r = exec(r, ['-E', 'A', 'C']).ruleset;
    expect(check(['-p', 'tcp', '--dport', '22', '-j', 'A'])).toBe(2); // no chain A any more
    expect(check(['-p', 'tcp', '--dport', '22', '-j', 'C'])).toBe(0);
    const miss = exec(r, ['-C', 'INPUT', '-s', '192.0.2.2', '-j', 'B'], { version: '1.8.9' });
    expect(miss).toEqual({ ruleset: r, stdout: '', stderr: 'iptables: Bad rule (does a matching rule exist in that chain?).\n', exitCode: 1 });
    r = exec(r, ['-D', 'INPUT', '-s', '192.0.2.1', '-j', 'B']).ruleset;
    expect(check(['-s', '192.0.2.1', '-j', 'B'])).toBe(1);
    expect(formatSave(r)).toContain('-A INPUT -p tcp -m tcp --dport 22 -j C\n');
  });

  it('should leave the stack trace limit as it was after failures, and give NetfilterErrors their stack', () => {
    const limit = Error.stackTraceLimit;
    expect(exec(freshRuleset(), ['-C', 'INPUT', '-j', 'ACCEPT']).exitCode).toBe(1);
    expect(exec(freshRuleset(), ['-Q']).exitCode).toBe(2);
    expect(Error.stackTraceLimit).toBe(limit);
    let stack = '';
    try {
      parseSave('*filter\n-A INPUT --bogus\nCOMMIT\n');
    } catch (e) {
      stack = (e as Error).stack ?? '';
    }
    expect(stack).toContain('parseSave');
  });

  it('should rewrite jumps to a renamed chain', () => {
    let r = freshRuleset();
    for (const argv of [['-N', 'OLD'], ['-A', 'INPUT', '-j', 'OLD'], ['-A', 'OLD', '-g', 'OLD2'].slice(0, 0), ['-E', 'OLD', 'NEW']]) {
      if (argv.length > 0) r = exec(r, argv).ruleset;
    }
    expect(formatSave(r)).toContain('-A INPUT -j NEW');
    expect(exec(r, ['-X', 'NEW']).stderr).toContain('CHAIN_DEL failed (Device or resource busy): chain NEW');
  });
});
