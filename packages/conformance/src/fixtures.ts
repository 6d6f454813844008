/**
 * Real `iptables-save` dumps (the shared fixtures) as conformance inputs: each is loaded by the
 * real tool and saved again, which must equal netsim's `formatSave(parseSave(dump))`; then it is
 * loaded into the lab and generated packets are run through it on both sides.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { formatSave, parseSave, TABLE_NAMES, type Ruleset } from '@netsim/netfilter';
import { explainLine, lineDiff, roundTripThroughKernel, type KnownFormatIssue } from './formatCheck.ts';
import { injectionArb, type NfCase } from './generate.ts';
import type { Lab } from './lab.ts';
import { runNfCase, type CaseResult } from './runner.ts';

/** Where the recorded dumps live: `fixtures/iptables-save/` of this package. */
export const FIXTURE_DIR = fileURLToPath(new URL('../fixtures/iptables-save/', import.meta.url));

/**
 * The most generated packets, per 30, a fixture may leave undecided (a module netsim does not
 * evaluate): above it the comparison says too little and the test fails.
 */
export const MAX_UNDECIDED_PER_30 = 18;

export interface Fixture {
  readonly name: string;
  readonly text: string;
}

/** Every `*.rules` file of `dir`, by name. */
export function loadFixtures(dir: string = FIXTURE_DIR): Fixture[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.rules'))
    .sort()
    .map((name) => ({ name, text: readFileSync(join(dir, name), 'utf8') }));
}

export interface FixtureFormatResult {
  readonly kernel: string | null;
  readonly netsim: string;
  readonly loadError: string | null;
  readonly known: readonly KnownFormatIssue[];
  readonly unexplained: readonly string[];
}

/** The dump as the real tool re-saves it, against netsim's parse-then-format of the same dump. */
export function fixtureFormatCheck(f: Fixture): FixtureFormatResult {
  const netsim = formatSave(parseSave(f.text, { file: f.name }), { counters: true });
  const { saved, error } = roundTripThroughKernel(f.text);
  if (saved === null) return { kernel: null, netsim, loadError: error, known: [], unexplained: [`the real iptables-restore refused ${f.name}: ${error ?? ''}`] };
  const known: KnownFormatIssue[] = [];
  const unexplained: string[] = [];
  const a = saved.split('\n');
  const b = netsim.split('\n');
  if (a.length !== b.length) unexplained.push(...lineDiff(saved, netsim));
  else {
    for (let i = 0; i < a.length; i++) {
      if (a[i] === b[i]) continue;
      const why = explainLine(a[i] as string, b[i] as string);
      if (why === undefined) unexplained.push(`line ${i + 1}: kernel ${JSON.stringify(a[i])}, netsim ${JSON.stringify(b[i])}`);
      else known.push(...why);
    }
  }
  return { kernel: saved, netsim, loadError: null, known, unexplained };
}

/** The dump with every table present (the lab loads absent ones empty, so netsim must see them). */
export function everyTablePresent(rs: Ruleset): Ruleset {
  const tables = { ...rs.tables };
  for (const t of TABLE_NAMES) {
    const { absent: _absent, ...rest } = rs.tables[t];
    tables[t] = rest;
  }
  return { tables };
}

export interface FixtureBehaviour {
  readonly results: readonly { readonly case: NfCase; readonly result: CaseResult }[];
}

/**
 * Runs `runs` generated first packets (forward and local profiles, seed `seed`) through the dump
 * on both sides. A case netsim cannot decide (a module it does not evaluate) reports it in `diffs`.
 */
export function fixtureBehaviour(lab: Lab, f: Fixture, opts: { readonly seed: number; readonly runs: number }): FixtureBehaviour {
  const ruleset = everyTablePresent(parseSave(f.text, { file: f.name }));
  const injections = fc.sample(fc.oneof(injectionArb('forward'), injectionArb('local')), { seed: opts.seed, numRuns: opts.runs });
  return {
    results: injections.map((injection) => {
      const c: NfCase = { profile: injection.kind === 'local' ? 'local' : 'forward', ruleset, injection };
      return { case: c, result: runNfCase(lab, c, { rulesetText: f.text }) };
    }),
  };
}
