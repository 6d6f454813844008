/**
 * `netsim trace`: walks one packet through the netfilter tables of one hook of an `iptables-save`
 * dump and prints what happened, in the style of the kernel's `-j TRACE` lines, then the verdict,
 * the NAT asked for and the marks. `--json` prints the same as one JSON object.
 */
import { readFileSync } from 'node:fs';
import { Command, InvalidArgumentError, Option } from 'commander';
import {
  compile,
  createEvalState,
  evaluateHook,
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
  type Hook,
  type IpSet,
  type NatRange,
  type NatRequest,
  type Packet,
  type Rule,
  type Ruleset,
  type UnknownPolicy,
} from '@netsim/netfilter';
import { isKernelError } from '@netsim/kernel';
import { formatPacketSpec, PacketSpecError, parsePacketSpec } from '../packetSpec.ts';
import { formatHostTraceReport, HostTraceInputError, hostTraceJson, runHostTrace } from './traceHost.ts';

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
  readonly skipNat: boolean;
  readonly ipset?: string;
  readonly all: boolean;
  readonly json: boolean;
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

/** `ipset save` output: `create NAME TYPE …` and `add NAME ELEMENT …` lines. */
function parseIpsetSave(text: string, file: string): IpSet[] {
  const sets = new Map<string, { type: IpSet['type']; members: string[] }>();
  const types = new Set<string>(['hash:ip', 'hash:net', 'hash:ip,port', 'hash:net,port', 'hash:ip,port,ip']);
  text.split('\n').forEach((line, i) => {
    const words = line.trim().split(/\s+/);
    if (words[0] === undefined || words[0] === '' || words[0].startsWith('#')) return;
    const where = `${file}:${i + 1}`;
    const name = words[1];
    if (name === undefined) throw new TraceInputError(`${where}: "${words[0]}" needs a set name`);
    if (words[0] === 'create') {
      const type = words[2] ?? '';
      if (!types.has(type)) throw new TraceInputError(`${where}: set type "${type}" is not modelled (hash:ip, hash:net, hash:ip,port, hash:net,port, hash:ip,port,ip)`);
      sets.set(name, { type: type as IpSet['type'], members: [] });
    } else if (words[0] === 'add') {
      const set = sets.get(name);
      if (set === undefined) throw new TraceInputError(`${where}: add to set "${name}" before its create line`);
      set.members.push(words.slice(2).join(' '));
    } else throw new TraceInputError(`${where}: expected "create" or "add", got "${words[0]}"`);
  });
  return [...sets].map(([name, s]) => ({ name, type: s.type, members: s.members }));
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
  readonly result: EvalResult;
  readonly matched: readonly MatchedRule[];
}

/** Loads the inputs, walks the packet, and returns everything the printers need. */
export function runTrace(o: TraceOptions): TraceRun {
  if (o.ruleset === undefined) throw new TraceInputError('give --ruleset FILE (one hook of a dump) or --host FILE (a whole host)');
  let text: string;
  try {
    text = readFileSync(o.ruleset === '-' ? 0 : o.ruleset, 'utf8');
  } catch (e) {
    throw new TraceInputError(`cannot read ruleset ${o.ruleset}: ${(e as Error).message}`);
  }
  const ruleset = parseSave(text, { file: o.ruleset === '-' ? '<stdin>' : o.ruleset });
  let packet = parsePacketSpec(o.packet);
  if (o.mark !== undefined) packet = { ...packet, mark: o.mark >>> 0 };
  const hook = o.hook ?? (packet.inIface !== null ? 'PREROUTING' : 'OUTPUT');
  let ipsetHas: ReturnType<typeof ipsetLookup> | undefined;
  if (o.ipset !== undefined) {
    let sets: string;
    try {
      sets = readFileSync(o.ipset, 'utf8');
    } catch (e) {
      throw new TraceInputError(`cannot read ipsets ${o.ipset}: ${(e as Error).message}`);
    }
    try {
      ipsetHas = ipsetLookup(parseIpsetSave(sets, o.ipset));
    } catch (e) {
      if (e instanceof RangeError) throw new TraceInputError(`${o.ipset}: ${e.message}`);
      throw e;
    }
  }
  const conntrack = { ...parseCtstate(o.ctstate), ctmark: o.ctmark >>> 0 };
  const ctx = {
    addrType: addrTypeFn(o.localAddress),
    conntrack,
    random31: seededRandom31(o.seed),
    state: createEvalState(),
    ...(ipsetHas === undefined ? {} : { ipsetHas }),
  };
  const result = evaluateHook(compile(ruleset), hook, packet, ctx, { unknown: o.unknown, skipNat: o.skipNat });
  const matched: MatchedRule[] = [];
  for (const e of result.trace) {
    if (e.kind === 'rule' && (e.outcome === 'match' || e.assumed === 'match')) {
      matched.push({ table: e.table, chain: e.chain, index: e.index, rule: ruleText(ruleset, e.table, e.chain, e.index) });
    }
  }
  return { ruleset, packet, hook, result, matched };
}

