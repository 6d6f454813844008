/**
 * @internal `-m connbytes` (libxt_connbytes): printed `--connbytes FROM[:TO] --connbytes-mode M
 * --connbytes-dir D`; an open upper end prints as the lower bound alone.
 */
import { paramProblem } from '../failure.ts';
import { argOf, uintMax, xtMint, type XtDefinition } from './define.ts';

const U64 = uintMax(64);

export const CONNBYTES: XtDefinition = {
  name: 'connbytes',
  options: [
    {
      name: 'connbytes',
      args: 1,
      invert: true,
      parse: (v, at) => {
        const [from = 0n, to = U64] = xtMint('connbytes', 'connbytes', v[0] ?? '', U64, at);
        if (to < from) throw paramProblem(`${from} should be less than ${to}`, at);
        return [to === U64 ? String(from) : `${from}:${to}`];
      },
    },
    { name: 'connbytes-dir', args: 1, parse: oneOf('connbytes-dir', ['original', 'reply', 'both']) },
    { name: 'connbytes-mode', args: 1, parse: oneOf('connbytes-mode', ['packets', 'bytes', 'avgpkt']) },
  ],
  order: ['connbytes', 'connbytes-mode', 'connbytes-dir'],
  finish(s) {
    if (!s.has('connbytes')) s.missing('connbytes');
    if (!s.has('connbytes-dir')) s.missing('connbytes-dir');
    if (!s.has('connbytes-mode')) s.missing('connbytes-mode');
  },
  list(args) {
    const c = argOf(args, 'connbytes');
    return `${c?.invert === true ? '! ' : ''}connbytes ${c?.value ?? ''} connbytes mode ${argOf(args, 'connbytes-mode')?.value ?? ''} connbytes direction ${argOf(args, 'connbytes-dir')?.value ?? ''}`;
  },
};

function oneOf(opt: string, words: readonly string[]) {
  return (v: readonly string[], at: number): readonly string[] => {
    const w = v[0] ?? '';
    if (!words.includes(w)) throw paramProblem(`Unknown --${opt} \`${w}'`, at);
    return [w];
  };
}
