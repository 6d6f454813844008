import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { describeSnippet, docSnippets, excerptOf, inFileOf, runnable, type Snippet } from '../docSnippets.ts';
import { workspacePackages } from '../packages.ts';

// Every TypeScript block of the guide is checked as a user would write it in a project of their
// own: a strict ES module importing `@netsim/...` by package name. A block that fails names its
// file, its number and line, and the compiler's or the program's message, so whoever wrote it
// can fix it.
const root = fileURLToPath(new URL('../../', import.meta.url));
const snippets = docSnippets(root);

/** A directory inside the repository (so vitest, fast-check and @types/node resolve) with @netsim/* linked in. */
function project(): string {
  const dir = join(root, 'node_modules', '.cache', 'netsim-doc-snippets');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, 'node_modules', '@netsim'), { recursive: true });
  writeFileSync(join(dir, 'package.json'), '{ "name": "doc-snippets", "private": true, "type": "module" }\n');
  for (const p of workspacePackages(root)) symlinkSync(p.dir, join(dir, 'node_modules', p.name));
  return dir;
}

function fileName(s: Snippet): string {
  return `${s.file.replace(/[^A-Za-z0-9]+/g, '-')}-${s.index}.ts`;
}

describe('the guide: TypeScript blocks in README.md and docs/*.md', () => {
  const dir = project();
  for (const s of snippets) {
    const inFile = inFileOf(s);
    // A block standing for a file of the repository imports its neighbours relatively: from there.
    const code = inFile === undefined ? s.code : s.code.replace(/(from\s+')(\.\.?\/[^']+)'/g, (_m, head: string, spec: string) => `${head}${resolve(root, dirname(inFile), spec)}'`);
    writeFileSync(join(dir, fileName(s)), code);
  }

  it('should find the guide blocks', () => {
    expect(snippets.length).toBeGreaterThan(10);
  });

  it('should type-check every block as strict TypeScript importing the packages by name', () => {
    const files = snippets.filter((s) => excerptOf(s) === undefined).map((s) => join(dir, fileName(s)));
    const program = ts.createProgram(files, {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      // The workspace packages resolve to their sources, which import with .ts extensions.
      allowImportingTsExtensions: true,
      skipLibCheck: true,
      types: ['node'],
      lib: ['lib.es2023.d.ts'],
      noUnusedLocals: false,
    });
    const problems: string[] = [];
    for (const s of snippets) {
      if (excerptOf(s) !== undefined) continue;
      const sf = program.getSourceFile(join(dir, fileName(s)));
      if (sf === undefined) continue;
      for (const d of [...program.getSyntacticDiagnostics(sf), ...program.getSemanticDiagnostics(sf)]) {
        const pos = d.start !== undefined ? sf.getLineAndCharacterOfPosition(d.start) : undefined;
        // Lines inside the block are counted from the fence: block line 1 is the line after it.
        const own = pos === undefined ? undefined : pos.line - s.prefixLines;
        const where = pos === undefined || own === undefined ? '' : own < 0 ? ' (in a block it continues)' : `:${s.line + own + 1}:${pos.character + 1}`;
        problems.push(`${describeSnippet(s)}: ${s.file}${where}: TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
      }
    }
    expect(problems).toEqual([]);
  }, 300_000);

  it('should find every line of each excerpt, in order, in the file it quotes', () => {
    const stale: string[] = [];
    for (const s of snippets) {
      const source = excerptOf(s);
      if (source === undefined) continue;
      let text: string;
      try {
        text = readFileSync(join(root, source), 'utf8');
      } catch {
        stale.push(`${describeSnippet(s)}: quotes ${source}, which does not exist`);
        continue;
      }
      const lines = text.split('\n').map((l) => l.trim());
      let at = 0;
      for (const l of s.code.split('\n').map((x) => x.trim()).filter((x) => x !== '')) {
        const found = lines.indexOf(l, at);
        if (found < 0) {
          stale.push(`${describeSnippet(s)}: "${l}" is not in ${source} (after the lines before it)`);
          break;
        }
        at = found + 1;
      }
    }
    expect(stale).toEqual([]);
  });

  for (const s of snippets.filter(runnable)) {
    it(`should run ${describeSnippet(s)} as a program`, () => {
      const r = spawnSync(process.execPath, ['--import', 'tsx', join(dir, fileName(s))], { cwd: root, encoding: 'utf8', timeout: 120_000 });
      const failure = r.status === 0 ? '' : `${describeSnippet(s)} exited ${String(r.status ?? r.signal)}:\n${r.stderr}`;
      expect(failure).toBe('');
    }, 150_000);
  }
});
