/**
 * Loading a scenario file: YAML text → schema check → reference check → {@link ScenarioFile}.
 * Every problem is reported with the file, line and column of the YAML node it concerns, the
 * field's path and what was expected; all problems of a stage are reported at once.
 */
import { readFile } from 'node:fs/promises';
import * as v from 'valibot';
import { BUILTIN_HOSTS, checkScenarioNetwork, formatScenarioPath, isHostAction, isSimError } from '@netsim/sim';
import { LineCounter, isAlias, isMap, isScalar, isSeq, parseDocument, visit, type Document } from 'yaml';
import { apiServerProblems } from './apiValidation.ts';
import { fromRaw } from './convert.ts';
import { parseDuration } from './duration.ts';
import { ScenarioError, type ScenarioIssue } from './errors.ts';
import { invariantName } from './invariants.ts';
import type { ScenarioFile } from './model.ts';
import { ScenarioSchema, type RawScenario } from './schema.ts';

export interface LoadOptions {
  /** The name errors give the file (default `<scenario>`). */
  readonly file?: string;
}

type PathKey = string | number;

/** `timeline[2].at` */
export function formatPath(path: readonly PathKey[]): string {
  let out = '';
  for (const k of path) out += typeof k === 'number' ? `[${k}]` : out === '' ? k : `.${k}`;
  return out;
}

/** Where a path points in the document: the value's node, or the key when `atKey`, or the nearest existing parent. */
function locate(doc: Document, path: readonly PathKey[], atKey: boolean): number {
  let node: unknown = doc.contents;
  const start = (n: unknown): number | undefined => (n !== null && typeof n === 'object' && 'range' in n ? (n as { range?: [number, number, number] }).range?.[0] : undefined);
  let offset = start(node) ?? 0;
  for (let i = 0; i < path.length; i++) {
    if (isAlias(node)) node = node.resolve(doc);
    const k = path[i];
    if (isMap(node)) {
      const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === String(k));
      if (pair === undefined) return offset;
      const keyAt = start(pair.key) ?? offset;
      if (i === path.length - 1 && atKey) return keyAt;
      node = pair.value;
      offset = start(node) ?? keyAt;
    } else if (isSeq(node) && typeof k === 'number') {
      const item: unknown = node.items[k];
      if (item === undefined) return offset;
      node = item;
      offset = start(node) ?? offset;
    } else {
      return offset;
    }
  }
  return offset;
}

function describeValue(x: unknown): string {
  if (x === null || x === undefined) return 'nothing';
  if (Array.isArray(x)) return x.length === 0 ? 'an empty list' : `a list of ${x.length}`;
  if (typeof x === 'object') return 'a mapping';
  if (typeof x === 'string') return JSON.stringify(x);
  return typeof x === 'number' || typeof x === 'boolean' ? String(x) : typeof x;
}

function issueMessage(issue: v.BaseIssue<unknown>): string {
  const m = issue.message;
  if (m.startsWith('unknown key') || m.startsWith('missing required key')) return m;
  if (m.startsWith('expected')) return `${m}, got ${describeValue(issue.input)}`;
  // A valibot default message: say it our way.
  return `expected ${issue.expected ?? issue.type}, got ${describeValue(issue.input)}`;
}

function sortIssues(issues: ScenarioIssue[]): ScenarioIssue[] {
  const seen = new Set<string>();
  return issues
    .filter((i) => {
      const k = `${i.line}:${i.column}:${i.path}:${i.message}`;
      if (seen.has(k)) return false;
      seen.add(k);
      return true;
    })
    .sort((a, b) => a.line - b.line || a.column - b.column);
}

/**
 * Load a scenario from YAML text.
 *
 * @throws {ScenarioError} `syntax` for malformed YAML, `invalid` for schema problems, `reference` for dangling names and out-of-range times.
 * @example
 * ```ts
 * const file = loadScenario(text, { file: 'scenarios/npl-multi-port-cleanup.yaml' });
 * const result = await replay(file, { controllers });
 * ```
 */
