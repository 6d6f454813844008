/**
 * @internal
 * Match modules (`-m name`): how each reads its options, and how `iptables-save` and `iptables -L`
 * print it. Behaviour was checked option by option against iptables 1.8.9 (nf_tables); the
 * normalisations the real tool applies (state order, `/32`, dropped full port ranges, …) happen
 * here, so a parsed {@link Match} is already in the form `iptables-save` prints.
 */
import { paramProblem } from './failure.ts';
import { OptionTable, OptionTracker, excludes, type ExtensionInstance, type OptionUse, type ParseEnv } from './extension.ts';
import { formatIpv4, tryParseIpv4 } from './ip.ts';
import { lookupProtocol, parseUintBase0 } from './names.ts';
import { formatPortRange, listPort, parsePort, parsePortRange, parsePortRangeX6 } from './ports.ts';
import { LIMIT_MODULE } from './limit.ts';
import { listRecentText, RECENT_MODULE, saveRecentWords } from './recent.ts';
import { listRpfilterText, RPFILTER_MODULE } from './rpfilter.ts';
import { quoteAlways, quoteSaveString } from './tokenize.ts';
import { XT_MATCHES } from './xt/index.ts';
import { xtSaveWords } from './xt/define.ts';
import type { AddrType, AddrTypeSel, CtState, Match, MatchKind, PortMatch, PortRange, Rule, TcpFlagsMatch } from './types.ts';
import type { ModTest } from './matchers.ts';
import { IPRANGE_MODULE } from './iprange.ts';
import { COMMENT_MODULE, truncateUtf8 } from './comment.ts';
import { ICMP_MODULE } from './icmp.ts';
import { hex, MARK_MODULE, parseMarkMask } from './mark.ts';

export { hex, parseMarkMask, truncateUtf8 };

/**
 * One match extension (`-m name`). A module that owns its typed form (`kind`) also owns how it is
 * printed and evaluated: `saveMatchWords`, `listMatchText` and the compiler dispatch to these
 * first (see mark.ts, iprange.ts); others are still handled by the shared switches below.
 */
export interface MatchModule {
  readonly name: string;
  readonly options: OptionTable;
  /** A fresh instance collecting one `-m name` occurrence. `finish` returns null to drop it. */
  create(): ExtensionInstance<Match | null>;
  /** The `Match` kind this module parses into, when it owns its printing and evaluation. */
  readonly kind?: MatchKind;
  /** The words `iptables-save` prints, from `-m name` on. */
  readonly save?: (m: Match, out: string[]) => void;
  /** The `iptables -L` text (`proto` is the rule's `-p`). */
  readonly list?: (m: Match, numeric: boolean, proto: number) => string;
  /** The evaluation closure, or null for a module that always matches. */
  readonly compile?: (m: Match, rule: Rule) => ModTest | null;
}

const modules = new Map<string, MatchModule>(); // tidy-allow: the extension registry, filled by register() while this module loads
const byKind = new Map<string, MatchModule>(); // tidy-allow: the same registry by the Match kind a module owns

function register(m: MatchModule): void {
  modules.set(m.name, m);
  if (m.kind !== undefined) byKind.set(m.kind, m);
}

/** The module that owns matches of `kind`, when one does. */
export function matchModuleOfKind(kind: MatchKind): MatchModule | undefined {
  return byKind.get(kind);
}

/** Every modelled match module (for the tokenizer's table of common words). */
export function matchModules(): IterableIterator<MatchModule> {
  return modules.values();
}

/** The modules netsim parses into typed matches, by `-m` name. */
export function matchModule(name: string): MatchModule | undefined {
  return modules.get(name);
}

/**
 * Match extensions the real iptables ships (`libxt_*`, `libipt_*`). A `-m` naming one netsim does
 * not model is kept verbatim as an `unknown` match; any other name fails as the real tool fails.
 */
export const IPTABLES_MATCH_NAMES: ReadonlySet<string> = new Set([
  'addrtype', 'ah', 'bpf', 'cgroup', 'cluster', 'comment', 'connbytes', 'connlabel', 'connlimit',
  'connmark', 'conntrack', 'cpu', 'dccp', 'devgroup', 'dscp', 'ecn', 'esp', 'hashlimit', 'helper',
  'icmp', 'iprange', 'ipvs', 'length', 'limit', 'mac', 'mark', 'multiport', 'nfacct', 'osf', 'owner',
  'physdev', 'pkttype', 'policy', 'quota', 'rateest', 'realm', 'recent', 'rpfilter', 'sctp', 'set',
  'socket', 'state', 'statistic', 'string', 'tcp', 'tcpmss', 'time', 'tos', 'ttl', 'u32', 'udp',
]);

// ---------------------------------------------------------------------------------------------
// tcp and udp

const TCP_FLAG_BITS: readonly [string, number][] = [
  ['FIN', 0x01],
  ['SYN', 0x02],
  ['RST', 0x04],
  ['PSH', 0x08],
  ['ACK', 0x10],
  ['URG', 0x20],
];

function parseTcpFlags(text: string, argIndex: number): number {
  let bits = 0;
  for (const part of text.split(',')) {
    const up = part.toUpperCase();
    if (up === 'ALL') bits |= 0x3f;
    else if (up === 'NONE') bits |= 0;
    else {
      const f = TCP_FLAG_BITS.find(([n]) => n === up);
      if (f === undefined) throw paramProblem(`Unknown TCP flag \`${part}'`, argIndex);
      bits |= f[1];
    }
  }
  return bits;
}

