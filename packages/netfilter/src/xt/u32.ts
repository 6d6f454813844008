/**
 * @internal `-m u32 --u32 TESTS` (libxt_u32): the tests are read (`&&`-separated `location=ranges`)
 * and printed back quoted with every number in hex (`0>>22&0x3C` prints `0x0>>0x16&0x3c`).
 */
import { paramProblem } from '../failure.ts';
import { strtoumax, type XtDefinition } from './define.ts';

const hex = (n: number): string => `0x${n.toString(16)}`;

const MAXSIZE = 10;

/**
 * u32_parse's reader: tests of `location=ranges` joined by `&&`, the location numbers joined by
 * `&`, `<<`, `>>` or `@`, the ranges `n[:m]` by `,`; blanks allowed between the parts. Printed
 * with every number in hex, as libxt_u32 prints them.
 */
function canonical(text: string, at: number): string {
  const fail = (msg: string): never => {
    throw paramProblem(`u32: ${msg}`, at);
  };
  const isSpace = (c: string | undefined): boolean => c !== undefined && /[ \t\n\v\f\r]/.test(c);
  let i = 0;
  const num = (): number => {
    const pos = i;
    const r = strtoumax(text, i);
    if (r === undefined || r.value > 0xffffffffn) fail(`at char ${pos}: not a number or out of range`);
    i = (r as { end: number }).end;
    return Number((r as { value: bigint }).value);
  };
  const tests: string[] = [];
  let loc = '';
  let locind = 0;
  let vals: string[] = [];
  let state = 0;
  for (;;) {
    while (isSpace(text[i])) i++;
    if (i >= text.length) {
      if (state === 0) fail('abrupt end of input after location specifier');
      if (vals.length === 0) fail('test ended with no value specified');
      tests.push(`${loc}=${vals.join(',')}`);
      if (tests.length > MAXSIZE) fail(`at char ${i}: too many "&&"s`);
      return tests.join('&&');
    }
    const c = text[i];
    if (state === 0) {
      if (c === '=') {
        if (locind === 0) fail(`at char ${i}: location spec missing`);
        i++;
        state = 1;
        continue;
      }
      if (locind !== 0) {
        let op: string;
        if (c === '&') op = '&';
        else if (c === '<' || c === '>') {
          if (text[++i] !== c) fail(`at char ${i}: a second '${c}' was expected`);
          op = c + c;
        } else if (c === '@') op = '@';
        else return fail(`at char ${i}: operator expected`);
        i++;
        loc += op;
      }
      loc += hex(num());
      if (++locind > MAXSIZE) fail(`at char ${i}: too many operators`);
    } else if (c === '&') {
      if (text[++i] !== '&') fail(`at char ${i}: a second '&' was expected`);
      if (vals.length === 0) fail(`at char ${i}: value spec missing`);
      tests.push(`${loc}=${vals.join(',')}`);
      if (tests.length > MAXSIZE) fail(`at char ${i}: too many "&&"s`);
      i++;
      state = 0;
      loc = '';
      locind = 0;
      vals = [];
    } else {
      if (vals.length > 0) {
        if (c !== ',') fail(`at char ${i}: expected "," or "&&"`);
        i++;
      }
      const min = num();
      while (isSpace(text[i])) i++;
      let max = min;
      if (text[i] === ':') {
        i++;
        max = num();
      }
      vals.push(min === max ? hex(min) : `${hex(min)}:${hex(max)}`);
      if (vals.length > MAXSIZE) fail(`at char ${i}: too many ","s`);
    }
  }
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
