import { describe, expect, it } from 'vitest';
import { exec, freshRuleset, listRules, listTable, restore, type Ruleset, type TableName } from '../src/index.ts';
import { fixture } from './fixtures.ts';

// fixtures/save/matches-targets.TABLE.FORMAT.txt are the real `iptables -t TABLE <FORMAT>` outputs
// (iptables 1.8.9, nf_tables) after `iptables-restore < matches-targets.rules` in a fresh
// namespace, recorded by fixtures/record.ts. They are compared with netsim's 1.8.9 mode.

const ruleset = restore(freshRuleset(), fixture('save/matches-targets.rules'));
const TABLES: TableName[] = ['filter', 'nat', 'mangle', 'raw'];
const LIST_FORMATS = {
  'L-n-v': { numeric: true, verbose: true },
  'L-n': { numeric: true },
  L: {},
  'L-v': { verbose: true },
  'L-n-v-x-line': { numeric: true, verbose: true, exact: true, lineNumbers: true },
} as const;

describe('iptables -L of extensions (fixtures/save/extensions.rules)', () => {
  const ext = restore(freshRuleset(), fixture('save/extensions.rules'));
  for (const table of TABLES) {
    for (const [format, opts] of Object.entries(LIST_FORMATS)) {
      it(`should render ${table} ${format} exactly like iptables 1.8.9`, () => {
        expect(listTable(ext.tables[table], { ...opts, version: '1.8.9' })).toBe(fixture(`save/extensions.${table}.${format}.txt`));
      });
    }
    it(`should print ${table} -S like iptables 1.8.9`, () => {
      expect(listRules(ext.tables[table])).toBe(fixture(`save/extensions.${table}.S.txt`));
      expect(listRules(ext.tables[table], { verbose: true })).toBe(fixture(`save/extensions.${table}.S-v.txt`));
    });
  }
});

describe('iptables -L', () => {
  for (const table of TABLES) {
    for (const [format, opts] of Object.entries(LIST_FORMATS)) {
      it(`should render ${table} ${format} exactly like iptables 1.8.9`, () => {
        expect(listTable(ruleset.tables[table], { ...opts, version: '1.8.9' })).toBe(fixture(`save/matches-targets.${table}.${format}.txt`));
      });
    }
  }

  it('should print protocol names with -n in 1.8.10 mode, where 1.8.9 prints numbers', () => {
    const line = (v: '1.8.9' | '1.8.10'): string | undefined =>
      listTable(ruleset.tables.filter, { chain: 'INPUT', ruleNum: 3, numeric: true, version: v }).trimEnd();
    expect(line('1.8.9')).toBe('           6    --  198.51.100.0/24      192.0.2.7            tcp dpt:80');
    expect(line('1.8.10')).toBe('           tcp  --  198.51.100.0/24      192.0.2.7            tcp dpt:80');
    expect(listTable(ruleset.tables.filter, { chain: 'INPUT', ruleNum: 1, numeric: true }).slice(0, 16)).toBe('ACCEPT     all  ');
  });

  it('should reproduce the flannel chain of the seed report (iptables 1.8.10, -n -v)', () => {
    // From a flannel incident report: `iptables -t nat -L FLANNEL-POSTRTG -n -v` on a node running
    // iptables v1.8.10; the report's copy lost trailing blanks, so lines are compared trimmed.
    const expected = [
      'Chain FLANNEL-POSTRTG (1 references)',
      ' pkts bytes target     prot opt in     out     source               destination',
      '    0     0 RETURN     all  --  *      *       0.0.0.0/0            0.0.0.0/0            mark match 0x4000/0x4000 /* flanneld masq */',
      '   40  3000 RETURN     all  --  *      *       10.42.0.0/24         10.42.0.0/16         /* flanneld masq */',
      '    0     0 RETURN     all  --  *      *       10.42.0.0/16         10.42.0.0/24         /* flanneld masq */',
      '   13   780 RETURN     all  --  *      *      !10.42.0.0/16         10.42.0.0/24         /* flanneld masq */',
      '    8   480 MASQUERADE  all  --  *      *       10.42.0.0/16        !224.0.0.0/4          /* flanneld masq */ random-fully',
      '    0     0 MASQUERADE  all  --  *      *      !10.42.0.0/16         10.42.0.0/16         /* flanneld masq */ random-fully',
    ];
    let r: Ruleset = freshRuleset();
    const run = (...argv: string[]): void => {
      const res = exec(r, ['-t', 'nat', ...argv]);
      expect(res.stderr).toBe('');
      r = res.ruleset;
    };
    run('-N', 'FLANNEL-POSTRTG');
    run('-A', 'POSTROUTING', '-m', 'comment', '--comment', 'flanneld masq', '-j', 'FLANNEL-POSTRTG');
    const c = (p: number, b: number): string[] => ['-c', String(p), String(b)];
    const m = ['-m', 'comment', '--comment', 'flanneld masq'];
    run('-A', 'FLANNEL-POSTRTG', ...c(0, 0), '-m', 'mark', '--mark', '0x4000/0x4000', ...m, '-j', 'RETURN');
    run('-A', 'FLANNEL-POSTRTG', ...c(40, 3000), '-s', '10.42.0.0/24', '-d', '10.42.0.0/16', ...m, '-j', 'RETURN');
    run('-A', 'FLANNEL-POSTRTG', ...c(0, 0), '-s', '10.42.0.0/16', '-d', '10.42.0.0/24', ...m, '-j', 'RETURN');
    run('-A', 'FLANNEL-POSTRTG', ...c(13, 780), '!', '-s', '10.42.0.0/16', '-d', '10.42.0.0/24', ...m, '-j', 'RETURN');
    run('-A', 'FLANNEL-POSTRTG', ...c(8, 480), '-s', '10.42.0.0/16', '!', '-d', '224.0.0.0/4', ...m, '-j', 'MASQUERADE', '--random-fully');
    run('-A', 'FLANNEL-POSTRTG', ...c(0, 0), '!', '-s', '10.42.0.0/16', '-d', '10.42.0.0/16', ...m, '-j', 'MASQUERADE', '--random-fully');
    const out = exec(r, ['-t', 'nat', '-L', 'FLANNEL-POSTRTG', '-n', '-v']);
    expect(out.exitCode).toBe(0);
    expect(out.stdout.split('\n').map((l) => l.trimEnd())).toEqual([...expected, '']);
  });

  it('should abbreviate counters as the real tool does and print them exactly with -x', () => {
    const r = exec(freshRuleset(), ['-A', 'INPUT', '-c', '123456', '99999999999', '-j', 'ACCEPT']).ruleset;
    expect(listTable(r.tables.filter, { chain: 'INPUT', ruleNum: 1, numeric: true, verbose: true })).toMatch(/^ 123K {2}100G ACCEPT/);
    expect(listTable(r.tables.filter, { chain: 'INPUT', ruleNum: 1, numeric: true, verbose: true, exact: true })).toMatch(/^ {2}123456 99999999999 ACCEPT/);
  });

  it('should refuse a chain that does not exist with the real tool\'s words', () => {
    const res = exec(freshRuleset(), ['-L', 'NOPE'], { version: '1.8.9' });
    expect(res.exitCode).toBe(1);
    expect(res.stderr).toBe("iptables v1.8.9 (nf_tables): chain `NOPE' in table `filter' is incompatible, use 'nft' tool.\n");
  });
});

