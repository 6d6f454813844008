/**
 * The `nft -f` scanner: turns text into tokens that carry their line and columns, so every error
 * can name the place the real tool names. Words follow nft's scanner: a word starts with a letter
 * or `_` and may go on with letters, digits, `/`, `-`, `_` and `.` (chain names such as
 * `service-ULMVA6XW-ns1/svc1/tcp/p80` are one word); dotted quads are addresses; a number followed by
 * letters is a time (`10800s`, `1h30m`).
 */

export type TokenKind =
  /** A bare word: keyword, identifier, time string. */
  | 'word'
  /** A double-quoted string, `text` without the quotes. */
  | 'string'
  /** A decimal or 0x-hex number. */
  | 'number'
  /** A dotted-quad IPv4 address. */
  | 'addr'
  /** `$name`: `text` is the name. */
  | 'var'
  /** A character nft's scanner cannot place (its `JUNK` token): one character, a syntax error wherever it is. */
  | 'junk'
  /** One of `{ } ( ) ; : , . - / @ = ! & | ^ * + < > == != <= >=`. */
  | 'punct'
  | 'newline'
  | 'eof';

export interface Token {
  readonly kind: TokenKind;
  readonly text: string;
  /** 1-based line. */
  readonly line: number;
  /** 1-based first column. */
  readonly col: number;
  /** 1-based last column (inclusive), as nft prints `LINE:COL-ENDCOL`. */
  readonly endCol: number;
}

const PUNCT2: ReadonlySet<string> = new Set(['==', '!=', '<=', '>=']);
const PUNCT1: ReadonlySet<string> = new Set(['{', '}', '(', ')', ';', ':', ',', '.', '-', '/', '@', '=', '!', '&', '|', '^', '*', '+', '<', '>']);

/** The one-character punctuation, by character code (no string is cut out per token). */
const PUNCT_BY_CODE: readonly (string | undefined)[] = (() => {
  const t: (string | undefined)[] = [];
  for (const p of PUNCT1) t[p.charCodeAt(0)] = p;
  return t;
})();

function isHexDigit(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);
}

/** The end of a dotted quad (`d+.d+.d+.d+`) starting at `i`, or 0 when there is none. */
function dottedQuadEnd(text: string, i: number, n: number): number {
  let j = i;
  for (let part = 0; part < 4; part++) {
    if (part > 0) {
      if (text.charCodeAt(j) !== 46) return 0;
      j++;
    }
    const start = j;
    while (j < n && isDigit(text.charCodeAt(j))) j++;
    if (j === start) return 0;
  }
  return j;
}

function isLetter(c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
}
function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}
function isWordChar(c: number): boolean {
  return isLetter(c) || isDigit(c) || c === 47 /* / */ || c === 45 /* - */ || c === 95 /* _ */ || c === 46 /* . */;
}

/** A character the scanner cannot place (no longer thrown: the scanner returns a `junk` token, as nft's does). */
export class ScanError extends Error {
  constructor(
    readonly line: number,
    readonly col: number,
  ) {
    super('syntax error, unexpected junk');
  }
}

/** Splits `text` into tokens; the last is always `eof`. */
export function tokenize(text: string): Token[] {
  const lexer = new Lexer(text);
  const out: Token[] = [];
  for (;;) {
    const t = lexer.next();
    out.push(t);
    if (t.kind === 'eof') return out;
  }
}

function token(kind: TokenKind, text: string, line: number, col: number, endCol: number): Token {
  return { kind, text, line, col, endCol };
}

/**
 * The scanner as a stream: {@link Lexer.next} cuts one token at a time, so a parser holds only
 * the tokens it looks at (a whole file's tokens would otherwise live through every young-generation
 * collection of a long parse). A character nft cannot place is a `junk` token.
 *
 * Lines and columns are counted as nft's scanner counts them: a quoted string runs to the next
 * double quote, across newlines, and its newlines do not start a line (the columns run on from
 * where the string started, one per character). Every line after such a string is then numbered
 * one less per newline it held; {@link Lexer.lineMap} gives the line of the text nft prints for
 * each line number it reports.
 */
export class Lexer {
  private i = 0;
  private line = 1;
  private lineStart = 0;
  private readonly n: number;
  /** The text's line (1-based) where each reported line starts, once a string spanned lines. */
  private map: number[] | undefined;
  /** Newlines swallowed by quoted strings so far. */
  private swallowed = 0;

  constructor(private readonly text: string) {
    this.n = text.length;
  }

  /**
   * For each line number nft reports, the line of the text it prints (they differ after a quoted
   * string that spans lines); undefined while they are the same.
   */
  get lineMap(): readonly number[] | undefined {
    return this.map;
  }

