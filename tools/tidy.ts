/**
 * The tidy check (after TigerBeetle's tidy.zig): library sources must not read the wall clock,
 * draw unseeded randomness or use real timers, because any of those breaks "same seed, same
 * trace". Each banned pattern names its replacement. A line may opt out only with a comment
 * `tidy-allow: <reason>` on the same line, which keeps every exception visible and justified.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

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

export function tidy(root: string): TidyViolation[] {
  return librarySourceFiles(root).flatMap((f) => checkSource(relative(root, f), readFileSync(f, 'utf8')));
}
