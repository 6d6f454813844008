/**
 * @internal
 * `-m comment` (libxt_comment), the whole module: `--comment TEXT`, cut to the kernel's 255 bytes,
 * printed quoted when it needs quotes, listed as C-style comments; it always matches (compiled
 * away).
 */
import { OptionTable, OptionTracker, type ExtensionInstance, type OptionUse } from '../extension.ts';
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
};