function formatTcpFlags(bits: number): string {
  if (bits === 0) return 'NONE';
  const names: string[] = [];
  for (const [n, b] of TCP_FLAG_BITS) if ((bits & b) !== 0) names.push(n);
  return names.join(',');
}

const FULL_RANGE = (r: PortRange): boolean => r.from === 0 && r.to === 65535;

function portTable(extra: ConstructorParameters<typeof OptionTable>[0]): OptionTable {
  return new OptionTable([
    { name: 'source-port', aliases: ['sport'], args: 1, invert: true },
    { name: 'destination-port', aliases: ['dport'], args: 1, invert: true },
    ...extra,
  ]);
}

const TCP_OPTIONS = portTable([
  { name: 'syn', args: 0, invert: true },
  { name: 'tcp-flags', args: 2, invert: true },
  { name: 'tcp-option', args: 1, invert: true },
]);
const UDP_OPTIONS = portTable([]);

/**
 * tcp and udp. nf_tables keeps port matches as native expressions: a full range 0:65535 leaves no
 * expression behind (an inverted one removes the whole match), which this reproduces.
 */
function portMatchModule(name: 'tcp' | 'udp'): MatchModule {
  const options = name === 'tcp' ? TCP_OPTIONS : UDP_OPTIONS;
  return { name, options, create: () => new PortMatchInstance(name) };
}

class PortMatchInstance implements ExtensionInstance<Match | null> {
  readonly spec: OptionTable;
  private readonly protoNum: number;
  private sport: PortMatch | undefined = undefined;
  private dport: PortMatch | undefined = undefined;
  private flags: TcpFlagsMatch | undefined = undefined;
  private tcpOption: { negate: boolean; value: number } | undefined = undefined;
  // Ranges given but dropped as full ranges still count, so a second --dport still fails.
  private droppedSport = false;
  private droppedDport = false;
  private droppedFlags = false;
  private droppedInverted = false;

  constructor(readonly name: 'tcp' | 'udp') {
    this.spec = name === 'tcp' ? TCP_OPTIONS : UDP_OPTIONS;
    this.protoNum = name === 'tcp' ? 6 : 17;
  }

  option(use: OptionUse, env: ParseEnv): void {
    const v0 = use.values[0] ?? '';
    switch (use.name) {
      case 'source-port':
      case 'destination-port': {
        const src = use.name === 'source-port';
        if ((src ? this.sport : this.dport) !== undefined || (src ? this.droppedSport : this.droppedDport)) {
          // tcp still has its own parser; udp uses xtables' guided one, with other words.
          throw paramProblem(
            this.name === 'tcp' ? `Only one \`--${use.name}' allowed` : `udp: option "--${use.name}" can only be used once.\n`,
            use.argIndex,
          );
        }
        const range =
          this.name === 'tcp'
            ? parsePortRange(v0, env.proto ?? this.protoNum, use.argIndex + 1)
            : parsePortRangeX6(v0, env.proto ?? this.protoNum, use.argIndex + 1);
        if (FULL_RANGE(range)) {
          if (src) this.droppedSport = true;
          else this.droppedDport = true;
          if (use.invert) this.droppedInverted = true;
          return;
        }
        const pm: PortMatch = { range, negate: use.invert };
        if (src) this.sport = pm;
        else this.dport = pm;
        return;
      }
      case 'syn':
      case 'tcp-flags': {
        if (this.flags !== undefined || this.droppedFlags) {
          throw paramProblem("Only one of `--syn' or `--tcp-flags'  allowed", use.argIndex);
        }
        const mask = use.name === 'syn' ? 0x17 : parseTcpFlags(v0, use.argIndex + 1);
        const comp = use.name === 'syn' ? 0x02 : parseTcpFlags(use.values[1] ?? '', use.argIndex + 2);
        if (mask === 0) {
          this.droppedFlags = true;
          if (use.invert) this.droppedInverted = true;
          return;
        }
        this.flags = { mask, comp, negate: use.invert };
        return;
      }
      case 'tcp-option': {
        if (this.tcpOption !== undefined) throw paramProblem("Only one `--tcp-option' allowed", use.argIndex);
        const n = parseUintBase0(v0);
        if (n === undefined || n < 1 || n > 255) throw paramProblem(`Bad TCP option "${v0}"`, use.argIndex + 1);
        this.tcpOption = { negate: use.invert, value: n };
        return;
      }
    }
    throw new Error(`unhandled ${this.name} option ${use.name}`);
  }

