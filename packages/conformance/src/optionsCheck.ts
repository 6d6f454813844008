/**
 * The options check: rules written for every match and target extension netsim reads, from the
 * extension's own option table — options in random order and number, long names, aliases and
 * abbreviations, `!` where it may or may not go, values from pools shaped like the option's kind
 * and from a pool of awkward words — and user chains named like extensions. Each rule is loaded
 * in its own `iptables-restore` by the real tool in a namespace and by netsim's `tryRestore`; the
 * two must agree on the exit status and on every byte of the error, or, when both accept it, on
 * every byte `iptables-save` prints for the table.
 *
 * Unlike the format check (canonical rules netsim wrote), this one writes what users and other
 * projects write, so it finds the readers' defects: an option read as another's abbreviation, a
 * value spelling refused or printed differently, a missing reason in an error.
 */
import fc from 'fast-check';
import { BUILTIN_CHAINS, formatSave, freshRuleset, tryRestore, type TableName } from '@netsim/netfilter';
import { extensionTables, type ExtensionInfo, type ExtensionOption } from '@netsim/netfilter/testing';
import { LabCommandError, runIn } from './exec.ts';
import { lineDiff, stripSaveComments } from './formatCheck.ts';
import { backendTools } from './lab.ts';
import { createNetns, nextPrefix, releaseNetns } from './netns.ts';

/** One generated rule and the whole `iptables-restore` input that loads it. */
export interface OptionsCase {
  /** The extension the rule was written for (`-m name` or `-j NAME`). */
  readonly ext: string;
  readonly table: TableName;
  /** The rule line (`-A CHAIN …`). */
  readonly rule: string;
  /** The restore input: one table, its chains, the rule, COMMIT. */
  readonly text: string;
}

/** What one tool did with a case. */
export interface OptionsOutcome {
  readonly status: number;
  /** stderr on failure (exactly as printed), '' on success. */
  readonly stderr: string;
  /** The table as `iptables-save -t TABLE` prints it (comment lines removed), on success. */
  readonly saved: string | null;
}

export interface OptionsResult {
  readonly case: OptionsCase;
  readonly kernel: OptionsOutcome;
  readonly netsim: OptionsOutcome;
  /** One line per disagreement (status, error text, saved text); empty when they agree. */
  readonly diffs: readonly string[];
}

const TABLES: readonly TableName[] = ['filter', 'nat', 'mangle', 'raw'];
const PROTOS = ['tcp', 'udp', 'icmp', 'sctp', 'dccp', 'all', '6', '17'] as const;

/**
 * Values by what an option's name says it takes (first pattern that matches wins), each list with
 * spellings the tools accept and a few they refuse.
 */
const POOLS: readonly (readonly [RegExp, readonly string[]])[] = [
  [/mask/, ['0xff', '0xffffffff', '255.255.255.0', '24', '32', '0', '0x0000ff00', '255.0.255.0']],
  [/port|ports$/, ['80', '1:1024', '80,443', '0', '65535', '65536', ':1024', '1024:', 'http', '443:80', '22,80:90', '!80']],
  [/mark|class|queue-num|queue-balance/, ['0x1', '0x1/0xff', '5', '0x10/0x10', '1/1', '0xffffffff', '4294967296', '1:2', '0x0001:0x0002']],
  [/^(to|to-destination|to-source|to-ports|on-ip|gateway|src-range|dst-range|source|destination|src|dst)$|addr|-ip$|range/, [
    '192.0.2.1', '192.0.2.0/24', '192.0.2.1-192.0.2.5', '192.0.2.1:80', '192.0.2.1-192.0.2.5:1000-2000', '198.51.100.7', '0/0', '192.0.2.1/255.255.255.0', ':8080', '8080-8090', '300.1.1.1',
  ]],
  [/name|set|prefix|comment|string|algo|label|helper|timeout$|zone|physdev|interface|iface|^in$|^out$/, ['foo', 'ssh', 'DEFAULT', '"a b"', 'x', 'KUBE-SVC-A', '"with \\"quote\\""', 'eth0', 'eth+', 'lo', 'bm', 'kmp', 'src', 'dst', 'src,dst', '0']],
  [/rate|limit|upto|above|burst|interval|expire|gc|htable/, ['10/min', '5/second', '1/hour', '100', '10/s', '1/day', '10/minute', '0', '1000000/sec', '1kb/s', '20']],
  [/state|status|ctstate|dir|proto|type|flags|option|chunk|mode|level|reject-with|log-|tcp-/, [
    'NEW', 'NEW,ESTABLISHED', 'INVALID', 'DNAT', 'SYN', 'SYN,ACK SYN', 'ALL NONE', 'ORIGINAL', 'REPLY', 'tcp', '6', 'icmp-port-unreachable', 'tcp-reset', 'echo-request', '8', '8/0', 'any',
    'LOCAL', 'UNICAST', 'random', 'nth', 'warning', '4', 'packets', 'bytes', 'original', 'both', 'srcip', 'srcip,dstport', 'INIT', 'DATA', 'ASSURED', 'SEEN_REPLY',
  ]],
  [/seconds|hitcount|count|every|packet|probability|length|ttl|hl|tos|dscp|ecn|mss|value|min|max|size|len|offset|from|to|hashlimit|percent|time|day|date/, [
    '0', '1', '5', '10', '60', '255', '256', '0.5', '0.25', '1.5', '-1', '0x10', '010', '65535', '1:5', '10:20', 'Mon,Tue', '09:00', '2026-01-01', '4294967295', '4294967296',
  ]],
];

