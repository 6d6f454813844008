/**
 * `netsim replay [PATH…]`: run scenario files (default: the incident scenarios shipped with the
 * CLI), print a table of scenario, controller, seed, expected and observed outcome and verdict,
 * then the numbered story of each violation. Exit 0 only when every scenario met its expectation,
 * 1 when one did not, 2 when a scenario could not be loaded or run, a directory holds none, or
 * the `--trace` file cannot be written (checked before anything runs).
 */
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command, InvalidArgumentError } from 'commander';
import { formatIssue, isScenarioError, loadScenarioFile, replay, type ReplayResult } from '@netsim/scenario';
import { FUZZ_PROFILES } from '@netsim/controllers';
import { isSimError, toJsonLines, type SimScenario } from '@netsim/sim';
import { buildReport, renderHtml, renderIndex } from '@netsim/report';
import { displayPath, invokedAs, userPath } from '../cwd.ts';
import { loadPlugins } from './registry.ts';

export interface ReplayCliOptions {
  readonly seed?: number;
  readonly trace?: string | true;
  readonly json?: boolean;
  readonly fullStory?: boolean;
  /** Print the story of every scenario, not only of violations and findings. */
  readonly stories?: boolean;
  readonly controllers?: string;
  /** Write DIR/<scenario>.html for each scenario and DIR/index.html linking them. */
  readonly report?: string;
  /** The widest the table may be (default: the terminal's width, 100 when not a terminal). */
  readonly width?: number;
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

/**
 * A plain-text table no wider than `maxWidth`, as its header lines and each row's lines: when the
 * natural widths do not fit, the widest columns narrow first and their cells wrap at spaces onto
 * continuation lines (a word longer than its column is cut), so nothing is lost.
 */
export function tableLines(header: readonly string[], rows: readonly (readonly string[])[], maxWidth = Number.POSITIVE_INFINITY): { head: string[]; rows: string[][] } {
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  const gap = 2;
  const total = (): number => widths.reduce((a, b) => a + b, 0) + gap * (widths.length - 1);
  const floor = header.map((h) => Math.max(h.length, 4));
  while (total() > maxWidth) {
    let widest = -1;
    for (let i = 0; i < widths.length; i++) if ((widths[i] ?? 0) > (floor[i] ?? 0) && (widest < 0 || (widths[i] ?? 0) > (widths[widest] ?? 0))) widest = i;
    if (widest < 0) break;
    widths[widest] = (widths[widest] ?? 0) - 1;
  }
  const lines = (cells: readonly string[]): string[] => {
    const wrapped = cells.map((c, i) => wrap(c, widths[i] ?? c.length));
    const height = Math.max(...wrapped.map((w) => w.length));
    const out: string[] = [];
    for (let l = 0; l < height; l++) out.push(wrapped.map((w, i) => (i === wrapped.length - 1 ? (w[l] ?? '') : (w[l] ?? '').padEnd(widths[i] ?? 0))).join(' '.repeat(gap)).trimEnd());
    return out;
  };
  return { head: [...lines(header), widths.map((w) => '-'.repeat(w)).join(' '.repeat(gap))], rows: rows.map(lines) };
}

/** Pads columns to a plain-text table (see {@link tableLines}). */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[], maxWidth = Number.POSITIVE_INFINITY): string {
  const t = tableLines(header, rows, maxWidth);
  return [...t.head, ...t.rows.flat()].join('\n') + '\n';
}

/**
 * The replay report's table. When all six columns fit in `width` they are one row per scenario;
 * otherwise each row keeps scenario, controller, seed and verdict, and the expected and observed
 * outcomes follow on their own indented lines, so a 100-column terminal shows every word.
 */
export function replayTable(rows: readonly (readonly [name: string, controller: string, seed: string, expected: string, observed: string, verdict: string])[], width: number): string {
  const wide = formatTable(['scenario', 'controller', 'seed', 'expected', 'observed', 'verdict'], rows);
  if (wide.split('\n').every((l) => l.length <= width)) return wide;
  const t = tableLines(['scenario', 'controller', 'seed', 'verdict'], rows.map((r) => [r[0], r[1], r[2], r[5]]), width);
  const detail = (label: string, text: string): string[] => wrap(text, Math.max(20, width - 13)).map((l, i) => `${i === 0 ? `    ${label}` : ' '.repeat(13)}${l}`);
  return [...t.head, ...t.rows.flatMap((lines, i) => [...lines, ...detail('expected ', rows[i]?.[3] ?? ''), ...detail('observed ', rows[i]?.[4] ?? '')])].join('\n') + '\n';
}

/** Word-wraps one cell to `width` columns. */
function wrap(text: string, width: number): string[] {
  if (text.length <= width) return [text];
  const out: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    let w = word;
    while (w.length > width) {
      if (line !== '') {
        out.push(line);
        line = '';
      }
      out.push(w.slice(0, width));
      w = w.slice(width);
    }
    if (line === '') line = w;
    else if (line.length + 1 + w.length <= width) line += ` ${w}`;
    else {
      out.push(line);
      line = w;
    }
  }
  if (line !== '') out.push(line);
  return out;
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
      const result = await replay(file, { controllers: plugins.controllers, invariants: plugins.invariants, ...(opts.seed !== undefined ? { seed: opts.seed } : {}), trace: true });
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
  if (opts.report !== undefined) writeReports(userPath(opts.report), rows);
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
  const width = opts.width ?? (process.stdout.isTTY && process.stdout.columns > 0 ? process.stdout.columns : 100);
  out(replayTable(rows.map((r) => [r.name, r.controller, r.seed === undefined ? '' : String(r.seed), r.expected, r.observed, r.verdict] as const), width));
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
  for (const r of failed) if (r.seed !== undefined) out(`reproduce with: ${invokedAs()} replay ${r.path} --seed ${r.seed}${opts.controllers !== undefined ? ` --controllers ${opts.controllers}` : ''}\n`);
  return status;
}

/** `--report DIR`: one HTML report per scenario that ran, and the table as DIR/index.html. */
function writeReports(dir: string, rows: readonly Row[]): void {
  mkdirSync(dir, { recursive: true });
  const used = new Set<string>();
  const index = rows.map((r) => {
    const cells = [r.name, r.controller, r.seed === undefined ? '' : String(r.seed), r.expected, r.observed, r.verdict];
    if (r.result === undefined) return { cells, ok: false };
    let file = `${r.name.replace(/[^A-Za-z0-9._-]+/g, '-')}.html`;
    for (let k = 2; used.has(file); k++) file = `${r.name.replace(/[^A-Za-z0-9._-]+/g, '-')}-${k}.html`;
    used.add(file);
    writeFileSync(join(dir, file), renderHtml(buildReport(r.result.events, { title: r.name })));
    return { cells, href: file, ok: r.verdict === 'met' };
  });
  writeFileSync(join(dir, 'index.html'), renderIndex('netsim replay', ['scenario', 'controller', 'seed', 'expected', 'observed', 'verdict'], index));
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
    .option('--report <dir>', 'write DIR/<scenario>.html (a timeline report of each run) and DIR/index.html (this table, linking them)')
    .action(async (paths: string[], opts: ReplayCliOptions) => {
      process.exitCode = await runReplay(paths, opts);
    });
}