function verdictText(r: EvalResult): string {
  const v = r.verdict;
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

/** The human-readable report. */
export function formatTraceReport(run: TraceRun, o: Pick<TraceOptions, 'ctstate' | 'seed' | 'all'>): string {
  const { result } = run;
  const lines = [
    `# ${formatPacketSpec(run.packet)}  at ${run.hook}  (ctstate ${o.ctstate}, mark ${hex(run.packet.mark)}, seed ${o.seed})`,
    ...formatTraceText(run.ruleset, result.trace, o.all),
    `verdict: ${verdictText(result)}`,
    `nat: ${natText(result.nat)}`,
    `mark: ${hex(result.mark)}`,
  ];
  if (result.ctmark !== 0) lines.push(`ctmark: ${hex(result.ctmark)}`);
  if (result.notrack) lines.push('notrack: yes');
  return `${lines.join('\n')}\n`;
}

/** The `--json` report. */
export function traceJson(run: TraceRun): object {
  const { result } = run;
  const v = result.verdict;
  return {
    packet: formatPacketSpec(run.packet),
    hook: run.hook,
    verdict: v.kind === 'unknown' ? { kind: 'unknown', reason: v.reason, at: v.at } : v,
    nat: natJson(result.nat),
    mark: hex(result.mark),
    ctmark: hex(result.ctmark),
    notrack: result.notrack,
    matched: run.matched,
    trace: result.trace,
  };
}

function intArg(name: string): (v: string) => number {
  return (v) => {
    const n = /^0x[0-9a-f]+$/i.test(v) ? Number.parseInt(v, 16) : /^[0-9]+$/.test(v) ? Number(v) : Number.NaN;
    if (!Number.isSafeInteger(n) || n > 0xffffffff) throw new InvalidArgumentError(`${name} must be a decimal or 0x-hex integer below 2^32.`);
    return n;
  };
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
    .addOption(new Option('--unknown <policy>', 'what to do at a rule that cannot be evaluated').choices(['stop', 'assume-match', 'assume-nomatch']).default('stop'))
    .option('--skip-nat', 'do not walk nat chains (not the first packet of its connection)', false)
    .option('--ipset <file>', 'ipsets for -m set, as `ipset save` prints them')
    .option('--all', 'also list the rules that did not match', false)
    .option('--json', 'print one JSON object: verdict, nat, matched rules and the full trace', false)
    .action((opts: TraceOptions) => {
      try {
        const hostCommands = opts.hostCmd ?? [];
        if (opts.host !== undefined || hostCommands.length > 0) {
          if (opts.host !== undefined && hostCommands.length > 0) throw new TraceInputError('give the host as --host FILE or as --host-cmd lines, not both');
          if (opts.host !== undefined && opts.ruleset !== undefined) throw new TraceInputError('--host takes the ruleset from the host file; drop --ruleset');
          const run = runHostTrace({
            ...(opts.host !== undefined ? { host: opts.host } : { hostCommands, ...(opts.ruleset !== undefined ? { ruleset: opts.ruleset } : {}) }),
            packet: opts.packet,
            seed: opts.seed,
            ...(opts.mark !== undefined ? { mark: opts.mark } : {}),
          });
          process.stdout.write(opts.json ? `${JSON.stringify(hostTraceJson(run), null, 2)}\n` : formatHostTraceReport(run, opts.seed));
          return;
        }
        const run = runTrace(opts);
        process.stdout.write(opts.json ? `${JSON.stringify(traceJson(run), null, 2)}\n` : formatTraceReport(run, opts));
      } catch (e) {
        if (e instanceof TraceInputError || e instanceof HostTraceInputError || e instanceof PacketSpecError || isNetfilterError(e) || isKernelError(e)) {
          process.stderr.write(`netsim trace: ${e.message}\n`);
          process.exitCode = 2;
          return;
        }
        throw e;
      }
    });
}
