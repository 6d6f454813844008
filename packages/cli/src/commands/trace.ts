/**
 * `netsim trace`: walks one packet through the netfilter tables of one hook of an `iptables-save`
 * dump and prints what happened, in the style of the kernel's `-j TRACE` lines, then the verdict,
 * the NAT asked for and the marks. `--json` prints the same as one JSON object.
 */
import { readFileSync } from 'node:fs';
import { Command, InvalidArgumentError, Option } from 'commander';
import {
  allBranches,
  BUILTIN_CHAINS,
  compile,
  createEvalState,
  evaluateHook,
  evaluateTable,
  formatProbability,
  isTableName,
  formatNatRange,
  formatRuleSpec,
  HOOKS,
  ipsetLookup,
  isNetfilterError,
  parseSave,
  seededRandom31,
  tryParseIpv4,
  type AddrType,
  type ConntrackView,
  type CtState,
  type EvalResult,
  type EvalTraceEntry,
  type Branch,
  type Hook,
  type IpSet,
  type NatRange,
  type NatRequest,
  type Packet,
  type Rule,
  type Ruleset,
  type TableName,
  type UnknownPolicy,
} from '@netsim/netfilter';
import { isKernelError } from '@netsim/kernel';
import { IpsetFileError, parseIpsetSave } from '../ipsetFile.ts';
import { formatPacketSpec, PacketSpecError, parsePacketSpec } from '../packetSpec.ts';
import { formatNftHookTrace, loadNftFile, NftTraceInputError, nftHookTraceJson, traceNftHook } from './traceNft.ts';
import { formatHostBranchesReport, formatHostTraceReport, HostTraceInputError, hostBranchesJson, hostTraceJson, runHostBranches, runHostTrace } from './traceHost.ts';

/** A bad command line or input file: printed as `netsim trace: …`, exit status 2. */
export class TraceInputError extends Error {
  override readonly name = 'TraceInputError';
}

export interface TraceOptions {
  /** Required unless `host` is given. */
  readonly ruleset?: string;
  /** A host file: trace through the whole host (see traceHost.ts) instead of one hook's tables. */
  readonly host?: string;
  /** The host as host-file lines on the command line (`--host-cmd`), with `ruleset` as its rules. */
  readonly hostCmd?: readonly string[];
  readonly packet: string;
  readonly hook?: Hook;
  readonly localAddress: readonly string[];
  readonly ctstate: string;
  readonly ctmark: number;
  readonly mark?: number;
  readonly seed: number;
  readonly unknown: UnknownPolicy;
  /** Per-module overrides of `unknown` (`--unknown MODULE=POLICY`), e.g. `{ rpfilter: 'assume-match' }`. */
  readonly unknownModules?: Readonly<Record<string, UnknownPolicy>>;
  readonly skipNat: boolean;
  readonly ipset?: string;
  readonly all: boolean;
  readonly json: boolean;
  /** Walk only this table (its built-in chain for the hook, or `chain`). */
  readonly table?: string;
  /** Start at this chain of `table` (a user chain: kube-proxy's golden dumps have no jump to theirs). */
  readonly chain?: string;
  /** Enumerate every outcome of `statistic --mode random` with its probability instead of one seeded draw. */
  readonly allBranches?: boolean;
  /** An nftables ruleset (`nft -f FILE`): beside `--ruleset` at one hook, or applied to the `--host`. */
  readonly nft?: string;
}

/** One rule that matched, as `--json` prints it. */
export interface MatchedRule {
  readonly table: string;
  readonly chain: string;
  readonly index: number;
  /** The rule as `iptables-save` prints it (`-A CHAIN …`). */
  readonly rule: string;
}

const CT_STATES = new Set(['NEW', 'ESTABLISHED', 'RELATED', 'INVALID', 'UNTRACKED']);

