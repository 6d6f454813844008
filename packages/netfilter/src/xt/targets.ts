/**
 * @internal Target extensions netsim keeps as words, each with the option table, canonical form
 * and checks of its libxt_*.c: NFQUEUE, TCPOPTSTRIP, REDIRECT, SYNPROXY, TEE, CLASSIFY, TCPMSS,
 * SET, AUDIT, IDLETIMER, CHECKSUM, CONNSECMARK.
 */
import { paramProblem } from '../failure.ts';
import { formatIpv4 } from '../ip.ts';
import { argOf, uintBase0, xtHost, xtMint, xtInt, xtIntOption, type XtDefinition, type XtState } from './define.ts';
import type { ParseEnv } from '../extension.ts';
import { xtablesStrtoui } from '../hostAddress.ts';
import { setDirs, setNameChecks } from './set.ts';
import { natPorts } from './natPorts.ts';
import type { Hook } from '../types.ts';

const LATE_HOOKS: readonly Hook[] = ['FORWARD', 'OUTPUT', 'POSTROUTING'];


/** `-j NFQUEUE`: `--queue-num 0` printed when no queue is given. */
export const NFQUEUE: XtDefinition = {
  name: 'NFQUEUE',
  options: [
    { name: 'queue-num', args: 1, parse: xtIntOption('NFQUEUE', 'queue-num', 16) },
    {
      name: 'queue-balance',
      args: 1,
      parse: (v, at) => {
        const [a = 0n, b = a] = xtMint('NFQUEUE', 'queue-balance', v[0] ?? '', 0xffffn, at);
        if (a > b) throw paramProblem('NFQUEUE: bad range "--queue-balance"', at);
        return [`${a}:${b}`];
      },
    },
    { name: 'queue-bypass', args: 0 },
    { name: 'queue-cpu-fanout', args: 0 },
  ],
  order: ['queue-balance', 'queue-num', 'queue-bypass', 'queue-cpu-fanout'],
  finish(s) {
    if (s.has('queue-num') && s.has('queue-balance')) throw paramProblem('NFQUEUE: option "--queue-num" cannot be used together with "--queue-balance".\n');
    if (s.has('queue-cpu-fanout') && !s.has('queue-balance')) throw paramProblem('NFQUEUE: option "--queue-cpu-fanout" also requires "--queue-balance".\n');
    if (!s.has('queue-balance') && !s.has('queue-num')) s.set('queue-num', ['0']);
  },
  list(args) {
    const b = argOf(args, 'queue-balance');
    let t = b !== undefined ? `NFQUEUE balance ${b.value}` : `NFQUEUE num ${argOf(args, 'queue-num')?.value ?? '0'}`;
    if (args.includes('--queue-bypass')) t += ' bypass';
    if (args.includes('--queue-cpu-fanout')) t += ' cpu-fanout';
    return t;
  },
};

const TCP_OPTION_NAMES: ReadonlyMap<string, number> = new Map([
  ['wscale', 3],
  ['mss', 2],
  ['sack-permitted', 4],
  ['sack', 5],
  ['timestamp', 8],
  ['md5', 19],
]);

/** `-j TCPOPTSTRIP --strip-options`: option names stored as numbers, printed in ascending order. */
export const TCPOPTSTRIP: XtDefinition = {
  name: 'TCPOPTSTRIP',
  options: [
    {
      name: 'strip-options',
      args: 1,
      parse: (v, at) => {
        const set = new Set<number>();
        for (const w of (v[0] ?? '').split(',')) {
          const n = TCP_OPTION_NAMES.get(w) ?? uintBase0(w);
          if (n === undefined || n > 255) throw paramProblem(`Bad TCP option value "${w}"`, at);
          set.add(n);
        }
        return [[...set].sort((a, b) => a - b).join(',')];
      },
    },
  ],
  tables: ['mangle'],
  // xt_TCPOPTSTRIP is registered for tcp only.
  finish: (_s, env) => tcpOnly(env),
  list: (args) => `TCPOPTSTRIP options ${args[1] ?? ''}`,
};

/** `-j REDIRECT [--to-ports P[-Q]] [--random]`. */
export const REDIRECT: XtDefinition = {
  name: 'REDIRECT',
  options: [
    {
      name: 'to-ports',
      args: 1,
      parse: (v, at, _s, env) => {
        const p = natPorts(v[0] ?? '', env, at);
        return [`${p.from === p.to ? p.from : `${p.from}-${p.to}`}${p.base !== undefined ? `/${p.base}` : ''}`];
      },
    },
    { name: 'random', args: 0 },
  ],
  tables: ['nat'],
  hooks: () => ['PREROUTING', 'OUTPUT'],
  finish(s) {
    if (s.value('to-ports')?.includes('/') === true) throw paramProblem('Shifted portmap ranges not supported with this kernel');
  },
  list(args) {
    const k = args.indexOf('--to-ports');
    const parts = k < 0 ? [] : [`redir ports ${args[k + 1] ?? ''}`];
    if (args.includes('--random')) parts.push('random');
    return parts.join(' ');
  },
};

