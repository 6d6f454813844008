/**
 * @internal
 * `-m tcp` and `-m udp` (libxt_tcp, libxt_udp), each whole in one place: the option tables, how
 * ports and flags are read, the words `iptables-save` and `iptables -L` print, evaluation, and the
 * fast-path hint the compiler inlines. nf_tables keeps port matches as native expressions: a full
 * range 0:65535 leaves no expression behind (an inverted one removes the whole match), which
 * this reproduces.
 */
import { OptionTable, type ExtensionInstance, type OptionSpec, type OptionUse, type ParseEnv } from '../extension.ts';
import type { FastCursor, FastMatchReader } from '../fastCursor.ts';
import { paramProblem } from '../failure.ts';
import type { L4Hint, MatchModule } from '../matches.ts';
import { MATCH, NOMATCH, UNDECIDED, type ModTest } from '../matchers.ts';
import { parseUintBase0 } from '../names.ts';
import { formatPortRange, listPort, parsePortRange, parsePortRangeX6 } from '../ports.ts';
import type { Match, PortMatch, PortRange, TcpFlagsMatch } from '../types.ts';

type PortsMatch = Extract<Match, { kind: 'tcp' | 'udp' }>;

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

/** The flag names `iptables-save` prints for a bit set (`NONE` for none). */
export function formatTcpFlags(bits: number): string {
  if (bits === 0) return 'NONE';
  const names: string[] = [];
  for (const [n, b] of TCP_FLAG_BITS) if ((bits & b) !== 0) names.push(n);
  return names.join(',');
}

const FULL_RANGE = (r: PortRange): boolean => r.from === 0 && r.to === 65535;

const PORT_SPECS: readonly OptionSpec[] = [
  { name: 'source-port', aliases: ['sport'], args: 1, invert: true },
  { name: 'destination-port', aliases: ['dport'], args: 1, invert: true },
];

const TCP_OPTIONS = new OptionTable([
  ...PORT_SPECS,
  { name: 'syn', args: 0, invert: true },
  { name: 'tcp-flags', args: 2, invert: true },
  { name: 'tcp-option', args: 1, invert: true },
]);
const UDP_OPTIONS = new OptionTable(PORT_SPECS);

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

