import { describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ALLOWED_IMPORTS, layerViolations } from '../layers.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));

describe('layers: lower packages never import higher ones', () => {
  it('should find no forbidden @netsim import in any package src/', () => {
    expect(layerViolations(root)).toEqual([]);
  });

  it('should give every package a place in the layering', () => {
    const pkgs = readdirSync(`${root}packages`).sort();
    expect(pkgs.filter((p) => ALLOWED_IMPORTS[p] === undefined)).toEqual([]);
  });

  it('should keep netfilter and kube free of every other netsim package, and kernel free of kube', () => {
    expect(ALLOWED_IMPORTS['netfilter']).toEqual([]);
    expect(ALLOWED_IMPORTS['kube']).toEqual([]);
    expect(ALLOWED_IMPORTS['kernel']).not.toContain('kube');
  });

  it('should allow each layer no more than it imports: scenario never imports the controllers or check, check only sim', () => {
    expect(ALLOWED_IMPORTS['scenario']).not.toContain('controllers');
    expect(ALLOWED_IMPORTS['scenario']).not.toContain('check');
    expect(ALLOWED_IMPORTS['check']).toEqual(['sim']);
    // The controllers own their fuzz profiles, built on check's arbitraries and scenario's invariants.
    expect(ALLOWED_IMPORTS['controllers']).toEqual(['sim', 'kube', 'check', 'scenario']);
  });

  it('should report a forbidden import with its file and line, type-only imports included', () => {
    const fake = mkdtempSync(join(tmpdir(), 'netsim-layers-'));
    try {
      mkdirSync(join(fake, 'packages/kernel/src'), { recursive: true });
      writeFileSync(join(fake, 'packages/kernel/src/x.ts'), "import { a } from '@netsim/netfilter';\nimport type { Pod } from '@netsim/kube';\n");
      expect(layerViolations(`${fake}/`)).toEqual([{ file: 'packages/kernel/src/x.ts', line: 2, imports: '@netsim/kube' }]);
    } finally {
      rmSync(fake, { recursive: true, force: true });
    }
  });
});
