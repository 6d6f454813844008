/**
 * @internal
 * `-m comment` (libxt_comment), the whole module: `--comment TEXT`, cut to the kernel's 255 bytes,
 * printed quoted when it needs quotes, listed as C-style comments; it always matches (compiled
 * away).
 */
import { OptionTable, OptionTracker, type ExtensionInstance, type OptionUse } from '../extension.ts';
import type { FastCursor, FastMatchReader } from '../fastCursor.ts';
import type { MatchModule } from '../matches.ts';
import { quoteSaveString } from '../tokenize.ts';
import type { Match } from '../types.ts';

type CommentMatch = Extract<Match, { kind: 'comment' }>;

const COMMENT_OPTIONS = new OptionTable([{ name: 'comment', args: 1 }]);
const COMMENT_MAX_BYTES = 255;

/** Cuts a string to at most `max` UTF-8 bytes without splitting a character (the kernel field size). */
export function truncateUtf8(s: string, max: number): string {
  if (s.length * 3 <= max || Buffer.byteLength(s, 'utf8') <= max) return s;
  let bytes = 0;
  let out = '';
  for (const ch of s) {
    const len = Buffer.byteLength(ch, 'utf8');
    if (bytes + len > max) break;
    bytes += len;
    out += ch;
  }
  return out;
}

class CommentInstance extends OptionTracker implements ExtensionInstance<Match | null> {
  readonly name = 'comment';
  readonly spec = COMMENT_OPTIONS;
  private comment: string | undefined = undefined;
  constructor() {
    super('comment', COMMENT_OPTIONS);
  }
  option(use: OptionUse): void {
    this.use(use, COMMENT_OPTIONS.specs[0]!);
    this.comment = truncateUtf8(use.values[0] ?? '', COMMENT_MAX_BYTES);
  }
  finish(): Match {
    if (this.comment === undefined) this.missing('comment');
    return { kind: 'comment', comment: this.comment };
  }
}

/** Longer words may need truncation checks: left to the general parser. */
const LONG_WORD = 255;

/**
 * The fast reader's `--comment WORD` (quoted without escapes, or bare). It remembers the comment
 * read last when kept whole (kube-proxy gives consecutive rules the same comment) and returns the
 * same object for it, compared in place where it was read.
 */
function fastComment(): FastMatchReader {
  let last: CommentMatch | undefined;
  let lastIn = '';
  let lastAt = 0;
  return (c: FastCursor) => {
    if (!c.word('--comment')) return undefined;
    const s = c.s;
    const n = c.n;
    let from = c.p;
    let to: number;
    let after: number;
    let quoted = false;
    if (s.charCodeAt(from) === 34 /* " */) {
      from++;
      to = s.indexOf('"', from);
      if (to < 0 || to >= n) return undefined; // unterminated: the word takes the newline
      quoted = true;
      after = to + 1;
      if (after < n && s.charCodeAt(after) !== 32) return undefined;
    } else {
      to = c.wordEnd();
      if (to < 0) return undefined;
      after = to;
    }
    const len = to - from;
    if (len > LONG_WORD) return undefined;
    c.next(after);
    if (last !== undefined && last.comment.length === len) {
      if (s === lastIn ? same(s, lastAt, from, len) : s.startsWith(last.comment, from)) return last;
    }
    const text = s.slice(from, to);
    // A backslash is an escape: left to the general parser.
    if (quoted && text.includes('\\')) return undefined;
    const comment = truncateUtf8(text, COMMENT_MAX_BYTES);
    const m: CommentMatch = { kind: 'comment', comment };
    // Compared with the text as written, so only a comment kept whole is remembered.
    last = comment === text ? m : undefined;
    lastIn = s;
    lastAt = from;
    return m;
  };
}

/** Whether `s[a, a + len)` and `s[b, b + len)` are the same text. */
function same(s: string, a: number, b: number, len: number): boolean {
  for (let i = 0; i < len; i++) if (s.charCodeAt(a + i) !== s.charCodeAt(b + i)) return false;
  return true;
}

export const COMMENT_MODULE: MatchModule = {
  name: 'comment',
  kind: 'comment',
  options: COMMENT_OPTIONS,
  create: () => new CommentInstance(),
  save: (m, out) => {
    out.push('-m', 'comment', '--comment', quoteSaveString((m as CommentMatch).comment));
  },
  list: (m) => `/* ${(m as CommentMatch).comment} */`,
  compile: () => null,
  fast: fastComment,
};
