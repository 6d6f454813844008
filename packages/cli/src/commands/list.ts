/**
 * `netsim list [CHAIN [RULENUM]] --ruleset FILE|-`: what `iptables [-t TABLE] -L [CHAIN [RULENUM]]`
 * (with `-n`, `-v`, `-x`, `--line-numbers`) or `-S` prints on the host a saved dump came from.
 *
 * The dump is loaded as `iptables-restore --counters` loads it on a fresh host (so `-v` shows the
 * counters of an `iptables-save -c` dump), then the listing is the emulated `iptables` command's
 * own output: the same columns, abbreviations and errors as the real tool, and its exit status
 * (1 for a chain that does not exist). Bad input exits 2 naming file, line, column and token.
 */
import { readFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { exec, freshRuleset, isNetfilterError, restore, TABLE_NAMES, type IptablesVersion, type Ruleset } from '@netsim/netfilter';
import { IpsetFileError, ipsetNames } from '../ipsetFile.ts';

export interface ListCliOptions {
  readonly ruleset: string;
  readonly table: string;
  readonly numeric: boolean;
  readonly verbose: boolean;
  readonly exact: boolean;
  readonly lineNumbers: boolean;
  /** `-S`: rules as `iptables -S` prints them instead of the `-L` table. */
  readonly listRules: boolean;
  readonly ipset?: string;
  readonly iptablesVersion: IptablesVersion;
}

export interface ListIo {
  readonly stdout: (s: string) => void;
  readonly stderr: (s: string) => void;
  readonly readFile: (path: string) => string;
}

const defaultIo: ListIo = {
  stdout: (s) => process.stdout.write(s),
  stderr: (s) => process.stderr.write(s),
  readFile: (path) => readFileSync(path === '-' ? 0 : path, 'utf8'),
};

/** The `iptables` argv `netsim list` runs against the restored dump. */
export function listArgv(o: ListCliOptions, chain?: string, ruleNum?: string): string[] {
  const argv = ['-t', o.table, o.listRules ? '-S' : '-L'];
  if (chain !== undefined) argv.push(chain);
  if (ruleNum !== undefined) argv.push(ruleNum);
  if (!o.listRules) {
    if (o.numeric) argv.push('-n');
    if (o.exact) argv.push('-x');
    if (o.lineNumbers) argv.push('--line-numbers');
  }
  if (o.verbose) argv.push('-v');
  return argv;
}

function read(io: ListIo, path: string, what: string): string | { error: string } {
  try {
    return io.readFile(path);
  } catch (e) {
    return { error: `cannot read ${what} ${path}: ${(e as Error).message}` };
  }
}

/** Runs `netsim list`; returns the exit status. */
export function runList(o: ListCliOptions, chain: string | undefined, ruleNum: string | undefined, io: ListIo = defaultIo): number {
  if (!(TABLE_NAMES as readonly string[]).includes(o.table)) {
    io.stderr(`netsim list: -t ${o.table}: expected one of ${TABLE_NAMES.join(', ')}\n`);
    return 2;
  }
  const file = o.ruleset === '-' ? '<stdin>' : o.ruleset;
  const text = read(io, o.ruleset, 'ruleset');
  if (typeof text !== 'string') {
    io.stderr(`netsim list: ${text.error}\n`);
    return 2;
  }
  let ipsets: string[] | undefined;
  if (o.ipset !== undefined) {
    const sets = read(io, o.ipset, 'ipsets');
    if (typeof sets !== 'string') {
      io.stderr(`netsim list: ${sets.error}\n`);
      return 2;
    }
    try {
      ipsets = ipsetNames(sets, o.ipset);
    } catch (e) {
      if (!(e instanceof IpsetFileError)) throw e;
      io.stderr(`netsim list: ${e.message}\n`);
      return 2;
    }
  }
  let ruleset: Ruleset;
  try {
    ruleset = restore(freshRuleset(), text, { file, counters: true, version: o.iptablesVersion, ...(ipsets !== undefined && { ipsets }) });
  } catch (e) {
    if (!isNetfilterError(e)) throw e;
    io.stderr(`netsim list: ${e.message}\n`);
    if (e.stderr !== undefined) io.stderr(e.stderr);
    return 2;
  }
  const r = exec(ruleset, listArgv(o, chain, ruleNum), { version: o.iptablesVersion });
  io.stdout(r.stdout);
  io.stderr(r.stderr);
  return r.exitCode;
}

/** The commander definition of `netsim list`. */
export function listCommand(): Command {
  return new Command('list')
    .description('print what `iptables -L` (or -S) prints on the host a saved iptables-save dump came from')
    .argument('[chain]', 'list only this chain')
    .argument('[rulenum]', 'with a chain: only this rule (1-based)')
    .requiredOption('--ruleset <file>', 'the iptables-save dump ("-" for stdin); [packets:bytes] counters are kept')
    .option('-t, --table <table>', 'the table to list', 'filter')
    .option('-n, --numeric', 'addresses and ports as numbers', false)
    .option('-v, --verbose', 'counters, interfaces and more', false)
    .option('-x, --exact', 'exact counters instead of K/M/G', false)
    .option('--line-numbers', 'number each rule', false)
    .option('-S, --list-rules', 'print the rules as iptables -S does', false)
    .option('--ipset <file>', 'ipsets the host has (`ipset save` output), for dumps with -m set / -j SET')
    .addOption(new Option('--iptables-version <version>', 'iptables release whose output to print').choices(['1.8.9', '1.8.10']).default('1.8.10'))
    .action((chain: string | undefined, ruleNum: string | undefined, opts: ListCliOptions) => {
      process.exitCode = runList(opts, chain, ruleNum);
    });
}
