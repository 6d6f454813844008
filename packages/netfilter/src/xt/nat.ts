/**
 * @internal
 * `-j DNAT`, `-j SNAT` and `-j MASQUERADE` (libxt_DNAT, libipt_SNAT, libxt_MASQUERADE), whole:
 * `--to-destination`/`--to-source` ranges `ip[-ip][:port[-port]]` and `--to-ports`, with the real
 * tool's protocol checks and messages, the nat table and the hooks the kernel takes each from,
 * the printed words and `-L` text, and the walk's opcode: accept, handing the range to NAT.
 */
import { OptionTable, OptionTracker, type ExtensionInstance, type OptionUse, type ParseEnv } from '../extension.ts';
import type { FastTargetReader } from '../fastCursor.ts';
import { paramProblem } from '../failure.ts';
import { formatIpv4, tryParseIpv4 } from '../ip.ts';
import { ACCEPT_VERDICT, T_NAT, type TargetCode } from '../targetCode.ts';
import type { TargetModule } from '../targets.ts';
import type { Hook, Ipv4, NatRange, PortRange, Target } from '../types.ts';

type DnatTarget = Extract<Target, { kind: 'DNAT' }>;
type SnatTarget = Extract<Target, { kind: 'SNAT' }>;
type MasqueradeTarget = Extract<Target, { kind: 'MASQUERADE' }>;

const DNAT_HOOKS: readonly Hook[] = ['PREROUTING', 'OUTPUT'];
const SNAT_HOOKS: readonly Hook[] = ['POSTROUTING', 'INPUT'];
const MASQUERADE_HOOKS: readonly Hook[] = ['POSTROUTING'];

function natList(t: Target): string {
  const n = t as DnatTarget | SnatTarget;
  const parts = [`to:${n.to ? formatNatRange(n.to) : ''}`];
  if (n.random) parts.push('random');
  if (n.kind === 'SNAT' && n.randomFully) parts.push('random-fully');
  if (n.persistent) parts.push('persistent');
  return parts.join(' ');
}

/** The NAT targets' fields are exactly a NatRequest: the (immutable) target is handed over as is. */
function natCode(t: Target, c: TargetCode): void {
  c.op = T_NAT;
  c.nat = t as DnatTarget | SnatTarget | MasqueradeTarget;
  c.verdict = ACCEPT_VERDICT;
}

const PORT_PROTOS: ReadonlySet<number> = new Set([6, 17, 132, 33]);

function needPortProto(env: ParseEnv, argIndex: number): void {
  if (env.proto === undefined || !PORT_PROTOS.has(env.proto) || env.protoInvert) {
    throw paramProblem('Need TCP, UDP, SCTP or DCCP with port specification', argIndex);
  }
}

function parseNatPort(text: string, argIndex: number): number {
  const n = /^[0-9]+$/.test(text) ? Number(text) : undefined;
  if (n === undefined || n <= 0 || n > 65535) throw paramProblem(`Port \`${text}' not valid`, argIndex);
  return n;
}

function parsePortSpan(text: string, argIndex: number): PortRange {
  const dash = text.indexOf('-');
  const from = parseNatPort(dash < 0 ? text : text.slice(0, dash), argIndex);
  if (dash < 0) return { from, to: from };
  const toText = text.slice(dash + 1);
  const to = parseNatPort(toText, argIndex);
  if (to < from) throw paramProblem(`Port range \`${toText}' funky`, argIndex);
  return { from, to };
}