function parseCtstate(text: string): ConntrackView {
  let state: ConntrackView['state'] | undefined;
  let dnat = false;
  let snat = false;
  for (const raw of text.split(',')) {
    const s = raw.trim().toUpperCase();
    if (s === 'DNAT') dnat = true;
    else if (s === 'SNAT') snat = true;
    else if (CT_STATES.has(s)) {
      if (state !== undefined) throw new TraceInputError(`--ctstate "${text}": give one of NEW, ESTABLISHED, RELATED, INVALID, UNTRACKED (plus DNAT/SNAT)`);
      state = s as Exclude<CtState, 'SNAT' | 'DNAT'>;
    } else throw new TraceInputError(`--ctstate "${text}": unknown state "${raw}"`);
  }
  return { state: state ?? 'NEW', dnat, snat, ctmark: 0 };
}

function addrTypeFn(locals: readonly string[]): (addr: number, iface: string | null) => AddrType {
  const any = new Set<number>();
  const byIface = new Map<string, Set<number>>();
  for (const spec of locals) {
    const [addrText, iface] = spec.split('@') as [string, string | undefined];
    const a = tryParseIpv4(addrText);
    if (a === undefined) throw new TraceInputError(`--local-address "${spec}": expected an IPv4 address, optionally @interface`);
    any.add(a);
    if (iface !== undefined) {
      const set = byIface.get(iface) ?? new Set<number>();
      set.add(a);
      byIface.set(iface, set);
    }
  }
  return (addr, iface) => {
    if (addr >>> 24 === 0 || addr === 0xffffffff) return 'BROADCAST';
    if (addr >>> 28 === 0xe) return 'MULTICAST';
    const local = addr >>> 24 === 127 || any.has(addr);
    // With --limit-iface-in/out the kernel counts an address LOCAL only on its own interface.
    if (local && iface !== null && byIface.size > 0 && !(byIface.get(iface)?.has(addr) ?? false) && addr >>> 24 !== 127) return 'UNICAST';
    return local ? 'LOCAL' : 'UNICAST';
  };
}

function hex(n: number): string {
  return `0x${(n >>> 0).toString(16)}`;
}

function rangeText(r: NatRange | undefined): string {
  return r === undefined ? '' : formatNatRange(r);
}

/** The NAT request as JSON: addresses as text, the range in iptables' own notation. */
function natJson(nat: NatRequest | undefined): object | null {
  if (nat === undefined) return null;
  switch (nat.kind) {
    case 'DNAT':
      return { kind: 'DNAT', toDestination: rangeText(nat.to), random: nat.random, persistent: nat.persistent };
    case 'SNAT':
      return { kind: 'SNAT', toSource: rangeText(nat.to), random: nat.random, randomFully: nat.randomFully, persistent: nat.persistent };
    case 'MASQUERADE': {
      const ports = nat.toPorts === undefined ? undefined : nat.toPorts.from === nat.toPorts.to ? `${nat.toPorts.from}` : `${nat.toPorts.from}-${nat.toPorts.to}`;
      return { kind: 'MASQUERADE', ...(ports === undefined ? {} : { toPorts: ports }), random: nat.random, randomFully: nat.randomFully };
    }
  }
}

function natText(nat: NatRequest | undefined): string {
  if (nat === undefined) return 'none';
  const j = natJson(nat) as { toDestination?: string; toSource?: string; toPorts?: string; random: boolean; randomFully?: boolean; persistent?: boolean };
  const parts: string[] = [nat.kind];
  if (j.toDestination !== undefined) parts.push(`--to-destination ${j.toDestination}`);
  if (j.toSource !== undefined) parts.push(`--to-source ${j.toSource}`);
  if (j.toPorts !== undefined) parts.push(`--to-ports ${j.toPorts}`);
  if (j.random) parts.push('--random');
  if (j.randomFully === true) parts.push('--random-fully');
  if (j.persistent === true) parts.push('--persistent');
  return parts.join(' ');
}

