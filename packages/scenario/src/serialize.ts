/**
 * Writing scenario files: data → YAML text that loads back to the same data, and the export of
 * a counterexample found by `@netsim/check` as a scenario file that fails the same way.
 */
import { Document, isMap, isScalar, isSeq, visit, type Node } from 'yaml';
import { toRaw } from './convert.ts';
import { invariantName } from './invariants.ts';
import type { Expectation, InvariantSpec, ScenarioFile } from './model.ts';
import type { SimScenario } from '@netsim/sim';

export interface SerializeOptions {
  /** A `# yaml-language-server: $schema=…` line first, so editors validate and complete the file. */
  readonly schemaUrl?: string;
  /** Comment lines written at the top (after the schema line). */
  readonly comment?: string;
}

const FLOW_MAX_CHARS = 100;

function allScalar(n: Node): boolean {
  if (isMap(n)) return n.items.every((p) => isScalar(p.value) || (isSeq(p.value) && p.value.flow === true));
  if (isSeq(n)) return n.items.every((x) => isScalar(x));
  return false;
}

/**
 * Scenario data as YAML text; `loadScenario(serializeScenario(f))` equals `f`.
 *
 * @example
 * ```ts
 * await writeFile('.netsim-out/found.yaml', serializeScenario(file, { schemaUrl: '../packages/scenario/schema/scenario.schema.json' }));
 * ```
 */
export function serializeScenario(file: ScenarioFile, opts: SerializeOptions = {}): string {
  const doc = new Document(toRaw(file));
  // Short lists and mappings of plain values read best on one line (`ports: [8080/TCP]`,
  // `- { at: 2s, do: pod.delete, name: web-0 }`); deeper structures stay in block style.
  visit(doc, {
    Seq(_key, node) {
      if (allScalar(node) && JSON.stringify(node.toJSON()).length <= FLOW_MAX_CHARS) node.flow = true;
    },
  });
  visit(doc, {
    Map(_key, node, path) {
      if (path.length <= 1) return;
      if (allScalar(node) && JSON.stringify(node.toJSON()).length <= FLOW_MAX_CHARS) node.flow = true;
    },
  });
  const header: string[] = [];
  if (opts.schemaUrl !== undefined) header.push(`# yaml-language-server: $schema=${opts.schemaUrl}`);
  if (opts.comment !== undefined) for (const l of opts.comment.split('\n')) header.push(l === '' ? '#' : `# ${l}`);
  const body = doc.toString({ lineWidth: 0, blockQuote: 'literal', flowCollectionPadding: true });
  return header.length > 0 ? `${header.join('\n')}\n${body}` : body;
}

/**
 * What a counterexample must say to become a scenario file: the property, fast-check's seed and
 * path, the generated scenario and how its run ended. `@netsim/check`'s `Counterexample` is one.
 */
export interface CounterexampleLike {
  readonly property: string;
  readonly seed: number;
  readonly path: string;
  readonly scenario: SimScenario;
  readonly expected: {
    /** `violation:NAME`, `finding:KIND`, or how else the run ended. */
    readonly signature: string;
    readonly message: string;
    readonly timeMs: number;
  };
}

export interface CounterexampleScenarioOptions {
  /** The scenario's name (a DNS-1123 label). */
  readonly name: string;
  /** The invariants the property checked, as scenario invariant specs. */
  readonly invariants: readonly InvariantSpec[];
  readonly description?: string;
}

/**
 * A counterexample as a scenario file expecting the same failure at the same time.
 *
 * @throws {Error} when the counterexample ended by hitting a bound (no scenario expectation says that), or
 * when it violated an invariant that is not among `invariants`.
 * @example
 * ```ts
 * const failure = await checkProperty(prop, { seed: 1 });
 * if (!failure.ok) {
 *   const file = scenarioFromCounterexample(exportCounterexample(failure), { name: 'found-1', invariants });
 *   await writeFile('found-1.yaml', serializeScenario(file));
 * }
 * ```
 */
export function scenarioFromCounterexample(c: CounterexampleLike, opts: CounterexampleScenarioOptions): ScenarioFile {
  const sig = c.expected.signature;
  const t = c.expected.timeMs;
  let expect: Expectation;
  if (sig.startsWith('violation:')) {
    const name = sig.slice('violation:'.length);
    const names = opts.invariants.map(invariantName);
    if (!names.includes(name)) throw new Error(`scenarioFromCounterexample: the counterexample violates "${name}", which none of the given invariants is named (${names.join(', ') || 'none'})`);
    expect = { outcome: 'violation', invariant: name, betweenMs: [t, t] };
  } else if (sig.startsWith('finding:')) {
    expect = { outcome: 'finding', kind: sig.slice('finding:'.length), betweenMs: [t, t] };
  } else {
    throw new Error(`scenarioFromCounterexample: a counterexample that ended with "${sig}" cannot be written as a scenario expectation (only violations and findings can)`);
  }
  const description =
    opts.description ??
    [`Counterexample to the property "${c.property}", found by fast-check with seed ${c.seed} and path "${c.path}".`, `Expected: ${c.expected.message}`].join('\n');
  return { name: opts.name, description, scenario: c.scenario, invariants: [...opts.invariants], expect };
}
