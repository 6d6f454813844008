/**
 * Words of an `iptables-restore` line, and the quoting `iptables-save` applies to strings.
 *
 * The splitting follows iptables-restore (checked against 1.8.9): blanks (space, tab) separate
 * words; a `"` opens a quoted part inside which blanks are kept and `\` makes the next character
 * literal (`\"`, `\\`, and `\n` is just `n`); a closing `"` ends the word even when more characters
 * follow, so `"abc"def` is two words. `'` is an ordinary character. Outside quotes `\` is literal.
 * A quote left open takes the rest of the line *and its newline* into the word, as the real tool
 * does. A word may be at most 1023 bytes ("Parameter too long!").
 */
import { Failure } from './failure.ts';

/** Words of one line, with the 1-based column where each starts (at its opening quote, if any). */
export interface LineWords {
  readonly words: string[];
  readonly columns: number[];
}

const MAX_PARAM_BYTES = 1023;

/**
 * Splits one line (without its newline) into words. `endsWithNewline` says whether the line was
 * followed by a newline in the input, which an unterminated quote swallows.
 *
 * @example
 * splitRestoreLine('-A INPUT -m comment --comment "a b"').words
 * // ['-A', 'INPUT', '-m', 'comment', '--comment', 'a b']
 */
export function splitRestoreLine(line: string, endsWithNewline = true): LineWords {
  const words: string[] = [];
  const columns: number[] = [];
  splitInto(line, endsWithNewline, words, columns);
  return { words, columns };
}

/**
 * @internal
 * A fixed table of words that recur in every rule (`-A`, `-m`, `--comment`, `tcp`, `ACCEPT`, …).
 * The splitter returns these shared strings instead of slicing a new one for each occurrence:
 * fewer objects for the garbage collector, and option lookups by an already-hashed string.
 */
export class WordTable {
  private readonly slots: (string | undefined)[];
  private readonly mask: number;

  constructor(words: Iterable<string>) {
    const list = [...new Set(words)].filter((w) => w.length > 0 && w.length <= MAX_INTERNED);
    let size = 1;
    while (size < list.length * 4) size <<= 1;
    this.slots = new Array<string | undefined>(size).fill(undefined);
    this.mask = size - 1;
    for (const w of list) {
      let h = 0;
      for (let i = 0; i < w.length; i++) h = (Math.imul(h, 31) + w.charCodeAt(i)) | 0;
      let k = h & this.mask;
      while (this.slots[k] !== undefined) k = (k + 1) & this.mask;
      this.slots[k] = w;
    }
  }

  /** The shared string equal to `line[from, to)` whose hash is `h`, if the table has it. */
  find(line: string, from: number, to: number, h: number): string | undefined {
    const len = to - from;
    let k = h & this.mask;
    for (;;) {
      const w = this.slots[k];
      if (w === undefined) return undefined;
      if (w.length === len && line.startsWith(w, from)) return w;
      k = (k + 1) & this.mask;
    }
  }
}

const MAX_INTERNED = 24;

/**
 * @internal
 * {@link splitRestoreLine} into caller-owned arrays (emptied first), so a reader of a large input
 * can reuse two arrays for every line; words found in `table` come back as its shared strings.
 */