function ruleAt(rs: Ruleset, table: keyof Ruleset['tables'], chain: string, index: number): Rule | undefined {
  return rs.tables[table].chains[chain]?.rules[index - 1];
}

function ruleText(rs: Ruleset, table: keyof Ruleset['tables'], chain: string, index: number): string {
  const r = ruleAt(rs, table, chain, index);
  if (r === undefined) return '';
  const spec = formatRuleSpec(r);
  return spec === '' ? `-A ${chain}` : `-A ${chain} ${spec}`;
}

function chainLength(rs: Ruleset, table: keyof Ruleset['tables'], chain: string): number {
  return rs.tables[table].chains[chain]?.rules.length ?? 0;
}

/**
 * The trace as text: one `TRACE: table:chain:type:N` line per matching rule, return and policy as
 * the kernel logs them (a return or policy is numbered as the chain's implicit last rule), with the
 * rule after it; `--all` adds the rules that did not match and the index's skipped ranges.
 */
export function formatTraceText(rs: Ruleset, trace: readonly EvalTraceEntry[], all: boolean): string[] {
  const out: string[] = [];
  let previous: EvalTraceEntry | undefined;
  for (const e of trace) {
    switch (e.kind) {
      case 'rule': {
        const text = ruleText(rs, e.table, e.chain, e.index);
        const where = `${e.table}:${e.chain}:rule:${e.index}`;
        if (e.outcome === 'match') {
          out.push(`TRACE: ${where}  ${text}${e.unknown === undefined ? '' : `  [unknown: ${e.unknown}]`}`);
        } else if (e.outcome === 'unknown') {
          const how = e.assumed === undefined ? 'walk stops' : `assumed ${e.assumed}`;
          out.push(`UNKNOWN: ${where}  ${text}  [cannot evaluate ${e.unknown ?? '?'}; ${how}]`);
        } else if (all) {
          out.push(`   no match ${where}  ${text}`);
        }
        break;
      }
      case 'skip':
        if (all) out.push(`   no match ${e.table}:${e.chain}:rule:${e.from}-${e.to}  (dispatch index: -d/-p/--dport differ)`);
        break;
      case 'return': {
        // An explicit RETURN rule is its own trace line; only falling off the end logs "return".
        const explicit =
          previous?.kind === 'rule' &&
          previous.chain === e.chain &&
          previous.table === e.table &&
          ruleAt(rs, e.table, e.chain, previous.index)?.target?.kind === 'RETURN';
        if (!explicit) out.push(`TRACE: ${e.table}:${e.chain}:return:${chainLength(rs, e.table, e.chain) + 1}`);
        break;
      }
      case 'policy':
        out.push(`TRACE: ${e.table}:${e.chain}:policy:${chainLength(rs, e.table, e.chain) + 1}`);
        break;
    }
    previous = e;
  }
  return out;
}

export interface TraceRun {
  readonly ruleset: Ruleset;
  readonly packet: Packet;
  readonly hook: Hook;
  /** With `--table`: the one table walked; with `--chain` too, the chain the walk started at. */
  readonly table?: TableName;
  readonly chain?: string;
  readonly result: EvalResult;
  readonly matched: readonly MatchedRule[];
  /** With `--chain`: the walk fell off the end of the chain (or RETURNed): no verdict of its own. */
  readonly returned: boolean;
}

/** `--all-branches`: every outcome, each with its probability. */
export interface TraceBranchesRun {
  readonly ruleset: Ruleset;
  readonly packet: Packet;
  readonly hook: Hook;
  readonly table?: TableName;
  readonly chain?: string;
  readonly branches: readonly Branch<TraceRun>[];
}

