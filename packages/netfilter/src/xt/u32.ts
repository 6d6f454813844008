/**
 * @internal `-m u32 --u32 TESTS` (libxt_u32): the tests are read (`&&`-separated `location=ranges`)
 * and printed back quoted with every number in hex (`0>>22&0x3C` prints `0x0>>0x16&0x3c`).
 */
import { paramProblem } from '../failure.ts';
import type { XtDefinition } from './define.ts';

const hex = (n: number): string => `0x${n.toString(16)}`;

function number(text: string, at: number): number {
  const t = text.trim();
  const n = /^0[xX][0-9a-fA-F]+$/.test(t) ? parseInt(t.slice(2), 16) : /^0[0-7]*$/.test(t) ? parseInt(t, 8) : /^[1-9][0-9]*$/.test(t) ? Number(t) : undefined;
  if (n === undefined || n > 0xffffffff) throw paramProblem(`u32: at char 0: expected number`, at);
  return n;
}

function canonical(text: string, at: number): string {
  const tests = text.replace(/\s+/g, '').split('&&');
  return tests
    .map((test) => {
      const eq = test.indexOf('=');
      if (eq < 0) throw paramProblem('u32: at char 0: missing "=" sign', at);
      const loc = test.slice(0, eq);
      const parts = loc.split(/(<<|>>|&|@)/);
      let out = hex(number(parts[0] ?? '', at));
      for (let k = 1; k + 1 < parts.length; k += 2) out += `${parts[k] ?? ''}${hex(number(parts[k + 1] ?? '', at))}`;
      const ranges = test
        .slice(eq + 1)
        .split(',')
        .map((r) => {
          const colon = r.indexOf(':');
          if (colon < 0) return hex(number(r, at));
          const a = number(r.slice(0, colon), at);
          const b = number(r.slice(colon + 1), at);
          return a === b ? hex(a) : `${hex(a)}:${hex(b)}`;
        });
      return `${out}=${ranges.join(',')}`;
    })
    .join('&&');
}

export const U32: XtDefinition = {
  name: 'u32',
  options: [{ name: 'u32', args: 1, invert: true, parse: (v, at) => [canonical(v[0] ?? '', at)] }],
  quoted: ['u32'],
  list: (args) => `u32 ${args[0] === '!' ? '! ' : ''}"${args[args.length - 1] ?? ''}"`,
  finish(s) {
    if (!s.has('u32')) s.missing('u32');
  },
};
