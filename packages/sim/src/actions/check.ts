/**
 * Run-time checks of an action's fields: what a scenario's loader and `World.at` both apply, so a
 * mistake in a hand-built timeline (a typo'd key, a string where milliseconds go, an unknown
 * node) is a `SimError` naming the field, never a crash deep inside a step.
 */
import { SimError } from '../errors.ts';

const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Where the checked action sits: how messages start, the field path from the root, what it may name. */
export interface CheckPlace {
  /** Text before the field path in messages (`scenario `, `World.at(1000): `). */
  readonly prefix: string;
  /** The action's path from the root (`timeline[3].action`, `action`). */
  readonly path: string;
  /** Node names it may refer to (undefined: not checked). */
  readonly nodes?: ReadonlySet<string>;
  /** Host names of the data plane it may refer to (undefined: not checked). */
  readonly hosts?: ReadonlySet<string>;
}

type Rec = { readonly [k: string]: unknown };

function isRecord(v: unknown): v is Rec {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function show(v: unknown): string {
  return v === undefined ? 'nothing' : (JSON.stringify(v) ?? typeof v);
}

/** Fails with a `SimError` (`invalid-argument`) naming the field `path` (dotted, with `[i]` indexes). */
export function failAt(prefix: string, path: string, msg: string): never {
  throw new SimError('invalid-argument', `${prefix}${path}: ${msg}`, {
    path: path
      .split(/\.|\[|\]/)
      .filter((k) => k !== '')
      .map((k) => (/^[0-9]+$/.test(k) ? Number(k) : k)),
  });
}

/**
 * Checks one object's fields, one call per field; {@link done} then rejects every key no call
 * asked about (a typo is never silently ignored).
 */
export class FieldChecker {
  readonly #value: Rec;
  readonly #place: CheckPlace;
  readonly #path: string;
  readonly #seen = new Set<string>();

  constructor(value: Rec, place: CheckPlace, path: string = place.path) {
    this.#value = value;
    this.#place = place;
    this.#path = path;
  }

  /** The raw value of a field (marked as known). */
  get(key: string): unknown {
    this.#seen.add(key);
    return this.#value[key];
  }

  fail(key: string, msg: string): never {
    return failAt(this.#place.prefix, key === '' ? this.#path : `${this.#path}.${key}`, msg);
  }

  #present(key: string, optional: boolean, expected: string): unknown {
    const v = this.get(key);
    if (v === undefined && !optional) this.fail(key, `missing (expected ${expected})`);
    return v;
  }

  /** A whole number of milliseconds ≥ `min`. */
  ms(key: string, opts: { readonly optional?: boolean; readonly min?: number } = {}): void {
    const min = opts.min ?? 0;
    const v = this.#present(key, opts.optional === true, `an integer of milliseconds >= ${min}`);
    if (v === undefined) return;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) this.fail(key, `must be an integer of milliseconds >= ${min}, got ${show(v)}`);
  }

  /** A whole number in [min, max]. */
  int(key: string, min: number, max: number, opts: { readonly optional?: boolean } = {}): void {
    const v = this.#present(key, opts.optional === true, `a whole number from ${min} to ${max}`);
    if (v === undefined) return;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min || v > max) this.fail(key, `must be a whole number from ${min} to ${max}, got ${show(v)}`);
  }

  /** A non-empty string. */
  str(key: string, opts: { readonly optional?: boolean } = {}): void {
    const v = this.#present(key, opts.optional === true, 'a string');
    if (v === undefined) return;
    if (typeof v !== 'string' || v === '') this.fail(key, `must be a non-empty string, got ${show(v)}`);
  }

  /** A DNS-1123 label (Pod, Service, namespace and workload names). */
  name(key: string, opts: { readonly optional?: boolean } = {}): void {
    const v = this.#present(key, opts.optional === true, 'a DNS-1123 label like "web-0"');
    if (v === undefined) return;
    if (typeof v !== 'string' || !NAME.test(v)) this.fail(key, `${show(v)} is not a DNS-1123 label`);
  }

  /** One of fixed values. */
  oneOf(key: string, values: readonly (string | boolean)[], opts: { readonly optional?: boolean } = {}): void {
    const expected = values.map((x) => JSON.stringify(x)).join(', ');
    const v = this.#present(key, opts.optional === true, `one of ${expected}`);
    if (v === undefined) return;
    if (!values.includes(v as string)) this.fail(key, `must be one of ${expected}, got ${show(v)}`);
  }

  /** A node of the cluster. */
  node(key: string, opts: { readonly optional?: boolean } = {}): void {
    const v = this.#present(key, opts.optional === true, 'a node name');
    if (v === undefined) return;
    this.#nodeValue(key, v);
  }

  #nodeValue(key: string, v: unknown): void {
    if (typeof v !== 'string' || v === '') this.fail(key, `must be a node name, got ${show(v)}`);
    const nodes = this.#place.nodes;
    if (nodes !== undefined && !nodes.has(v)) this.fail(key, `unknown node "${v}" (nodes: ${[...nodes].join(', ')})`);
  }

  /** A non-empty list of nodes. */
  nodes(key: string): void {
    const v = this.#present(key, false, 'a list of node names');
    if (!Array.isArray(v)) this.fail(key, `must be a list of node names, got ${show(v)}`);
    if (v.length === 0) this.fail(key, 'must name at least one node');
    v.forEach((n, i) => this.#nodeValue(`${key}[${i}]`, n));
  }

  /** A host of the data plane (a node, a built-in host, a scenario host). */
  host(key: string): void {
    const v = this.#present(key, false, 'a host name');
    if (typeof v !== 'string' || v === '') this.fail(key, `must be a host name, got ${show(v)}`);
    const hosts = this.#place.hosts;
    if (hosts !== undefined && !hosts.has(v)) this.fail(key, `unknown host "${v}" (hosts: ${[...hosts].join(', ')})`);
  }

  /** A mapping of strings to strings (labels, selectors, annotations). */
  labels(key: string, opts: { readonly optional?: boolean } = {}): void {
    const v = this.#present(key, opts.optional === true, 'a mapping of strings to strings');
    if (v === undefined) return;
    if (!isRecord(v)) this.fail(key, `must be a mapping of strings to strings, got ${show(v)}`);
    for (const [k, x] of Object.entries(v)) if (typeof x !== 'string') this.fail(`${key}.${k}`, `must be a string, got ${show(x)}`);
  }

  /** A nested object, checked by `fn` (its unknown keys rejected too). */
  object(key: string, fn: (c: FieldChecker) => void, opts: { readonly optional?: boolean } = {}): void {
    const v = this.#present(key, opts.optional === true, 'a mapping');
    if (v === undefined) return;
    if (!isRecord(v)) this.fail(key, `must be a mapping, got ${show(v)}`);
    const c = new FieldChecker(v, this.#place, `${this.#path}.${key}`);
    fn(c);
    c.done();
  }

  /** A list of nested objects, each checked by `fn`. */
  list(key: string, fn: (c: FieldChecker) => void, opts: { readonly optional?: boolean; readonly minLength?: number } = {}): void {
    const v = this.#present(key, opts.optional === true, 'a list');
    if (v === undefined) return;
    if (!Array.isArray(v)) this.fail(key, `must be a list, got ${show(v)}`);
    if (v.length < (opts.minLength ?? 0)) this.fail(key, `must have at least ${opts.minLength ?? 0} entries`);
    v.forEach((x: unknown, i) => {
      if (!isRecord(x)) this.fail(`${key}[${i}]`, `must be a mapping, got ${show(x)}`);
      const c = new FieldChecker(x, this.#place, `${this.#path}.${key}[${i}]`);
      fn(c);
      c.done();
    });
  }

  /** Rejects the keys no check asked about. */
  done(): void {
    for (const k of Object.keys(this.#value)) {
      if (!this.#seen.has(k)) this.fail(k, `unknown field (fields: ${[...this.#seen].join(', ')})`);
    }
  }
}

/** A container port: `{ port, protocol, name? }`. */
export function checkContainerPort(c: FieldChecker): void {
  c.int('port', 1, 65535);
  c.oneOf('protocol', ['TCP', 'UDP']);
  c.str('name', { optional: true });
}

/** A Pod spec (`pod.create`, a cluster's Pods). */
export function checkPodSpec(c: FieldChecker): void {
  c.name('name');
  c.name('namespace', { optional: true });
  c.node('node');
  c.labels('labels', { optional: true });
  c.list('ports', checkContainerPort);
  c.int('terminationGracePeriodSeconds', 0, 86_400, { optional: true });
  c.int('preStopSleepSeconds', 0, 86_400, { optional: true });
}

/** A Service spec (`service.create`, `service.update`). */
export function checkServiceSpec(c: FieldChecker): void {
  c.name('name');
  c.name('namespace', { optional: true });
  c.oneOf('type', ['ClusterIP', 'NodePort', 'LoadBalancer'], { optional: true });
  c.labels('selector');
  c.list('ports', (p) => {
    p.str('name', { optional: true });
    p.int('port', 1, 65535);
    const t = p.get('targetPort');
    if (t === undefined) p.fail('targetPort', 'missing (expected a port number or a container port name)');
    if (typeof t === 'number') p.int('targetPort', 1, 65535);
    else if (typeof t !== 'string' || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(t) || t.length > 15) p.fail('targetPort', `must be a port number or a container port name (IANA_SVC_NAME, at most 15 characters), got ${show(t)}`);
    p.oneOf('protocol', ['TCP', 'UDP']);
    p.int('nodePort', 1, 65535, { optional: true });
  });
  c.labels('annotations', { optional: true });
  c.oneOf('externalTrafficPolicy', ['Cluster', 'Local'], { optional: true });
  c.oneOf('sessionAffinity', ['None', 'ClientIP'], { optional: true });
  c.int('sessionAffinityTimeoutSeconds', 1, 86_400, { optional: true });
}
