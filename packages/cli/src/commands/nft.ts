/**
 * `netsim nft fmt FILE...` and `netsim nft diff A B`: nftables text tools.
 *
 * - `fmt` applies the files in order on a fresh host, as successive `nft -f FILE`, and prints what
 *   `nft list ruleset` then prints. A failing file stops there: its errors are printed exactly as
 *   the real nft prints them (FILE:LINE:COL-COL: Error: …, the line, the carets) and the exit
 *   status is 1, nft's.
 * - `diff` applies A and B each on a fresh host and prints the differences per table, chain and
 *   set; exit 0 when none, 1 when some, 2 when a file does not apply (like diff(1)).
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { diffRulesets, emptyRuleset, formatRuleset, formatRulesetDiff, tryNftApply, type NftVersion, type Ruleset } from '@netsim/nftables';

interface Io {
  readonly stdout: (s: string) => void;
  readonly stderr: (s: string) => void;
  readonly readFile: (path: string) => string;
}

const defaultIo: Io = {
  stdout: (s) => process.stdout.write(s),
  stderr: (s) => process.stderr.write(s),
  readFile: (path) => readFileSync(path === '-' ? 0 : path, 'utf8'),
};

function readOrReport(io: Io, command: string, path: string): string | undefined {
  try {
    return io.readFile(path);
  } catch (e) {
    io.stderr(`netsim nft ${command}: ${e instanceof Error ? e.message : String(e)}\n`);
    return undefined;
  }
}

function applyAll(io: Io, command: string, files: readonly string[], version: NftVersion): Ruleset | number {
  let rs = emptyRuleset();
  for (const f of files) {
    const text = readOrReport(io, command, f);
    if (text === undefined) return 2;
    const r = tryNftApply(rs, text, { file: f === '-' ? '/dev/stdin' : f, version });
    if (!r.ok) {
      io.stderr(r.error.stderr);
      return 1;
    }
    rs = r.ruleset;
  }
  return rs;
}

/** `nft fmt`: returns the exit status. */
export function nftFmt(files: readonly string[], opts: { nftVersion?: NftVersion } = {}, io: Io = defaultIo): number {
  const rs = applyAll(io, 'fmt', files, opts.nftVersion ?? '1.0.6');
  if (typeof rs === 'number') return rs;
  io.stdout(formatRuleset(rs));
  return 0;
}

/** `nft diff`: returns the exit status. */
export function nftDiff(a: string, b: string, opts: { nftVersion?: NftVersion } = {}, io: Io = defaultIo): number {
  const ra = applyAll(io, 'diff', [a], opts.nftVersion ?? '1.0.6');
  if (typeof ra === 'number') return 2;
  const rb = applyAll(io, 'diff', [b], opts.nftVersion ?? '1.0.6');
  if (typeof rb === 'number') return 2;
  const changes = diffRulesets(ra, rb);
  io.stdout(formatRulesetDiff(changes));
  return changes.length === 0 ? 0 : 1;
}

function version(v: string): NftVersion | undefined {
  return v === '1.0.6' || v === '1.0.7' ? v : undefined;
}

export function registerNftCommand(program: Command): void {
  const nft = program.command('nft').description('nftables text: apply nft -f files and print nft list ruleset; compare rulesets');
  nft
    .command('fmt')
    .description('apply FILEs in order on a fresh host (nft -f each) and print what nft list ruleset prints')
    .argument('<files...>', 'nft -f inputs, or - for stdin')
    .option('--nft-version <version>', 'nft release to imitate: 1.0.6 (Debian 12) or 1.0.7 (adds destroy)', '1.0.6')
    .action((files: string[], opts: { nftVersion: string }) => {
      const v = version(opts.nftVersion);
      if (v === undefined) {
        process.stderr.write(`netsim nft fmt: --nft-version must be 1.0.6 or 1.0.7, not "${opts.nftVersion}"\n`);
        process.exitCode = 2;
        return;
      }
      process.exitCode = nftFmt(files, { nftVersion: v });
    });
  nft
    .command('diff')
    .description('print the differences between two rulesets, each applied on a fresh host (exit 1 when they differ)')
    .argument('<a>', 'first nft -f input')
    .argument('<b>', 'second nft -f input')
    .option('--nft-version <version>', 'nft release to imitate: 1.0.6 or 1.0.7', '1.0.6')
    .action((a: string, b: string, opts: { nftVersion: string }) => {
      const v = version(opts.nftVersion);
      if (v === undefined) {
        process.stderr.write(`netsim nft diff: --nft-version must be 1.0.6 or 1.0.7, not "${opts.nftVersion}"\n`);
        process.exitCode = 2;
        return;
      }
      process.exitCode = nftDiff(a, b, { nftVersion: v });
    });
}