/** `ip[-ip][:port[-port]]` of `--to-destination` / `--to-source`. */
function parseNatRange(text: string, env: ParseEnv, argIndex: number): NatRange {
  const colon = text.indexOf(':');
  const ipPart = colon < 0 ? text : text.slice(0, colon);
  let range: NatRange = {};
  if (colon >= 0) {
    needPortProto(env, argIndex);
    const ports = parsePortSpan(text.slice(colon + 1), argIndex);
    range = { minPort: ports.from, maxPort: ports.to };
  }
  if (colon < 0 || ipPart !== '') {
    const dash = ipPart.indexOf('-');
    const minText = dash < 0 ? ipPart : ipPart.slice(0, dash);
    const maxText = dash < 0 ? ipPart : ipPart.slice(dash + 1);
    const minIp = tryParseIpv4(minText);
    if (minIp === undefined) throw paramProblem(`Bad IP address "${minText}"`, argIndex);
    const maxIp = tryParseIpv4(maxText);
    if (maxIp === undefined) throw paramProblem(`Bad IP address "${maxText}"`, argIndex);
    range = { minIp, maxIp, ...range };
  }
  return range;
}

/** A NAT range as `--to-destination`/`--to-source` print it: `a.b.c.d[-e.f.g.h][:port[-port]]`. */
export function formatNatRange(r: NatRange): string {
  let s = '';
  if (r.minIp !== undefined) {
    s += formatIpv4(r.minIp);
    if (r.maxIp !== undefined && r.maxIp !== r.minIp) s += `-${formatIpv4(r.maxIp)}`;
  }
  if (r.minPort !== undefined) {
    s += `:${r.minPort}`;
    if (r.maxPort !== undefined && r.maxPort !== r.minPort) s += `-${r.maxPort}`;
  }
  return s;
}

const DNAT_OPTIONS = new OptionTable([
  { name: 'to-destination', args: 1 },
  { name: 'random', args: 0 },
  { name: 'persistent', args: 0 },
]);


class DnatInstance extends OptionTracker implements ExtensionInstance<Target> {
  readonly name = 'DNAT';
  readonly spec = DNAT_OPTIONS;
  private to: NatRange | undefined = undefined;
  constructor() {
    super('DNAT', DNAT_OPTIONS);
  }
  option(use: OptionUse, env: ParseEnv): void {
    this.use(use, DNAT_OPTIONS.exact(use.name)!);
    if (use.name === 'to-destination') this.to = parseNatRange(use.values[0] ?? '', env, use.argIndex + 1);
  }
  finish(): Target {
    if (this.to === undefined) this.missing('to-destination');
    return { kind: 'DNAT', to: this.to, random: this.has('random'), persistent: this.has('persistent') };
  }
}

const SNAT_OPTIONS = new OptionTable([
  { name: 'to-source', args: 1 },
  { name: 'random', args: 0 },
  { name: 'random-fully', args: 0 },
  { name: 'persistent', args: 0 },
]);

export const SNAT_MODULE: TargetModule = {
  name: 'SNAT',
  kind: 'SNAT',
  options: SNAT_OPTIONS,
  tables: ['nat'],
  hooks: () => SNAT_HOOKS,
  create(): ExtensionInstance<Target> {
    const t: OptionTracker = new OptionTracker('SNAT', SNAT_OPTIONS);
    let to: NatRange | undefined;
    return {
      name: 'SNAT',
      spec: SNAT_OPTIONS,
      option(use, env) {
        t.use(use, SNAT_OPTIONS.exact(use.name)!);
        if (use.name === 'to-source') to = parseNatRange(use.values[0] ?? '', env, use.argIndex + 1);
      },
      finish() {
        if (to === undefined) t.missing('to-source');
        return { kind: 'SNAT', to, random: t.has('random'), randomFully: t.has('random-fully'), persistent: t.has('persistent') };
      },
    };
  },
  save: (t, out) => {
    const s = t as SnatTarget;
    if (s.to) out.push('--to-source', formatNatRange(s.to));
    if (s.random) out.push('--random');
    if (s.randomFully) out.push('--random-fully');
    if (s.persistent) out.push('--persistent');
  },
  list: natList,
  code: natCode,
  fast: fastDnat,
};

const MASQUERADE_OPTIONS = new OptionTable([
  { name: 'to-ports', args: 1 },
  { name: 'random', args: 0 },
  { name: 'random-fully', args: 0 },
]);

