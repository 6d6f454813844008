/**
 * @internal `-m tos` and `-j TOS` (libxt_tos, libxt_TOS revision 1): `value/mask` printed as
 * `0x%02x/0x%02x`; a symbolic value (`Minimize-Delay`) has mask 0x3f, a number 0xff;
 * `--and-tos`, `--or-tos` and `--xor-tos` are stored as the `--set-tos` they amount to.
 */
import { paramProblem } from '../failure.ts';
import { hex2, strtoumax, xtInt, type XtDefinition } from './define.ts';

const NAMES: readonly (readonly [string, number])[] = [
  ['Minimize-Delay', 0x10],
  ['Maximize-Throughput', 0x08],
  ['Maximize-Reliability', 0x04],
  ['Minimize-Cost', 0x02],
  ['Normal-Service', 0x00],
];

/**
 * XTTYPE_TOSMASK (xtopt_parse_tosmask): a number (0-255) with an optional `/mask` (mask 0xff by
 * default), or a symbolic name, which takes `symbolMask`.
 */
function tosValue(text: string, symbolMask: number, at?: number): { value: number; mask: number } {
  const v = strtoumax(text);
  if (v !== undefined && v.value <= 0xffn) {
    let mask = 0xff;
    let end = v.end;
    if (text[end] === '/') {
      const m = strtoumax(text, end + 1);
      if (m === undefined || m.value > 0xffn) throw paramProblem(`Illegal value: "${text}"`, at);
      mask = Number(m.value);
      end = m.end;
    }
    if (end !== text.length) throw paramProblem(`Illegal value: "${text}"`, at);
    return { value: Number(v.value), mask };
  }
  const named = NAMES.find(([n]) => n.toLowerCase() === text.toLowerCase());
  if (named === undefined) throw paramProblem(`Symbolic name "${text}" is unknown`, at);
  return { value: named[1], mask: symbolMask };
}

const pair = (v: number, m: number): string => `${hex2(v)}/${hex2(m)}`;

export const TOS_MATCH: XtDefinition = {
  name: 'tos',
  options: [
    {
      name: 'tos',
      args: 1,
      invert: true,
      parse: (v, at) => {
        const t = tosValue(v[0] ?? '', 0x3f, at);
        return [pair(t.value, t.mask)];
      },
    },
  ],
  finish(s) {
    if (!s.has('tos')) s.missing('tos');
  },
  list: (args) => `tos match${args[0] === '!' ? '!' : ''}${args[args.length - 1] ?? ''}`,
};

const TOS_OPS: readonly string[] = ['set-tos', 'and-tos', 'or-tos', 'xor-tos'];

function op(kind: 'set' | 'and' | 'or' | 'xor') {
  return (v: readonly string[], at: number): readonly string[] => {
    if (kind === 'set') {
      const t = tosValue(v[0] ?? '', 0x3f, at);
      return [pair(t.value, t.mask)];
    }
    const n = Number(xtInt('TOS', `${kind}-tos`, v[0] ?? '', 0n, 0xffn, at));
    if (kind === 'and') return [pair(0, ~n & 0xff)];
    if (kind === 'or') return [pair(n, n)];
    return [pair(n, 0)];
  };
}

/** `-j TOS`: every operation stored (and printed) as `--set-tos value/mask`; one operation only. */
export const TOS_TARGET: XtDefinition = {
  name: 'TOS',
  options: TOS_OPS.map((name) => ({ name, args: 1 as const, excl: TOS_OPS, parse: op(name.slice(0, -4) as 'set' | 'and' | 'or' | 'xor') })),
  order: ['set-tos'],
  tables: ['mangle'],
  finish(s) {
    const given = TOS_OPS.filter((o) => s.has(o));
    if (given.length === 0) throw paramProblem('TOS: An action is required');
    if (given.length === 1 && given[0] !== 'set-tos') {
      s.set('set-tos', s.get(given[0] as string)?.values ?? []);
      s.delete(given[0] as string);
    }
  },
  list: (args) => `TOS set ${args[1] ?? ''}`,
};
