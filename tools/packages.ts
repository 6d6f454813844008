/**
 * The workspace's packages as the pack script and the package contract test see them: every
 * `packages/<name>/package.json`, public unless it says `"private": true`.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The fields of a package.json the tools read. */
export interface Manifest {
  readonly name: string;
  readonly version: string;
  readonly private?: boolean;
  readonly type?: string;
  readonly description?: string;
  readonly license?: string;
  readonly repository?: { readonly type: string; readonly url: string; readonly directory?: string };
  readonly engines?: { readonly node?: string };
  readonly exports?: Readonly<Record<string, Readonly<Record<string, string>>>>;
  readonly bin?: Readonly<Record<string, string>>;
  readonly files?: readonly string[];
  readonly scripts?: Readonly<Record<string, string>>;
  readonly publishConfig?: {
    readonly exports?: Readonly<Record<string, Readonly<Record<string, string>>>>;
    readonly bin?: Readonly<Record<string, string>>;
    readonly types?: string;
  };
  readonly dependencies?: Readonly<Record<string, string>>;
  readonly peerDependencies?: Readonly<Record<string, string>>;
  readonly peerDependenciesMeta?: Readonly<Record<string, { readonly optional?: boolean }>>;
  readonly devDependencies?: Readonly<Record<string, string>>;
}

export interface WorkspacePackage {
  readonly name: string;
  readonly dir: string;
  readonly manifest: Manifest;
}

/** Every package under packages/, sorted by directory. */
export function workspacePackages(root: string): WorkspacePackage[] {
  const base = join(root, 'packages');
  return readdirSync(base)
    .sort()
    .filter((d) => existsSync(join(base, d, 'package.json')))
    .map((d) => {
      const manifest = JSON.parse(readFileSync(join(base, d, 'package.json'), 'utf8')) as Manifest;
      return { name: manifest.name, dir: join(base, d), manifest };
    });
}

/** The packages that are built and packed (not `private`). */
export function publicPackages(root: string): WorkspacePackage[] {
  return workspacePackages(root).filter((p) => p.manifest.private !== true);
}
