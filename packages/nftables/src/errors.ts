/**
 * Typed errors with nft's own text. `nft -f` prints every error of a transaction as
 *
 *     FILE:LINE:COL-ENDCOL: Error: MESSAGE
 *     <the source line>
 *     <spaces, then ^^^ under the offending range, ~~~ under a related one>
 *
 * An {@link NftError} carries those messages (`diagnostics`) and the exact text (`stderr`).
 */

/** What failed: the scanner/parser, userspace evaluation, or the kernel at commit. */
export type NftErrorCode = 'syntax' | 'eval' | 'kernel' | 'unsupported';

/** A source range; lines and columns are 1-based, `endCol` inclusive. */
export interface Span {
  readonly line: number;
  readonly col: number;
  readonly endCol: number;
}

/** One `Error:` entry as nft prints it. */
export interface Diagnostic {
  readonly code: NftErrorCode;
  readonly span: Span;
  readonly message: string;
  /** A related range nft underlines with `~` (e.g. the earlier of two conflicting intervals). */
  readonly related?: Span;
}

export class NftError extends Error {
  override readonly name = 'NftError';
  /** The first diagnostic's code. */
  readonly code: NftErrorCode;
  readonly diagnostics: readonly Diagnostic[];
  /** What `nft -f FILE` prints on stderr for this input. */
  readonly stderr: string;
  /** nft's exit status (1). */
  readonly exitCode = 1;
  /** Where the first error is (line, column and the offending token). */
  readonly location: { readonly file: string; readonly line: number; readonly column: number; readonly token: string };

  /**
   * `lineMap[n]`: the line of `source` nft prints for an error it reports at line `n` (they differ
   * after a quoted string that spans lines; see the scanner).
   */
  constructor(file: string, source: string, diagnostics: readonly Diagnostic[], lineMap?: readonly number[]) {
    const first = diagnostics[0];
    if (first === undefined) throw new Error('NftError needs at least one diagnostic');
    const lines = source.split('\n');
    const token = (lines[(lineMap?.[first.span.line] ?? first.span.line) - 1] ?? '').slice(first.span.col - 1, first.span.endCol);
    super(`${file}:${first.span.line}:${first.span.col}: ${first.message} (at "${token}")`);
    this.code = first.code;
    this.diagnostics = diagnostics;
    this.location = { file, line: first.span.line, column: first.span.col, token };
    this.stderr = diagnostics.map((d) => formatDiagnostic(file, lines, d, lineMap)).join('');
  }
}

export function isNftError(e: unknown): e is NftError {
  return e instanceof NftError;
}

function marker(src: string, d: Diagnostic): string {
  const width = Math.max(src.length, d.span.endCol, d.related?.endCol ?? 0);
  const out: string[] = [];
  for (let c = 1; c <= width; c++) {
    const ch = src[c - 1];
    if (c >= d.span.col && c <= d.span.endCol) out.push('^');
    else if (d.related !== undefined && d.related.line === d.span.line && c >= d.related.col && c <= d.related.endCol) out.push('~');
    else out.push(ch === '\t' ? '\t' : ' ');
  }
  return out.join('').replace(/\s+$/, '');
}

/** One diagnostic in nft's layout. */
export function formatDiagnostic(file: string, lines: readonly string[], d: Diagnostic, lineMap?: readonly number[]): string {
  const line = lineMap?.[d.span.line] ?? d.span.line;
  // At the end of a file that ends in a newline, nft shows the last line.
  const atEnd = line === lines.length && lines[lines.length - 1] === '' && lines.length > 1;
  const src = (atEnd ? lines[lines.length - 2] : lines[line - 1]) ?? '';
  return `${file}:${d.span.line}:${d.span.col}-${d.span.endCol}: Error: ${d.message}\n${src}\n${marker(src, d)}\n`;
}

/**
 * nft's string distance (src/misspell.c): optimal string alignment, with its indexing kept as it
 * is there (position i of the table compares the characters after it, the string's NUL last).
 */
export function misspellDistance(a: string, b: string): number {
  const la = a.length;
  const lb = b.length;
  const at = (s: string, i: number): number => (i < s.length ? s.charCodeAt(i) : 0);
  const d: number[][] = [];
  for (let i = 0; i <= la; i++) d.push(new Array<number>(lb + 1).fill(0));
  const row = (i: number): number[] => d[i] as number[];
  for (let i = 0; i <= la; i++) row(i)[0] = i;
  for (let j = 0; j <= lb; j++) row(0)[j] = j;
  for (let i = 1; i <= la; i++) {
    for (let j = 1; j <= lb; j++) {
      const subcost = at(a, i) === at(b, j) ? 0 : 1;
      let v = Math.min((row(i - 1)[j] as number) + 1, (row(i)[j - 1] as number) + 1, (row(i - 1)[j - 1] as number) + subcost);
      if (i > 1 && j > 1 && at(a, i) === at(b, j - 1) && at(a, i - 1) === at(b, j)) v = Math.min(v, (row(i - 2)[j - 2] as number) + subcost);
      row(i)[j] = v;
    }
  }
  return row(la)[lb] as number;
}

/** The closest of `names` to `wanted` by nft's rule (string_misspell_update), or undefined. */
export function closest<T>(wanted: string, candidates: readonly (readonly [string, T])[]): T | undefined {
  let best: T | undefined;
  let min = Infinity;
  for (const [name, obj] of candidates) {
    const maxLen = Math.max(name.length, wanted.length);
    const minLen = Math.min(name.length, wanted.length);
    if (maxLen <= 1) continue;
    const threshold = maxLen - minLen <= 1 ? Math.max(Math.ceil(maxLen / 3), 1) : Math.ceil((maxLen + 2) / 3);
    const dist = misspellDistance(name, wanted);
    if (dist > threshold) continue;
    if (dist < min) {
      min = dist;
      best = obj;
    }
  }
  return best;
}
