import fc from 'fast-check';
import { describe, expect, inject, it } from 'vitest';
import { extensionTables } from '@netsim/netfilter/testing';
import { compareOptions, knownOptionsDifference, netsimOutcome, optionsCaseArb, optionsCases, runOptionsCampaign, tableBlock, type OptionsCase } from '../src/optionsCheck.ts';

const env = inject('conformanceEnv');
/** The options check in the default run (a few hundredths of a second a rule). */
const OPTIONS_RUNS = 200;
const OPTIONS_SEED = 1;

const FILTER = (rule: string): OptionsCase => ({
  ext: 'x',
  table: 'filter',
  rule,
  text: `*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:USER - [0:0]\n${rule}\nCOMMIT\n`,
});

describe('options check: the generator', () => {
  it('should draw every match and target extension netsim reads, and user chains named like extensions', () => {
    const drawn = new Set(optionsCases(11, 3000).map((c) => c.ext));
    for (const e of extensionTables()) expect(drawn, `${e.kind} ${e.name}`).toContain(e.name);
    expect([...drawn].filter((d) => d.startsWith('chain ')).length).toBeGreaterThan(3);
  });

  it('should spell options as users do: aliases, abbreviations, and ! before them', () => {
    const rules = fc.sample(optionsCaseArb(), { seed: 5, numRuns: 2000 }).map((c) => c.rule);
    // `--sport` is the tcp module's alias of --source-port; `--to-dest` an abbreviation of DNAT's --to-destination.
    expect(rules.some((r) => / -m (tcp|udp) .*--sport /.test(r))).toBe(true);
    expect(rules.some((r) => /-j DNAT .*--to-d(?!estination )/.test(r))).toBe(true);
    expect(rules.some((r) => / ! --/.test(r))).toBe(true);
  });

  it('should give the same cases for the same seed', () => {
    expect(optionsCases(3, 50)).toEqual(optionsCases(3, 50));
  });
});

describe('options check: comparing two outcomes', () => {
  it('should cut one table out of an iptables-save text', () => {
    const text = '# Generated\n*nat\n:PREROUTING ACCEPT [0:0]\nCOMMIT\n*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -j ACCEPT\nCOMMIT\n# Completed\n';
    expect(tableBlock(text, 'filter')).toBe('*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -j ACCEPT\nCOMMIT\n');
    expect(tableBlock(text, 'raw')).toBeNull();
  });

  it('should name each disagreement: exit status, error text, saved line', () => {
    const c = FILTER('-A INPUT -j ACCEPT');
    const ok = { status: 0, stderr: '', saved: '*filter\n-A INPUT -j ACCEPT\nCOMMIT\n' };
    expect(compareOptions(c, ok, ok).diffs).toEqual([]);
    const other = { status: 0, stderr: '', saved: '*filter\n-A INPUT -j DROP\nCOMMIT\n' };
    expect(compareOptions(c, ok, other).diffs).toEqual(['saved line 2: kernel "-A INPUT -j ACCEPT", netsim "-A INPUT -j DROP"']);
    const refused = { status: 2, stderr: 'iptables-nft-restore v1.8.9 (nf_tables): unknown option "--se"\n', saved: null };
    const netsimRefused = { status: 2, stderr: 'iptables-restore v1.8.9 (nf_tables): unknown option "--se"\n', saved: null };
    // The real tool's program name (iptables-nft-restore) is read as netsim's (iptables-restore).
    expect(compareOptions(c, refused, netsimRefused, 'iptables-nft-restore').diffs).toEqual([]);
    expect(compareOptions(c, refused, ok, 'iptables-nft-restore').diffs.map((d) => d.split(':')[0])).toEqual(['exit status', 'stderr']);
  });

  it("should run netsim's iptables-restore as the real one (recorded: iptables 1.8.9, nf_tables)", () => {
    // `--set` is its own option of -m recent, not an abbreviation of anything; the tool prints the defaults.
    expect(netsimOutcome(FILTER('-A INPUT -m recent --set --name ssh'))).toEqual({
      status: 0,
      stderr: '',
      saved: '*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:USER - [0:0]\n-A INPUT -m recent --set --name ssh --mask 255.255.255.255 --rsource\nCOMMIT\n',
    });
    // `--se` is ambiguous between --set and --seconds: getopt_long refuses it as unknown.
    expect(netsimOutcome(FILTER('-A INPUT -m recent --se --name ssh'))).toEqual({
      status: 2,
      stderr: 'iptables-restore v1.8.9 (nf_tables): unknown option "--se"\nError occurred at line: 6\nTry `iptables-restore -h\' or \'iptables-restore --help\' for more information.\n',
      saved: null,
    });
  });
});

describe('options check: known differences', () => {
  it('should explain a refused rule naming a kernel object, and nothing else, as needs-kernel-object', () => {
    const refusedByKernel = { status: 4, stderr: 'iptables-restore v1.8.9 (nf_tables): \nline 8: RULE_APPEND failed (No such file or directory): rule in chain FORWARD\n', saved: null };
    const accepted = { status: 0, stderr: '', saved: '*filter\nCOMMIT\n' };
    const nfacct = compareOptions(FILTER('-A FORWARD -m nfacct --nfacct-name dst -j ACCEPT'), refusedByKernel, accepted, 'iptables-restore');
    expect(knownOptionsDifference(nfacct)?.id).toBe('needs-kernel-object');
    const other = compareOptions(FILTER('-A FORWARD -m mark --mark 1 -j ACCEPT'), refusedByKernel, accepted, 'iptables-restore');
    expect(knownOptionsDifference(other)).toBeUndefined();
  });

  it("should explain only the resolver's message as host-name-resolution", () => {
    const c = FILTER('-A INPUT -s foo.invalid -j ACCEPT');
    const kernel = { status: 2, stderr: 'iptables-restore v1.8.9 (nf_tables): getaddrinfo: Temporary failure in name resolution\n', saved: null };
    const same = { status: 2, stderr: 'iptables-restore v1.8.9 (nf_tables): getaddrinfo: Name or service not known\n', saved: null };
    expect(knownOptionsDifference(compareOptions(c, kernel, same, 'iptables-restore'))?.id).toBe('host-name-resolution');
    const otherText = { status: 2, stderr: 'iptables-restore v1.8.9 (nf_tables): host/network `foo.invalid\' not found\n', saved: null };
    expect(knownOptionsDifference(compareOptions(c, kernel, otherText, 'iptables-restore'))).toBeUndefined();
  });
});

describe.skipIf(!env.ok)('options check against the real iptables-restore', () => {
  it(`should agree on ${OPTIONS_RUNS} generated rules (seed ${OPTIONS_SEED}) but for known differences, having compared refusals and saved tables both`, () => {
    const r = runOptionsCampaign({ seed: OPTIONS_SEED, runs: OPTIONS_RUNS });
    // Not vacuous: the real tool took some rules and refused others, and both were compared.
    expect(r.accepted).toBeGreaterThan(20);
    expect(r.refused).toBeGreaterThan(20);
    expect(r.perExtension.size).toBeGreaterThan(40);
    const fresh = r.disagreements.filter((d) => d.known === undefined).map((d) => `#${d.index} ${d.case.rule}: ${d.diffs.join('; ')}`);
    expect(fresh).toEqual([]);
  }, 300_000);
});