  finish(env: ParseEnv): Match | null {
    const { sport, dport, flags, tcpOption: option } = this;
    const empty = sport === undefined && dport === undefined && flags === undefined && option === undefined;
    // iptables-nft writes ports and flags as native expressions, which need `-p` to name the
    // protocol (negated or not); a match with nothing to write (all defaults) or a --tcp-option
    // goes to the kernel as an xt match, which refuses a rule whose protocol is another or
    // negated (checked against 1.8.9: `! -p tcp -m tcp --dport 80` loads, `! -p tcp -m tcp`,
    // `-p udp -m tcp` and `! -p tcp -m tcp --tcp-option 2` fail with RULE_APPEND).
    const xt = (empty && !this.droppedInverted) || option !== undefined;
    if (xt) {
      if (env.proto !== this.protoNum || env.protoInvert) env.rejectRule('Invalid argument');
    } else if (env.proto !== this.protoNum) {
      throw paramProblem(this.name === 'tcp' ? "TCP match requires '-p tcp'" : "UDP match requires '-p udp'");
    }
    if (empty && this.droppedInverted) return null;
    const m: { -readonly [K in keyof Extract<Match, { kind: 'tcp' }>]: Extract<Match, { kind: 'tcp' }>[K] } = { kind: 'tcp' };
    if (sport !== undefined) m.sport = sport;
    if (dport !== undefined) m.dport = dport;
    if (this.name === 'udp') return m.sport === undefined && m.dport === undefined ? { kind: 'udp' } : { ...m, kind: 'udp' };
    if (flags !== undefined) m.flags = flags;
    if (option !== undefined) m.option = option;
    return m;
  }
}
register(portMatchModule('tcp'));
register(portMatchModule('udp'));

register(ICMP_MODULE);

// ---------------------------------------------------------------------------------------------
// multiport

const MULTIPORT_OPTIONS = new OptionTable([
  { name: 'source-ports', aliases: ['sports'], args: 1, invert: true },
  { name: 'destination-ports', aliases: ['dports'], args: 1, invert: true },
  { name: 'ports', args: 1, invert: true },
]);
const MULTIPORT_PROTOS: ReadonlySet<number> = new Set([6, 17, 132, 33, 136]);

register({
  name: 'multiport',
  options: MULTIPORT_OPTIONS,
  create() {
    let result: Extract<Match, { kind: 'multiport' }> | undefined;
    let firstOpt = '';
    return {
      name: 'multiport',
      spec: MULTIPORT_OPTIONS,
      option(use, env) {
        if (result !== undefined) {
          if (firstOpt === use.name) throw paramProblem(`multiport: option "--${use.name}" can only be used once.\n`, use.argIndex);
          excludes('multiport', MULTIPORT_OPTIONS, use.name, firstOpt, use.argIndex);
        }
        if (env.proto === undefined || !MULTIPORT_PROTOS.has(env.proto)) {
          throw paramProblem("multiport needs `-p tcp', `-p udp', `-p udplite', `-p sctp' or `-p dccp'", use.argIndex);
        }
        if (env.protoInvert) throw paramProblem('multiport only works with TCP, UDP, UDPLITE, SCTP and DCCP', use.argIndex);
        const ports: PortRange[] = [];
        let slots = 0;
        for (const part of (use.values[0] ?? '').split(',')) {
          const colon = part.indexOf(':');
          if (colon < 0) {
            const p = parsePort(part, env.proto, use.argIndex + 1);
            ports.push({ from: p, to: p });
            slots += 1;
          } else {
            const from = parsePort(part.slice(0, colon), env.proto, use.argIndex + 1);
            const to = parsePort(part.slice(colon + 1), env.proto, use.argIndex + 1);
            if (from >= to) throw paramProblem('invalid portrange specified', use.argIndex + 1);
            ports.push({ from, to });
            slots += 2;
          }
          if (slots > 15) throw paramProblem('too many ports specified', use.argIndex + 1);
        }
        firstOpt = use.name;
        const which = use.name === 'source-ports' ? 'sports' : use.name === 'destination-ports' ? 'dports' : 'ports';
        result = { kind: 'multiport', which, ports, negate: use.invert };
      },
      finish() {
        if (result === undefined) throw paramProblem('multiport expects an option');
        return result;
      },
    };
  },
});

register(COMMENT_MODULE);
register(MARK_MODULE);

// ---------------------------------------------------------------------------------------------
// conntrack and state

/** The order iptables prints conntrack states in (their bit order). */
export const CT_STATE_ORDER: readonly CtState[] = ['INVALID', 'NEW', 'RELATED', 'ESTABLISHED', 'UNTRACKED', 'SNAT', 'DNAT'];

function parseStates(text: string, allowed: readonly CtState[], what: 'ctstate' | 'state', argIndex: number): CtState[] {
  const set = new Set<CtState>();
  for (const part of text.split(',')) {
    const up = part.toUpperCase() as CtState;
    if (!allowed.includes(up)) throw paramProblem(`Bad ${what} "${part}"`, argIndex);
    set.add(up);
  }
  return CT_STATE_ORDER.filter((s) => set.has(s));
}

/** conntrack options other than --ctstate, in the order `iptables-save` prints them. */
const CONNTRACK_EXTRA_ORDER = [
  'ctproto',
  'ctorigsrc',
  'ctorigdst',
  'ctreplsrc',
  'ctrepldst',
  'ctorigsrcport',
  'ctorigdstport',
  'ctreplsrcport',
  'ctrepldstport',
  'ctstatus',
  'ctexpire',
  'ctdir',
] as const;

/** --ctstatus names in bit order (NONE alone is 0), as the tool prints them. */
const CT_STATUS_BITS: readonly string[] = ['EXPECTED', 'SEEN_REPLY', 'ASSURED', 'CONFIRMED'];