describe('iptables -S', () => {
  for (const table of TABLES) {
    it(`should print ${table} rules exactly like iptables 1.8.9, with and without -v`, () => {
      expect(listRules(ruleset.tables[table])).toBe(fixture(`save/matches-targets.${table}.S.txt`));
      expect(listRules(ruleset.tables[table], { verbose: true })).toBe(fixture(`save/matches-targets.${table}.S-v.txt`));
    });
  }

  it('should print one chain, or one rule of it', () => {
    const t = ruleset.tables.filter;
    expect(listRules(t, { chain: 'zz-last' })).toBe('-N zz-last\n-A zz-last -j RETURN\n');
    expect(listRules(t, { chain: 'INPUT', ruleNum: 1 })).toBe('-A INPUT -i lo -j ACCEPT\n');
    expect(listRules(t, { chain: 'OUTPUT' })).toBe('-P OUTPUT ACCEPT\n-A OUTPUT -m addrtype --dst-type LOCAL --limit-iface-out\n');
  });

  it('should list nothing and succeed for a rule number past the end of an existing chain, as iptables 1.8.9 does', () => {
    // go-iptables' ChainExists runs `-S chain 1`: exit 0 for any existing chain, even an empty one.
    const t = ruleset.tables.filter;
    expect(listRules(t, { chain: 'zz-last', ruleNum: 2 })).toBe('');
    expect(listTable(t, { chain: 'zz-last', ruleNum: 5, numeric: true })).toBe('');
    const empty = exec(freshRuleset(), ['-t', 'nat', '-N', 'FOO']).ruleset;
    expect(exec(empty, ['-t', 'nat', '-S', 'FOO', '1'])).toMatchObject({ exitCode: 0, stdout: '', stderr: '' });
    expect(exec(empty, ['-t', 'nat', '-S', 'BAR', '1']).exitCode).toBe(1);
  });
});