export function splitInto(line: string, endsWithNewline: boolean, words: string[], columns: number[], table?: WordTable): void {
  words.length = 0;
  columns.length = 0;
  const n = line.length;
  let i = 0;
  while (i < n) {
    let c = line.charCodeAt(i);
    if (c === 32 || c === 9) {
      i++;
      continue;
    }
    const start = i;
    // Fast path: a word without quotes is a plain slice (or a shared common word).
    let j = i;
    let h = 0;
    while (j < n) {
      c = line.charCodeAt(j);
      if (c === 32 || c === 9 || c === 34) break;
      h = (Math.imul(h, 31) + c) | 0;
      j++;
    }
    if (j === n || c !== 34) {
      const common = table !== undefined && j - i <= MAX_INTERNED ? table.find(line, i, j, h) : undefined;
      words.push(common ?? line.slice(i, j));
      columns.push(start + 1);
      i = j;
      if (j - start > MAX_PARAM_BYTES / 4) checkLength(words);
      continue;
    }
    // Slow path: the word contains a quote.
    let word = line.slice(i, j);
    i = j;
    while (i < n) {
      c = line.charCodeAt(i);
      if (c === 34) {
        // Opening quote: read to the closing quote, honouring backslash escapes. Runs without
        // escapes are sliced whole (no string built a character at a time).
        i++;
        let open = true;
        let run = i;
        while (i < n) {
          const q = line.charCodeAt(i);
          if (q === 92 /* \ */) {
            word += line.slice(run, i);
            if (i + 1 < n) {
              word += line[i + 1];
              i += 2;
            } else {
              // An escape at the end of the line escapes the newline itself.
              if (endsWithNewline) word += '\n';
              i++;
            }
            run = i;
            continue;
          }
          if (q === 34) {
            word += line.slice(run, i);
            open = false;
            i++;
            break;
          }
          i++;
        }
        if (open) word += line.slice(run, i);
        if (open) {
          if (endsWithNewline && line.charCodeAt(n - 1) !== 92) word += '\n';
        }
        // A closing quote ends the word, whatever follows it.
        break;
      }
      if (c === 32 || c === 9) break;
      word += line[i];
      i++;
    }
    words.push(word);
    columns.push(start + 1);
    if (word.length > MAX_PARAM_BYTES / 4) checkLength(words);
  }
}

/** Throws the real tool's "Parameter too long!" for the last word when it exceeds the buffer. */
function checkLength(words: readonly string[]): void {
  const word = words[words.length - 1] ?? '';
  if (Buffer.byteLength(word, 'utf8') > MAX_PARAM_BYTES) {
    throw new Failure('param', 'Parameter too long!', { argIndex: words.length - 1 });
  }
}

const SAFE = new Uint8Array(128);
for (let c = 48; c <= 57; c++) SAFE[c] = 1;
for (let c = 65; c <= 90; c++) SAFE[c] = 1;
for (let c = 97; c <= 122; c++) SAFE[c] = 1;
SAFE[95] = 1; // _
SAFE[45] = 1; // -

/**
 * A string argument as `iptables-save` prints it: bare when it is non-empty and only
 * `[A-Za-z0-9_-]`, else in double quotes with `"`, `\` and `'` escaped by a backslash.
 *
 * @example
 * quoteSaveString('flanneld masq') // '"flanneld masq"'
 * quoteSaveString('x--y')          // 'x--y'
 */
/** A string option as iptables-save prints string-typed values: always in double quotes. */
export function quoteAlways(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const ch = s[i] as string;
    if (ch === '"' || ch === '\\' || ch === "'") out += '\\';
    out += ch;
  }
  return out + '"';
}

export function quoteSaveString(s: string): string {
  const n = s.length;
  let safe = n > 0;
  for (let i = 0; i < n && safe; i++) {
    const c = s.charCodeAt(i);
    if (c >= 128 || SAFE[c] === 0) safe = false;
  }
  if (safe) return s;
  let out = '"';
  for (let i = 0; i < n; i++) {
    const ch = s[i] as string;
    if (ch === '"' || ch === '\\' || ch === "'") out += '\\';
    out += ch;
  }
  return out + '"';
}

/**
 * Quoting for words netsim keeps verbatim (unknown modules' options): quoted only when the word
 * could not be read back as one word, since the real tool quotes only string-typed options.
 */
export function quoteVerbatim(w: string): string {
  if (w === '') return '""';
  for (let i = 0; i < w.length; i++) {
    const c = w.charCodeAt(i);
    if (c === 32 || c === 9 || c === 34 || c === 39 || c === 92 || c === 10) return quoteSaveString(w);
  }
  return w;
}
