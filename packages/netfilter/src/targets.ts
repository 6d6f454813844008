/**
 * @internal
 * Target extensions (`-j NAME`): option parsing, the kernel's table and hook restrictions, and how
 * `iptables-save` and `iptables -L` print each one. Checked against iptables 1.8.9 (nf_tables).
 */
import { paramProblem } from './failure.ts';
import { OptionTable, OptionTracker, badInteger, excludes, type ExtensionInstance, type OptionUse, type ParseEnv } from './extension.ts';
import { formatIpv4, tryParseIpv4 } from './ip.ts';
import { hex, parseMarkMask, quoteVerbatim, truncateUtf8 } from './matches.ts';
import { LOG_LEVELS, parseUintBase0 } from './names.ts';
import { quoteAlways, quoteSaveString } from './tokenize.ts';
import { XT_TARGETS } from './xt/index.ts';
import { xtSaveWords } from './xt/define.ts';
import type { Hook, NatRange, PortRange, RejectWith, TableName, Target } from './types.ts';

export interface TargetModule {
  readonly name: string;
  readonly options: OptionTable;
  create(): ExtensionInstance<Target>;
  /** Tables the kernel accepts the target in (all when absent). */
  readonly tables?: readonly TableName[];
  /** Hooks the kernel accepts the target from (all when absent). */
  readonly hooks?: readonly Hook[];
}

const modules = new Map<string, TargetModule>(); // tidy-allow: the extension registry, filled by register() while this module loads

function register(m: TargetModule): void {
  modules.set(m.name, m);
}

/** Every modelled target extension (for the tokenizer's table of common words). */
export function targetModules(): IterableIterator<TargetModule> {
  return modules.values();
}

export function targetModule(name: string): TargetModule | undefined {
  return modules.get(name);
}

/** The verdicts every iptables knows without an extension. */
export const STANDARD_TARGETS: ReadonlySet<string> = new Set(['ACCEPT', 'DROP', 'RETURN']);

/**
 * Target extensions the real iptables ships. One netsim does not model is kept verbatim as an
 * `unknown` target; any other `-j NAME` must be a user chain.
 */
export const IPTABLES_TARGET_NAMES: ReadonlySet<string> = new Set([
  'AUDIT', 'CHECKSUM', 'CLASSIFY', 'CLUSTERIP', 'CONNMARK', 'CONNSECMARK', 'CT', 'DNAT', 'DNPT', 'DSCP',
  'ECN', 'HL', 'HMARK', 'IDLETIMER', 'LED', 'LOG', 'MARK', 'MASQUERADE', 'NETMAP', 'NFLOG', 'NFQUEUE',
  'NOTRACK', 'RATEEST', 'REDIRECT', 'REJECT', 'SECMARK', 'SET', 'SNAT', 'SNPT', 'SYNPROXY', 'TCPMSS',
  'TCPOPTSTRIP', 'TEE', 'TOS', 'TPROXY', 'TRACE', 'TTL',
]);

// ---------------------------------------------------------------------------------------------
// REJECT

const REJECT_TYPES: readonly [RejectWith, string][] = [
  ['icmp-net-unreachable', 'net-unreach'],
  ['icmp-host-unreachable', 'host-unreach'],
  ['icmp-port-unreachable', 'port-unreach'],
  ['icmp-proto-unreachable', 'proto-unreach'],
  ['icmp-net-prohibited', 'net-prohib'],
  ['icmp-host-prohibited', 'host-prohib'],
  ['icmp-admin-prohibited', 'admin-prohib'],
  ['tcp-reset', 'tcp-rst'],
];
const REJECT_OPTIONS = new OptionTable([{ name: 'reject-with', args: 1 }]);

register({
  name: 'REJECT',
  options: REJECT_OPTIONS,
  tables: ['filter'],
  hooks: ['INPUT', 'FORWARD', 'OUTPUT'],
  create() {
    const t: OptionTracker = new OptionTracker('REJECT', REJECT_OPTIONS);
    let withType: RejectWith = 'icmp-port-unreachable';
    return {
      name: 'REJECT',
      spec: REJECT_OPTIONS,
      option(use) {
        t.use(use, REJECT_OPTIONS.specs[0]!);
        const v = (use.values[0] ?? '').toLowerCase();
        // The real parser takes the first type whose name or alias starts with the argument.
        const found = REJECT_TYPES.find(([name, alias]) => name.startsWith(v) || alias.startsWith(v));
        if (found === undefined) throw paramProblem(`unknown reject type "${use.values[0] ?? ''}"`, use.argIndex + 1);
        withType = found[0];
      },
      finish(env) {
        // The kernel's REJECT refuses tcp-reset on rules not limited to tcp.
        if (withType === 'tcp-reset' && (env.proto !== 6 || env.protoInvert)) env.rejectRule('Invalid argument');
        return { kind: 'REJECT', with: withType };
      },
    };
  },
});

