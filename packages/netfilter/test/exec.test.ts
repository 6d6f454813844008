import { describe, expect, it } from 'vitest';
import { exec, formatSave, freshRuleset, type Ruleset } from '../src/index.ts';
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

  it('should rewrite jumps to a renamed chain', () => {
    let r = freshRuleset();
    for (const argv of [['-N', 'OLD'], ['-A', 'INPUT', '-j', 'OLD'], ['-A', 'OLD', '-g', 'OLD2'].slice(0, 0), ['-E', 'OLD', 'NEW']]) {
      if (argv.length > 0) r = exec(r, argv).ruleset;
    }
    expect(formatSave(r)).toContain('-A INPUT -j NEW');
    expect(exec(r, ['-X', 'NEW']).stderr).toContain('CHAIN_DEL failed (Device or resource busy): chain NEW');
  });
});
