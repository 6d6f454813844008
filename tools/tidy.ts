/**
 * The tidy check (after TigerBeetle's tidy.zig): library sources must not read the wall clock,
 * draw unseeded randomness or use real timers, because any of those breaks "same seed, same
 * trace". Each banned pattern names its replacement. A line may opt out only with a comment
 * `tidy-allow: <reason>` on the same line, which keeps every exception visible and justified.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

export interface TidyBan {
  readonly pattern: RegExp;
  readonly what: string;
  readonly instead: string;
}

export const TIDY_BANS: readonly TidyBan[] = [
  { pattern: /\bMath\.random\b/, what: 'Math.random', instead: 'draw from the seeded PRNG (pure-rand) the simulator owns' },
  { pattern: /\bDate\.now\b/, what: 'Date.now', instead: 'read the simulated clock' },
  { pattern: /\bnew Date\b/, what: 'new Date', instead: 'read the simulated clock' },
  { pattern: /\bperformance\.now\b/, what: 'performance.now', instead: 'read the simulated clock' },
  { pattern: /\bprocess\.hrtime\b/, what: 'process.hrtime', instead: 'read the simulated clock' },
  { pattern: /\bsetTimeout\s*\(/, what: 'setTimeout', instead: 'schedule a step on the simulated clock' },
  { pattern: /\bsetInterval\s*\(/, what: 'setInterval', instead: 'schedule a step on the simulated clock' },
  { pattern: /\bsetImmediate\s*\(/, what: 'setImmediate', instead: 'schedule a step on the simulated clock' },
  { pattern: /\bcrypto\.(randomUUID|getRandomValues|randomBytes)\b/, what: 'crypto randomness', instead: 'take ids from the simulation id source' },
];

export interface TidyViolation {
  readonly file: string;
  readonly line: number;
  readonly text: string;
  readonly what: string;
  readonly instead: string;
}

function* walk(dir: string): Generator<string> {
  for (const name of readdirSync(dir).sort()) {
    if (name === 'node_modules' || name === 'dist') continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) yield* walk(p);
    else if (/\.(ts|mts|js|mjs)$/.test(name)) yield p;
  }
}

/** Library sources: every `packages/<pkg>/src` except the CLI, whose progress bars may read time. */
export function librarySourceFiles(root: string): string[] {
  const pkgs = join(root, 'packages');
  const files: string[] = [];
  for (const pkg of readdirSync(pkgs).sort()) {
    if (pkg === 'cli') continue;
    const src = join(pkgs, pkg, 'src');
    try {
      if (!statSync(src).isDirectory()) continue;
    } catch {
      continue; // a package without src/ has no library code to check
    }
    files.push(...walk(src));
  }
  return files;
}

export function checkSource(file: string, text: string): TidyViolation[] {
  const out: TidyViolation[] = [];
  const lines = text.split('\n');
  lines.forEach((line, i) => {
    if (line.includes('tidy-allow:')) return;
    for (const ban of TIDY_BANS) {
      if (ban.pattern.test(line)) {
        out.push({ file, line: i + 1, text: line.trim(), what: ban.what, instead: ban.instead });
      }
    }
  });
  return out;
}

const MUTABLE_CONSTRUCTORS = new Set(['Map', 'Set', 'WeakMap', 'WeakSet', 'Array']);

/** The initializer under `as`, `satisfies` and parentheses, and whether it was `as const`. */
function unwrap(e: ts.Expression): { expr: ts.Expression; asConst: boolean } {
  let asConst = false;
  for (;;) {
    if (ts.isAsExpression(e)) {
      if (e.type.getText() === 'const') asConst = true;
      e = e.expression;
    } else if (ts.isSatisfiesExpression(e) || ts.isParenthesizedExpression(e)) e = e.expression;
    else return { expr: e, asConst };
  }
}

/**
 * Module-level mutable state: a top-level `let`/`var`, or a top-level `const` holding a fresh
 * `Map`, `Set`, `WeakMap`, `WeakSet` or array whose declared type is not read-only, or an object
 * literal with neither a type annotation nor `as const`. State like that outlives a run and can
 * carry one simulation's choices into the next, which breaks "same seed, same trace" as surely as
 * the wall clock does. Read-only tables are fine (`ReadonlySet`, `readonly T[]`, `as const`); a
 * cache that cannot change results opts out with `tidy-allow: <reason>` on the declaration's line.
 */
export function checkModuleState(file: string, text: string): TidyViolation[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const lines = text.split('\n');
  const out: TidyViolation[] = [];
  for (const st of sf.statements) {
    if (!ts.isVariableStatement(st)) continue;
    const isConst = (st.declarationList.flags & ts.NodeFlags.Const) !== 0;
    for (const d of st.declarationList.declarations) {
      const line = sf.getLineAndCharacterOfPosition(d.getStart(sf)).line + 1;
      const lineText = lines[line - 1] ?? '';
      if (lineText.includes('tidy-allow:')) continue;
      let what: string | null = null;
      if (!isConst) what = 'module-level let/var';
      else if (d.initializer !== undefined) {
        const declared = d.type?.getText(sf) ?? '';
        const readonlyType = /^(Readonly|readonly\s)/.test(declared);
        const { expr, asConst } = unwrap(d.initializer);
        if (ts.isNewExpression(expr) && ts.isIdentifier(expr.expression) && MUTABLE_CONSTRUCTORS.has(expr.expression.text) && !readonlyType) {
          what = `module-level mutable ${expr.expression.text}`;
        } else if (ts.isArrayLiteralExpression(expr) && !readonlyType && !asConst) what = 'module-level mutable array';
        else if (ts.isObjectLiteralExpression(expr) && d.type === undefined && !asConst) what = 'module-level object literal without a type';
      }
      if (what !== null) {
        out.push({
          file,
          line,
          text: lineText.trim(),
          what,
          instead: 'keep state in the world or the run (or declare the constant read-only: ReadonlySet, readonly T[], as const)',
        });
      }
    }
  }
  return out;
}

export function tidy(root: string): TidyViolation[] {
  return librarySourceFiles(root).flatMap((f) => {
    const file = relative(root, f);
    const text = readFileSync(f, 'utf8');
    return [...checkSource(file, text), ...checkModuleState(file, text)];
  });
}