/** Words any option may meet: some valid somewhere, some refused everywhere. */
const AWKWARD = ['1', '0', 'foo', '0x10', '-', '!', '--', 'ACCEPT', '1,2,3', ' ', '""', 'eth0', '192.0.2.9', '1:2:3', '1/', '/1', 'NONE'] as const;

function poolFor(option: string): readonly string[] {
  for (const [re, pool] of POOLS) if (re.test(option)) return pool;
  return AWKWARD;
}

/** A value for `option`: from its pool mostly, an awkward word sometimes. */
function valueArb(option: string): fc.Arbitrary<string> {
  return fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...poolFor(option)) }, { weight: 1, arbitrary: fc.constantFrom(...AWKWARD) });
}

/** How the option is spelled: its name, an alias, or a prefix of either (getopt_long's abbreviations). */
function spellingArb(o: ExtensionOption): fc.Arbitrary<string> {
  const names = [o.name, ...o.aliases];
  return fc.tuple(fc.constantFrom(...names), fc.nat(100)).map(([n, cut]) => (cut < 75 || n.length <= 2 ? n : n.slice(0, 2 + (cut % (n.length - 1)))));
}

/** One option as words: `[!] --spelling values…`. A `!` where the option takes none is a case too. */
function optionArb(o: ExtensionOption): fc.Arbitrary<string[]> {
  return fc.tuple(spellingArb(o), fc.nat(99), fc.array(valueArb(o.name), { minLength: o.args, maxLength: o.args }), fc.nat(99)).map(([name, inv, values, extra]) => [
    ...((o.invert && inv < 25) || inv < 3 ? ['!'] : []),
    `--${name}`,
    ...values,
    // Now and then a value too many or too few.
    ...(extra < 3 ? [values[0] ?? '1'] : []),
  ].slice(0, extra >= 3 && extra < 5 && o.args > 0 ? -1 : undefined));
}

function quoteWord(w: string): string {
  if (w === '') return '""';
  if (/\s/.test(w) && !w.startsWith('"')) return `"${w}"`;
  return w;
}

/** Up to three options of `ext`, any order, now and then one twice. */
function optionsArb(ext: ExtensionInfo): fc.Arbitrary<string[]> {
  if (ext.options.length === 0) return fc.constant([]);
  return fc
    .array(fc.constantFrom(...ext.options), { minLength: 0, maxLength: Math.min(3, ext.options.length + 1) })
    .chain((picked) => (picked.length === 0 ? fc.constant([] as string[][]) : fc.tuple(...picked.map(optionArb))))
    .map((parts) => parts.flat());
}

/** The extensions' names, for user chains named like one. */
function extensionChainNames(exts: readonly ExtensionInfo[]): string[] {
  return exts.filter((e) => e.kind === 'target' && /^[A-Z]+$/.test(e.name)).map((e) => e.name);
}

function chainArb(table: TableName): fc.Arbitrary<string> {
  return fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...(BUILTIN_CHAINS[table] as readonly string[])) }, { weight: 1, arbitrary: fc.constant('USER') });
}

function render(table: TableName, userChains: readonly string[], rules: readonly string[]): string {
  const builtins = (BUILTIN_CHAINS[table] as readonly string[]).map((c) => `:${c} ACCEPT [0:0]`);
  return [`*${table}`, ...builtins, ...userChains.map((c) => `:${c} - [0:0]`), ...rules, 'COMMIT', ''].join('\n');
}

