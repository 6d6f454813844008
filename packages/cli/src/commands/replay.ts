/**
 * `netsim replay [PATH…]`: run scenario files (default: the incident scenarios shipped with the
 * CLI), print a table of scenario, controller, seed, expected and observed outcome and verdict,
 * then the numbered story of each violation. Exit 0 only when every scenario met its expectation,
 * 1 when one did not, 2 when a scenario could not be loaded or run, a directory holds none, or
 * the `--trace` file cannot be written (checked before anything runs).
 */
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command, InvalidArgumentError } from 'commander';
import { FUZZ_PROFILES, formatIssue, isScenarioError, loadScenarioFile, replay, type ReplayResult } from '@netsim/scenario';
import { isSimError, toJsonLines, type SimScenario } from '@netsim/sim';
import { displayPath, userPath } from '../cwd.ts';
import { loadPlugins } from './registry.ts';

export interface ReplayCliOptions {
  readonly seed?: number;
  readonly trace?: string | true;
  readonly json?: boolean;
  readonly fullStory?: boolean;
  /** Print the story of every scenario, not only of violations and findings. */
  readonly stories?: boolean;
  readonly controllers?: string;
}

/** Where the command writes (tests capture it). */
export interface Io {
  readonly stdout: (s: string) => void;
  readonly stderr: (s: string) => void;
}

const defaultIo: Io = { stdout: (s) => void process.stdout.write(s), stderr: (s) => void process.stderr.write(s) };

/** One row of the report. */
interface Row {
  readonly path: string;
  readonly name: string;
  readonly controller: string;
  readonly seed: number | undefined;
  readonly expected: string;
  readonly observed: string;
  readonly verdict: 'met' | 'NOT MET' | 'error';
  readonly result?: ReplayResult;
  readonly error?: string;
}

/**
 * The incident scenarios shipped with the CLI: `dist/scenarios/` in the installed package (the
 * build copies them there), the repository's `scenarios/` when running from source.
 */
export function bundledScenarios(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const shipped = join(here, '..', 'scenarios');
  return existsSync(shipped) ? shipped : join(here, '..', '..', '..', '..', 'scenarios');
}

/** A directory given on the command line that holds no scenario file. */
export class NoScenariosError extends Error {}

/**
 * Scenario files named by the arguments: files as given, directories as their sorted
 * `*.yaml`/`*.yml` (a directory without any is an error: a typo must not pass as "all met").
 */
export function scenarioPaths(args: readonly string[]): string[] {
  const out: string[] = [];
  for (const a of args) {
    let isDir = false;
    try {
      isDir = statSync(a).isDirectory();
    } catch {
      out.push(a); // loadScenarioFile reports the missing file with its name
      continue;
    }
    if (!isDir) {
      out.push(a);
      continue;
    }
    const found = readdirSync(a)
      .filter((f) => f.endsWith('.yaml') || f.endsWith('.yml'))
      .sort()
      .map((f) => join(a, f));
    if (found.length === 0) throw new NoScenariosError(`${a}: no scenario files (*.yaml, *.yml) in this directory`);
    out.push(...found);
  }
  return out;
}

/** Why a `--trace FILE` could not be written, or undefined when it can (checked before the run). */
export function unwritableFile(path: string): string | undefined {
  let st;
  try {
    st = statSync(path);
  } catch {
    const dir = dirname(path);
    try {
      if (!statSync(dir).isDirectory()) return `${path}: ${dir} is not a directory`;
    } catch {
      return `${path}: the directory ${dir} does not exist`;
    }
    return undefined;
  }
  return st.isDirectory() ? `${path}: is a directory, not a file` : undefined;
}

/** Pads columns to a plain-text table. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join('  ').trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n') + '\n';
}

const STORY_TAIL = 30;

/** `kube-proxy:fixed`, or `kube-proxy:fixed, node-2 kube-proxy:faulty` when nodes run their own. */
function controllerLabel(s: SimScenario): string {
  const own = s.cluster.nodes.filter((n) => n.controller !== undefined).map((n) => `${n.name} ${n.controller?.name ?? ''}`);
  const alongside = (s.alongside ?? []).map((c) => ` + ${c.name}`).join('');
  return [`${s.controller.name}${alongside}`, ...own].join(', ');
}

function storyText(r: ReplayResult, full: boolean): string {
  const lines = r.story;
  if (full || lines.length <= STORY_TAIL) return lines.join('\n');
  const skipped = lines.length - STORY_TAIL;
  return [`   … ${skipped} earlier lines (--full-story prints them, --trace records every event)`, ...lines.slice(skipped)].join('\n');
}