export const MASQUERADE_MODULE: TargetModule = {
  name: 'MASQUERADE',
  kind: 'MASQUERADE',
  options: MASQUERADE_OPTIONS,
  tables: ['nat'],
  hooks: () => MASQUERADE_HOOKS,
  create(): ExtensionInstance<Target> {
    const t: OptionTracker = new OptionTracker('MASQUERADE', MASQUERADE_OPTIONS);
    let toPorts: PortRange | undefined;
    return {
      name: 'MASQUERADE',
      spec: MASQUERADE_OPTIONS,
      option(use, env) {
        t.use(use, MASQUERADE_OPTIONS.exact(use.name)!);
        if (use.name === 'to-ports') {
          needPortProto(env, use.argIndex);
          const text = use.values[0] ?? '';
          const dash = text.indexOf('-');
          const fromText = dash < 0 ? text : text.slice(0, dash);
          const from = /^[0-9]+$/.test(fromText) ? Number(fromText) : -1;
          if (from < 0 || from > 65535) throw paramProblem(`Port \`${fromText}' not valid`, use.argIndex + 1);
          let to = from;
          if (dash >= 0) {
            const toText = text.slice(dash + 1);
            to = /^[0-9]+$/.test(toText) ? Number(toText) : -1;
            if (to < 0 || to > 65535) throw paramProblem(`Port \`${toText}' not valid`, use.argIndex + 1);
            if (to < from) throw paramProblem(`Port range \`${toText}' funky`, use.argIndex + 1);
          }
          toPorts = { from, to };
        }
      },
      finish() {
        return { kind: 'MASQUERADE', ...(toPorts && { toPorts }), random: t.has('random'), randomFully: t.has('random-fully') };
      },
    };
  },
  save: (t, out) => {
    const m = t as MasqueradeTarget;
    if (m.toPorts) out.push('--to-ports', m.toPorts.from === m.toPorts.to ? String(m.toPorts.from) : `${m.toPorts.from}-${m.toPorts.to}`);
    if (m.random) out.push('--random');
    if (m.randomFully) out.push('--random-fully');
  },
  list: (t) => {
    const m = t as MasqueradeTarget;
    const parts: string[] = [];
    if (m.toPorts) parts.push(`masq ports: ${m.toPorts.from === m.toPorts.to ? m.toPorts.from : `${m.toPorts.from}-${m.toPorts.to}`}`);
    if (m.random) parts.push('random');
    if (m.randomFully) parts.push('random-fully');
    return parts.join(' ');
  },
  code: natCode,
};

/** Protocols whose ports DNAT may name ("Need TCP, UDP, SCTP or DCCP with port specification"). */
function portProto(proto: number): boolean {
  return proto === 6 || proto === 17 || proto === 132 || proto === 33;
}

/** The fast reader's `--to-destination a.b.c.d[:port]`. */
function fastDnat(): FastTargetReader {
  return (c, ctx) => {
    if (!c.word('--to-destination')) return undefined;
    let i = c.quad(c.p);
    if (i < 0) return undefined;
    const ip = c.addr as Ipv4;
    let to: NatRange;
    if (c.at(i) === 58 /* : */) {
      if (!portProto(ctx.proto) || ctx.protoNegate) return undefined;
      i = c.digits(i + 1, 65535);
      if (i < 0 || c.num === 0) return undefined;
      to = { minIp: ip, maxIp: ip, minPort: c.num, maxPort: c.num };
    } else to = { minIp: ip, maxIp: ip };
    if (c.at(i) !== 32) return undefined;
    c.next(i);
    return { kind: 'DNAT', to, random: false, persistent: false };
  };
}

export const DNAT_MODULE: TargetModule = {
  name: 'DNAT',
  kind: 'DNAT',
  options: DNAT_OPTIONS,
  tables: ['nat'],
  hooks: () => DNAT_HOOKS,
  create: () => new DnatInstance(),
  save: (t, out) => {
    const d = t as DnatTarget;
    if (d.to) out.push('--to-destination', formatNatRange(d.to));
    if (d.random) out.push('--random');
    if (d.persistent) out.push('--persistent');
  },
  list: natList,
  code: natCode,
  fast: fastDnat,
};
