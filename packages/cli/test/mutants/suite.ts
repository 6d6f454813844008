/**
 * The mutation suite's runner: each one-bug variant of `packages/controllers/mutants/` goes
 * through `netsim fuzz` itself (`runFuzz`, loading the variants as a `--controllers` module) with
 * the command's default runs and seed, stopping at the first counterexample instead of shrinking
 * it. Shared by the test and the `pnpm bench` entry.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FUZZ_DEFAULTS, runFuzz } from '../../src/commands/fuzz.ts';

/** The variants' module, as a user would pass it to `--controllers`. */
export const MUTANTS_MODULE = fileURLToPath(new URL('../../../controllers/mutants/index.ts', import.meta.url));

/** How the default campaign did against one controller. */
export interface CampaignResult {
  readonly controller: string;
  readonly caught: boolean;
  /** The run that found the counterexample (1-based), when caught. */
  readonly atRun?: number;
  /** The counterexample's one-line summary, when caught. */
  readonly summary?: string;
  /** Wall-clock time of the campaign (reported, never asserted). */
  readonly ms: number;
}

/** Runs the default campaign of `netsim fuzz --controller NAME --controllers MUTANTS_MODULE`. */
export async function defaultCampaign(controller: string): Promise<CampaignResult> {
  const out = mkdtempSync(join(tmpdir(), 'netsim-mutants-'));
  let text = '';
  let err = '';
  const started = Date.now();
  try {
    const status = await runFuzz(
      { controller, controllers: MUTANTS_MODULE, runs: FUZZ_DEFAULTS.runs, seed: FUZZ_DEFAULTS.seed, out, progress: false, maxShrinks: 0 },
      { stdout: (s) => void (text += s), stderr: (s) => void (err += s) },
    );
    const ms = Date.now() - started;
    if (status === 0) return { controller, caught: false, ms };
    const m = /^counterexample after (\d+) runs and \d+ shrinks \([\d.]+s\): (.*)$/m.exec(text);
    if (status !== 1 || m === null) throw new Error(`netsim fuzz --controller ${controller} exited ${status}:\n${text}${err}`);
    return { controller, caught: true, atRun: Number(m[1]), summary: m[2] ?? '', ms };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}