/** The canonical value of a conntrack option other than --ctstate (libxt_conntrack's save). */
function conntrackValue(name: string, v: string, at: number): string {
  switch (name) {
    case 'ctproto': {
      const n = lookupProtocol(v.toLowerCase());
      if (n === undefined) throw paramProblem(`unknown protocol "${v}" specified`, at);
      return String(n);
    }
    case 'ctstatus': {
      const set = new Set<string>();
      for (const part of v.split(',')) {
        const up = part.toUpperCase();
        if (up !== 'NONE' && !CT_STATUS_BITS.includes(up)) throw paramProblem(`Bad ctstatus "${part}"`, at);
        set.add(up);
      }
      const bits = CT_STATUS_BITS.filter((b) => set.has(b));
      return bits.length === 0 ? 'NONE' : bits.join(',');
    }
    case 'ctorigsrc':
    case 'ctorigdst':
    case 'ctreplsrc':
    case 'ctrepldst': {
      // The address is printed as given (host bits kept), a dotted mask as its prefix length.
      const slash = v.indexOf('/');
      const addr = tryParseIpv4(slash < 0 ? v : v.slice(0, slash));
      if (addr === undefined) return v;
      if (slash < 0) return formatIpv4(addr);
      const m = v.slice(slash + 1);
      const prefix = /^[0-9]{1,2}$/.test(m) ? Number(m) : dottedPrefix(m);
      if (prefix === undefined || prefix > 32) return v;
      return prefix === 32 ? formatIpv4(addr) : `${formatIpv4(addr)}/${prefix}`;
    }
  }
  return v;
}

function dottedPrefix(text: string): number | undefined {
  const a = tryParseIpv4(text);
  if (a === undefined) return undefined;
  for (let p = 0; p <= 32; p++) if ((p === 0 ? 0 : (0xffffffff << (32 - p)) >>> 0) === a) return p;
  return undefined;
}

const CONNTRACK_OPTIONS = new OptionTable([
  { name: 'ctstate', args: 1, invert: true },
  ...CONNTRACK_EXTRA_ORDER.map((name) => ({ name, args: 1 as const, invert: name !== 'ctdir' })),
]);

register({
  name: 'conntrack',
  options: CONNTRACK_OPTIONS,
  create() {
    const t: OptionTracker = new OptionTracker('conntrack', CONNTRACK_OPTIONS);
    let ctstate: Extract<Match, { kind: 'conntrack' }>['ctstate'];
    const extras = new Map<string, { negate: boolean; value: string }>();
    return {
      name: 'conntrack',
      spec: CONNTRACK_OPTIONS,
      option(use) {
        t.use(use, CONNTRACK_OPTIONS.exact(use.name)!);
        const v = use.values[0] ?? '';
        if (use.name === 'ctstate') {
          ctstate = { states: parseStates(v, CT_STATE_ORDER, 'ctstate', use.argIndex + 1), negate: use.invert };
        } else {
          extras.set(use.name, { negate: use.invert, value: conntrackValue(use.name, v, use.argIndex + 1) });
        }
      },
      finish() {
        if (t.count === 0) throw paramProblem('conntrack: At least one option is required');
        const extra: string[] = [];
        for (const name of CONNTRACK_EXTRA_ORDER) {
          const e = extras.get(name);
          if (e === undefined) continue;
          if (e.negate) extra.push('!');
          extra.push(`--${name}`, e.value);
        }
        return { kind: 'conntrack', ...(ctstate && { ctstate }), ...(extra.length > 0 && { extra }) };
      },
    };
  },
});

const STATE_ALLOWED: readonly CtState[] = ['INVALID', 'NEW', 'RELATED', 'ESTABLISHED', 'UNTRACKED'];
const STATE_OPTIONS = new OptionTable([{ name: 'state', args: 1, invert: true }]);

register({
  name: 'state',
  options: STATE_OPTIONS,
  create() {
    const t: OptionTracker = new OptionTracker('state', STATE_OPTIONS);
    let m: Extract<Match, { kind: 'state' }> | undefined;
    return {
      name: 'state',
      spec: STATE_OPTIONS,
      option(use) {
        t.use(use, STATE_OPTIONS.specs[0]!);
        m = { kind: 'state', states: parseStates(use.values[0] ?? '', STATE_ALLOWED, 'state', use.argIndex + 1), negate: use.invert };
      },
      finish() {
        if (m === undefined) t.missing('state');
        return m;
      },
    };
  },
});

// ---------------------------------------------------------------------------------------------
// addrtype

/** Address types in bit order, the order iptables prints them in. */
export const ADDR_TYPE_ORDER: readonly AddrType[] = [
  'UNSPEC',
  'UNICAST',
  'LOCAL',
  'BROADCAST',
  'ANYCAST',
  'MULTICAST',
  'BLACKHOLE',
  'UNREACHABLE',
  'PROHIBIT',
  'THROW',
  'NAT',
  'XRESOLVE',
];

const ADDRTYPE_OPTIONS = new OptionTable([
  { name: 'src-type', args: 1, invert: true },
  { name: 'dst-type', args: 1, invert: true },
  { name: 'limit-iface-in', args: 0 },
  { name: 'limit-iface-out', args: 0 },
]);