/** The generator of cases: one per extension draw, or a user chain named like an extension. */
export function optionsCaseArb(exts: readonly ExtensionInfo[] = extensionTables()): fc.Arbitrary<OptionsCase> {
  const named = extensionChainNames(exts);
  const extCase = fc.constantFrom(...exts).chain((ext) => {
    const tables = ext.tables !== undefined ? TABLES.filter((t) => (ext.tables as readonly string[]).includes(t)) : TABLES;
    return fc.record({
      ext: fc.constant(ext),
      table: fc.constantFrom(...(tables.length > 0 ? tables : TABLES)),
      proto: fc.option(fc.constantFrom(...PROTOS), { nil: undefined, freq: 2 }),
      options: optionsArb(ext),
      verdict: fc.constantFrom('', ' -j ACCEPT', ' -j RETURN'),
    });
  });
  const byExt = extCase.chain(({ ext, table, proto, options, verdict }) =>
    chainArb(table).map((chain): OptionsCase => {
      const head = `-A ${chain}${proto === undefined ? '' : ` -p ${proto}`}`;
      const words = options.map(quoteWord).join(' ');
      const body = ext.kind === 'match' ? `-m ${ext.name}${words === '' ? '' : ` ${words}`}${verdict}` : `-j ${ext.name}${words === '' ? '' : ` ${words}`}`;
      const rule = `${head} ${body}`;
      return { ext: ext.name, table, rule, text: render(table, ['USER'], [rule]) };
    }),
  );
  if (named.length === 0) return byExt;
  const chainNamed = fc
    .record({ name: fc.constantFrom(...named), table: fc.constantFrom(...TABLES), how: fc.constantFrom('-j', '-g'), proto: fc.option(fc.constantFrom('tcp', 'udp'), { nil: undefined }) })
    .map(({ name, table, how, proto }): OptionsCase => {
      const chain = (BUILTIN_CHAINS[table] as readonly string[])[0] as string;
      const rule = `-A ${chain}${proto === undefined ? '' : ` -p ${proto}`} ${how} ${name}`;
      return { ext: `chain ${name}`, table, rule, text: render(table, [name], [rule, `-A ${name} -j RETURN`]) };
    });
  return fc.oneof({ weight: 9, arbitrary: byExt }, { weight: 1, arbitrary: chainNamed });
}

/** The `*TABLE … COMMIT` block of `table` in an `iptables-save` text. */
export function tableBlock(text: string, table: TableName): string | null {
  const lines = stripSaveComments(text).split('\n');
  const start = lines.indexOf(`*${table}`);
  if (start < 0) return null;
  const end = lines.indexOf('COMMIT', start);
  return `${lines.slice(start, end + 1).join('\n')}\n`;
}

/** What netsim's `iptables-restore` does with a case on a fresh host. */
export function netsimOutcome(c: OptionsCase): OptionsOutcome {
  const r = tryRestore(freshRuleset(), c.text, { version: '1.8.9', ipsets: [] });
  if ('error' in r) return { status: r.error.exitCode ?? 1, stderr: r.error.stderr ?? r.error.message, saved: null };
  return { status: 0, stderr: '', saved: tableBlock(formatSave(r.ruleset), c.table) };
}

/** A namespace the real tool loads cases into, one after another (each restore replaces its table). */
export class OptionsLab {
  private readonly ns = `${nextPrefix()}-opt`;
  private readonly tools = backendTools('nft');
  constructor() {
    createNetns(this.ns);
  }

  outcome(c: OptionsCase): OptionsOutcome {
    try {
      runIn(this.ns, this.tools.restore, [], { input: c.text });
    } catch (e) {
      if (e instanceof LabCommandError) return { status: e.status ?? -1, stderr: e.stderr, saved: null };
      throw e;
    }
    return { status: 0, stderr: '', saved: tableBlock(runIn(this.ns, this.tools.save, ['-t', c.table]), c.table) };
  }

  release(): void {
    releaseNetns(this.ns);
  }
}

/** The real tool's program name in its messages, as netsim prints it. */
function sameProgram(stderr: string, restoreTool: string): string {
  return restoreTool === 'iptables-restore' ? stderr : stderr.split(`${restoreTool} `).join('iptables-restore ');
}

