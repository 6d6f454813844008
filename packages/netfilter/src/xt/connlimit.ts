/**
 * @internal `-m connlimit` (libxt_connlimit): printed with its defaults, `--connlimit-mask 32`
 * and `--connlimit-saddr`.
 */
import { paramProblem } from '../failure.ts';
import { argOf, uintBase0, type XtDefinition } from './define.ts';

const count = (v: readonly string[], at: number): readonly string[] => {
  const n = uintBase0(v[0] ?? '');
  if (n === undefined || n > 0xffffffff) throw paramProblem(`connlimit: bad value for option "--connlimit-above", or out of range (0-4294967295).\n`, at);
  return [String(n)];
};

export const CONNLIMIT: XtDefinition = {
  name: 'connlimit',
  options: [
    { name: 'connlimit-upto', args: 1, invert: true, parse: count },
    { name: 'connlimit-above', args: 1, invert: true, parse: count },
    {
      name: 'connlimit-mask',
      args: 1,
      parse: (v, at) => {
        const n = uintBase0(v[0] ?? '');
        if (n === undefined || n > 32) throw paramProblem('connlimit: bad value for option "--connlimit-mask", or out of range (0-32).\n', at);
        return [String(n)];
      },
    },
    { name: 'connlimit-saddr', args: 0 },
    { name: 'connlimit-daddr', args: 0 },
  ],
  order: ['connlimit-upto', 'connlimit-above', 'connlimit-mask', 'connlimit-saddr', 'connlimit-daddr'],
  finish(s) {
    if (!s.has('connlimit-upto') && !s.has('connlimit-above')) throw paramProblem('You must specify "--connlimit-above" or "--connlimit-upto".');
    // One inversion flag: `! --connlimit-upto N` is `--connlimit-above N` and the other way round.
    for (const [name, other] of [['connlimit-upto', 'connlimit-above'], ['connlimit-above', 'connlimit-upto']] as const) {
      const v = s.get(name);
      if (v?.invert === true) {
        s.delete(name);
        s.set(other, v.values);
      }
    }
    if (!s.has('connlimit-mask')) s.set('connlimit-mask', ['32']);
    if (!s.has('connlimit-daddr')) s.set('connlimit-saddr', []);
  },
  list(args) {
    const upto = argOf(args, 'connlimit-upto');
    const n = upto?.value ?? argOf(args, 'connlimit-above')?.value ?? '';
    return `#conn ${args.includes('--connlimit-daddr') ? 'dst' : 'src'}/${argOf(args, 'connlimit-mask')?.value ?? '32'} ${upto !== undefined ? '<=' : '>'} ${n}`;
  },
};
