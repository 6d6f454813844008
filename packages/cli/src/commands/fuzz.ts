/**
 * `netsim fuzz --controller npl:faulty --runs N [--seed S] [--shard i/n]`: a property-testing
 * campaign from the command line. It generates histories with the controller's fuzz profile,
 * shows a progress bar with the rate and ETA, and when an invariant breaks, shrinks the history,
 * writes it as a scenario file (default directory `.netsim-out/`) and prints how to replay it.
 * Exit 0 when no counterexample was found, 1 when one was, 2 on bad usage.
 *
 * Sharding: shard i of n runs its share of the N runs (the first N mod n shards one more) with
 * fast-check seed S + i, so n machines together try N different histories and each shard is
 * reproducible on its own.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { buildReport, renderHtml } from '@netsim/report';
import { isAbsolute, join, relative } from 'node:path';
import cliProgress from 'cli-progress';
import { Command, InvalidArgumentError } from 'commander';
import { checkProperty, exportCounterexample, type SimulationProperty } from '@netsim/check';
import { FUZZ_PROFILES, fuzzInvariants, fuzzProfileFor, fuzzProperty, scenarioFromCounterexample, serializeScenario } from '@netsim/scenario';
import type { SimScenario } from '@netsim/sim';
import { loadPlugins } from './registry.ts';
import type { Io } from './replay.ts';

export interface FuzzCliOptions {
  readonly controller: string;
  readonly runs: number;
  readonly seed: number;
  readonly shard?: { readonly index: number; readonly count: number };
  readonly out: string;
  readonly controllers?: string;
  readonly progress?: boolean;
  /** Controllers deployed beside the one under test on every node (`--alongside`, repeatable). */
  readonly alongside?: readonly string[];
  /** Upper bound on shrink attempts (default: `checkProperty`'s); 0 reports the first counterexample as found. */
  readonly maxShrinks?: number;
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

/** Counts the runs a property makes (the bar's value) by wrapping its `run`. */
function counted(prop: SimulationProperty<SimScenario>, onRun: () => void): SimulationProperty<SimScenario> {
  return { ...prop, run: (s, o) => (onRun(), prop.run(s, o)) };
}

