/**
 * The second half of the tidy check (the first, the wall-clock and randomness ban, is
 * packages/netfilter/test/tidy.test.ts over every package): no module-level mutable state. A
 * module-level `let`, or a module-level Map/Set/array that code fills in, is state shared by every
 * simulator instance in the process, so two runs in one process could differ from two runs in two
 * processes. The simulator instance owns all state; a line may opt out only with `tidy-allow:`.
 */
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { librarySourceFiles } from '../../../tools/tidy.ts';

const root = fileURLToPath(new URL('../../../', import.meta.url));

/** A module-level `let`/`var` binding: mutable shared state in any package. */
const MODULE_LET = /^(export\s+)?(let|var)\s/;
/** A module-level mutable container (Map, Set, array literal to fill). */
const MODULE_CONTAINER = /^(export\s+)?const\s+[A-Za-z_$][\w$]*\s*(:[^=]+)?=\s*(new\s+(Map|Set|WeakMap|WeakSet|Array)\b|\[\s*\])/;

function scan(file: string, text: string, containers: boolean): string[] {
  const out: string[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.includes('tidy-allow:')) return;
    if (MODULE_LET.test(line) || (containers && MODULE_CONTAINER.test(line))) out.push(`${file}:${i + 1}: module-level mutable state: ${line.trim()}`);
  });
  return out;
}

describe('tidy: no module-level mutable state', () => {
  it('should find no module-level let or var in any library source', () => {
    // The conformance harness drives the real kernel (namespaces, processes): its process-level
    // state is about the real machine, not a simulation, like the CLI's.
    const simulated = librarySourceFiles(root).filter((f) => !f.includes('/packages/conformance/'));
    expect(simulated.some((f) => f.includes('/packages/kube/'))).toBe(true);
    const found = simulated.flatMap((f) => scan(relative(root, f), readFileSync(f, 'utf8'), false));
    expect(found).toEqual([]);
  });

  it('should find no module-level mutable containers in the engine and checker', () => {
    const mine = librarySourceFiles(root).filter((f) => f.includes('/packages/sim/') || f.includes('/packages/check/'));
    expect(mine.length).toBeGreaterThan(5);
    const found = mine.flatMap((f) => scan(relative(root, f), readFileSync(f, 'utf8'), true));
    expect(found).toEqual([]);
  });

  it('should flag each form and honour tidy-allow', () => {
    const src = ['let counter = 0;', 'export var x = 1;', 'const cache = new Map<string, number>();', 'const queue: number[] = [];', 'const LIMIT = 5;', '  let local = 1;', 'const memo = new WeakMap(); // tidy-allow: pure memo'].join('\n');
    expect(scan('x.ts', src, true).map((l) => l.slice(l.indexOf('state: ') + 7))).toEqual(['let counter = 0;', 'export var x = 1;', 'const cache = new Map<string, number>();', 'const queue: number[] = [];']);
  });
});