/** The rule's protocol is tcp, not negated: what the kernel's tcp-only targets and matches need. */
function tcpOnly(env: ParseEnv): void {
  if (env.proto !== 6 || env.protoInvert) env.rejectRule('Invalid argument');
}

/** `-j SYNPROXY`: the values are read as uint32 and kept in the kernel's u8 (wscale) and u16 (mss). */
export const SYNPROXY: XtDefinition = {
  name: 'SYNPROXY',
  options: [
    { name: 'mss', args: 1, parse: (v, at) => [String(Number(xtInt('SYNPROXY', 'mss', v[0] ?? '', 0n, 0xffffffffn, at) & 0xffffn))] },
    { name: 'wscale', args: 1, parse: (v, at) => [String(Number(xtInt('SYNPROXY', 'wscale', v[0] ?? '', 0n, 0xffffffffn, at) & 0xffn))] },
    { name: 'sack-perm', args: 0 },
    { name: 'timestamp', args: 0 },
    { name: 'ecn', args: 0 },
  ],
  order: ['sack-perm', 'timestamp', 'wscale', 'mss', 'ecn'],
  // xt_SYNPROXY: tcp only (not negated), from INPUT and FORWARD.
  hooks: () => ['INPUT', 'FORWARD'],
  finish: (_s, env) => tcpOnly(env),
  list: (args) => ['SYNPROXY', ...args.map((a) => a.replace(/^--/, ''))].join(' '),
};

const gateway = (v: readonly string[], at: number): readonly string[] => [formatIpv4(xtHost(v[0] ?? '', at))];

export const TEE: XtDefinition = {
  name: 'TEE',
  options: [
    { name: 'gateway', args: 1, parse: gateway },
    { name: 'oif', args: 1 },
  ],
  finish(s) {
    if (!s.has('gateway')) s.missing('gateway');
  },
  list(args) {
    let t = `TEE gw:${args[1] ?? ''}`;
    const k = args.indexOf('--oif');
    if (k >= 0) t += ` oif=${args[k + 1] ?? ''}`;
    return t;
  },
};

/**
 * The low 16 bits of a hexadecimal number as four hex digits; strtoul's saturation (more than 16
 * significant digits) gives ffff.
 */
function hex16(digits: string): string {
  const significant = digits.replace(/^0+/, '');
  if (significant.length > 16) return 'ffff';
  return significant.slice(-4).toLowerCase().padStart(4, '0');
}

/** `-j CLASSIFY --set-class MAJOR:MINOR`: each half read as hex and printed `%04x`. */
export const CLASSIFY: XtDefinition = {
  name: 'CLASSIFY',
  options: [
    {
      name: 'set-class',
      args: 1,
      mand: true,
      parse: (v, at) => {
        const m = /^\s*\+?(?:0[xX])?([0-9a-fA-F]+):\s*\+?(?:0[xX])?([0-9a-fA-F]+)/.exec(v[0] ?? '');
        if (m === null) throw paramProblem(`Bad class value "${v[0] ?? ''}"`, at);
        return [`${hex16(m[1] as string)}:${hex16(m[2] as string)}`];
      },
    },
  ],
  hooks: () => LATE_HOOKS,
  list: (args) => `CLASSIFY set ${(args[1] ?? '').replace(/^0+(?=.)/, '').replace(/:0+(?=.)/, ':')}`,
};

/**
 * `-j TCPMSS`: `-p tcp` only; path-MTU clamping from the late hooks only. Both options set one
 * field (the MSS, clamping being a special value): the later one given wins.
 */
export const TCPMSS: XtDefinition = {
  name: 'TCPMSS',
  options: [
    { name: 'set-mss', args: 1, parse: xtIntOption('TCPMSS', 'set-mss', 16, 0n, 65515n) },
    { name: 'clamp-mss-to-pmtu', args: 0 },
  ],
  hooks: (args) => (args.includes('--clamp-mss-to-pmtu') ? LATE_HOOKS : undefined),
  finish(s, env) {
    const set = s.get('set-mss');
    const clamp = s.get('clamp-mss-to-pmtu');
    if (set === undefined && clamp === undefined) throw paramProblem('TCPMSS target: At least one parameter is required');
    if (set !== undefined && clamp !== undefined) s.delete(set.argIndex > clamp.argIndex ? 'clamp-mss-to-pmtu' : 'set-mss');
    // xt_TCPMSS is registered for tcp only: the kernel refuses it on any other or a negated -p.
    tcpOnly(env);
  },
  list: (args) => (args.includes('--clamp-mss-to-pmtu') ? 'TCPMSS clamp to PMTU' : `TCPMSS set ${args[1] ?? ''}`),
};

