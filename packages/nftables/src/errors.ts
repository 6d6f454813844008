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

  constructor(file: string, source: string, diagnostics: readonly Diagnostic[]) {
    const first = diagnostics[0];
    if (first === undefined) throw new Error('NftError needs at least one diagnostic');
    const lines = source.split('\n');
    const token = (lines[first.span.line - 1] ?? '').slice(first.span.col - 1, first.span.endCol);
    super(`${file}:${first.span.line}:${first.span.col}: ${first.message} (at "${token}")`);
    this.code = first.code;
    this.diagnostics = diagnostics;
    this.location = { file, line: first.span.line, column: first.span.col, token };
    this.stderr = diagnostics.map((d) => formatDiagnostic(file, lines, d)).join('');
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
export function formatDiagnostic(file: string, lines: readonly string[], d: Diagnostic): string {
  // At the end of a file that ends in a newline, nft shows the last line.
  const atEnd = d.span.line === lines.length && lines[lines.length - 1] === '' && lines.length > 1;
  const src = (atEnd ? lines[lines.length - 2] : lines[d.span.line - 1]) ?? '';
  return `${file}:${d.span.line}:${d.span.col}-${d.span.endCol}: Error: ${d.message}\n${src}\n${marker(src, d)}\n`;
}