register({
  name: 'addrtype',
  options: ADDRTYPE_OPTIONS,
  create() {
    const t: OptionTracker = new OptionTracker('addrtype', ADDRTYPE_OPTIONS);
    let src: AddrTypeSel | undefined;
    let dst: AddrTypeSel | undefined;
    return {
      name: 'addrtype',
      spec: ADDRTYPE_OPTIONS,
      option(use) {
        t.use(use, ADDRTYPE_OPTIONS.exact(use.name)!);
        if (use.name === 'limit-iface-in' || use.name === 'limit-iface-out') {
          const other = use.name === 'limit-iface-in' ? 'limit-iface-out' : 'limit-iface-in';
          if (t.has(other)) excludes('addrtype', ADDRTYPE_OPTIONS, use.name, other, use.argIndex);
          return;
        }
        const set = new Set<AddrType>();
        for (const part of (use.values[0] ?? '').split(',')) {
          const up = part.toUpperCase() as AddrType;
          if (!ADDR_TYPE_ORDER.includes(up)) throw paramProblem(`addrtype: bad type "${part}"`, use.argIndex + 1);
          set.add(up);
        }
        const sel: AddrTypeSel = { types: ADDR_TYPE_ORDER.filter((x) => set.has(x)), negate: use.invert };
        if (use.name === 'src-type') src = sel;
        else dst = sel;
      },
      finish() {
        if (src === undefined && dst === undefined) throw paramProblem('addrtype: you must specify --src-type or --dst-type');
        return {
          kind: 'addrtype',
          ...(src && { src }),
          ...(dst && { dst }),
          limitIfaceIn: t.has('limit-iface-in'),
          limitIfaceOut: t.has('limit-iface-out'),
        };
      },
    };
  },
});

// ---------------------------------------------------------------------------------------------
// statistic

const STATISTIC_OPTIONS = new OptionTable([
  { name: 'mode', args: 1 },
  { name: 'probability', args: 1, invert: true },
  { name: 'every', args: 1, invert: true },
  { name: 'packet', args: 1 },
]);

const TWO_31 = 0x80000000;
const probabilityTexts = new Map<number, string>(); // tidy-allow: memo of a pure function of the threshold

/**
 * The text `iptables-save` prints for a 31-bit probability threshold: `%.11f` of threshold/2^31,
 * rounded half to even on exact ties as glibc's printf does.
 */
export function probabilityText(threshold31: number): string {
  let text = probabilityTexts.get(threshold31);
  if (text !== undefined) return text;
  // threshold/2^31 * 10^11 = threshold * 5^11 / 2^20 exactly.
  const num = BigInt(threshold31) * 48828125n;
  let q = num >> 20n;
  const rem = num & 0xfffffn;
  const half = 0x80000n;
  if (rem > half || (rem === half && (q & 1n) === 1n)) q += 1n;
  const digits = q.toString().padStart(12, '0');
  text = `${digits.slice(0, -11)}.${digits.slice(-11)}`;
  if (probabilityTexts.size < 100_000) probabilityTexts.set(threshold31, text);
  return text;
}

/** The kernel threshold for a probability, as iptables computes it: lround(2^31 * p). */
export function probabilityThreshold(p: number): number {
  return Math.round(TWO_31 * p);
}

function parseProbability(text: string): number | undefined {
  // strtod: leading blanks, decimal or exponent form, "nan"/"inf" words; nothing may follow.
  const trimmed = text.replace(/^[ \t\n\v\f\r]+/, '');
  if (trimmed === '') return undefined;
  const lower = trimmed.toLowerCase();
  if (lower === 'nan' || lower.startsWith('nan(')) return Number.NaN;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(trimmed) && !/^[+-]?(inf|infinity)$/i.test(trimmed)) {
    return trimmed.startsWith('0x') || trimmed.startsWith('0X') ? hexFloat(trimmed) : undefined;
  }
  return /inf/i.test(trimmed) ? (trimmed.startsWith('-') ? -Infinity : Infinity) : Number(trimmed);
}

function hexFloat(text: string): number | undefined {
  const n = Number(text);
  return Number.isNaN(n) ? undefined : n;
}