/** Compares the two outcomes of a case. */
export function compareOptions(c: OptionsCase, kernel: OptionsOutcome, netsim: OptionsOutcome, restoreTool = backendTools('nft').restore): OptionsResult {
  const diffs: string[] = [];
  const kStderr = sameProgram(kernel.stderr, restoreTool);
  if (kernel.status !== netsim.status) diffs.push(`exit status: kernel ${kernel.status}, netsim ${netsim.status}`);
  if (kStderr !== netsim.stderr) diffs.push(`stderr: kernel ${JSON.stringify(kStderr)}, netsim ${JSON.stringify(netsim.stderr)}`);
  if (kernel.saved !== null && netsim.saved !== null) diffs.push(...lineDiff(kernel.saved, netsim.saved).map((d) => `saved ${d}`));
  return { case: c, kernel: { ...kernel, stderr: kStderr }, netsim, diffs };
}

/** A disagreement netsim does not model on purpose (see docs/fidelity.md, "The options check"). */
export interface KnownOptionsDifference {
  readonly id: 'needs-kernel-object' | 'host-name-resolution';
  readonly title: string;
}

const KERNEL_OBJECT_RULE = /-m nfacct\b|--object-pinned\b|-j CT\b.*--helper\b|-m cgroup\b.*--path\b/;

/**
 * Which known difference explains a disagreement, if one does: a rule naming an object the kernel
 * must hold (an nfacct object, a pinned bpf program, a conntrack helper, a cgroup), which netsim
 * accepts as a host that has it does; or a name the lab host's resolver could not reach.
 */
export function knownOptionsDifference(r: OptionsResult): KnownOptionsDifference | undefined {
  if (r.diffs.length === 0) return undefined;
  if (r.kernel.status !== 0 && r.netsim.status === 0 && KERNEL_OBJECT_RULE.test(r.case.rule)) {
    return { id: 'needs-kernel-object', title: 'the rule names an object the lab kernel does not hold (nfacct, pinned bpf, CT helper, cgroup path)' };
  }
  const resolved = r.kernel.stderr.split('Temporary failure in name resolution').join('Name or service not known');
  if (resolved !== r.kernel.stderr && resolved === r.netsim.stderr && r.kernel.status === r.netsim.status) {
    return { id: 'host-name-resolution', title: "the lab host's resolver is unreachable; netsim reads names as a host without DNS" };
  }
  return undefined;
}

export interface OptionsCampaignResult {
  readonly seed: number;
  readonly runs: number;
  /** Cases the real tool accepted / refused (each compared either way). */
  readonly accepted: number;
  readonly refused: number;
  readonly agreed: number;
  /** Every disagreement, with its case index and the known difference that explains it, if any. */
  readonly disagreements: readonly (OptionsResult & { readonly index: number; readonly known?: KnownOptionsDifference })[];
  /** Cases per extension (how broad the draw was). */
  readonly perExtension: ReadonlyMap<string, number>;
}

/** The cases of a seed, in order. */
export function optionsCases(seed: number, runs: number): OptionsCase[] {
  return fc.sample(optionsCaseArb(), { seed, numRuns: runs });
}

/** Runs `runs` cases of `seed` (or only case `replay`) against the real tool. */
export function runOptionsCampaign(opts: { readonly seed: number; readonly runs: number; readonly replay?: number; readonly onCase?: (index: number, r: OptionsResult) => void }): OptionsCampaignResult {
  const cases = optionsCases(opts.seed, opts.replay === undefined ? opts.runs : opts.replay + 1);
  const lab = new OptionsLab();
  const disagreements: (OptionsResult & { index: number; known?: KnownOptionsDifference })[] = [];
  const perExtension = new Map<string, number>();
  let accepted = 0;
  let refused = 0;
  let agreed = 0;
  try {
    cases.forEach((c, index) => {
      if (opts.replay !== undefined && index !== opts.replay) return;
      const r = compareOptions(c, lab.outcome(c), netsimOutcome(c));
      perExtension.set(c.ext, (perExtension.get(c.ext) ?? 0) + 1);
      if (r.kernel.status === 0) accepted++;
      else refused++;
      if (r.diffs.length === 0) agreed++;
      else {
        const known = knownOptionsDifference(r);
        disagreements.push({ ...r, index, ...(known !== undefined && { known }) });
      }
      opts.onCase?.(index, r);
    });
  } finally {
    lab.release();
  }
  return { seed: opts.seed, runs: opts.replay === undefined ? opts.runs : 1, accepted, refused, agreed, disagreements, perExtension };
}
