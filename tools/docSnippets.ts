/**
 * The TypeScript code blocks of the user guide (README.md and docs/*.md), as the snippet test
 * type-checks and runs them. A block is fenced with ```ts or ```typescript; words after the
 * language on the fence line are flags:
 * - `no-run`: type-check only (a complete program too slow, or needing a machine, to run in the suite);
 * - `continues`: the block goes on from the file's previous block (a tutorial building on what it
 *   defined): it is checked and run after that block's code;
 * - `in FILE`: the block is a source file of the repository that does not exist yet (a contributor's
 *   example, like a new module): it is compiled with its relative imports resolved from FILE's
 *   directory, and not run;
 * - `excerpt FILE`: the block quotes the repository's own source; each of its lines must appear,
 *   in order, in FILE (so the quote cannot go stale), and it is not compiled on its own;
 * every other block that imports something, and is no test file (no `vitest` or `node:test`
 * import), is run as a program with `node --import tsx`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Snippet {
  /** The markdown file, relative to the repository root. */
  readonly file: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
  /** 1-based index among the file's TypeScript blocks. */
  readonly index: number;
  /** The code checked and run: the block's own, after its predecessors' for `continues`. */
  readonly code: string;
  /** How many lines of `code` come from earlier blocks (`continues`). */
  readonly prefixLines: number;
  readonly flags: readonly string[];
}

/** Every TypeScript block of README.md and docs/*.md, in file order. */
export function docSnippets(root: string): Snippet[] {
  const files = ['README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)];
  const out: Snippet[] = [];
  for (const file of files) {
    const lines = readFileSync(join(root, file), 'utf8').split('\n');
    let index = 0;
    for (let i = 0; i < lines.length; i++) {
      const m = /^(\s*)```(ts|typescript)(?:\s+(.*))?$/.exec(lines[i] ?? '');
      if (m === null) continue;
      const indent = m[1] ?? '';
      const start = i;
      const body: string[] = [];
      for (i++; i < lines.length && !/^\s*```\s*$/.test(lines[i] ?? ''); i++) body.push((lines[i] ?? '').startsWith(indent) ? (lines[i] ?? '').slice(indent.length) : (lines[i] ?? ''));
      index++;
      const flags = (m[3] ?? '').split(/\s+/).filter((w) => w !== '');
      const prev = out.at(-1);
      const prefix = flags.includes('continues') && prev !== undefined && prev.file === file ? prev.code : '';
      out.push({ file, line: start + 1, index, code: `${prefix}${body.join('\n')}\n`, prefixLines: prefix === '' ? 0 : prefix.split('\n').length - 1, flags });
    }
  }
  return out;
}

/** Whether the test runs the block as a program (see the module comment). */
export function runnable(s: Snippet): boolean {
  return !s.flags.includes('no-run') && !s.flags.includes('excerpt') && !s.flags.includes('in') && /^import\s/m.test(s.code) && !/from\s+['"](vitest|node:test)['"]/.test(s.code);
}

/** `docs/engine.md, block 2 (line 40)`: how failures name a block. */
export function describeSnippet(s: Snippet): string {
  return `${s.file}, TypeScript block ${s.index} (line ${s.line})`;
}

/** For an `excerpt FILE` block: the quoted file, or undefined. */
export function excerptOf(s: Snippet): string | undefined {
  const i = s.flags.indexOf('excerpt');
  return i < 0 ? undefined : s.flags[i + 1];
}

/** For an `in FILE` block: the file it stands for, or undefined. */
export function inFileOf(s: Snippet): string | undefined {
  const i = s.flags.indexOf('in');
  return i < 0 ? undefined : s.flags[i + 1];
}