/** Runs the command; returns the exit status. */
export async function runReplay(paths: readonly string[], opts: ReplayCliOptions, io: Io = defaultIo): Promise<number> {
  const traceToStdout = opts.trace === true || opts.trace === '-';
  const traceFile = typeof opts.trace === 'string' && !traceToStdout ? userPath(opts.trace) : undefined;
  const problem = traceFile === undefined ? undefined : unwritableFile(traceFile);
  if (problem !== undefined) {
    io.stderr(`netsim replay: --trace ${problem}\n`);
    return 2;
  }
  let files: string[];
  try {
    files = paths.length > 0 ? scenarioPaths(paths.map(userPath)).map(displayPath) : scenarioPaths([bundledScenarios()]);
  } catch (e) {
    if (!(e instanceof NoScenariosError)) throw e;
    io.stderr(`netsim replay: ${displayPath(e.message)}\n`);
    return 2;
  }
  const plugins = await loadPlugins(opts.controllers, FUZZ_PROFILES);
  // With the trace on stdout, the human report goes to stderr so the JSON lines stay clean.
  const out = traceToStdout ? io.stderr : io.stdout;
  let trace = '';
  if (!opts.json) out(`netsim replay: ${files.length} scenario${files.length === 1 ? '' : 's'}, ${opts.seed !== undefined ? `seed ${opts.seed} (--seed)` : 'each with the seed in its file'}\n\n`);
  const rows: Row[] = [];
  for (const path of files) {
    try {
      const file = await loadScenarioFile(path);
      const result = await replay(file, { controllers: plugins.controllers, ...(opts.seed !== undefined ? { seed: opts.seed } : {}), trace: true });
      if (opts.trace !== undefined) trace += JSON.stringify({ step: 0, t: 0, type: 'replay.scenario', file: path, name: file.name, seed: result.seed }) + '\n' + toJsonLines(result.events);
      rows.push({ path, name: file.name, controller: controllerLabel(file.scenario), seed: result.seed, expected: result.expected, observed: result.observed, verdict: result.met ? 'met' : 'NOT MET', result });
    } catch (e) {
      let error: string;
      if (isScenarioError(e)) error = e.issues.map(formatIssue).join('\n');
      else if (isSimError(e)) error = `${path}: ${e.message}`;
      else throw e;
      rows.push({ path, name: path, controller: '?', seed: undefined, expected: '?', observed: 'could not run', verdict: 'error', error });
    }
  }
  if (opts.trace !== undefined) {
    if (traceToStdout) io.stdout(trace);
    else if (traceFile !== undefined) writeFileSync(traceFile, trace);
  }
  const failed = rows.filter((r) => r.verdict !== 'met');
  const status = rows.some((r) => r.verdict === 'error') ? 2 : failed.length > 0 ? 1 : 0;
  if (opts.json) {
    const report = {
      ok: status === 0,
      ...(opts.seed !== undefined ? { seed: opts.seed } : {}),
      scenarios: rows.map((r) => ({
        file: r.path,
        name: r.name,
        controller: r.controller,
        seed: r.seed ?? null,
        expected: r.expected,
        observed: r.observed,
        verdict: r.verdict,
        ...(r.result?.mismatch !== undefined ? { mismatch: r.result.mismatch } : {}),
        ...(r.error !== undefined ? { error: r.error } : {}),
        ...(r.result !== undefined ? { outcome: r.result.outcome, story: r.result.story } : {}),
      })),
    };
    io.stdout(`${JSON.stringify(report, null, 2)}\n`);
    return status;
  }
  out(formatTable(['scenario', 'controller', 'seed', 'expected', 'observed', 'verdict'], rows.map((r) => [r.name, r.controller, r.seed === undefined ? '' : String(r.seed), r.expected, r.observed, r.verdict])));
  for (const r of rows) {
    // The reason goes to stderr: a report on stdout (or a trace) never carries error text.
    if (r.error !== undefined) io.stderr(`${r.path} could not be run:\n${r.error}\n`);
    const res = r.result;
    if (res === undefined) continue;
    if (res.outcome.status !== 'ok' || opts.stories === true) out(`\n${r.name} (${r.controller}, seed ${res.seed}): ${res.observed}\n${storyText(res, opts.fullStory === true)}\n`);
    if (!res.met) out(`${r.name}: NOT MET: ${res.mismatch ?? ''}\n`);
  }
  const met = rows.length - failed.length;
  out(`\n${met} of ${rows.length} scenario${rows.length === 1 ? '' : 's'} met ${rows.length === 1 ? 'its expectation' : 'their expectations'}\n`);
  for (const r of failed) if (r.seed !== undefined) out(`reproduce with: pnpm netsim replay ${r.path} --seed ${r.seed}\n`);
  return status;
}

function seedArg(v: string): number {
  if (!/^[0-9]+$/.test(v) || !Number.isSafeInteger(Number(v))) throw new InvalidArgumentError(`expected a non-negative integer, got "${v}"`);
  return Number(v);
}

/** The `replay` command. */
export function replayCommand(): Command {
  return new Command('replay')
    .description('run scenario files and check each against its expectation (default: the incident scenarios shipped with netsim)')
    .argument('[paths...]', 'scenario files or directories of them', [])
    .option('--seed <n>', 'run every scenario with this seed instead of its own', seedArg)
    .option('--trace [file]', 'write the JSON-lines trace of every run to FILE (or stdout when no file or "-")')
    .option('--json', 'print a JSON report instead of the table', false)
    .option('--full-story', `print whole stories (default: the last ${STORY_TAIL} lines)`, false)
    .option('--stories', 'print the story of every scenario, not only of those that broke an invariant', false)
    .option('--controllers <module>', 'a module exporting more controllers ("controllers": a registry by name)')
    .action(async (paths: string[], opts: ReplayCliOptions) => {
      process.exitCode = await runReplay(paths, opts);
    });
}