register({
  name: 'statistic',
  options: STATISTIC_OPTIONS,
  create() {
    const t: OptionTracker = new OptionTracker('statistic', STATISTIC_OPTIONS);
    let mode: 'random' | 'nth' | undefined;
    let probability: { text: string; threshold31: number } | undefined;
    let every: number | undefined;
    let packet: number | undefined;
    let negate = false;
    return {
      name: 'statistic',
      spec: STATISTIC_OPTIONS,
      option(use) {
        t.use(use, STATISTIC_OPTIONS.exact(use.name)!);
        const v = use.values[0] ?? '';
        switch (use.name) {
          case 'mode':
            if (v !== 'random' && v !== 'nth') throw paramProblem(`Bad mode "${v}"`, use.argIndex + 1);
            mode = v;
            return;
          case 'probability': {
            if (t.has('every')) excludes('statistic', STATISTIC_OPTIONS, 'probability', 'every', use.argIndex);
            const p = parseProbability(v);
            if (p === undefined || p < 0 || p > 1) {
              throw paramProblem('statistic: bad value for option "--probability", or out of range (0-1).\n', use.argIndex + 1);
            }
            // NaN passes the range check in C as here; lround(NaN) is 0 on x86-64 glibc builds
            // that saturate, which is what iptables 1.8.9 printed.
            const threshold31 = Number.isNaN(p) ? 0 : probabilityThreshold(p);
            probability = { text: probabilityText(threshold31), threshold31 };
            if (use.invert) negate = true;
            return;
          }
          case 'every': {
            if (t.has('probability')) excludes('statistic', STATISTIC_OPTIONS, 'probability', 'every', use.argIndex);
            const n = parseUintBase0(v);
            if (n === undefined || n < 1 || n > 0xffffffff) {
              throw paramProblem('statistic: bad value for option "--every", or out of range (1-4294967295).\n', use.argIndex + 1);
            }
            every = n;
            if (use.invert) negate = true;
            return;
          }
          case 'packet': {
            const n = parseUintBase0(v);
            if (n === undefined || n > 0xffffffff) {
              throw paramProblem('statistic: bad value for option "--packet", or out of range (0-4294967295).\n', use.argIndex + 1);
            }
            packet = n;
            return;
          }
        }
      },
      finish() {
        if (mode === undefined) t.missing('mode');
        if (every !== undefined && packet === undefined) {
          throw paramProblem('statistic: option "--every" also requires "--packet".\n');
        }
        if (mode === 'random') {
          if (probability === undefined) throw paramProblem('--probability must be specified when using random mode');
          if (every !== undefined || packet !== undefined) throw paramProblem('--every and --packet can only be used in nth mode');
          return { kind: 'statistic', mode, probability, negate };
        }
        if (every === undefined || packet === undefined) {
          throw paramProblem('--every and --packet must be specified when using nth mode');
        }
        if (probability !== undefined) throw paramProblem('--probability can only be used in random mode');
        if (packet > every - 1) throw paramProblem('the --packet p must be 0 <= p <= n-1');
        return { kind: 'statistic', mode, every, packet, negate };
      },
    };
  },
});

// ---------------------------------------------------------------------------------------------
// set

const SET_OPTIONS = new OptionTable([
  { name: 'match-set', aliases: ['set'], args: 2, invert: true },
  { name: 'return-nomatch', args: 0 },
  { name: 'update-counters', args: 0, invert: true },
  { name: 'update-subcounters', args: 0, invert: true },
  { name: 'packets-eq', args: 1, invert: true },
  { name: 'packets-lt', args: 1 },
  { name: 'packets-gt', args: 1 },
  { name: 'bytes-eq', args: 1, invert: true },
  { name: 'bytes-lt', args: 1 },
  { name: 'bytes-gt', args: 1 },
]);

register({
  name: 'set',
  options: SET_OPTIONS,
  create() {
    let setName: string | undefined;
    let flags: ('src' | 'dst')[] = [];
    let negate = false;
    const extra: string[] = [];
    return {
      name: 'set',
      spec: SET_OPTIONS,
      option(use) {
        if (use.name === 'match-set') {
          if (setName !== undefined) throw paramProblem('--match-set can be specified only once', use.argIndex);
          const name = use.values[0] ?? '';
          const dims = use.values[1] ?? '';
          if (name.length > 31) throw paramProblem(`setname \`${name}' too long, max 31 characters.`, use.argIndex + 1);
          const parts = dims.split(',');
          if (parts.length > 6) throw paramProblem("Can't be more src/dst options than 6.", use.argIndex + 2);
          flags = [];
          for (const p of parts) {
            if (p !== 'src' && p !== 'dst') {
              throw paramProblem("You must specify (the comma separated list of) 'src' or 'dst'.", use.argIndex + 2);
            }
            flags.push(p);
          }
          setName = name;
          negate = use.invert;
          return;
        }
        if (use.invert) extra.push('!');
        extra.push(`--${use.name}`, ...use.values);
      },
      finish() {
        if (setName === undefined) throw paramProblem("You must specify `--match-set' with proper arguments");
        return { kind: 'set', setName, flags, negate, ...(extra.length > 0 && { extra }) };
      },
    };
  },
});

register(IPRANGE_MODULE);
register(RECENT_MODULE);
register(LIMIT_MODULE);
register(RPFILTER_MODULE);
for (const m of XT_MATCHES.values()) register(m);

// ---------------------------------------------------------------------------------------------
// Printing

function pushNeg(out: string[], negate: boolean): void {
  if (negate) out.push('!');
}

/**
 * The words `iptables-save` prints for a match, starting with `-m name`. Strings are already
 * quoted, so the words are joined with single spaces.
 */
