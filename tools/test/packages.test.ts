import { describe, expect, it } from 'vitest';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { publicPackages, workspacePackages, type WorkspacePackage } from '../packages.ts';

// What every public package.json must contain so that `pnpm pack:all` gives a tarball that
// installs and resolves from outside the workspace (docs/install.md). A new package that misses
// a field fails here, naming the package and the field.
const root = fileURLToPath(new URL('../../', import.meta.url));
const pkgs = publicPackages(root);
const all = workspacePackages(root);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? sourceFiles(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** The package names a package's src/ imports (bare specifiers, `node:` builtins left out). */
function importedPackages(p: WorkspacePackage): Set<string> {
  const names = new Set<string>();
  for (const f of sourceFiles(join(p.dir, 'src'))) {
    const text = readFileSync(f, 'utf8');
    for (const m of text.matchAll(/(?:\bfrom\s+|^\s*import\s+|\bimport\s*\(\s*)'([^'.][^']*)'/gm)) {
      const spec = m[1] ?? '';
      if (spec.startsWith('node:')) continue;
      const parts = spec.split('/');
      names.add(spec.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? spec));
    }
  }
  return names;
}

describe('public packages', () => {
  it('should include the library and the CLI packages', () => {
    expect(pkgs.map((p) => p.name)).toEqual(expect.arrayContaining(['@netsim/check', '@netsim/cli', '@netsim/netfilter', '@netsim/sim']));
  });

  it('should move in lockstep: one version for every public package', () => {
    expect(new Set(pkgs.map((p) => p.manifest.version))).toEqual(new Set([pkgs[0]?.manifest.version]));
  });

  describe.each(pkgs.map((p) => [p.name, p] as const))('%s', (_name, p) => {
    const m = p.manifest;

    it('should carry the metadata a registry shows: ESM, description, license, repository, engines', () => {
      expect(m.type).toBe('module');
      expect(m.description).toMatch(/\w/);
      expect(m.license).toBe('Apache-2.0');
      expect(m.repository?.directory).toBe(`packages/${basename(p.dir)}`);
      expect(m.engines?.node).toMatch(/>=20/);
    });

    it('should ship a README and a LICENSE, the build and its sources, and nothing else', () => {
      expect(existsSync(join(p.dir, 'README.md'))).toBe(true);
      expect(readFileSync(join(p.dir, 'LICENSE'), 'utf8')).toBe(readFileSync(join(root, 'LICENSE'), 'utf8'));
      expect([...(m.files ?? [])].sort()).toEqual(['LICENSE', 'README.md', 'dist', 'src']);
    });

    it('should build with tsc -p tsconfig.build.json', () => {
      expect(m.scripts?.['build']).toMatch(/^tsc -p tsconfig\.build\.json\b/);
      const cfg = JSON.parse(readFileSync(join(p.dir, 'tsconfig.build.json'), 'utf8')) as { extends: string; compilerOptions: { rootDir: string; outDir: string } };
      expect(cfg.extends).toBe('../../tsconfig.build.base.json');
      expect(cfg.compilerOptions).toMatchObject({ rootDir: 'src', outDir: 'dist' });
    });

    it('should export src/ inside the workspace and dist/ (with types) once packed, entry by entry', () => {
      const src = m.exports ?? {};
      const pub = m.publishConfig?.exports ?? {};
      expect(Object.keys(pub)).toEqual(Object.keys(src));
      for (const [entry, cond] of Object.entries(src)) {
        const file = /^\.\/src\/(.+)\.ts$/.exec(cond['default'] ?? '')?.[1];
        expect(file, `${m.name} exports["${entry}"].default`).toBeDefined();
        expect(Object.keys(cond)).toEqual(['netsim-build', 'types', 'default']);
        expect(cond).toEqual({ 'netsim-build': `./dist/${file}.d.ts`, types: `./src/${file}.ts`, default: `./src/${file}.ts` });
        expect(pub[entry]).toEqual({ types: `./dist/${file}.d.ts`, default: `./dist/${file}.js` });
      }
      for (const [cmd, path] of Object.entries(m.bin ?? {})) {
        const file = /^\.\/src\/(.+)\.ts$/.exec(path)?.[1];
        expect(m.publishConfig?.bin?.[cmd]).toBe(`./dist/${file}.js`);
      }
    });

    it('should name its @netsim siblings as peers (workspace:*), never as dependencies, so installing the tarballs looks none up', () => {
      expect(Object.keys(m.dependencies ?? {}).filter((d) => d.startsWith('@netsim/'))).toEqual([]);
      for (const [dep, range] of Object.entries(m.peerDependencies ?? {})) {
        if (!dep.startsWith('@netsim/')) continue;
        expect(range, `${m.name} peer ${dep}`).toBe('workspace:*');
        expect(m.devDependencies?.[dep], `${m.name} devDependency ${dep}`).toBe('workspace:*');
        const sibling = all.find((q) => q.name === dep);
        expect(sibling?.manifest.private, `${dep} must be public`).not.toBe(true);
      }
    });

    it('should declare exactly what its src/ imports', () => {
      const imported = importedPackages(p);
      imported.delete(m.name);
      const declared = new Set([...Object.keys(m.dependencies ?? {}), ...Object.keys(m.peerDependencies ?? {})]);
      expect([...imported].filter((d) => !declared.has(d)).sort(), 'imported but not declared').toEqual([]);
      expect([...declared].filter((d) => !imported.has(d)).sort(), 'declared but never imported').toEqual([]);
    });
  });
});