/** The first hook of `table` among the packet's natural one and the rest, in the kernel's order. */
function hookFor(table: TableName, preferred: Hook, packet: Packet): Hook {
  const has = (h: Hook): boolean => (BUILTIN_CHAINS[table] as readonly string[]).includes(h);
  if (has(preferred)) return preferred;
  const order: readonly Hook[] = packet.inIface !== null ? (packet.outIface !== null ? ['FORWARD', 'INPUT'] : ['INPUT', 'FORWARD']) : ['OUTPUT', 'POSTROUTING'];
  return [...order, ...HOOKS].find(has) ?? preferred;
}

/**
 * The ruleset to walk for `--table T --chain C`: T's built-in chain for the hook replaced by one
 * `-j C` with an ACCEPT policy, so the walk starts at C and a fall off C's end shows as that
 * policy (reported as "returned"). The jump is built as data: a chain named like a target
 * extension (`LOG`, `TPROXY`) is still the chain.
 */
function startAtChain(rs: Ruleset, table: TableName, hook: Hook, chain: string): Ruleset {
  const t = rs.tables[table];
  if (t.chains[chain] === undefined) throw new TraceInputError(`--chain ${chain}: no such chain in table ${table}`);
  const entry: Rule = { matches: [], target: { kind: 'jump', chain } };
  const { absent: _absent, ...present } = t;
  return { ...rs, tables: { ...rs.tables, [table]: { ...present, chains: { ...t.chains, [hook]: { name: hook, policy: 'ACCEPT', rules: [entry] } } } } };
}

interface Prepared {
  readonly ruleset: Ruleset;
  readonly packet: Packet;
  readonly hook: Hook;
  readonly table?: TableName;
  readonly chain?: string;
  readonly walk: (random31: (threshold31?: number) => number) => TraceRun;
}

function readRuleset(path: string): string {
  try {
    return readFileSync(path === '-' ? 0 : path, 'utf8');
  } catch (e) {
    throw new TraceInputError(`cannot read ruleset ${path}: ${(e as Error).message}`);
  }
}

/** Loads the inputs once; `walk` then runs the packet with a given draw source. */
function prepare(o: TraceOptions): Prepared {
  if (o.ruleset === undefined) throw new TraceInputError('give --ruleset FILE (one hook of a dump) or --host FILE (a whole host)');
  const text = readRuleset(o.ruleset);
  const ruleset = parseSave(text, { file: o.ruleset === '-' ? '<stdin>' : o.ruleset });
  let packet = parsePacketSpec(o.packet);
  if (o.mark !== undefined) packet = { ...packet, mark: o.mark >>> 0 };
  if (o.chain !== undefined && o.table === undefined) throw new TraceInputError('--chain needs --table (the table the chain is in)');
  let table: TableName | undefined;
  if (o.table !== undefined) {
    if (!isTableName(o.table)) throw new TraceInputError(`--table "${o.table}": expected raw, mangle, nat or filter`);
    table = o.table;
  }
  const natural = o.hook ?? (packet.inIface !== null ? 'PREROUTING' : 'OUTPUT');
  const hook = table === undefined || o.hook !== undefined ? natural : hookFor(table, natural, packet);
  if (table !== undefined && !(BUILTIN_CHAINS[table] as readonly string[]).includes(hook)) throw new TraceInputError(`--hook ${hook}: the ${table} table has no ${hook} chain`);
  let ipsetHas: ReturnType<typeof ipsetLookup> | undefined;
  if (o.ipset !== undefined) ipsetHas = ipsetLookup(loadIpsets(o.ipset));
  const conntrack = { ...parseCtstate(o.ctstate), ctmark: o.ctmark >>> 0 };
  const walked = table !== undefined && o.chain !== undefined ? startAtChain(ruleset, table, hook, o.chain) : ruleset;
  const compiled = compile(walked);
  const walk = (random31: (threshold31?: number) => number): TraceRun => {
    const ctx = { addrType: addrTypeFn(o.localAddress), conntrack, random31, state: createEvalState(), ...(ipsetHas === undefined ? {} : { ipsetHas }) };
    const evalOpts = { unknown: o.unknown, skipNat: o.skipNat, ...(o.unknownModules !== undefined && { unknownModules: o.unknownModules }) };
    const raw = table === undefined ? evaluateHook(compiled, hook, packet, ctx, evalOpts) : evaluateTable(compiled, table, hook, packet, ctx, evalOpts);
    let result = raw;
    let returned = false;
    if (table !== undefined && o.chain !== undefined) {
      // Hide the synthetic entry rule and policy; the policy showing means the chain returned.
      const synthetic = (e: EvalTraceEntry): boolean => e.table === table && e.chain === hook;
      returned = raw.trace.some((e) => e.kind === 'policy' && synthetic(e));
      result = { ...raw, trace: raw.trace.filter((e) => !synthetic(e)) };
    }
    const matched: MatchedRule[] = [];
    for (const e of result.trace) {
      if (e.kind === 'rule' && (e.outcome === 'match' || e.assumed === 'match')) {
        matched.push({ table: e.table, chain: e.chain, index: e.index, rule: ruleText(ruleset, e.table, e.chain, e.index) });
      }
    }
    return { ruleset, packet, hook, ...(table !== undefined ? { table } : {}), ...(o.chain !== undefined ? { chain: o.chain } : {}), result, matched, returned };
  };
  return { ruleset, packet, hook, ...(table !== undefined ? { table } : {}), ...(o.chain !== undefined ? { chain: o.chain } : {}), walk };
}

