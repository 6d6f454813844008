/**
 * `netsim fuzz --controller npl:faulty --runs N [--seed S|random] [--shard i/n] [--time-budget T]`:
 * a property-testing campaign from the command line. It generates histories with the
 * controller's fuzz profile, shows a progress bar with the rate and ETA (plain progress lines
 * when stderr is not a terminal), and when an invariant breaks, shrinks the history, writes it as
 * a scenario file (default directory `.netsim-out/`) and prints how to replay it. Every campaign
 * ends with its coverage: how often each action and fault kind was generated, and how much each
 * counting invariant examined. `--report-json FILE` and `--junit FILE` write the outcome for CI.
 *
 * Exit 0 when no counterexample was found; 1 when one was, or when an invariant examined nothing
 * in every run (it could not have caught anything: the campaign proved nothing about it); 2 on
 * bad usage, checked before the campaign runs (an unknown controller, an output path that cannot
 * be written).
 *
 * Sharding: shard i of n runs its share of the N runs (the first N mod n shards one more) with
 * fast-check seed S + i, so n machines together try N different histories and each shard is
 * reproducible on its own.
 */
import { randomInt } from 'node:crypto';
import { accessSync, constants, existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import cliProgress from 'cli-progress';
import { Command, InvalidArgumentError } from 'commander';
import { buildReport, renderHtml } from '@netsim/report';
import { IPTABLES_FAULTS, WATCH_FAULTS, checkProperty, exportCounterexample, HISTORY_SHAPES, type SimulationProperty } from '@netsim/check';
import { invariantName, scenarioFromCounterexample, serializeScenario, type InvariantSpec } from '@netsim/scenario';
import { FUZZ_PROFILES, fuzzInvariants, fuzzProfileFor, fuzzProperty } from '@netsim/controllers';
import type { SimScenario } from '@netsim/sim';
import { displayPath, invokedAs, userPath } from '../cwd.ts';
import { loadPlugins } from './registry.ts';
import type { Io } from './replay.ts';
import { unwritableFile } from './replay.ts';

export interface FuzzCliOptions {
  readonly controller: string;
  /** Histories to try (default 100; unbounded with a time budget and no `runs`). */
  readonly runs?: number;
  /** fast-check's seed, or `'random'`: drawn from the OS and printed first (default 1). */
  readonly seed?: number | 'random';
  readonly shard?: { readonly index: number; readonly count: number };
  readonly out: string;
  readonly controllers?: string;
  readonly progress?: boolean;
  /** Controllers deployed beside the one under test on every node (`--alongside`, repeatable). */
  readonly alongside?: readonly string[];
  /** Upper bound on shrink attempts (default: `checkProperty`'s); 0 reports the first counterexample as found. */
  readonly maxShrinks?: number;
  /** Stop searching after this many milliseconds of wall time (`--time-budget`). */
  readonly timeBudget?: number;
  /** Write the campaign's outcome as JSON here (`--report-json`). */
  readonly reportJson?: string;
  /** Write the campaign's outcome as a JUnit XML report here (`--junit`). */
  readonly junit?: string;
  /** The command line as given (to print `--time-budget` as the user wrote it). */
  readonly timeBudgetText?: string;
}

/** What `netsim fuzz` runs when given only `--controller`: the default campaign. */
export const FUZZ_DEFAULTS = { runs: 100, seed: 1 } as const;

const defaultIo: Io = { stdout: (s) => void process.stdout.write(s), stderr: (s) => void process.stderr.write(s) };

/** This shard's number of runs and fast-check seed. */
export function shardPlan(runs: number, seed: number, shard: FuzzCliOptions['shard']): { readonly runs: number; readonly seed: number } {
  if (shard === undefined) return { runs, seed };
  const base = Math.floor(runs / shard.count);
  return { runs: base + (shard.index < runs % shard.count ? 1 : 0), seed: seed + shard.index };
}

/** What a campaign generated and examined, over its search runs (shrink attempts not counted). */
export interface FuzzCoverage {
  readonly runs: number;
  /** Timeline actions generated, by kind (every kind the profile may generate, 0 when none was). */
  readonly actions: { readonly [kind: string]: number };
  /** The fault kinds among them (iptables and watch faults). */
  readonly faults: { readonly [kind: string]: number };
  /**
   * History shapes (composite histories such as `failing-start`), by the number of runs whose
   * swarm turned them on: a shape expands into ordinary actions, counted under `actions`.
   */
  readonly shapes: { readonly [shape: string]: number };
  /** Each counting invariant: in how many runs it examined something, and how much in all. */
  readonly invariants: { readonly [name: string]: { readonly runs: number; readonly examined: number } };
}

const FAULT_KINDS: ReadonlySet<string> = new Set<string>([...IPTABLES_FAULTS, ...WATCH_FAULTS]);

class CoverageCounter {
  runs = 0;
  readonly actions = new Map<string, number>();
  readonly shapes = new Map<string, number>();
  readonly invariants = new Map<string, { runs: number; examined: number }>();
  constructor(kinds: readonly string[]) {
    for (const k of kinds) ((HISTORY_SHAPES as readonly string[]).includes(k) ? this.shapes : this.actions).set(k, 0);
  }
  add(s: SimScenario, coverage: { readonly [invariant: string]: number } | undefined): void {
    this.runs++;
    for (const t of s.timeline) this.actions.set(t.action.kind, (this.actions.get(t.action.kind) ?? 0) + 1);
    // Without a swarm draw every kind of the profile is on in every run.
    const on = s.swarm === undefined ? [...this.shapes.keys()] : Object.keys(s.swarm.features).filter((f) => this.shapes.has(f));
    for (const shape of on) this.shapes.set(shape, (this.shapes.get(shape) ?? 0) + 1);
    for (const [name, n] of Object.entries(coverage ?? {})) {
      const c = this.invariants.get(name) ?? { runs: 0, examined: 0 };
      this.invariants.set(name, { runs: c.runs + (n > 0 ? 1 : 0), examined: c.examined + n });
    }
  }
  result(): FuzzCoverage {
    const sorted = <V>(m: Iterable<[string, V]>): { [k: string]: V } => Object.fromEntries([...m].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    const entries = [...this.actions];
    return {
      runs: this.runs,
      actions: sorted(entries.filter(([k]) => !FAULT_KINDS.has(k))),
      faults: sorted(entries.filter(([k]) => FAULT_KINDS.has(k))),
      shapes: sorted(this.shapes),
      invariants: sorted(this.invariants),
    };
  }
}

/**
 * The coverage lines every campaign prints. `asked`: the invariants the profile names; a built-in
 * one added to every campaign that examined nothing met nothing it judges in these runs (a
 * controller that programs no DNAT, or histories with no resync), which is not a failure.
 */
export function formatCoverage(c: FuzzCoverage, asked: ReadonlySet<string> = new Set()): string[] {
  const counts = (m: { readonly [k: string]: number }): string => {
    const e = Object.entries(m);
    return e.length === 0 ? 'none' : e.map(([k, n]) => `${k} ${n}`).join(', ');
  };
  return [
    `coverage over ${c.runs} run${c.runs === 1 ? '' : 's'}:`,
    `  actions generated: ${counts(c.actions)}`,
    `  faults generated: ${counts(c.faults)}`,
    ...(Object.keys(c.shapes).length === 0 ? [] : [`  history shapes (runs whose swarm turned them on): ${counts(c.shapes)}`]),
    '  invariants (runs that examined something, total examined):',
    ...(Object.keys(c.invariants).length === 0
      ? ['    none counts what it examines']
      : Object.entries(c.invariants).map(([name, v]) => `    ${name}: ${v.runs}/${c.runs} runs, ${v.examined} examined${v.examined === 0 ? (asked.has(name) ? '  <- examined nothing' : '  (built-in: nothing to examine in these runs)') : ''}`)),
  ];
}

/** Why `--out DIR` could not be written, or undefined when it can (checked before the run). */
export function unwritableDir(path: string): string | undefined {
  let dir = path;
  for (;;) {
    let st;
    try {
      st = statSync(dir);
    } catch {
      const parent = dirname(dir);
      if (parent === dir) return `${path}: no directory to create it in`;
      dir = parent;
      continue;
    }
    if (!st.isDirectory()) return dir === path ? `${path}: is a file, not a directory` : `${path}: ${dir} is a file, not a directory`;
    try {
      accessSync(dir, constants.W_OK);
    } catch {
      return `${path}: ${dir} is not writable`;
    }
    return undefined;
  }
}

function quote(arg: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

function xml(text: string): string {
  // Characters XML 1.0 cannot carry (control characters) are dropped.
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, '').replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** The campaign's outcome as data: `--report-json` writes it, `--junit` renders it. */
export interface FuzzReport {
  readonly format: 'netsim.fuzz/v1';
  readonly ok: boolean;
  readonly status: 'passed' | 'counterexample' | 'vacuous';
  readonly controller: string;
  readonly alongside: readonly string[];
  readonly seed: number;
  readonly shard: { readonly index: number; readonly count: number } | null;
  /** Runs asked for (null: until the time budget ran out). */
  readonly runsPlanned: number | null;
  readonly runs: number;
  readonly seconds: number;
  readonly interrupted: boolean;
  readonly invariants: readonly string[];
  readonly coverage: FuzzCoverage;
  /** Invariants the profile asks for that count and examined nothing in every run. */
  readonly vacuous: readonly string[];
  readonly counterexample: {
    readonly message: string;
    readonly signature: string;
    readonly shrinks: number;
    readonly actions: number;
    readonly file: string;
    readonly report: string;
    readonly story: readonly string[];
  } | null;
  readonly reproduce: string;
}

/** A JUnit XML report: one test case per invariant, plus one for findings and bounds. */
export function junitReport(r: FuzzReport): string {
  const failed = r.counterexample?.signature;
  const cases: { name: string; failure?: { message: string; body: string } }[] = [];
  const story = (r.counterexample?.story ?? []).join('\n');
  const failure = (message: string): { message: string; body: string } => ({ message, body: `${message}\n\n${story}\n\n${r.reproduce}` });
  for (const inv of r.invariants) {
    if (failed === `violation:${inv}`) cases.push({ name: inv, failure: failure(r.counterexample?.message ?? '') });
    else if (r.vacuous.includes(inv)) cases.push({ name: inv, failure: { message: `examined nothing in any of the ${r.runs} runs`, body: `invariant "${inv}" examined nothing in any of the ${r.runs} runs: the campaign could not have caught a violation of it\n\n${r.reproduce}` } });
    else cases.push({ name: inv });
  }
  const other = failed !== undefined && !failed.startsWith('violation:');
  cases.push({ name: 'no findings or bounds (controller errors, unhandled rejections, step and time bounds)', ...(other ? { failure: failure(r.counterexample?.message ?? '') } : {}) });
  const suite = `netsim fuzz ${r.controller}${r.alongside.map((a) => ` beside ${a}`).join('')}`;
  const failures = cases.filter((c) => c.failure !== undefined).length;
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="netsim fuzz" tests="${cases.length}" failures="${failures}" errors="0" time="${r.seconds.toFixed(3)}">`,
    `  <testsuite name="${xml(suite)}" tests="${cases.length}" failures="${failures}" errors="0" skipped="0" time="${r.seconds.toFixed(3)}">`,
    '    <properties>',
    `      <property name="seed" value="${r.seed}"/>`,
    `      <property name="runs" value="${r.runs}"/>`,
    `      <property name="reproduce" value="${xml(r.reproduce)}"/>`,
    '    </properties>',
    ...cases.flatMap((c) =>
      c.failure === undefined
        ? [`    <testcase classname="${xml(suite)}" name="${xml(c.name)}" time="0"/>`]
        : [`    <testcase classname="${xml(suite)}" name="${xml(c.name)}" time="0">`, `      <failure message="${xml(c.failure.message)}" type="${r.status}">${xml(c.failure.body)}</failure>`, '    </testcase>'],
    ),
    '  </testsuite>',
    '</testsuites>',
    '',
  ];
  return lines.join('\n');
}

/**
 * The scenario JSON schema of the installed `@netsim/scenario` (its build copies it into dist/),
 * or of this checkout's; undefined when neither is there.
 */
export function scenarioSchema(): string | undefined {
  let dir: string;
  try {
    dir = dirname(createRequire(import.meta.url).resolve('@netsim/scenario'));
  } catch {
    return undefined;
  }
  for (let up = 0; up < 3; up++, dir = dirname(dir)) {
    for (const candidate of [join(dir, 'schema', 'scenario.schema.json'), join(dir, 'dist', 'schema', 'scenario.schema.json')]) if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

/** Runs the command; returns the exit status. */
export async function runFuzz(opts: FuzzCliOptions, io: Io = defaultIo): Promise<number> {
  // Every output path is checked before the campaign, so no result is lost at the end.
  const out = userPath(opts.out);
  const outProblem = unwritableDir(out);
  if (outProblem !== undefined) {
    io.stderr(`netsim fuzz: --out ${outProblem}\n`);
    return 2;
  }
  for (const [flag, file] of [
    ['--report-json', opts.reportJson],
    ['--junit', opts.junit],
  ] as const) {
    const problem = file === undefined ? undefined : unwritableFile(userPath(file));
    if (problem !== undefined) {
      io.stderr(`netsim fuzz: ${flag} ${problem}\n`);
      return 2;
    }
  }
  const plugins = await loadPlugins(opts.controllers, FUZZ_PROFILES);
  if (plugins.controllers[opts.controller] === undefined) {
    io.stderr(`netsim fuzz: unknown controller "${opts.controller}" (known: ${Object.keys(plugins.controllers).sort().join(', ') || 'none'})\n`);
    return 2;
  }
  // A preset of the controller's family, else the generic swarm.
  const profile = fuzzProfileFor(opts.controller, plugins.fuzzProfiles);
  const alongside = opts.alongside ?? [];
  for (const name of alongside) {
    if (plugins.controllers[name] === undefined) {
      io.stderr(`netsim fuzz: unknown controller "${name}" for --alongside (known: ${Object.keys(plugins.controllers).sort().join(', ')})\n`);
      return 2;
    }
  }
  // A random seed is drawn here (the CLI may use the OS's randomness; the campaign is then as
  // reproducible as any other once the seed is printed).
  const seedGiven = opts.seed ?? FUZZ_DEFAULTS.seed;
  const baseSeed = seedGiven === 'random' ? randomInt(0, 2 ** 31) : seedGiven;
  const runsPlanned = opts.runs ?? (opts.timeBudget !== undefined ? undefined : FUZZ_DEFAULTS.runs);
  const plan = shardPlan(runsPlanned ?? Number.MAX_SAFE_INTEGER, baseSeed, opts.shard);
  const planRuns = runsPlanned === undefined ? undefined : plan.runs;
  const besides = alongside.map((n) => ` beside ${n}`).join('');
  const shardText = opts.shard !== undefined ? `, shard ${opts.shard.index}/${opts.shard.count}` : '';
  const budgetText = opts.timeBudget !== undefined ? `${planRuns === undefined ? '' : ' at most'} for ${opts.timeBudgetText ?? `${opts.timeBudget / 1000}s`}` : '';
  // The profile's invariants, then the built-in, controller-agnostic ones.
  // And every invariant a --controllers module registers, by name (so a counterexample file names it).
  const registered: InvariantSpec[] = Object.keys(plugins.invariants)
    .sort()
    .filter((name) => !profile.invariants.some((s) => s.kind === 'custom' && s.name === name))
    .map((name) => ({ kind: 'custom', name }));
  const invariants = [...fuzzInvariants(profile), ...registered];
  io.stdout(
    `netsim fuzz: seed ${plan.seed}${seedGiven === 'random' ? ' (--seed random)' : ''}${shardText}, ${planRuns === undefined ? 'runs' : `${planRuns} runs`}${budgetText} of ${opts.controller}${besides} against ${invariants.length} invariant${invariants.length === 1 ? '' : 's'}\n`,
  );

  /** The command line that repeats this campaign: every flag given, the drawn seed, and the runs a time budget allowed. */
  const command = (runs: number | undefined): string =>
    [
      invokedAs(),
      'fuzz',
      '--controller',
      opts.controller,
      ...(opts.controllers !== undefined ? ['--controllers', opts.controllers] : []),
      ...alongside.flatMap((n) => ['--alongside', n]),
      '--seed',
      String(baseSeed),
      ...(opts.shard !== undefined ? ['--shard', `${opts.shard.index}/${opts.shard.count}`] : []),
      ...(runs !== undefined ? ['--runs', String(runs)] : opts.timeBudget !== undefined ? ['--time-budget', opts.timeBudgetText ?? `${opts.timeBudget / 1000}s`] : []),
      ...(opts.maxShrinks !== undefined ? ['--max-shrinks', String(opts.maxShrinks)] : []),
      ...(opts.out !== '.netsim-out' ? ['--out', opts.out] : []),
    ]
      .map(quote)
      .join(' ')
      .replace(/^'(.*)'( |$)/, '$1$2');

  const tty = process.stderr.isTTY === true;
  const showBar = opts.progress !== false && tty;
  const showLines = opts.progress !== false && !tty;
  const bar = new cliProgress.SingleBar(
    {
      format: `${opts.controller} [{bar}] {value}/{total} runs | {rate} runs/s | ETA {eta_formatted} | {phase}`,
      stream: process.stderr,
      hideCursor: true,
      clearOnComplete: false,
      etaBuffer: 50,
      noTTYOutput: false,
    },
    cliProgress.Presets.shades_classic,
  );
  // The CLI may read the wall clock, for the rate, the ETA, the time budget and progress lines.
  const started = Date.now();
  let lastLine = started;
  const lineEvery = planRuns === undefined ? 0 : Math.max(1, Math.ceil(planRuns / 10));
  let runs = 0;
  let shrinking = false;
  const coverage = new CoverageCounter(profile.scenarios.timeline?.kinds ?? []);
  const rateText = (): string => ((runs * 1000) / Math.max(1, Date.now() - started)).toFixed(1);
  if (showBar) bar.start(planRuns ?? 0, 0, { rate: '0', phase: 'searching' });
  const prop: SimulationProperty<SimScenario> = fuzzProperty(opts.controller, profile, plugins.controllers, { alongside: alongside.map((name) => ({ name })), builtins: true, invariants: plugins.invariants, extra: registered });
  const result = await checkProperty(
    {
      ...prop,
      run: async (s, o) => {
        const r = await prop.run(s, o);
        if (!shrinking) {
          runs++;
          coverage.add(s, r.coverage);
          if (showBar) bar.update(runs, { rate: rateText(), phase: 'searching' });
          const now = Date.now();
          if (showLines && (lineEvery > 0 ? runs % lineEvery === 0 : now - lastLine >= 10_000)) {
            lastLine = now;
            io.stderr(`${opts.controller}: ${runs}${planRuns !== undefined ? `/${planRuns}` : ''} runs, ${rateText()} runs/s, ${((now - started) / 1000).toFixed(0)}s\n`);
          }
        }
        // The first failure starts the shrinking phase: later runs are shrink attempts.
        if (r.outcome.status !== 'ok' && !shrinking) {
          shrinking = true;
          if (showBar) bar.update(runs, { phase: 'found a counterexample, shrinking' });
          if (showLines) io.stderr(`${opts.controller}: counterexample at run ${runs}, shrinking\n`);
        }
        return r;
      },
    },
    {
      seed: plan.seed,
      numRuns: plan.runs,
      ...(opts.maxShrinks !== undefined ? { maxShrinks: opts.maxShrinks } : {}),
      ...(opts.timeBudget !== undefined ? { timeLimitMs: opts.timeBudget } : {}),
    },
  );
  if (showBar) {
    bar.update(runs, { phase: result.ok ? 'done' : 'shrunk' });
    bar.stop();
  }
  const elapsed = (Date.now() - started) / 1000;
  const seconds = elapsed.toFixed(1);
  const cov = coverage.result();
  const invariantNames = [...new Set([...invariants.map(invariantName), ...Object.keys(cov.invariants)])];
  const silent = invariantNames.filter((n) => cov.invariants[n] === undefined);
  // Vacuous: an invariant the profile asks for that examined nothing in every run. The built-in
  // checks added to every campaign only apply to what a controller does (no DNAT, no published
  // mappings: nothing to examine) and are listed, not failed.
  const asked = new Set(profile.invariants.map(invariantName));
  const vacuous = Object.entries(cov.invariants)
    .filter(([k, v]) => v.examined === 0 && asked.has(k))
    .map(([k]) => k);
  const interrupted = result.ok ? result.interrupted === true : runs < (planRuns ?? Number.MAX_SAFE_INTEGER) && opts.timeBudget !== undefined && elapsed * 1000 >= opts.timeBudget;
  // With a time budget, the runs it allowed reproduce the campaign (the budget would not).
  const reproduce = command(opts.timeBudget !== undefined ? (result.ok ? result.numRuns : runs) : opts.runs);
  const lines: string[] = [];
  let exit = 0;
  let counterexample: FuzzReport['counterexample'] = null;
  if (result.ok) {
    lines.push(`no counterexample in ${result.numRuns} runs (${seconds}s${result.interrupted === true ? ', the time budget ran out' : ''})`);
  } else {
    exit = 1;
    const c = exportCounterexample(result);
    const name = `fuzz-${opts.controller.replace(/[^a-z0-9]+/g, '-')}-seed-${plan.seed}`.replace(/-+$/, '');
    const file = scenarioFromCounterexample(c, { name, invariants });
    mkdirSync(out, { recursive: true });
    const path = join(out, `${name}.yaml`);
    // Editors find the schema (where @netsim/scenario lies, installed or in this checkout).
    const schema = scenarioSchema();
    writeFileSync(path, serializeScenario(file, { ...(schema !== undefined ? { schemaUrl: relative(out, schema) } : {}), comment: `Found by: ${reproduce}` }));
    // The counterexample's picture, beside its scenario file.
    const reportPath = join(out, `${name}.html`);
    writeFileSync(reportPath, renderHtml(buildReport(result.events, { title: name })));
    counterexample = {
      message: c.expected.message,
      signature: c.expected.signature,
      shrinks: result.numShrinks,
      actions: c.scenario.timeline.length,
      file: displayPath(path),
      report: displayPath(reportPath),
      story: result.story,
    };
    lines.push(
      `counterexample after ${result.numRuns} runs and ${result.numShrinks} shrinks (${seconds}s${interrupted ? ', the time budget ran out while shrinking' : ''}): ${c.expected.message}`,
      `history: ${c.scenario.timeline.length} action${c.scenario.timeline.length === 1 ? '' : 's'}, story: ${result.story.length} lines`,
      ...(result.deterministic ? [] : ['WARNING: the replay ended differently from the run that found it: something is not deterministic']),
      '',
      ...result.story,
      '',
      `written to ${displayPath(path)}`,
      `replay with: ${[invokedAs(), 'replay', displayPath(path), ...(opts.controllers !== undefined ? ['--controllers', opts.controllers] : [])].map(quote).join(' ').replace(/^'(.*)'( |$)/, '$1$2')}`,
      `report: ${displayPath(reportPath)}`,
    );
  }
  lines.push('', ...formatCoverage(cov, asked));
  if (silent.length > 0) lines.push(`  not counting what they examine: ${silent.join(', ')}`);
  lines.push('');
  if (vacuous.length > 0 && runs > 0) {
    lines.push(
      `vacuous: ${vacuous.map((v) => `"${v}"`).join(', ')} examined nothing in any of the ${runs} runs: the campaign could not have caught a violation of ${vacuous.length === 1 ? 'it' : 'them'} (the profile generates no state ${vacuous.length === 1 ? 'it looks' : 'they look'} at)`,
    );
    if (exit === 0) exit = 1;
  }
  lines.push(`reproduce with: ${reproduce}`, '');
  io.stdout(lines.join('\n'));
  const report: FuzzReport = {
    format: 'netsim.fuzz/v1',
    ok: exit === 0,
    status: !result.ok ? 'counterexample' : exit !== 0 ? 'vacuous' : 'passed',
    controller: opts.controller,
    alongside,
    seed: plan.seed,
    shard: opts.shard ?? null,
    runsPlanned: planRuns ?? null,
    runs,
    seconds: Number(seconds),
    interrupted,
    invariants: invariantNames,
    coverage: cov,
    vacuous,
    counterexample,
    reproduce,
  };
  if (opts.reportJson !== undefined) writeFileSync(userPath(opts.reportJson), `${JSON.stringify(report, null, 2)}\n`);
  if (opts.junit !== undefined) writeFileSync(userPath(opts.junit), junitReport(report));
  return exit;
}

function intArg(min: number) {
  return (v: string): number => {
    if (!/^[0-9]+$/.test(v) || !Number.isSafeInteger(Number(v)) || Number(v) < min) throw new InvalidArgumentError(`expected an integer >= ${min}, got "${v}"`);
    return Number(v);
  };
}

function seedArg(v: string): number | 'random' {
  if (v === 'random') return v;
  if (!/^[0-9]+$/.test(v) || !Number.isSafeInteger(Number(v))) throw new InvalidArgumentError(`expected an integer >= 0 or "random", got "${v}"`);
  return Number(v);
}

/** `90`, `90s`, `15m`, `1h`, `1h30m`: milliseconds. */
export function durationArg(v: string): number {
  const m = /^(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s?)?$/.exec(v);
  const ms = m === null || v === '' ? Number.NaN : (Number(m[1] ?? 0) * 3600 + Number(m[2] ?? 0) * 60 + Number(m[3] ?? 0)) * 1000;
  if (!Number.isSafeInteger(ms) || ms <= 0) throw new InvalidArgumentError(`expected a duration like 90, 90s, 15m or 1h30m, got "${v}"`);
  return ms;
}

function shardArg(v: string): { readonly index: number; readonly count: number } {
  const m = /^([0-9]+)\/([0-9]+)$/.exec(v);
  const index = Number(m?.[1]);
  const count = Number(m?.[2]);
  if (m === null || count < 1 || index >= count) throw new InvalidArgumentError(`expected i/n with 0 <= i < n, like 0/4, got "${v}"`);
  return { index, count };
}

/** The `fuzz` command. */
export function fuzzCommand(): Command {
  return new Command('fuzz')
    .description("search generated histories for a counterexample to a controller's invariants")
    .requiredOption('--controller <name>', 'the controller under test, like npl:faulty')
    .option('--runs <n>', `histories to try (default: ${FUZZ_DEFAULTS.runs}, or as many as --time-budget allows)`, intArg(1))
    .option('--seed <n>', `fast-check seed, or "random" to draw one (printed first; it reproduces the campaign) (default: ${FUZZ_DEFAULTS.seed})`, seedArg)
    .option('--time-budget <duration>', 'stop searching after this long (90s, 15m, 1h30m); the reproduce line gives the runs it allowed', (v: string) => ({ ms: durationArg(v), text: v }))
    .option('--shard <i/n>', 'run shard i of n (seed + i, runs / n)', shardArg)
    .option('--out <dir>', 'where counterexamples are written as scenario files', '.netsim-out')
    .option('--report-json <file>', 'write the outcome, coverage and any counterexample as JSON (for CI)')
    .option('--junit <file>', 'write a JUnit XML report: one test case per invariant (for CI)')
    .option('--controllers <module>', 'a module exporting more controllers ("controllers") and "fuzzProfiles"')
    .option('--alongside <name>', 'another controller on every node beside the one under test, like kube-proxy:fixed (repeatable); the generated restarts hit it too', (v: string, prev: string[] = []) => [...prev, v])
    .option('--max-shrinks <n>', 'upper bound on shrink attempts (0 reports the counterexample as found)', intArg(0))
    .option('--no-progress', 'no progress bar or progress lines')
    .action(async (opts: Omit<FuzzCliOptions, 'timeBudget'> & { timeBudget?: { readonly ms: number; readonly text: string } }) => {
      const { timeBudget, ...rest } = opts;
      process.exitCode = await runFuzz({ ...rest, ...(timeBudget !== undefined ? { timeBudget: timeBudget.ms, timeBudgetText: timeBudget.text } : {}) });
    });
}