/** Runs the command; returns the exit status. */
export async function runFuzz(opts: FuzzCliOptions, io: Io = defaultIo): Promise<number> {
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
  const besides = alongside.map((n) => ` beside ${n}`).join('');
  const alongsideArgs = alongside.map((n) => ` --alongside ${n}`).join('');
  const plan = shardPlan(opts.runs, opts.seed, opts.shard);
  const shardText = opts.shard !== undefined ? `, shard ${opts.shard.index}/${opts.shard.count}` : '';
  // The profile's invariants, then the built-in, controller-agnostic ones.
  const invariants = fuzzInvariants(profile);
  io.stdout(`netsim fuzz: seed ${plan.seed}${shardText}, ${plan.runs} runs of ${opts.controller}${besides} against ${invariants.length} invariant${invariants.length === 1 ? '' : 's'}\n`);

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
  const showBar = opts.progress !== false && process.stderr.isTTY;
  // The CLI may read the wall clock, for the rate and ETA only.
  const started = Date.now();
  let runs = 0;
  let shrinking = false;
  if (showBar) bar.start(plan.runs, 0, { rate: '0', phase: 'searching' });
  const prop = counted(fuzzProperty(opts.controller, profile, plugins.controllers, { alongside: alongside.map((name) => ({ name })), builtins: true }), () => {
    if (shrinking) return;
    runs++;
    const rate = (runs * 1000) / Math.max(1, Date.now() - started);
    if (showBar) bar.update(runs, { rate: rate.toFixed(1), phase: 'searching' });
  });
  const { runs: numRuns, seed } = plan;
  const result = await checkProperty(
    {
      ...prop,
      run: async (s, o) => {
        const r = await prop.run(s, o);
        // The first failure starts the shrinking phase: later runs are shrink attempts.
        if (r.outcome.status !== 'ok' && !shrinking) {
          shrinking = true;
          if (showBar) bar.update(runs, { phase: 'found a counterexample, shrinking' });
        }
        return r;
      },
    },
    { seed, numRuns, ...(opts.maxShrinks !== undefined ? { maxShrinks: opts.maxShrinks } : {}) },
  );
  if (showBar) {
    bar.update(runs, { phase: result.ok ? 'done' : 'shrunk' });
    bar.stop();
  }
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (result.ok) {
    io.stdout(`no counterexample in ${result.numRuns} runs (${seconds}s); reproduce with${alongsideArgs} --seed ${opts.seed}${opts.shard !== undefined ? ` --shard ${opts.shard.index}/${opts.shard.count}` : ''} --runs ${opts.runs}\n`);
    return 0;
  }
  const c = exportCounterexample(result);
  const name = `fuzz-${opts.controller.replace(/[^a-z0-9]+/g, '-')}-seed-${seed}`.replace(/-+$/, '');
  const file = scenarioFromCounterexample(c, { name, invariants });
  mkdirSync(opts.out, { recursive: true });
  const path = join(opts.out, `${name}.yaml`);
  // Editors find the schema when the output lies inside this checkout (the default `.netsim-out/`).
  const schemaUrl = relative(opts.out, 'packages/scenario/schema/scenario.schema.json');
  const inside = !relative('.', opts.out).startsWith('..') && !isAbsolute(relative('.', opts.out));
  writeFileSync(path, serializeScenario(file, { ...(inside ? { schemaUrl } : {}), comment: `Found by: netsim fuzz --controller ${opts.controller}${alongsideArgs} --seed ${opts.seed}${opts.shard !== undefined ? ` --shard ${opts.shard.index}/${opts.shard.count}` : ''} --runs ${opts.runs}` }));
  // The counterexample's picture, beside its scenario file.
  const reportPath = join(opts.out, `${name}.html`);
  writeFileSync(reportPath, renderHtml(buildReport(result.events, { title: name })));
  io.stdout(
    [
      `counterexample after ${result.numRuns} runs and ${result.numShrinks} shrinks (${seconds}s): ${c.expected.message}`,
      `history: ${c.scenario.timeline.length} action${c.scenario.timeline.length === 1 ? '' : 's'}, story: ${result.story.length} lines`,
      ...(result.deterministic ? [] : ['WARNING: the replay ended differently from the run that found it: something is not deterministic']),
      '',
      ...result.story,
      '',
      `written to ${path}`,
      `replay with: pnpm netsim replay ${path}${opts.controllers !== undefined ? ` --controllers ${opts.controllers}` : ''}`,
      `reproduce the search with: pnpm netsim fuzz --controller ${opts.controller}${alongsideArgs} --seed ${opts.seed}${opts.shard !== undefined ? ` --shard ${opts.shard.index}/${opts.shard.count}` : ''} --runs ${opts.runs}`,
      `report: ${reportPath}`,
      '',
    ].join('\n'),
  );
  return 1;
}

function intArg(min: number) {
  return (v: string): number => {
    if (!/^[0-9]+$/.test(v) || !Number.isSafeInteger(Number(v)) || Number(v) < min) throw new InvalidArgumentError(`expected an integer >= ${min}, got "${v}"`);
    return Number(v);
  };
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
    .description('search generated histories for a counterexample to a controller\'s invariants')
    .requiredOption('--controller <name>', 'the controller under test, like npl:faulty')
    .option('--runs <n>', 'histories to try', intArg(1), FUZZ_DEFAULTS.runs)
    .option('--seed <n>', 'fast-check seed (print it, keep it: it reproduces the campaign)', intArg(0), FUZZ_DEFAULTS.seed)
    .option('--shard <i/n>', 'run shard i of n (seed + i, runs / n)', shardArg)
    .option('--out <dir>', 'where counterexamples are written as scenario files', '.netsim-out')
    .option('--controllers <module>', 'a module exporting more controllers ("controllers") and "fuzzProfiles"')
    .option('--alongside <name>', 'another controller on every node beside the one under test, like kube-proxy:fixed (repeatable); the generated restarts hit it too', (v: string, prev: string[] = []) => [...prev, v])
    .option('--no-progress', 'no progress bar')
    .action(async (opts: FuzzCliOptions) => {
      process.exitCode = await runFuzz(opts);
    });
}