function loadIpsets(path: string): IpSet[] {
  let sets: string;
  try {
    sets = readFileSync(path, 'utf8');
  } catch (e) {
    throw new TraceInputError(`cannot read ipsets ${path}: ${(e as Error).message}`);
  }
  try {
    return parseIpsetSave(sets, path);
  } catch (e) {
    if (e instanceof RangeError) throw new TraceInputError(`${path}: ${e.message}`);
    if (e instanceof IpsetFileError) throw new TraceInputError(e.message);
    throw e;
  }
}

/** Loads the inputs, walks the packet, and returns everything the printers need. */
export function runTrace(o: TraceOptions): TraceRun {
  return prepare(o).walk(seededRandom31(o.seed));
}

/** `--all-branches`: every outcome of the walk with its exact probability, in rule order. */
export function runTraceBranches(o: TraceOptions): TraceBranchesRun {
  const p = prepare(o);
  const { walk, ...rest } = p;
  return { ...rest, branches: allBranches(walk) };
}

function verdictText(run: TraceRun): string {
  const v = run.result.verdict;
  if (run.returned) return `none (returned from ${run.chain ?? '?'})`;
  switch (v.kind) {
    case 'ACCEPT':
      return 'ACCEPT';
    case 'DROP':
      return v.byPolicy ? 'DROP (policy)' : 'DROP';
    case 'REJECT':
      return `REJECT --reject-with ${v.with}`;
    case 'unknown':
      return `unknown: ${v.reason}`;
  }
}

function where(run: Pick<TraceRun, 'hook' | 'table' | 'chain'>): string {
  if (run.table === undefined) return run.hook;
  return run.chain === undefined ? `${run.table} ${run.hook}` : `${run.table} ${run.chain} (from ${run.hook})`;
}

function outcomeLines(run: TraceRun, all: boolean): string[] {
  const { result } = run;
  const lines = [...formatTraceText(run.ruleset, result.trace, all), `verdict: ${verdictText(run)}`, `nat: ${natText(result.nat)}`, `mark: ${hex(result.mark)}`];
  if (result.ctmark !== 0) lines.push(`ctmark: ${hex(result.ctmark)}`);
  if (result.notrack) lines.push('notrack: yes');
  return lines;
}