  next(): Token {
    const text = this.text;
    const n = this.n;
    let i = this.i;
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 32 || c === 9 || c === 13) {
        i++;
        continue;
      }
      if (c === 92 /* \ */ && text.charCodeAt(i + 1) === 10) {
        i += 2;
        this.line++;
        this.lineStart = i;
        if (this.map !== undefined) this.map[this.line] = this.line + this.swallowed;
        continue;
      }
      const line = this.line;
      const ls = this.lineStart;
      if (c === 10) {
        this.i = i + 1;
        this.line++;
        this.lineStart = i + 1;
        if (this.map !== undefined) this.map[this.line] = this.line + this.swallowed;
        return token('newline', '\n', line, i - ls + 1, i + 1 - ls);
      }
      if (c === 35 /* # */) {
        while (i < n && text.charCodeAt(i) !== 10) i++;
        continue;
      }
      if (c === 34 /* " */) {
        // nft's `\"[^"]*\"`: to the next double quote, newlines included; without one, the
        // quote is junk and the scanner goes on after it.
        const j = text.indexOf('"', i + 1);
        if (j < 0) {
          this.i = i + 1;
          return token('junk', '"', line, i - ls + 1, i - ls + 1);
        }
        this.i = j + 1;
        const body = text.slice(i + 1, j);
        let nl = body.indexOf('\n');
        if (nl >= 0) {
          if (this.map === undefined) {
            this.map = [];
            for (let l = 0; l <= this.line; l++) this.map[l] = l;
          }
          while (nl >= 0) {
            this.swallowed++;
            nl = body.indexOf('\n', nl + 1);
          }
        }
        return token('string', body, line, i - ls + 1, j + 1 - ls);
      }
      if (c === 36 /* $ */) {
        let j = i + 1;
        while (j < n && (isLetter(text.charCodeAt(j)) || isDigit(text.charCodeAt(j)) || text.charCodeAt(j) === 95)) j++;
        this.i = j;
        return token('var', text.slice(i + 1, j), line, i - ls + 1, j - ls);
      }
      if (isDigit(c)) {
        let j = i;
        if (c === 48 && (text.charCodeAt(i + 1) === 120 || text.charCodeAt(i + 1) === 88)) {
          j = i + 2;
          while (j < n && isHexDigit(text.charCodeAt(j))) j++;
          this.i = j;
          return token('number', text.slice(i, j), line, i - ls + 1, j - ls);
        }
        const quadEnd = dottedQuadEnd(text, i, n);
        if (quadEnd > 0) {
          this.i = quadEnd;
          return token('addr', text.slice(i, quadEnd), line, i - ls + 1, quadEnd - ls);
        }
        while (j < n && isDigit(text.charCodeAt(j))) j++;
        this.i = j;
        if (j < n && isLetter(text.charCodeAt(j))) {
          while (j < n && (isLetter(text.charCodeAt(j)) || isDigit(text.charCodeAt(j)))) j++;
          this.i = j;
          return token('word', text.slice(i, j), line, i - ls + 1, j - ls);
        }
        return token('number', text.slice(i, j), line, i - ls + 1, j - ls);
      }
      if (isLetter(c) || c === 95) {
        let j = i + 1;
        while (j < n && isWordChar(text.charCodeAt(j))) j++;
        // A trailing dot belongs to the next token (`tcp. 80` is rare; `a . b` is the norm).
        while (j > i + 1 && text.charCodeAt(j - 1) === 46) j--;
        this.i = j;
        return token('word', text.slice(i, j), line, i - ls + 1, j - ls);
      }
      if (c === 46 /* . */ && i + 1 < n && isWordChar(text.charCodeAt(i + 1))) {
        // nft's scanner: a string may start with a dot, and the longest match wins, so `.6.7`
        // (as in `5.6.7`, the number 5 then this) is one string; a dot alone is the concatenation.
        let j = i + 1;
        while (j < n && isWordChar(text.charCodeAt(j))) j++;
        this.i = j;
        return token('word', text.slice(i, j), line, i - ls + 1, j - ls);
      }
      if (text.charCodeAt(i + 1) === 61 /* = */ && (c === 61 || c === 33 || c === 60 || c === 62)) {
        const two = PUNCT2_BY_CODE[c] as string;
        this.i = i + 2;
        return token('punct', two, line, i - ls + 1, i + 2 - ls);
      }
      const one = PUNCT_BY_CODE[c];
      if (one !== undefined) {
        this.i = i + 1;
        return token('punct', one, line, i - ls + 1, i + 1 - ls);
      }
      this.i = i + 1;
      return token('junk', text[i] as string, line, i - ls + 1, i - ls + 1);
    }
    this.i = i;
    const col = i - this.lineStart + 1;
    return token('eof', '', this.line, col, col);
  }
}

/** `==`, `!=`, `<=`, `>=` by their first character. */
const PUNCT2_BY_CODE: readonly (string | undefined)[] = (() => {
  const t: (string | undefined)[] = [];
  for (const p of PUNCT2) t[p.charCodeAt(0)] = p;
  return t;
})();
