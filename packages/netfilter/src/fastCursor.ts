/**
 * @internal
 * What an extension module's fast-path reader sees of a rule line being read in place by the
 * fast reader (src/fastRule.ts): the line, the read position and small readers of words and
 * numbers. Each module that has one gives its reader as `fast` (`MatchModule.fast`,
 * `TargetModule.fast`), so the fast reader knows an extension through its module alone.
 *
 * A reader returns the match or target read and leaves the position after it (and the single
 * space after that), or returns undefined for anything not in the canonical form `iptables-save`
 * prints — then the line goes to the general parser, the reference, which the fast reader must
 * equal (test/fastRule.test.ts).
 */
import type { Match, TableName, Target } from './types.ts';

export interface FastCursor {
  /** The input, the end of the current line, the read position. */
  readonly s: string;
  readonly n: number;
  p: number;
  /** Results of {@link digits} and {@link quad}. */
  readonly num: number;
  readonly addr: number;
  /** End of the plain word at the read position (no quote, no tab, not too long), or -1. */
  wordEnd(): number;
  /** Moves past the word ending at `end` and the single space after it. */
  next(end: number): void;
  /** True and moves on when the next word is exactly `word`. */
  word(word: string): boolean;
  /** The code of `s[i]`, or 32 (a blank) at the end of the line. */
  at(i: number): number;
  /** An unsigned decimal at `i` without leading zeros, at most `max`, into {@link num}: the index after it, or -1. */
  digits(i: number, max: number): number;
  /** A dotted quad at `i` into {@link addr}: the index after it, or -1. */
  quad(i: number): number;
}

/** The rule being read, as far as a reader needs it: its `-p` (0: none) and table. */
export interface FastContext {
  readonly proto: number;
  readonly protoNegate: boolean;
  readonly table: TableName;
}

/** One reader per fast reader (it may keep small caches of the immutable pieces it makes). */
export type FastMatchReader = (c: FastCursor, ctx: FastContext) => Match | undefined;
export type FastTargetReader = (c: FastCursor, ctx: FastContext) => Target | undefined;