// ---------------------------------------------------------------------------------------------
// NAT targets

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

register({ name: 'DNAT', options: DNAT_OPTIONS, tables: ['nat'], hooks: ['PREROUTING', 'OUTPUT'], create: () => new DnatInstance() });

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

register({
  name: 'SNAT',
  options: SNAT_OPTIONS,
  tables: ['nat'],
  hooks: ['POSTROUTING', 'INPUT'],
  create() {
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
});

const MASQUERADE_OPTIONS = new OptionTable([
  { name: 'to-ports', args: 1 },
  { name: 'random', args: 0 },
  { name: 'random-fully', args: 0 },
]);

register({
  name: 'MASQUERADE',
  options: MASQUERADE_OPTIONS,
  tables: ['nat'],
  hooks: ['POSTROUTING'],
  create() {
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
});

// ---------------------------------------------------------------------------------------------
// MARK and CONNMARK

const MARK_OPS = ['set-xmark', 'set-mark', 'and-mark', 'or-mark', 'xor-mark'] as const;
const MARK_OPTIONS = new OptionTable(MARK_OPS.map((name) => ({ name, args: 1 as const })));

/** Every MARK/CONNMARK operation as the `(mark & ~mask) ^ value` pair the kernel stores. */
function markOp(op: string, text: string, ext: string, argIndex: number): { value: number; mask: number } {
  const vm = parseMarkMask(text);
  const slashAllowed = op === 'set-xmark' || op === 'set-mark';
  if (vm === undefined || (!slashAllowed && text.includes('/'))) badInteger(ext, op, argIndex);
  switch (op) {
    case 'set-xmark':
      return vm;
    case 'set-mark':
      return { value: vm.value, mask: (vm.mask | vm.value) >>> 0 };
    case 'and-mark':
      return { value: 0, mask: ~vm.value >>> 0 };
    case 'or-mark':
      return { value: vm.value, mask: vm.value };
    default:
      return { value: vm.value, mask: 0 };
  }
}

register({
  name: 'MARK',
  options: MARK_OPTIONS,
  create() {
    const t: OptionTracker = new OptionTracker('MARK', MARK_OPTIONS);
    let op: string | undefined;
    let vm: { value: number; mask: number } | undefined;
    return {
      name: 'MARK',
      spec: MARK_OPTIONS,
      option(use) {
        t.use(use, MARK_OPTIONS.exact(use.name)!);
        if (op !== undefined) excludes('MARK', MARK_OPTIONS, op, use.name, use.argIndex);
        op = use.name;
        vm = markOp(use.name, use.values[0] ?? '', 'MARK', use.argIndex + 1);
      },
      finish() {
        if (vm === undefined) throw paramProblem('MARK: One of the --set-xmark, --{and,or,xor,set}-mark options is required');
        return { kind: 'MARK', value: vm.value, mask: vm.mask };
      },
    };
  },
});

const CONNMARK_OPTIONS = new OptionTable([
  { name: 'set-xmark', args: 1 },
  { name: 'save-mark', args: 0 },
  { name: 'restore-mark', args: 0 },
  { name: 'set-mark', args: 1 },
  { name: 'and-mark', args: 1 },
  { name: 'or-mark', args: 1 },
  { name: 'xor-mark', args: 1 },
  { name: 'mask', args: 1 },
  { name: 'nfmask', args: 1 },
  { name: 'ctmask', args: 1 },
]);

register({
  name: 'CONNMARK',
  options: CONNMARK_OPTIONS,
  create() {
    const t: OptionTracker = new OptionTracker('CONNMARK', CONNMARK_OPTIONS);
    let op: string | undefined;
    let vm = { value: 0, mask: 0 };
    let nfmask = 0xffffffff;
    let ctmask = 0xffffffff;
    return {
      name: 'CONNMARK',
      spec: CONNMARK_OPTIONS,
      option(use) {
        t.use(use, CONNMARK_OPTIONS.exact(use.name)!);
        const v = use.values[0] ?? '';
        if (use.name === 'mask' || use.name === 'nfmask' || use.name === 'ctmask') {
          const n = parseUintBase0(v);
          if (n === undefined || n > 0xffffffff) badInteger('CONNMARK', use.name, use.argIndex + 1);
          if (use.name !== 'ctmask') nfmask = n;
          if (use.name !== 'nfmask') ctmask = n;
          return;
        }
        if (op !== undefined) excludes('CONNMARK', CONNMARK_OPTIONS, op, use.name, use.argIndex);
        op = use.name;
        if (op !== 'save-mark' && op !== 'restore-mark') vm = markOp(op, v, 'CONNMARK', use.argIndex + 1);
      },
      finish() {
        if (op === undefined) throw paramProblem('CONNMARK target: No operation specified');
        if (op === 'save-mark' || op === 'restore-mark') {
          return { kind: 'CONNMARK', mode: op === 'save-mark' ? 'save' : 'restore', value: 0, mask: 0, nfmask, ctmask };
        }
        return { kind: 'CONNMARK', mode: 'set-xmark', value: vm.value, mask: vm.mask };
      },
    };
  },
});

// ---------------------------------------------------------------------------------------------
// LOG and NFLOG

/** LOG flags in the order (and with the bits) iptables prints them. */
const LOG_FLAGS: readonly [string, number][] = [
  ['tcp-sequence', 0x01],
  ['tcp-options', 0x02],
  ['ip-options', 0x04],
  ['uid', 0x08],
  ['macdecode', 0x20],
];
const LOG_OPTIONS = new OptionTable([
  { name: 'log-level', args: 1 },
  { name: 'log-prefix', args: 1 },
  ...LOG_FLAGS.map(([name]) => ({ name: `log-${name}`, args: 0 as const })),
]);
const LOG_PREFIX_MAX = 29;

register({
  name: 'LOG',
  options: LOG_OPTIONS,
  create() {
    const t: OptionTracker = new OptionTracker('LOG', LOG_OPTIONS);
    let prefix: string | undefined;
    let level = 4;
    return {
      name: 'LOG',
      spec: LOG_OPTIONS,
      option(use) {
        t.use(use, LOG_OPTIONS.exact(use.name)!);
        const v = use.values[0] ?? '';
        if (use.name === 'log-level') {
          const n = /^[0-9]+$/.test(v) ? Number(v) : LOG_LEVELS.get(v);
          if (n === undefined || n > 7) throw paramProblem(`log level "${v}" unknown\n`, use.argIndex + 1);
          level = n;
        } else if (use.name === 'log-prefix') {
          if (v.length === 0) throw paramProblem('Argument must have a minimum length of 1 characters\n', use.argIndex + 1);
          prefix = truncateUtf8(v, LOG_PREFIX_MAX);
        }
      },
      finish() {
        const flags = LOG_FLAGS.filter(([name]) => t.has(`log-${name}`)).map(([name]) => name);
        return { kind: 'LOG', ...(prefix !== undefined && { prefix }), ...(level !== 4 && { level: String(level) }), ...(flags.length > 0 && { flags }) };
      },
    };
  },
});

const NFLOG_OPTIONS = new OptionTable([
  { name: 'nflog-group', args: 1 },
  { name: 'nflog-prefix', args: 1 },
  { name: 'nflog-range', args: 1 },
  { name: 'nflog-size', args: 1 },
  { name: 'nflog-threshold', args: 1 },
]);
const NFLOG_PREFIX_MAX = 127;
const NFLOG_LIMITS: Readonly<Record<string, number>> = {
  'nflog-group': 0xffff,
  'nflog-range': 0xffffffff,
  'nflog-size': 0xffffffff,
  'nflog-threshold': 0xffff,
};

register({
  name: 'NFLOG',
  options: NFLOG_OPTIONS,
  create() {
    const t: OptionTracker = new OptionTracker('NFLOG', NFLOG_OPTIONS);
    let group = 0;
    let prefix = '';
    let size: number | undefined;
    let threshold = 0;
    return {
      name: 'NFLOG',
      spec: NFLOG_OPTIONS,
      option(use) {
        t.use(use, NFLOG_OPTIONS.exact(use.name)!);
        const v = use.values[0] ?? '';
        if (use.name === 'nflog-prefix') {
          if (v.length === 0) throw paramProblem('Argument must have a minimum length of 1 characters\n', use.argIndex + 1);
          // The kernel's field holds 64 bytes; nf_tables keeps up to 127, as the tool prints back.
          prefix = truncateUtf8(v, NFLOG_PREFIX_MAX);
          return;
        }
        const n = parseUintBase0(v);
        const max = NFLOG_LIMITS[use.name] ?? 0;
        if (n === undefined || n > max) {
          throw paramProblem(`NFLOG: bad value for option "--${use.name}", or out of range (0-${max}).\n`, use.argIndex + 1);
        }
        if (use.name === 'nflog-group') group = n;
        else if (use.name === 'nflog-size') size = n;
        else if (use.name === 'nflog-threshold') threshold = n;
        // --nflog-range is accepted and ignored (the real tool warns that it never worked).
      },
      finish() {
        const args: string[] = [];
        if (prefix !== '') args.push('--nflog-prefix', prefix);
        if (group !== 0) args.push('--nflog-group', String(group));
        if (size !== undefined) args.push('--nflog-size', String(size));
        if (threshold !== 0) args.push('--nflog-threshold', String(threshold));
        return { kind: 'NFLOG', args };
      },
    };
  },
});

// ---------------------------------------------------------------------------------------------
// NOTRACK, CT, TRACE

const NO_OPTIONS = new OptionTable([]);

register({
  name: 'NOTRACK',
  options: NO_OPTIONS,
  tables: ['raw'],
  create() {
    return { name: 'NOTRACK', spec: NO_OPTIONS, option() {}, finish: () => ({ kind: 'NOTRACK' }) };
  },
});

register({
  name: 'TRACE',
  options: NO_OPTIONS,
  create() {
    return { name: 'TRACE', spec: NO_OPTIONS, option() {}, finish: () => ({ kind: 'TRACE' }) };
  },
});

/** Conntrack event names in bit order, the order iptables-save prints them in. */
const CT_EVENTS: readonly string[] = ['new', 'related', 'destroy', 'reply', 'assured', 'protoinfo', 'helper', 'mark', 'natseqinfo', 'secmark'];
const EXP_EVENTS: readonly string[] = ['new'];
const CT_SAVE_ORDER: readonly string[] = ['helper', 'timeout', 'ctevents', 'expevents', 'zone-orig', 'zone-reply', 'zone'];

const CT_OPTIONS = new OptionTable([
  { name: 'notrack', args: 0 },
  { name: 'ctevents', args: 1 },
  { name: 'expevents', args: 1 },
  { name: 'helper', args: 1 },
  { name: 'timeout', args: 1 },
  { name: 'zone-orig', args: 1 },
  { name: 'zone-reply', args: 1 },
  { name: 'zone', args: 1 },
]);

register({
  name: 'CT',
  options: CT_OPTIONS,
  tables: ['raw'],
  create() {
    const t: OptionTracker = new OptionTracker('CT', CT_OPTIONS);
    const given = new Map<string, string>();
    return {
      name: 'CT',
      spec: CT_OPTIONS,
      option(use: OptionUse) {
        t.use(use, CT_OPTIONS.exact(use.name)!);
        if (use.name === 'notrack') return;
        let v = use.values[0] ?? '';
        if (use.name === 'ctevents' || use.name === 'expevents') {
          const names = use.name === 'ctevents' ? CT_EVENTS : EXP_EVENTS;
          const set = new Set(v.split(','));
          for (const e of set) if (!names.includes(e)) throw paramProblem(`Unknown event type "${e}"`, use.argIndex + 1);
          v = names.filter((e) => set.has(e)).join(',');
        }
        given.set(use.name, v);
      },
      finish() {
        // libxt_CT prints in this order whatever the order given.
        const args: string[] = [];
        for (const name of CT_SAVE_ORDER) {
          const v = given.get(name);
          if (v !== undefined) args.push(`--${name}`, v);
        }
        return { kind: 'CT', notrack: t.has('notrack'), args };
      },
    };
  },
});

for (const t of XT_TARGETS.values()) register(t);

// ---------------------------------------------------------------------------------------------
// Printing

/** The name in `-j NAME` (or `-g NAME`), as `iptables-save` prints it. */
export function targetName(t: Target): string {
  if (t.kind === 'jump' || t.kind === 'goto') return t.chain;
  if (t.kind === 'unknown') return t.name;
  return t.kind;
}

/** The words `iptables-save` prints for a target, starting with `-j`/`-g`. */
export function saveTargetWords(t: Target, out: string[]): void {
  out.push(t.kind === 'goto' ? '-g' : '-j', targetName(t));
  switch (t.kind) {
    case 'ACCEPT':
    case 'DROP':
    case 'RETURN':
    case 'jump':
    case 'goto':
    case 'NOTRACK':
    case 'TRACE':
      return;
    case 'REJECT':
      out.push('--reject-with', t.with);
      return;
    case 'DNAT':
      if (t.to) out.push('--to-destination', formatNatRange(t.to));
      if (t.random) out.push('--random');
      if (t.persistent) out.push('--persistent');
      return;
    case 'SNAT':
      if (t.to) out.push('--to-source', formatNatRange(t.to));
      if (t.random) out.push('--random');
      if (t.randomFully) out.push('--random-fully');
      if (t.persistent) out.push('--persistent');
      return;
    case 'MASQUERADE':
      if (t.toPorts) out.push('--to-ports', t.toPorts.from === t.toPorts.to ? String(t.toPorts.from) : `${t.toPorts.from}-${t.toPorts.to}`);
      if (t.random) out.push('--random');
      if (t.randomFully) out.push('--random-fully');
      return;
    case 'MARK':
      out.push('--set-xmark', `${hex(t.value)}/${hex(t.mask)}`);
      return;
    case 'CONNMARK':
      if (t.mode === 'set-xmark') out.push('--set-xmark', `${hex(t.value)}/${hex(t.mask)}`);
      else out.push(t.mode === 'save' ? '--save-mark' : '--restore-mark', '--nfmask', hex(t.nfmask ?? 0xffffffff), '--ctmask', hex(t.ctmask ?? 0xffffffff));
      return;
    case 'LOG':
      if (t.prefix !== undefined) out.push('--log-prefix', quoteSaveString(t.prefix));
      if (t.level !== undefined) out.push('--log-level', t.level);
      for (const f of t.flags ?? []) out.push(`--log-${f}`);
      return;
    case 'NFLOG':
      for (let i = 0; i < t.args.length; i++) {
        const w = t.args[i] ?? '';
        out.push(w);
        if (w === '--nflog-prefix') out.push(quoteSaveString(t.args[++i] ?? ''));
      }
      return;
    case 'CT':
      if (t.notrack) out.push('--notrack');
      for (const w of t.args) out.push(quoteVerbatim(w));
      return;
    case 'unknown': {
      const def = XT_TARGETS.get(t.name)?.def;
      if (def !== undefined) xtSaveWords(def, t.args, out, quoteVerbatim, quoteAlways);
      else for (const w of t.args) out.push(quoteVerbatim(w));
      return;
    }
  }
}

/** The target column of `iptables -L`. */
export function listTargetColumn(t: Target | undefined): string {
  if (t === undefined) return '';
  // nf_tables stores NOTRACK as a conntrack expression, which -L shows under its CT name.
  if (t.kind === 'NOTRACK') return 'CT';
  return targetName(t);
}

function markText(ext: string, value: number, mask: number): string {
  if (value === 0) return `${ext} and ${hex(~mask >>> 0)}`;
  if (value === mask) return `${ext} or ${hex(value)}`;
  if (mask === 0) return `${ext} xor ${hex(value)}`;
  if (mask === 0xffffffff) return `${ext} set ${hex(value)}`;
  return `${ext} xset ${hex(value)}/${hex(mask)}`;
}

const LOG_LEVEL_NAMES: readonly string[] = ['emerg', 'alert', 'crit', 'err', 'warn', 'notice', 'info', 'debug'];

/** The text `iptables -L` prints after the matches for a target ('' when none). */
export function listTargetText(t: Target | undefined, numeric = true): string {
  if (t === undefined) return '';
  switch (t.kind) {
    case 'ACCEPT':
    case 'DROP':
    case 'RETURN':
    case 'jump':
    case 'goto':
    case 'TRACE':
      return '';
    case 'REJECT':
      return `reject-with ${t.with}`;
    case 'DNAT':
    case 'SNAT': {
      const parts = [`to:${t.to ? formatNatRange(t.to) : ''}`];
      if (t.random) parts.push('random');
      if (t.kind === 'SNAT' && t.randomFully) parts.push('random-fully');
      if (t.persistent) parts.push('persistent');
      return parts.join(' ');
    }
    case 'MASQUERADE': {
      const parts: string[] = [];
      if (t.toPorts) parts.push(`masq ports: ${t.toPorts.from === t.toPorts.to ? t.toPorts.from : `${t.toPorts.from}-${t.toPorts.to}`}`);
      if (t.random) parts.push('random');
      if (t.randomFully) parts.push('random-fully');
      return parts.join(' ');
    }
    case 'MARK':
      return markText('MARK', t.value, t.mask);
    case 'CONNMARK': {
      if (t.mode === 'set-xmark') return markText('CONNMARK', t.value, t.mask);
      const nf = t.nfmask ?? 0xffffffff;
      const ct = t.ctmask ?? 0xffffffff;
      if (t.mode === 'save') {
        if (nf === 0xffffffff && ct === 0xffffffff) return 'CONNMARK save';
        if (nf === ct) return `CONNMARK save mask ${hex(nf)}`;
        return `CONNMARK save nfmask ${hex(nf)} ctmask ~${hex(ct)}`;
      }
      if (nf === 0xffffffff && ct === 0xffffffff) return 'CONNMARK restore';
      if (nf === ct) return `CONNMARK restore mask ${hex(ct)}`;
      return `CONNMARK restore ctmask ${hex(ct)} nfmask ~${hex(nf)}`;
    }
    case 'LOG': {
      let s: string;
      if (numeric) {
        let bits = 0;
        for (const [name, bit] of LOG_FLAGS) if (t.flags?.includes(name)) bits |= bit;
        s = `LOG flags ${bits} level ${t.level ?? '4'}`;
      } else {
        s = `LOG level ${LOG_LEVEL_NAMES[Number(t.level ?? '4')] ?? t.level ?? ''}`;
        for (const [name] of LOG_FLAGS) if (t.flags?.includes(name)) s += ` ${name}`;
      }
      if (t.prefix !== undefined) s += ` prefix "${t.prefix}"`;
      return s;
    }
    case 'NFLOG': {
      const parts: string[] = [];
      for (let i = 0; i < t.args.length; i += 2) {
        const name = (t.args[i] ?? '').replace(/^--/, '');
        const v = t.args[i + 1] ?? '';
        parts.push(`${name} ${name === 'nflog-prefix' ? quoteSaveString(v) : v}`);
      }
      return parts.join(' ');
    }
    case 'NOTRACK':
      return 'NOTRACK';
    case 'CT': {
      const parts = ['CT'];
      if (t.notrack) parts.push('notrack');
      for (const w of t.args) parts.push(w.replace(/^--/, ''));
      return parts.join(' ');
    }
    case 'unknown':
      return listUnknownTarget(t.name, t.args);
  }
}

/** `iptables -L` text for common targets netsim keeps verbatim; others print their options. */
function listUnknownTarget(name: string, args: readonly string[]): string {
  const list = XT_TARGETS.get(name)?.def.list;
  if (list !== undefined) return list(args, true);
  const value = (opt: string): string | undefined => {
    const k = args.indexOf(opt);
    return k < 0 ? undefined : args[k + 1];
  };
  if (name === 'REDIRECT') {
    const ports = value('--to-ports');
    const parts = ports === undefined ? [] : [`redir ports ${ports}`];
    if (args.includes('--random')) parts.push('random');
    return parts.join(' ');
  }
  if (name === 'TPROXY') {
    // libxt_TPROXY (v1): " TPROXY redirect ADDR:PORT mark 0xV/0xM", saved words canonical.
    const [mark = '0', mask = '0xffffffff'] = (value('--tproxy-mark') ?? '0x0/0x0').split('/');
    const hex = (t: string): string => `0x${(Number(t) >>> 0).toString(16)}`;
    return `TPROXY redirect ${value('--on-ip') ?? '0.0.0.0'}:${value('--on-port') ?? '0'} mark ${hex(mark)}/${hex(mask)}`;
  }
  if (name === 'TCPMSS') {
    if (args.includes('--clamp-mss-to-pmtu')) return 'TCPMSS clamp to PMTU';
    const mss = value('--set-mss');
    if (mss !== undefined) return `TCPMSS set ${mss}`;
  }
  return args.map((a) => a.replace(/^--/, '')).join(' ');
}
