/**
 * The package layering of docs/architecture.md, as data: which `@netsim/*` packages each package's
 * library sources may import. Data flows one way; a lower layer never imports a higher one.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

export const ALLOWED_IMPORTS: { readonly [pkg: string]: readonly string[] } = {
  netfilter: [],
  nftables: [],
  kube: [],
  kernel: ['netfilter', 'nftables'],
  sim: ['netfilter', 'nftables', 'kernel', 'kube'],
  // Each list is what the package's sources import today, no more: a new edge is a decision.
  check: ['sim'],
  controllers: ['sim', 'kube', 'check', 'scenario'],
  scenario: ['sim', 'netfilter'],
  conformance: ['netfilter', 'nftables', 'kernel'],
  report: ['sim'],
  cli: ['netfilter', 'nftables', 'kernel', 'kube', 'sim', 'check', 'controllers', 'scenario', 'report'],
};

export interface LayerViolation {
  readonly file: string;
  readonly line: number;
  readonly imports: string;
}

function* walk(dir: string): Generator<string> {
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) yield* walk(p);
    else if (name.endsWith('.ts')) yield p;
  }
}

/** Every `@netsim/<pkg>` import (static, dynamic or type-only) in a package's `src/` that its layer forbids. */
export function layerViolations(root: string): LayerViolation[] {
  const out: LayerViolation[] = [];
  for (const pkg of readdirSync(join(root, 'packages')).sort()) {
    const src = join(root, 'packages', pkg, 'src');
    try {
      if (!statSync(src).isDirectory()) continue;
    } catch {
      continue; // no library sources
    }
    const allowed = ALLOWED_IMPORTS[pkg];
    for (const file of walk(src)) {
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((text, i) => {
          for (const m of text.matchAll(/['"]@netsim\/([a-z-]+)(?:\/[^'"]*)?['"]/g)) {
            const target = m[1] ?? '';
            if (target !== pkg && (allowed === undefined || !allowed.includes(target))) {
              out.push({ file: file.slice(root.length), line: i + 1, imports: `@netsim/${target}` });
            }
          }
        });
    }
  }
  return out;
}