export function loadScenario(text: string, opts: LoadOptions = {}): ScenarioFile {
  const file = opts.file ?? '<scenario>';
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const at = (offset: number, path: readonly PathKey[], message: string): ScenarioIssue => {
    const pos = lines.linePos(offset);
    return { file, line: pos.line, column: pos.col, path: formatPath(path), message };
  };
  if (doc.errors.length > 0) {
    throw new ScenarioError(
      'syntax',
      sortIssues(doc.errors.map((e) => at(e.pos[0], [], `invalid YAML: ${e.message.split('\n')[0] ?? e.message}`))),
    );
  }
  const data = toData(doc, at);
  const parsed = v.safeParse(ScenarioSchema, data, { abortEarly: false, abortPipeEarly: true });
  if (!parsed.success) {
    const issues = parsed.issues.map((issue) => {
      const path = (issue.path ?? []).map((p) => p.key as PathKey);
      const unknownKey = issue.message.startsWith('unknown key');
      return at(locate(doc, path, unknownKey), path, issueMessage(issue));
    });
    throw new ScenarioError('invalid', sortIssues(issues));
  }
  const raw = parsed.output;
  const rejected = apiServerProblems(raw);
  if (rejected.length > 0) throw new ScenarioError('rejected', sortIssues(rejected.map((p) => at(locate(doc, p.path, false), p.path, p.message))));
  const problems = checkReferences(raw);
  if (problems.length > 0) throw new ScenarioError('reference', sortIssues(problems.map((p) => at(locate(doc, p.path, false), p.path, p.message))));
  const f = fromRaw(raw);
  const network = checkNetwork(f);
  if (network !== undefined) throw new ScenarioError('network', [at(locate(doc, network.path, false), network.path, network.message)]);
  return f;
}

/** How many alias references a file may expand (a scenario needs a handful; a "billion laughs" needs millions). */
export const MAX_ALIAS_COUNT = 1000;

/**
 * The document as plain data. An alias to an anchor not set before it, and a document whose
 * aliases would expand past {@link MAX_ALIAS_COUNT} references (an alias bomb), are syntax
 * errors at the alias, never a stack trace or a hang.
 */
function toData(doc: Document, at: (offset: number, path: readonly PathKey[], message: string) => ScenarioIssue): unknown {
  try {
    return doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (e) {
    if (!(e instanceof ReferenceError)) throw e;
    const aliases: { source: string; offset: number }[] = [];
    visit(doc, {
      Alias(_key, node) {
        aliases.push({ source: node.source, offset: node.range?.[0] ?? 0 });
      },
    });
    const unresolved = /^Unresolved alias[^:]*: (.*)$/.exec(e.message);
    if (unresolved !== null) {
      const a = aliases.find((x) => x.source === unresolved[1]) ?? aliases[0];
      throw new ScenarioError('syntax', [at(a?.offset ?? 0, [], `invalid YAML: the alias *${unresolved[1] ?? ''} refers to no anchor &${unresolved[1] ?? ''} set before it`)]);
    }
    const first = aliases[0];
    throw new ScenarioError('syntax', [
      at(first?.offset ?? 0, [], `invalid YAML: its aliases expand to more than ${MAX_ALIAS_COUNT} references (an alias bomb, "billion laughs"); a scenario file may not nest aliases this deeply`),
    ]);
  }
}

/** Whether a scenario describes a data plane of its own (then it is built once at load time to check it). */
function describesNetwork(f: ScenarioFile): boolean {
  const s = f.scenario;
  return s.cluster.network !== undefined || s.cluster.nodes.some((n) => n.network !== undefined) || s.timeline.some((t) => isHostAction(t.action));
}

/**
 * Builds the scenario's data plane and plays its network actions (`@netsim/sim`'s
 * `checkScenarioNetwork`): the first line the kernel refuses, with the path of the YAML field.
 */
function checkNetwork(f: ScenarioFile): Problem | undefined {
  if (!describesNetwork(f)) return undefined;
  try {
    checkScenarioNetwork(f.scenario);
    return undefined;
  } catch (e) {
    if (!isSimError(e)) throw e;
    const simPath = e.path ?? [];
    // The engine names its own fields; the file's differ in a few places: a timeline entry holds
    // the action's fields itself, and durations drop their `Ms`.
    const path: PathKey[] = [];
    simPath.forEach((k, i) => {
      if (k === 'action' && simPath[i - 2] === 'timeline') return;
      path.push(typeof k === 'string' && k.endsWith('Ms') ? k.slice(0, -2) : k);
    });
    const prefix = `scenario ${formatScenarioPath(simPath)}: `;
    return { path, message: e.message.startsWith(prefix) ? e.message.slice(prefix.length) : e.message };
  }
}

/**
 * Read and load a scenario file.
 *
 * @throws {ScenarioError} as {@link loadScenario}, or `io` when the file cannot be read.
 */
export async function loadScenarioFile(path: string): Promise<ScenarioFile> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    throw new ScenarioError('io', [{ file: path, line: 1, column: 1, path: '', message: `cannot read the file: ${err.code ?? ''} ${err.message}`.trim() }]);
  }
  return loadScenario(text, { file: path });
}

interface Problem {
  readonly path: readonly PathKey[];
  readonly message: string;
}