function save(match: Match, out: string[]): void {
  const m = match as PortsMatch;
  out.push('-m', m.kind);
  if (m.sport) {
    if (m.sport.negate) out.push('!');
    out.push('--sport', formatPortRange(m.sport.range));
  }
  if (m.dport) {
    if (m.dport.negate) out.push('!');
    out.push('--dport', formatPortRange(m.dport.range));
  }
  if (m.kind === 'tcp') {
    if (m.option) {
      if (m.option.negate) out.push('!');
      out.push('--tcp-option', String(m.option.value));
    }
    if (m.flags) {
      if (m.flags.negate) out.push('!');
      out.push('--tcp-flags', formatTcpFlags(m.flags.mask), formatTcpFlags(m.flags.comp));
    }
  }
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

function list(match: Match, numeric: boolean): string {
  const m = match as PortsMatch;
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

/** The numbers the compiler inlines (no `--tcp-option`, which needs the packet's options). */
function inline(match: Match): L4Hint | undefined {
  const m = match as PortsMatch;
  if (m.kind === 'tcp' && m.option !== undefined) return undefined;
  const flags = m.kind === 'tcp' ? m.flags : undefined;
  return {
    proto: m.kind === 'tcp' ? 6 : 17,
    spFrom: m.sport?.range.from ?? 0,
    spTo: m.sport?.range.to ?? 65535,
    spNeg: m.sport?.negate ?? false,
    dpFrom: m.dport?.range.from ?? 0,
    dpTo: m.dport?.range.to ?? 65535,
    dpNeg: m.dport?.negate ?? false,
    flMask: flags?.mask ?? 0,
    flComp: flags?.comp ?? 0,
    flNeg: flags?.negate ?? false,
  };
}

function compile(match: Match): ModTest {
  const m = match as PortsMatch;
  const proto = m.kind === 'tcp' ? 6 : 17;
  const s = m.sport;
  const d = m.dport;
  const sFrom = s?.range.from ?? 0;
  const sTo = s?.range.to ?? 65535;
  const sNeg = s?.negate ?? false;
  const dFrom = d?.range.from ?? 0;
  const dTo = d?.range.to ?? 65535;
  const dNeg = d?.negate ?? false;
  const flags = m.kind === 'tcp' ? m.flags : undefined;
  const fMask = flags?.mask ?? 0;
  const fComp = flags?.comp ?? 0;
  const fNeg = flags?.negate ?? false;
  const option = m.kind === 'tcp' && m.option !== undefined;
  // tcp_mt/udp_mt: a non-first fragment has no transport header: no match.
  return {
    test: (w) => {
      const p = w.packet;
      if (p.proto !== proto || p.fragment) return NOMATCH;
      if ((p.sport >= sFrom && p.sport <= sTo) === sNeg) return NOMATCH;
      if ((p.dport >= dFrom && p.dport <= dTo) === dNeg) return NOMATCH;
      if (((p.tcpFlags & fMask) === fComp) === fNeg) return NOMATCH;
      if (option) {
        w.why = 'tcp --tcp-option';
        return UNDECIDED;
      }
      return MATCH;
    },
    sideEffect: false,
    undecidable: option,
  };
}

/**
 * nf_tables folds repeated tcp (or udp) matches into one expression set, which reads back as a
 * single match where the first stood, later options replacing earlier ones.
 */
function merge(into: Match, m: Match): Match {
  return { ...into, ...m } as Match;
}

const PORT_SLOTS = 64;

/** One optional `[!] --name P[:Q]` for the fast reader: undefined when absent, null when not in canonical form. */
function fastPortOption(c: FastCursor, name: string): PortMatch | undefined | null {
  const s = c.s;
  let q = c.p;
  let negate = false;
  if (s.charCodeAt(q) === 33 && s.charCodeAt(q + 1) === 32 && q + 1 < c.n) {
    negate = true;
    q += 2;
  }
  const after = q + name.length;
  if (after >= c.n || !s.startsWith(name, q) || s.charCodeAt(after) !== 32) return undefined;
  let i = c.digits(after + 1, 65535);
  if (i < 0) return null;
  const from = c.num;
  let to = from;
  if (c.at(i) === 58 /* : */) {
    i = c.digits(i + 1, 65535);
    to = c.num;
    // Equal ends, reversed ends and the full range (dropped) are left to the general parser.
    if (i < 0 || from >= to || (from === 0 && to === 65535)) return null;
  }
  if (c.at(i) !== 32) return null;
  c.next(i);
  return { range: { from, to }, negate };
}

/**
 * The fast reader's `[! --sport R] [! --dport R]` of `-m tcp` (or udp) after `-p tcp` (udp). A
 * bare match is one shared object; `--dport N` alone is shared per port (direct-mapped: the few
 * service ports repeat).
 */
function fastPorts(name: 'tcp' | 'udp'): () => FastMatchReader {
  const proto = name === 'tcp' ? 6 : 17;
  return () => {
    const bare: Match = { kind: name };
    const keys = new Int32Array(PORT_SLOTS).fill(-1);
    const shared: (Match | undefined)[] = new Array<Match | undefined>(PORT_SLOTS).fill(undefined);
    return (c, ctx) => {
      if (ctx.proto !== proto) return undefined;
      const sport = fastPortOption(c, '--sport');
      if (sport === null) return undefined;
      const dport = fastPortOption(c, '--dport');
      if (dport === null) return undefined;
      if (sport === undefined) {
        // A bare match goes to the kernel as an xt match, refused with a negated -p.
        if (dport === undefined) return ctx.protoNegate ? undefined : bare;
        const r = dport.range;
        if (!dport.negate && r.from === r.to) {
          const slot = (r.from ^ (r.from >>> 6)) & (PORT_SLOTS - 1);
          if (keys[slot] === r.from) return shared[slot];
          const m: Match = name === 'tcp' ? { kind: 'tcp', dport } : { kind: 'udp', dport };
          keys[slot] = r.from;
          shared[slot] = m;
          return m;
        }
      }
      const m: { kind: 'tcp' | 'udp'; sport?: PortMatch; dport?: PortMatch } = { kind: name };
      if (sport !== undefined) m.sport = sport;
      if (dport !== undefined) m.dport = dport;
      return m;
    };
  };
}

function portModule(name: 'tcp' | 'udp'): MatchModule {
  return {
    name,
    kind: name,
    options: name === 'tcp' ? TCP_OPTIONS : UDP_OPTIONS,
    create: () => new PortMatchInstance(name),
    save,
    list,
    compile,
    inline,
    merge,
    fast: fastPorts(name),
  };
}

export const TCP_MODULE: MatchModule = portModule('tcp');
export const UDP_MODULE: MatchModule = portModule('udp');