/** The human-readable report. */
export function formatTraceReport(run: TraceRun, o: Pick<TraceOptions, 'ctstate' | 'seed' | 'all'>): string {
  const lines = [`# ${formatPacketSpec(run.packet)}  at ${where(run)}  (ctstate ${o.ctstate}, mark ${hex(run.packet.mark)}, seed ${o.seed})`, ...outcomeLines(run, o.all)];
  return `${lines.join('\n')}\n`;
}

/** The `--all-branches` report: one block per outcome, headed by its probability. */
export function formatTraceBranchesReport(run: TraceBranchesRun, o: Pick<TraceOptions, 'ctstate' | 'all'>): string {
  const n = run.branches.length;
  const lines = [`# ${formatPacketSpec(run.packet)}  at ${where(run)}  (ctstate ${o.ctstate}, mark ${hex(run.packet.mark)}, ${n} outcome${n === 1 ? '' : 's'})`];
  run.branches.forEach((b, i) => {
    lines.push(`## outcome ${i + 1} of ${n}: probability ${formatProbability(b.probability)}`, ...outcomeLines(b.result, o.all));
  });
  return `${lines.join('\n')}\n`;
}

function verdictJson(run: TraceRun): object {
  const v = run.result.verdict;
  if (run.returned) return { kind: 'RETURN' };
  return v.kind === 'unknown' ? { kind: 'unknown', reason: v.reason, at: v.at } : v;
}

function outcomeJson(run: TraceRun): object {
  const { result } = run;
  return {
    verdict: verdictJson(run),
    nat: natJson(result.nat),
    mark: hex(result.mark),
    ctmark: hex(result.ctmark),
    notrack: result.notrack,
    matched: run.matched,
    trace: result.trace,
  };
}

function placeJson(run: Pick<TraceRun, 'packet' | 'hook' | 'table' | 'chain'>): object {
  return { packet: formatPacketSpec(run.packet), hook: run.hook, ...(run.table !== undefined ? { table: run.table } : {}), ...(run.chain !== undefined ? { chain: run.chain } : {}) };
}

/** The `--json` report. */
export function traceJson(run: TraceRun): object {
  return { ...placeJson(run), ...outcomeJson(run) };
}

/** The `--all-branches --json` report: `branches[]`, each with its probability as `"num/den"`. */
export function traceBranchesJson(run: TraceBranchesRun): object {
  return {
    ...placeJson(run),
    branches: run.branches.map((b) => ({ probability: formatProbability(b.probability), draws: b.draws, ...outcomeJson(b.result) })),
  };
}

function intArg(name: string): (v: string) => number {
  return (v) => {
    const n = /^0x[0-9a-f]+$/i.test(v) ? Number.parseInt(v, 16) : /^[0-9]+$/.test(v) ? Number(v) : Number.NaN;
    if (!Number.isSafeInteger(n) || n > 0xffffffff) throw new InvalidArgumentError(`${name} must be a decimal or 0x-hex integer below 2^32.`);
    return n;
  };
}

const POLICY_WORDS: { readonly [word: string]: UnknownPolicy } = {
  stop: 'stop',
  unknown: 'stop',
  'assume-match': 'assume-match',
  match: 'assume-match',
  'assume-nomatch': 'assume-nomatch',
  nomatch: 'assume-nomatch',
};

/** What repeated `--unknown` options say: a default policy and per-module overrides. */
export interface UnknownChoice {
  readonly unknown: UnknownPolicy;
  readonly modules: Readonly<Record<string, UnknownPolicy>>;
}

/**
 * Reads one `--unknown` value into the choice so far: `POLICY` sets the default, `MODULE=POLICY`
 * the policy for undecidable matches of that module (`rpfilter=match`, `set=nomatch`). POLICY is
 * `stop` (alias `unknown`), `assume-match` (`match`) or `assume-nomatch` (`nomatch`).
 */