export function saveMatchWords(m: Match, out: string[]): void {
  const own = byKind.get(m.kind)?.save;
  if (own !== undefined) {
    own(m, out);
    return;
  }
  switch (m.kind) {
    case 'tcp':
    case 'udp':
      out.push('-m', m.kind);
      if (m.sport) {
        pushNeg(out, m.sport.negate);
        out.push('--sport', formatPortRange(m.sport.range));
      }
      if (m.dport) {
        pushNeg(out, m.dport.negate);
        out.push('--dport', formatPortRange(m.dport.range));
      }
      if (m.kind === 'tcp') {
        if (m.option) {
          pushNeg(out, m.option.negate);
          out.push('--tcp-option', String(m.option.value));
        }
        if (m.flags) {
          pushNeg(out, m.flags.negate);
          out.push('--tcp-flags', formatTcpFlags(m.flags.mask), formatTcpFlags(m.flags.comp));
        }
      }
      return;
    case 'multiport':
      out.push('-m', 'multiport');
      pushNeg(out, m.negate);
      out.push(`--${m.which}`, m.ports.map(formatPortRange).join(','));
      return;
    case 'conntrack':
      out.push('-m', 'conntrack');
      if (m.ctstate) {
        pushNeg(out, m.ctstate.negate);
        out.push('--ctstate', m.ctstate.states.join(','));
      }
      if (m.extra) for (const w of m.extra) out.push(quoteVerbatim(w));
      return;
    case 'state':
      out.push('-m', 'state');
      pushNeg(out, m.negate);
      out.push('--state', m.states.join(','));
      return;
    case 'addrtype':
      out.push('-m', 'addrtype');
      if (m.src) {
        pushNeg(out, m.src.negate);
        out.push('--src-type', m.src.types.join(','));
      }
      if (m.dst) {
        pushNeg(out, m.dst.negate);
        out.push('--dst-type', m.dst.types.join(','));
      }
      if (m.limitIfaceIn) out.push('--limit-iface-in');
      if (m.limitIfaceOut) out.push('--limit-iface-out');
      return;
    case 'statistic':
      out.push('-m', 'statistic', '--mode', m.mode);
      if (m.mode === 'random') {
        pushNeg(out, m.negate);
        out.push('--probability', m.probability?.text ?? '0.00000000000');
      } else {
        pushNeg(out, m.negate);
        out.push('--every', String(m.every ?? 1), '--packet', String(m.packet ?? 0));
      }
      return;
    case 'set':
      out.push('-m', 'set');
      pushNeg(out, m.negate);
      out.push('--match-set', quoteVerbatim(m.setName), m.flags.join(','));
      if (m.extra) for (const w of m.extra) out.push(quoteVerbatim(w));
      return;
    case 'recent':
      saveRecentWords(m, out);
      return;
    case 'mark':
    case 'iprange':
    case 'icmp':
    case 'comment':
      throw new Error(`${m.kind} is printed by its module`);
    case 'unknown': {
      out.push('-m', m.module);
      const def = XT_MATCHES.get(m.module)?.def;
      if (def !== undefined) xtSaveWords(def, m.args, out, quoteVerbatim, quoteAlways);
      else for (const w of m.args) out.push(quoteVerbatim(w));
      return;
    }
  }
}

/**
 * Quoting for words netsim keeps verbatim (unknown modules' options): quoted only when the word
 * could not be read back as one word, since the real tool quotes only string-typed options.
 */
export function quoteVerbatim(w: string): string {
  if (w === '') return '""';
  for (let i = 0; i < w.length; i++) {
    const c = w.charCodeAt(i);
    if (c === 32 || c === 9 || c === 34 || c === 39 || c === 92 || c === 10) return quoteSaveString(w);
  }
  return w;
}

function listPortRange(prefix: string, pm: PortMatch, proto: number, numeric: boolean): string {
  const r = pm.range;
  const inv = pm.negate ? '!' : '';
  if (r.from === r.to) return `${prefix}t:${inv}${listPort(r.from, proto, numeric)}`;
  return `${prefix}ts:${inv}${listPort(r.from, proto, numeric)}:${listPort(r.to, proto, numeric)}`;
}

function hex02(n: number): string {
  return `0x${n.toString(16).toUpperCase().padStart(2, '0')}`;
}

/**
 * The text `iptables -L` prints for a match (without the leading space). `proto` is the rule's
 * `-p`, which decides service names.
 */
