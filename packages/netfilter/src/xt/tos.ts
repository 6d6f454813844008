/**
 * @internal `-m tos` and `-j TOS` (libxt_tos, libxt_TOS revision 1): `value/mask` printed as
 * `0x%02x/0x%02x`; a symbolic value (`Minimize-Delay`) has mask 0x3f, a number 0xff;
 * `--and-tos`, `--or-tos` and `--xor-tos` are stored as the `--set-tos` they amount to.
 */
import { paramProblem } from '../failure.ts';
import { hex2, uintBase0, type XtDefinition } from './define.ts';

const NAMES: readonly (readonly [string, number])[] = [
  ['Minimize-Delay', 0x10],
  ['Maximize-Throughput', 0x08],
  ['Maximize-Reliability', 0x04],
  ['Minimize-Cost', 0x02],
  ['Normal-Service', 0x00],
];

function tosValue(text: string, ext: string, opt: string, at: number): { value: number; mask: number } {
  const named = NAMES.find(([n]) => n.toLowerCase() === text.toLowerCase());
  if (named !== undefined) return { value: named[1], mask: 0x3f };
  const slash = text.indexOf('/');
  const value = uintBase0(slash < 0 ? text : text.slice(0, slash));
  const mask = slash < 0 ? 0xff : uintBase0(text.slice(slash + 1));
  if (value === undefined || mask === undefined || value > 0xff || mask > 0xff) {
    throw paramProblem(`${ext}: Bad value for "--${opt}" option: "${text}"`, at);
  }
  return { value, mask };
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
        const t = tosValue(v[0] ?? '', 'tos', 'tos', at);
        return [pair(t.value, t.mask)];
      },
    },
  ],
  finish(s) {
    if (!s.has('tos')) s.missing('tos');
  },
  list: (args) => `tos match${args[0] === '!' ? '!' : ''}${args[args.length - 1] ?? ''}`,
};

function op(kind: 'set' | 'and' | 'or' | 'xor') {
  return (v: readonly string[], at: number): readonly string[] => {
    if (kind === 'set') {
      const t = tosValue(v[0] ?? '', 'TOS', 'set-tos', at);
      return [pair(t.value, t.mask)];
    }
    const n = uintBase0(v[0] ?? '');
    if (n === undefined || n > 0xff) throw paramProblem(`TOS: Bad value for "--${kind}-tos" option: "${v[0] ?? ''}"`, at);
    if (kind === 'and') return [pair(0, ~n & 0xff)];
    if (kind === 'or') return [pair(n, n)];
    return [pair(n, 0)];
  };
}

export const TOS_TARGET: XtDefinition = {
  name: 'TOS',
  options: [
    { name: 'set-tos', args: 1, parse: op('set') },
    { name: 'and-tos', args: 1, as: 'set-tos', parse: op('and') },
    { name: 'or-tos', args: 1, as: 'set-tos', parse: op('or') },
    { name: 'xor-tos', args: 1, as: 'set-tos', parse: op('xor') },
  ],
  tables: ['mangle'],
  finish(s) {
    if (!s.has('set-tos')) throw paramProblem('TOS: An action is required');
  },
  list: (args) => `TOS set ${args[1] ?? ''}`,
};