export function parseUnknownOption(value: string, previous: UnknownChoice = { unknown: 'stop', modules: {} }): UnknownChoice {
  const eq = value.indexOf('=');
  const word = eq < 0 ? value : value.slice(eq + 1);
  const policy = Object.hasOwn(POLICY_WORDS, word) ? POLICY_WORDS[word] : undefined;
  if (policy === undefined) throw new InvalidArgumentError(`"${word}" is not a policy: use stop, assume-match (match) or assume-nomatch (nomatch), optionally as MODULE=POLICY.`);
  if (eq < 0) return { unknown: policy, modules: previous.modules };
  const module = value.slice(0, eq);
  if (!/^[a-z0-9_]+$/i.test(module)) throw new InvalidArgumentError(`"${module}" is not a module name (e.g. rpfilter=match, set=nomatch).`);
  return { unknown: previous.unknown, modules: { ...previous.modules, [module]: policy } };
}

/** The commander definition of `netsim trace`. */
export function traceCommand(): Command {
  return new Command('trace')
    .description('trace a packet through the netfilter tables of one hook of an iptables-save dump')
    .option('--ruleset <file>', 'iptables-save output to load ("-" for stdin)')
    .option('--host <file>', 'a host file (interfaces, addresses, routes, sysctls, sockets, ruleset): trace through the whole host, see docs/datapath.md')
    .option('--host-cmd <line...>', 'the host on the command line instead of --host FILE: one host-file line each (e.g. "ip addr add 198.51.100.10/24 dev eth0"); --ruleset gives its rules', [])
    .requiredOption('--packet <spec>', 'the packet: "tcp SRC:SPORT > DST:DPORT [in IFACE] [out IFACE] [flags SYN,ACK] [mark N]"')
    .addOption(new Option('--hook <hook>', 'the hook to walk (default: PREROUTING for a packet with "in", else OUTPUT)').choices([...HOOKS]))
    .option('--local-address <addr...>', "the host's own addresses, as ADDR or ADDR@IFACE (addrtype LOCAL); 127.0.0.0/8 always is", [])
    .option('--ctstate <state>', 'conntrack state the packet has: NEW, ESTABLISHED, RELATED, INVALID, UNTRACKED, plus DNAT/SNAT', 'NEW')
    .option('--ctmark <n>', 'the connection mark', intArg('--ctmark'), 0)
    .option('--mark <n>', 'the packet mark on entry (overrides the packet spec)', intArg('--mark'))
    .option('--seed <n>', 'seed of the PRNG that statistic --mode random draws from', intArg('--seed'), 1)
    .option(
      '--unknown <policy>',
      'what to do at a rule that cannot be evaluated: stop, assume-match or assume-nomatch; MODULE=POLICY (repeatable) for one module, e.g. rpfilter=match',
      (v: string, prev: UnknownChoice) => parseUnknownOption(v, prev),
      { unknown: 'stop', modules: {} } satisfies UnknownChoice,
    )
    .option('--skip-nat', 'do not walk nat chains (not the first packet of its connection)', false)
    .option('--ipset <file>', 'ipsets for -m set, as `ipset save` prints them')
    .option('--all', 'also list the rules that did not match', false)
    .option('--json', 'print one JSON object: verdict, nat, matched rules and the full trace', false)
    .option('--table <table>', 'walk only this table (raw, mangle, nat, filter) at the hook')
    .option('--chain <chain>', 'with --table: start at this chain (a user chain no built-in chain jumps to)')
    .option('--nft <file>', 'an nftables ruleset as nft -f reads it: with --host, applied to the host; else its base chains at the hook, beside --ruleset in priority order')
    .option('--all-branches', 'every outcome of statistic --mode random, each with its exact probability, instead of one seeded draw', false)
    .action((cliOpts: Omit<TraceOptions, 'unknown'> & { unknown: UnknownChoice }) => {
      const opts: TraceOptions = {
        ...cliOpts,
        unknown: cliOpts.unknown.unknown,
        ...(Object.keys(cliOpts.unknown.modules).length > 0 && { unknownModules: cliOpts.unknown.modules }),
      };
      try {
        const hostCommands = opts.hostCmd ?? [];
        if (opts.host !== undefined || hostCommands.length > 0) {
          if (opts.host !== undefined && hostCommands.length > 0) throw new TraceInputError('give the host as --host FILE or as --host-cmd lines, not both');
          if (opts.host !== undefined && opts.ruleset !== undefined) throw new TraceInputError('--host takes the ruleset from the host file; drop --ruleset');
          if (opts.table !== undefined || opts.chain !== undefined) throw new TraceInputError('--table and --chain walk one table of a dump; a host trace walks every hook (drop --host)');
          const hostOpts = {
            ...(opts.host !== undefined ? { host: opts.host } : { hostCommands, ...(opts.ruleset !== undefined ? { ruleset: opts.ruleset } : {}) }),
            packet: opts.packet,
            seed: opts.seed,
            unknown: opts.unknown,
            ...(opts.unknownModules !== undefined ? { unknownModules: opts.unknownModules } : {}),
            ...(opts.mark !== undefined ? { mark: opts.mark } : {}),
            ...(opts.nft !== undefined ? { nft: opts.nft } : {}),
          };
          if (opts.allBranches === true) {
            const run = runHostBranches(hostOpts);
            process.stdout.write(opts.json ? `${JSON.stringify(hostBranchesJson(run), null, 2)}\n` : formatHostBranchesReport(run));
            return;
          }
          const run = runHostTrace(hostOpts);
          process.stdout.write(opts.json ? `${JSON.stringify(hostTraceJson(run), null, 2)}\n` : formatHostTraceReport(run, opts.seed));
          return;
        }
        if (opts.nft !== undefined) {
          if (opts.allBranches === true || opts.table !== undefined || opts.chain !== undefined) throw new TraceInputError('--nft at one hook takes no --all-branches, --table or --chain');
          const nft = loadNftFile(opts.nft);
          const iptables = opts.ruleset === undefined ? undefined : parseSave(readRuleset(opts.ruleset), { file: opts.ruleset === '-' ? '<stdin>' : opts.ruleset });
          let packet = parsePacketSpec(opts.packet);
          if (opts.mark !== undefined) packet = { ...packet, mark: opts.mark >>> 0 };
          const hook = opts.hook ?? (packet.inIface !== null ? 'PREROUTING' : 'OUTPUT');
          const conntrack = { ...parseCtstate(opts.ctstate), ctmark: opts.ctmark >>> 0 };
          const run = traceNftHook({ nft, ...(iptables !== undefined && { iptables }), packet, hook, conntrack, addrType: addrTypeFn(opts.localAddress), seed: opts.seed, skipNat: opts.skipNat });
          const header = `# ${formatPacketSpec(packet)}  at ${hook}  (ctstate ${opts.ctstate}, mark ${hex(packet.mark)}, seed ${opts.seed})`;
          process.stdout.write(opts.json ? `${JSON.stringify(nftHookTraceJson(run, formatPacketSpec(packet)), null, 2)}\n` : formatNftHookTrace(run, header));
          return;
        }
        if (opts.allBranches === true) {
          const run = runTraceBranches(opts);
          process.stdout.write(opts.json ? `${JSON.stringify(traceBranchesJson(run), null, 2)}\n` : formatTraceBranchesReport(run, opts));
          return;
        }
        const run = runTrace(opts);
        process.stdout.write(opts.json ? `${JSON.stringify(traceJson(run), null, 2)}\n` : formatTraceReport(run, opts));
      } catch (e) {
        if (e instanceof RangeError || e instanceof TraceInputError || e instanceof HostTraceInputError || e instanceof NftTraceInputError || e instanceof PacketSpecError || isNetfilterError(e) || isKernelError(e)) {
          process.stderr.write(`netsim trace: ${e.message}\n`);
          process.exitCode = 2;
          return;
        }
        throw e;
      }
    });
}
