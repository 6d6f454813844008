/**
 * The real `nft` and netsim side by side on the same files: each run is a fresh network namespace
 * (the host's ruleset is never touched) and a scratch directory, the files applied in order as
 * successive `nft -f FILE` (so messages name the file as netsim's do), then `nft list ruleset`.
 * netsim's side applies the same files with `tryNftApply` on an empty ruleset and prints
 * `formatRuleset`.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { emptyRuleset, formatRuleset, tryNftApply, type NftVersion, type Ruleset } from '@netsim/nftables';
import { which } from './exec.ts';
import { createNetns, nextPrefix, releaseNetns } from './netns.ts';

export interface NftFile {
  readonly name: string;
  readonly text: string;
}

/** What one side did with a list of files: per file the exit status and stderr, then the listing. */
export interface NftRun {
  readonly steps: readonly { readonly rc: number; readonly stderr: string }[];
  readonly listing: string;
}

/** Where nft lives, or undefined when it is not installed. */
export function nftPath(): string | undefined {
  return which('nft');
}

/** `nft --version`'s release (`1.0.6`), or undefined without nft. */
export function nftRelease(): string | undefined {
  const nft = nftPath();
  if (nft === undefined) return undefined;
  const r = spawnSync(nft, ['--version'], { encoding: 'utf8' });
  return /v(\d+\.\d+\.\d+)/.exec(r.stdout)?.[1];
}

/**
 * Applies the files with the real nft in a throwaway namespace. Many runs share one namespace
 * when given `netns` (each run starts with `flush ruleset`, which is what a fresh namespace has).
 */
export function runRealNft(files: readonly NftFile[], opts: { readonly netns?: string; readonly timeoutMs?: number } = {}): NftRun {
  const own = opts.netns === undefined;
  const ns = opts.netns ?? `${nextPrefix()}-nft`;
  if (own) createNetns(ns);
  const scratch = mkdtempSync(join(tmpdir(), 'netsim-nft-'));
  const exec = (args: readonly string[]): { rc: number; stdout: string; stderr: string } => {
    const r = spawnSync('ip', ['netns', 'exec', ns, 'nft', ...args], { cwd: scratch, encoding: 'utf8', timeout: opts.timeoutMs ?? 60_000 });
    return { rc: r.status ?? -1, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
  };
  try {
    if (!own) exec(['flush', 'ruleset']);
    const steps = files.map((f) => {
      writeFileSync(join(scratch, f.name), f.text);
      const r = exec(['-f', f.name]);
      return { rc: r.rc, stderr: r.stderr };
    });
    const list = exec(['list', 'ruleset']);
    return { steps, listing: list.stdout };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
    if (own) releaseNetns(ns);
  }
}

/** A namespace kept for many {@link runRealNft} calls; `close` deletes it. */
export function nftNamespace(): { readonly name: string; close(): void } {
  const name = `${nextPrefix()}-nft`;
  createNetns(name);
  return { name, close: () => releaseNetns(name) };
}

/** The same files through netsim. */
export function runNetsimNft(files: readonly NftFile[], version?: NftVersion): NftRun {
  let rs: Ruleset = emptyRuleset();
  const steps = files.map((f) => {
    const r = tryNftApply(rs, f.text, { file: f.name, ...(version === undefined ? {} : { version }) });
    if (!r.ok) return { rc: 1, stderr: r.error.stderr };
    rs = r.ruleset;
    return { rc: 0, stderr: '' };
  });
  return { steps, listing: formatRuleset(rs) };
}

/** Element `expires` times count down in the kernel from the moment of the add: dropped on both sides. */
export const stripExpires = (s: string): string => s.replace(/ expires [0-9dhms]+/g, '');

/** One way the two runs differ: which file (or the listing) and both texts. */
export interface NftDifference {
  readonly where: string;
  readonly real: string;
  readonly netsim: string;
}

/** Every difference between the real run and netsim's, file by file, then the listing. */
export function compareNftRuns(files: readonly NftFile[], real: NftRun, sim: NftRun): NftDifference[] {
  const out: NftDifference[] = [];
  files.forEach((f, i) => {
    const a = real.steps[i];
    const b = sim.steps[i];
    if (a === undefined || b === undefined) return;
    if (a.rc !== b.rc || a.stderr !== b.stderr) out.push({ where: `nft -f ${f.name}`, real: `exit ${a.rc}\n${a.stderr}`, netsim: `exit ${b.rc}\n${b.stderr}` });
  });
  if (stripExpires(real.listing) !== stripExpires(sim.listing)) out.push({ where: 'nft list ruleset', real: real.listing, netsim: sim.listing });
  return out;
}

/** A difference as text: both sides, line-diffed for listings. */
export function formatNftDifference(d: NftDifference): string {
  const a = d.real.split('\n');
  const b = d.netsim.split('\n');
  const lines = [`${d.where}:`];
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) {
    if (a[i] === b[i]) lines.push(`  ${a[i] ?? ''}`);
    else {
      if (a[i] !== undefined) lines.push(`- ${a[i]}`);
      if (b[i] !== undefined) lines.push(`+ ${b[i]}`);
    }
  }
  return `${lines.join('\n')}\n`;
}