/** Names that must refer to something, and times that must fall inside the run. */
function checkReferences(r: RawScenario): Problem[] {
  const out: Problem[] = [];
  const nodes = new Set<string>();
  r.cluster.nodes.forEach((n, i) => {
    if (nodes.has(n.name)) out.push({ path: ['cluster', 'nodes', i, 'name'], message: `duplicate node "${n.name}"` });
    nodes.add(n.name);
  });
  const nodeList = [...nodes].join(', ');
  const node = (path: readonly PathKey[], name: string | undefined): void => {
    if (name !== undefined && !nodes.has(name)) out.push({ path, message: `unknown node "${name}" (nodes: ${nodeList})` });
  };
  const key = (ns: string | undefined, name: string): string => `${ns ?? 'default'}/${name}`;
  // The data plane's hosts: the nodes, the built-in ones and the scenario's.
  const hosts = new Set<string>([...nodes, ...BUILTIN_HOSTS]);
  for (const n of r.cluster.nodes) if (BUILTIN_HOSTS.includes(n.name)) out.push({ path: ['cluster', 'nodes', r.cluster.nodes.indexOf(n), 'name'], message: `"${n.name}" names a built-in host of the data plane (${BUILTIN_HOSTS.join(', ')}); pick another node name` });
  (r.cluster.network?.hosts ?? []).forEach((h, i) => {
    if (nodes.has(h.name)) out.push({ path: ['cluster', 'network', 'hosts', i, 'name'], message: `"${h.name}" is a node: give a node's lines in cluster.nodes[].network` });
    else if (!BUILTIN_HOSTS.includes(h.name) && hosts.has(h.name)) out.push({ path: ['cluster', 'network', 'hosts', i, 'name'], message: `duplicate host "${h.name}"` });
    hosts.add(h.name);
  });
  const hostList = [...hosts].join(', ');
  const host = (path: readonly PathKey[], name: string): void => {
    if (!hosts.has(name)) out.push({ path, message: `unknown host "${name}" (hosts: ${hostList})` });
  };
  (r.cluster.network?.links ?? []).forEach((l, i) => {
    const field = l.kind === 'wire' ? 'ends' : 'members';
    (l.kind === 'wire' ? l.ends : l.members).forEach((e, k) => host(['cluster', 'network', 'links', i, field, k], e.split('/')[0] ?? ''));
  });
  const pods = new Set<string>();
  (r.cluster.pods ?? []).forEach((p, i) => {
    node(['cluster', 'pods', i, 'node'], p.node);
    const k = key(p.namespace, p.name);
    if (pods.has(k)) out.push({ path: ['cluster', 'pods', i, 'name'], message: `duplicate Pod "${k}"` });
    pods.add(k);
  });
  const services = new Set<string>();
  (r.cluster.services ?? []).forEach((s, i) => {
    const k = key(s.namespace, s.name);
    if (services.has(k)) out.push({ path: ['cluster', 'services', i, 'name'], message: `duplicate Service "${k}"` });
    services.add(k);
  });
  const horizonMs = parseDuration(r.horizon) ?? 0;
  if (horizonMs < 1) out.push({ path: ['horizon'], message: 'expected a horizon after 0s' });
  (r.timeline ?? []).forEach((t, i) => {
    const atMs = parseDuration(t.at) ?? 0;
    if (atMs > horizonMs) out.push({ path: ['timeline', i, 'at'], message: `${t.at} is after the horizon (${r.horizon})` });
    if (t.do === 'pod.create') node(['timeline', i, 'pod', 'node'], t.pod.node);
    if (t.do === 'workload.scale') t.nodes.forEach((n, k) => node(['timeline', i, 'nodes', k], n));
    if ('node' in t) node(['timeline', i, 'node'], t.node);
    if ('host' in t) host(['timeline', i, 'host'], t.host);
    if (t.do === 'service.create') services.add(key(t.service.namespace, t.service.name));
  });
  (r.probes ?? []).forEach((p, i) => {
    if (p.kind === 'connect' && 'host' in p.from) host(['probes', i, 'from', 'host'], p.from.host);
    if (p.kind === 'nodeport-health' && !services.has(key(p.namespace, p.service))) {
      out.push({ path: ['probes', i, 'service'], message: `no Service "${key(p.namespace, p.service)}" in cluster.services or a service.create action` });
    }
  });
  const e = r.expect;
  if (e.outcome === 'violation') {
    const names = r.invariants.map((i) => invariantName(i));
    if (!names.includes(e.invariant)) {
      out.push({ path: ['expect', 'invariant'], message: `no invariant of this scenario is named "${e.invariant}" (its invariants: ${names.map((n) => `"${n}"`).join(', ') || 'none'})` });
    }
  }
  if (e.outcome !== 'ok' && e.between !== undefined) {
    const latest = parseDuration(e.between[1]) ?? 0;
    if (latest > horizonMs) out.push({ path: ['expect', 'between', 1], message: `${e.between[1]} is after the horizon (${r.horizon})` });
  }
  if (r.expect.outcome === 'violation' && r.invariants.length === 0) out.push({ path: ['invariants'], message: 'expected at least one invariant when a violation is expected' });
  return out;
}