/** `--add-set`/`--del-set`/`--map-set NAME FLAGS` (parse_target). */
function setOption(opt: string) {
  return (v: readonly string[], at: number, s: XtState, env: ParseEnv): readonly string[] => {
    if (s.has(opt)) throw paramProblem(`--${opt} can be specified only once`, at - 1);
    const name = v[0] ?? '';
    setNameChecks(name, at, env);
    return [name, setDirs(v[1] ?? '', at + 1).join(',')];
  };
}

/** `-j SET` (revision 3, the old parse API). */
export const SET_TARGET: XtDefinition = {
  name: 'SET',
  legacy: true,
  options: [
    { name: 'add-set', args: 2, parse: setOption('add-set') },
    { name: 'del-set', args: 2, parse: setOption('del-set') },
    { name: 'exist', args: 0 },
    {
      name: 'timeout',
      args: 1,
      parse: (v, at) => {
        const n = xtablesStrtoui(v[0] ?? '', 0xfffffffe);
        if (n === undefined) throw paramProblem('Invalid value for option --timeout or out of range 0-4294967294', at);
        return [String(n)];
      },
    },
    { name: 'map-set', args: 2, parse: setOption('map-set') },
    { name: 'map-mark', args: 0 },
    { name: 'map-prio', args: 0 },
    { name: 'map-queue', args: 0 },
  ],
  order: ['add-set', 'del-set', 'map-set', 'exist', 'timeout', 'map-mark', 'map-prio', 'map-queue'],
  finish(s) {
    // set_target_check_v3.
    if (!s.has('add-set') && !s.has('del-set') && !s.has('map-set')) throw paramProblem("You must specify either `--add-set' or `--del-set' or `--map-set'");
    if (!s.has('add-set')) {
      if (s.has('exist')) throw paramProblem("Flag `--exist' can be used with `--add-set' only");
      if (s.has('timeout')) throw paramProblem("Option `--timeout' can be used with `--add-set' only");
    }
    if (!s.has('map-set')) {
      for (const f of ['map-mark', 'map-prio', 'map-queue']) if (s.has(f)) throw paramProblem(`Flag \`--${f}' can be used with \`--map-set' only`);
    } else if (!s.has('map-mark') && !s.has('map-prio') && !s.has('map-queue')) {
      throw paramProblem("You must specify flags `--map-mark' or '--map-prio` or `--map-queue'");
    }
  },
  // xt_SET maps priority and queue only from the output side.
  hooks: (args) => (args.includes('--map-prio') || args.includes('--map-queue') ? LATE_HOOKS : undefined),
};

export const AUDIT: XtDefinition = {
  name: 'AUDIT',
  options: [
    {
      name: 'type',
      args: 1,
      mand: true,
      parse: (v, at) => {
        const w = (v[0] ?? '').toLowerCase();
        if (w !== 'accept' && w !== 'drop' && w !== 'reject') throw paramProblem(`Bad action type value "${v[0] ?? ''}"`, at);
        return [w];
      },
    },
  ],
  list: (args) => `AUDIT ${args[1] ?? ''}`,
};

export const IDLETIMER: XtDefinition = {
  name: 'IDLETIMER',
  options: [
    { name: 'timeout', args: 1, mand: true, parse: xtIntOption('IDLETIMER', 'timeout', 32) },
    { name: 'label', args: 1 },
    { name: 'alarm', args: 0 },
  ],
  list: (args) => `timeout:${args[args.indexOf('--timeout') + 1] ?? ''} label:${args[args.indexOf('--label') + 1] ?? ''}`,
};

export const CHECKSUM: XtDefinition = {
  name: 'CHECKSUM',
  options: [{ name: 'checksum-fill', args: 0, mand: true }],
  tables: ['mangle'],
  list: () => 'CHECKSUM fill',
};

export const CONNSECMARK: XtDefinition = {
  name: 'CONNSECMARK',
  options: [
    { name: 'save', args: 0, excl: ['restore'] },
    { name: 'restore', args: 0, excl: ['save'] },
  ],
  finish(s) {
    if (s.given.size === 0) throw paramProblem('CONNSECMARK target: parameter required');
  },
  list: (args) => `CONNSECMARK ${args.includes('--save') ? 'save' : 'restore'}`,
};
