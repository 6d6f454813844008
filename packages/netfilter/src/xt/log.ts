/**
 * @internal
 * `-j LOG` and `-j NFLOG` (libipt_LOG, libxt_NFLOG), whole: options with the real tool's checks
 * and messages, prefixes truncated as the kernel's fields hold them, the printed words and `-L`
 * text; both let the packet continue.
 */
import { OptionTable, OptionTracker, type ExtensionInstance } from '../extension.ts';
import { paramProblem } from '../failure.ts';
import { LOG_LEVELS, parseUintBase0 } from '../names.ts';
import { T_CONTINUE, type TargetCode } from '../targetCode.ts';
import type { TargetModule } from '../targets.ts';
import { quoteSaveString } from '../tokenize.ts';
import type { Target } from '../types.ts';
import { truncateUtf8 } from './comment.ts';

type LogTarget = Extract<Target, { kind: 'LOG' }>;
type NflogTarget = Extract<Target, { kind: 'NFLOG' }>;

const LOG_LEVEL_NAMES: readonly string[] = ['emerg', 'alert', 'crit', 'err', 'warn', 'notice', 'info', 'debug'];

function continueCode(_t: Target, c: TargetCode): void {
  c.op = T_CONTINUE;
}

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

export const LOG_TARGET: TargetModule = {
  name: 'LOG',
  kind: 'LOG',
  options: LOG_OPTIONS,
  create(): ExtensionInstance<Target> {
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
  save: (target, out) => {
    const t = target as LogTarget;
    if (t.prefix !== undefined) out.push('--log-prefix', quoteSaveString(t.prefix));
    if (t.level !== undefined) out.push('--log-level', t.level);
    for (const f of t.flags ?? []) out.push(`--log-${f}`);
  },
  list: (target, numeric) => {
    const t = target as LogTarget;
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
  },
  code: continueCode,
};

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

export const NFLOG_TARGET: TargetModule = {
  name: 'NFLOG',
  kind: 'NFLOG',
  options: NFLOG_OPTIONS,
  create(): ExtensionInstance<Target> {
    const t: OptionTracker = new OptionTracker('NFLOG', NFLOG_OPTIONS);
    let group = 0;
    let prefix = '';
    let size: number | undefined;
    let threshold = 0;
    return {
      name: 'NFLOG',
      spec: NFLOG_OPTIONS,
      option(use, env) {
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
        // --nflog-range is accepted and ignored, with the real tool's warning.
        else env.warn('warn: --nflog-range has never worked and is no longer supported, please use --nflog-size instead\n');
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
  save: (target, out) => {
    const args = (target as NflogTarget).args;
    for (let i = 0; i < args.length; i++) {
      const w = args[i] ?? '';
      out.push(w);
      if (w === '--nflog-prefix') out.push(quoteSaveString(args[++i] ?? ''));
    }
  },
  list: (target) => {
    const args = (target as NflogTarget).args;
    const parts: string[] = [];
    for (let i = 0; i < args.length; i += 2) {
      const name = (args[i] ?? '').replace(/^--/, '');
      const v = args[i + 1] ?? '';
      parts.push(`${name} ${name === 'nflog-prefix' ? quoteSaveString(v) : v}`);
    }
    return parts.join(' ');
  },
  code: continueCode,
};

