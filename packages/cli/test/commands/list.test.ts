import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { listArgv, runList, type ListCliOptions } from '../../src/commands/list.ts';

// fixtures/list/node.*.txt are what the real iptables 1.8.9 (nf_tables) printed after
// `iptables-restore -c < node.rules` in a fresh namespace (fixtures/list/record.sh).
const dir = fileURLToPath(new URL('../fixtures/list/', import.meta.url));
const fixture = (name: string): string => readFileSync(`${dir}${name}`, 'utf8');

const base: ListCliOptions = {
  ruleset: `${dir}node.rules`,
  table: 'filter',
  numeric: false,
  verbose: false,
  exact: false,
  lineNumbers: false,
  listRules: false,
  iptablesVersion: '1.8.9',
};

function list(over: Partial<ListCliOptions>, chain?: string, ruleNum?: string, stdin = ''): { status: number; stdout: string; stderr: string } {
  let stdout = '';
  let stderr = '';
  const status = runList({ ...base, ...over }, chain, ruleNum, {
    stdout: (s) => (stdout += s),
    stderr: (s) => (stderr += s),
    readFile: (p) => (p === '-' ? stdin : readFileSync(p, 'utf8')),
  });
  return { status, stdout, stderr };
}

const FORMATS: { readonly [name: string]: Partial<ListCliOptions> } = {
  'L-n-v': { numeric: true, verbose: true },
  'L-n-v-x-line': { numeric: true, verbose: true, exact: true, lineNumbers: true },
  'L-n': { numeric: true },
  'S-v': { listRules: true, verbose: true },
};

describe('netsim list', () => {
  for (const table of ['filter', 'nat', 'mangle', 'raw']) {
    for (const [format, opts] of Object.entries(FORMATS)) {
      it(`should print ${table} ${format} byte for byte as iptables printed it, counters included`, () => {
        const r = list({ table, ...opts });
        expect(r.stderr).toBe('');
        expect(r.status).toBe(0);
        expect(r.stdout).toBe(fixture(`node.${table}.${format}.txt`));
      });
    }
  }

  it('should list one chain, and one rule of a chain, as iptables -L CHAIN [NUM] does', () => {
    expect(list({ numeric: true, verbose: true, lineNumbers: true }, 'FORWARD').stdout).toBe(fixture('node.filter.FORWARD.txt'));
    expect(list({ table: 'nat', numeric: true, verbose: true }, 'KUBE-SVC-X', '2').stdout).toBe(fixture('node.nat.KUBE-SVC-X-2.txt'));
  });

  it('should read the dump from standard input for --ruleset -', () => {
    expect(list({ ruleset: '-', table: 'nat', numeric: true, verbose: true }, undefined, undefined, fixture('node.rules')).stdout).toBe(fixture('node.nat.L-n-v.txt'));
  });

  it("should fail as iptables does for a chain that does not exist (exit 1, the real tool's message)", () => {
    const r = list({}, 'NO-SUCH-CHAIN');
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe("iptables v1.8.9 (nf_tables): chain `NO-SUCH-CHAIN' in table `filter' is incompatible, use 'nft' tool.\n");
  });

  it('should refuse a bad dump with exit 2, naming file, line, column and token', () => {
    const r = list({ ruleset: '-' }, undefined, undefined, '*filter\n-A INPUT -p tcp --dport 22 -j ACCEPT --bogus\nCOMMIT\n');
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^netsim list: iptables-restore: <stdin>:2:\d+: unknown option "--bogus" \(at "--bogus"\)\n/);
    expect(list({ table: 'security' }).stderr).toBe('netsim list: -t security: expected one of raw, mangle, nat, filter\n');
    expect(list({ ruleset: `${dir}missing.rules` }).status).toBe(2);
  });

  it('should check -m set names against --ipset when given', () => {
    const dump = '*filter\n-A INPUT -m set --match-set allowed src -j ACCEPT\nCOMMIT\n';
    expect(list({ ruleset: '-', numeric: true }, 'INPUT', undefined, dump).stdout).toContain('match-set allowed src');
    const sets = `${dir}ipsets.txt`;
    expect(list({ ruleset: '-', ipset: sets }, 'INPUT', undefined, dump).status).toBe(2);
  });

  it('should build the iptables argv from the options', () => {
    expect(listArgv({ ...base, table: 'nat', numeric: true, verbose: true, exact: true, lineNumbers: true }, 'KUBE-SERVICES')).toEqual(['-t', 'nat', '-L', 'KUBE-SERVICES', '-n', '-x', '--line-numbers', '-v']);
    expect(listArgv({ ...base, listRules: true, numeric: true, verbose: true })).toEqual(['-t', 'filter', '-S', '-v']);
  });
});

describe('netsim list: the documented examples', () => {
  it('should print exactly what docs/netfilter.md shows', () => {
    const root = fileURLToPath(new URL('../../../../', import.meta.url));
    const doc = readFileSync(`${root}docs/netfilter.md`, 'utf8');
    const shown = [...doc.matchAll(/^\$ pnpm -s netsim list ([^\n]*)\n([\s\S]*?)(?=^\$ |^```)/gm)];
    expect(shown.length).toBe(2);
    for (const [, command, output] of shown) {
      const words = (command ?? '').split(' ');
      const at = words.indexOf('--ruleset');
      const ruleset = `${root}${words[at + 1] ?? ''}`;
      const rest = words.filter((_, i) => i !== at && i !== at + 1);
      const opts: { -readonly [K in keyof ListCliOptions]?: ListCliOptions[K] } = { ruleset, iptablesVersion: '1.8.10' };
      const positional: string[] = [];
      for (let i = 0; i < rest.length; i++) {
        const w = rest[i] as string;
        if (w === '-t') opts.table = rest[++i] as string;
        else if (w === '--line-numbers') opts.lineNumbers = true;
        else if (w.startsWith('-')) {
          if (w.includes('n')) opts.numeric = true;
          if (w.includes('v')) opts.verbose = true;
          if (w.includes('x')) opts.exact = true;
        } else positional.push(w);
      }
      expect(list(opts, positional[0], positional[1]).stdout).toBe(output);
    }
  });
});