export function listMatchText(m: Match, numeric: boolean, proto = 0): string {
  const own = byKind.get(m.kind)?.list;
  if (own !== undefined) return own(m, numeric, proto);
  switch (m.kind) {
    case 'tcp':
    case 'udp': {
      const proto = m.kind === 'tcp' ? 6 : 17;
      const parts: string[] = [m.kind];
      if (m.sport) parts.push(listPortRange('sp', m.sport, proto, numeric));
      if (m.dport) parts.push(listPortRange('dp', m.dport, proto, numeric));
      if (m.kind === 'tcp') {
        if (m.option) parts.push(`option=${m.option.negate ? '!' : ''}${m.option.value}`);
        if (m.flags) {
          const f = m.flags;
          const text = numeric ? `${hex02(f.mask)}/${hex02(f.comp)}` : `${formatTcpFlags(f.mask)}/${formatTcpFlags(f.comp)}`;
          parts.push(`flags:${f.negate ? '!' : ''}${text}`);
        }
      }
      return parts.join(' ');
    }
    case 'multiport': {
      const list = m.ports
        .map((r) => (r.from === r.to ? listPort(r.from, proto, numeric) : `${listPort(r.from, proto, numeric)}:${listPort(r.to, proto, numeric)}`))
        .join(',');
      return `multiport ${m.which} ${m.negate ? ' !' : ''}${list}`;
    }
    case 'conntrack': {
      const parts: string[] = [];
      if (m.ctstate) parts.push(`${m.ctstate.negate ? '! ' : ''}ctstate ${m.ctstate.states.join(',')}`);
      const extra = m.extra ?? [];
      for (let i = 0; i < extra.length; i++) {
        let neg = '';
        if (extra[i] === '!') {
          neg = '! ';
          i++;
        }
        const name = (extra[i] ?? '').replace(/^--/, '');
        parts.push(`${neg}${name} ${extra[i + 1] ?? ''}`);
        i++;
      }
      return parts.join(' ');
    }
    case 'state':
      return `${m.negate ? '! ' : ''}state ${m.states.join(',')}`;
    case 'addrtype': {
      let s = 'ADDRTYPE match';
      if (m.src) s += ` src-type ${m.src.negate ? '!' : ''}${m.src.types.join(',')}`;
      if (m.dst) s += ` dst-type ${m.dst.negate ? '!' : ''}${m.dst.types.join(',')}`;
      if (m.limitIfaceIn) s += ' limit-in';
      if (m.limitIfaceOut) s += ' limit-out';
      return s;
    }
    case 'statistic':
      if (m.mode === 'random') {
        return `statistic mode random ${m.negate ? '! ' : ''}probability ${m.probability?.text ?? ''}`;
      }
      return `statistic mode nth ${m.negate ? '! ' : ''}every ${m.every ?? 1}${m.packet ? ` packet ${m.packet}` : ''}`;
    case 'set': {
      let s = `${m.negate ? '! ' : ''}match-set ${m.setName} ${m.flags.join(',')}`;
      if (m.extra) s += ` ${m.extra.map((w) => w.replace(/^--/, '')).join(' ')}`;
      return s;
    }
    case 'recent':
      return listRecentText(m);
    case 'unknown':
      return listUnknownMatch(m.module, m.args, numeric, proto);
    case 'mark':
    case 'iprange':
    case 'icmp':
    case 'comment':
      throw new Error(`${m.kind} is listed by its module`);
  }
}

/** The value following option `name` (any of its spellings) in verbatim words, with its `!`. */
function optionValue(args: readonly string[], names: readonly string[]): { value: string; negate: boolean } | undefined {
  for (let i = 0; i < args.length; i++) {
    if (names.includes(args[i] ?? '')) return { value: args[i + 1] ?? '', negate: args[i - 1] === '!' };
  }
  return undefined;
}

/**
 * `iptables -L` text for a few common modules netsim keeps verbatim (sctp/dccp ports, limit,
 * pkttype, ttl). Others print their options without dashes: an approximation (docs/fidelity.md).
 */
function listUnknownMatch(module: string, args: readonly string[], numeric: boolean, proto: number): string {
  const list = XT_MATCHES.get(module)?.def.list;
  if (list !== undefined) return list(args, numeric);
  switch (module) {
    case 'rpfilter':
      return listRpfilterText(args);
    case 'sctp':
    case 'dccp':
    case 'udplite': {
      const parts: string[] = [module];
      for (const [opt, short] of [
        [['--sport', '--source-port'], 'sp'],
        [['--dport', '--destination-port'], 'dp'],
      ] as const) {
        const v = optionValue(args, opt);
        if (v === undefined) continue;
        const colon = v.value.indexOf(':');
        const one = (t: string): string => listPort(Number(t), proto, numeric);
        parts.push(colon < 0 ? `${short}t:${v.negate ? '!' : ''}${one(v.value)}` : `${short}ts:${v.negate ? '!' : ''}${one(v.value.slice(0, colon))}:${one(v.value.slice(colon + 1))}`);
      }
      if (parts.length === 1 || args.length > parts.length * 2) break;
      return parts.join(' ');
    }
    case 'limit': {
      const rate = optionValue(args, ['--limit'])?.value ?? '3/hour';
      const burst = optionValue(args, ['--limit-burst'])?.value ?? '5';
      return `limit: avg ${rate} burst ${burst}`;
    }
    case 'socket':
      // libxt_socket prints its flags with their dashes, in the order iptables-save does.
      return ['socket', ...args].join(' ');
    case 'physdev':
      // libxt_physdev: " PHYSDEV match" then the options exactly as iptables-save words them.
      return ['PHYSDEV match', ...args].join(' ');
    case 'connmark': {
      // libxt_connmark: " connmark match " then "!" when inverted, then " 0xV[/0xM]".
      const v = optionValue(args, ['--mark']);
      if (v === undefined) break;
      const [value = '', mask] = v.value.split('/');
      const hex = (t: string): string => `0x${(Number(t) >>> 0).toString(16)}`;
      const full = mask === undefined || Number(mask) >>> 0 === 0xffffffff;
      return `connmark match ${v.negate ? '!' : ''} ${hex(value)}${full ? '' : `/${hex(mask)}`}`;
    }
    case 'pkttype': {
      const v = optionValue(args, ['--pkt-type']);
      if (v !== undefined) return `PKTTYPE ${v.negate ? '!=' : '='} ${v.value}`;
      break;
    }
    case 'ttl': {
      for (const [opt, op] of [
        ['--ttl-eq', '=='],
        ['--ttl-lt', '<'],
        ['--ttl-gt', '>'],
      ] as const) {
        const v = optionValue(args, [opt]);
        if (v !== undefined) return `TTL match TTL ${v.negate && op === '==' ? '!=' : op} ${v.value}`;
      }
      break;
    }
  }
  return [module, ...args.map((a) => a.replace(/^--/, ''))].join(' ');
}
