/**
 * @internal
 * `-j CT`, `-j NOTRACK` and `-j TRACE` (libxt_CT, libxt_NOTRACK, libxt_TRACE), whole: CT's options
 * printed in the tool's order whatever the order given, its event names in bit order, the raw
 * table for CT and NOTRACK, the printed words and `-L` text, and the walk's opcodes (no tracking,
 * tracing; CT's zones, helpers and timeouts are not modelled and leave the packet undecided).
 */
import { OptionTable, OptionTracker, type ExtensionInstance, type OptionUse } from '../extension.ts';
import { paramProblem } from '../failure.ts';
import { T_NOTRACK, T_TRACE, T_UNKNOWN } from '../targetCode.ts';
import type { TargetModule } from '../targets.ts';
import { quoteVerbatim } from '../tokenize.ts';
import type { Target } from '../types.ts';
import { strtoumax } from './define.ts';

type CtTarget = Extract<Target, { kind: 'CT' }>;

const NO_OPTIONS = new OptionTable([]);

export const NOTRACK_TARGET: TargetModule = {
  name: 'NOTRACK',
  kind: 'NOTRACK',
  options: NO_OPTIONS,
  tables: ['raw'],
  create(): ExtensionInstance<Target> {
    return { name: 'NOTRACK', spec: NO_OPTIONS, option() {}, finish: () => ({ kind: 'NOTRACK' }) };
  },
  list: () => 'NOTRACK',
  // nf_tables stores NOTRACK as a conntrack expression, which -L shows under its CT name.
  column: () => 'CT',
  code: (_t, c) => {
    c.op = T_NOTRACK;
  },
};

export const TRACE_TARGET: TargetModule = {
  name: 'TRACE',
  kind: 'TRACE',
  options: NO_OPTIONS,
  create(): ExtensionInstance<Target> {
    return { name: 'TRACE', spec: NO_OPTIONS, option() {}, finish: () => ({ kind: 'TRACE' }) };
  },
  code: (_t, c) => {
    c.op = T_TRACE;
  },
};

/** Conntrack event names in bit order, the order iptables-save prints them in. */
const CT_EVENTS: readonly string[] = ['new', 'related', 'destroy', 'reply', 'assured', 'protoinfo', 'helper', 'mark', 'natseqinfo', 'secmark'];
const EXP_EVENTS: readonly string[] = ['new'];
const CT_SAVE_ORDER: readonly string[] = ['helper', 'timeout', 'ctevents', 'expevents'];

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

export const CT_TARGET: TargetModule = {
  name: 'CT',
  kind: 'CT',
  options: CT_OPTIONS,
  tables: ['raw'],
  create(): ExtensionInstance<Target> {
    const t: OptionTracker = new OptionTracker('CT', CT_OPTIONS);
    const given = new Map<string, string>();
    // The three zone options share one zone field; their directions add up (ct_parse_zone_id).
    let zone = 0;
    let zoneMark = false;
    let orig = false;
    let reply = false;
    return {
      name: 'CT',
      spec: CT_OPTIONS,
      option(use: OptionUse) {
        t.use(use, CT_OPTIONS.exact(use.name)!);
        if (use.name === 'notrack') return;
        let v = use.values[0] ?? '';
        if (use.name.startsWith('zone')) {
          if (use.name === 'zone-orig') orig = true;
          if (use.name === 'zone-reply') reply = true;
          zone = 0;
          if (v.toLowerCase() === 'mark') zoneMark = true;
          else {
            const r = strtoumax(v);
            if (r === undefined || r.end !== v.length || r.value > 0xffffn) throw paramProblem(`Cannot parse ${v} as a zone ID`, use.argIndex + 1);
            zone = Number(r.value);
          }
          return;
        }
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
        if (zoneMark || zone !== 0) args.push(orig === reply ? '--zone' : orig ? '--zone-orig' : '--zone-reply', zoneMark ? 'mark' : String(zone));
        return { kind: 'CT', notrack: t.has('notrack'), args };
      },
    };
  },
  save: (target, out) => {
    const t = target as CtTarget;
    if (t.notrack) out.push('--notrack');
    for (const w of t.args) out.push(quoteVerbatim(w));
  },
  list: (target) => {
    const t = target as CtTarget;
    const parts = ['CT'];
    if (t.notrack) parts.push('notrack');
    for (const w of t.args) parts.push(w.replace(/^--/, ''));
    return parts.join(' ');
  },
  code: (target, c) => {
    const t = target as CtTarget;
    if (t.notrack) c.op = T_NOTRACK;
    else {
      // Zones, helpers, timeouts and events act on conntrack, which this layer does not model.
      c.op = T_UNKNOWN;
      c.unknownTarget = `target CT ${t.args.join(' ')}`.trimEnd();
    }
  },
};

