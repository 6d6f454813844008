/**
 * @internal `-m string` (libxt_string): the pattern is printed quoted, as `--string` when every
 * byte is printable and as `--hex-string "|…|"` (all bytes in hex) otherwise, then `--algo`,
 * `--from` and `--to` when not the defaults (0, 65535), then `--icase`.
 */
import { paramProblem } from '../failure.ts';
import { argOf, uintBase0, type XtDefinition } from './define.ts';

/** `|41 42|ab` → the bytes, as the tool's parse_hex_string reads them. */
function hexBytes(text: string, at: number): number[] {
  const out: number[] = [];
  let hex = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (c === '|') {
      hex = !hex;
      continue;
    }
    if (c === '\\' && !hex && i + 1 < text.length) {
      out.push(text.charCodeAt(++i));
      continue;
    }
    if (hex) {
      if (c === ' ') continue;
      const pair = text.slice(i, i + 2);
      if (!/^[0-9a-fA-F]{2}$/.test(pair)) throw paramProblem('Invalid hex char', at);
      out.push(parseInt(pair, 16));
      i++;
    } else out.push(text.charCodeAt(i));
  }
  if (hex) throw paramProblem('Invalid hex block', at);
  return out;
}

export const STRING: XtDefinition = {
  name: 'string',
  options: [
    { name: 'from', args: 1, parse: (v, at) => [String(offset(v, at, 'from'))] },
    { name: 'to', args: 1, parse: (v, at) => [String(offset(v, at, 'to'))] },
    { name: 'algo', args: 1, mand: true, parse: (v, at) => {
      const a = v[0] ?? '';
      if (a !== 'bm' && a !== 'kmp') throw paramProblem(`string: Bad value for "--algo" option: "${a}"`, at);
      return [a];
    } },
    { name: 'string', args: 1, invert: true, parse: (v, at) => [pattern(v[0] ?? '', at)] },
    { name: 'hex-string', args: 1, invert: true, as: 'string', parse: (v, at) => [pattern(String.fromCharCode(...hexBytes(v[0] ?? '', at)), at)] },
    { name: 'icase', args: 0 },
  ],
  order: ['string', 'hex-string', 'algo', 'from', 'to', 'icase'],
  list(args) {
    const str = argOf(args, 'string') ?? argOf(args, 'hex-string');
    let t = `STRING match ${str?.invert === true ? '!' : ''} "${str?.value ?? ''}" ALGO name ${argOf(args, 'algo')?.value ?? ''}`;
    const from = argOf(args, 'from');
    if (from !== undefined) t += ` FROM ${from.value}`;
    const to = argOf(args, 'to');
    if (to !== undefined) t += ` TO ${to.value}`;
    if (args.includes('--icase')) t += ' ICASE';
    return t;
  },
  quoted: ['string', 'hex-string'],
  finish(s) {
    const str = s.get('string');
    if (str === undefined) throw paramProblem("STRING match: You must specify `--string' or `--hex-string'");
    const text = str.values[0] ?? '';
    s.delete('string');
    let printable = true;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c < 0x20 || c > 0x7e) printable = false;
    }
    // Keep the given position of the option: re-insert at the front.
    const rest = [...s.given];
    s.given.clear();
    if (printable) s.given.set('string', { invert: str.invert, values: [text], argIndex: str.argIndex });
    else {
      let hex = '|';
      for (let i = 0; i < text.length; i++) hex += text.charCodeAt(i).toString(16).padStart(2, '0');
      s.given.set('hex-string', { invert: str.invert, values: [`${hex}|`], argIndex: str.argIndex });
    }
    for (const [k, v] of rest) s.given.set(k, v);
    if (s.value('from') === '0') s.delete('from');
    if (s.value('to') === '65535') s.delete('to');
  },
};

/** XT_STRING_MAX_PATTERN_SIZE: at most 128 bytes. */
function pattern(text: string, at: number): string {
  if (Buffer.byteLength(text, 'latin1') > 128) throw paramProblem(`STRING too long "${text}"`, at);
  return text;
}

function offset(v: readonly string[], at: number, opt: string): number {
  const n = uintBase0(v[0] ?? '');
  if (n === undefined || n > 65535) throw paramProblem(`string: bad value for option "--${opt}", or out of range (0-65535).\n`, at);
  return n;
}
