/**
 * What the Kubernetes API server would refuse although the scenario schema accepts it: object
 * names (a Service name is a DNS-1035 label, every name has a length limit), label keys and
 * values, annotation keys and size, port names (IANA service names on containers, DNS-1123 labels
 * on Services, required and unique when a Service has several ports), duplicate ports, node ports
 * outside the default range 30000-32767 or given to a ClusterIP Service, and
 * `externalTrafficPolicy` on a Service that is not externally reachable.
 *
 * The messages are the API server's: `Service "web" is invalid: spec.ports[0].nodePort: Invalid
 * value: 40000: provided port is not in the valid range. The range of valid ports is 30000-32767`
 * (see apimachinery's validation and the core API validation). Each is placed on the YAML field
 * at fault, so a scenario that would not load into a real cluster fails at load time.
 */
import type { RawContainerPort, RawPod, RawScenario, RawService } from './schema.ts';

type PathKey = string | number;

/** One refusal: where in the file, and the API server's message. */
export interface ApiProblem {
  readonly path: readonly PathKey[];
  readonly message: string;
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** The API server's default `--service-node-port-range`. */
export const NODE_PORT_RANGE = { min: 30000, max: 32767 } as const;
const ANNOTATIONS_MAX_BYTES = 256 * 1024;

const DNS1123_LABEL_MSG =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1123_SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1035_LABEL_MSG =
  "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
const QUALIFIED_NAME_MSG =
  "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_MSG =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

const quote = (s: string): string => JSON.stringify(s);

function dns1123Label(v: string): string[] {
  const out: string[] = [];
  if (v.length > 63) out.push('must be no more than 63 characters');
  if (!DNS1123_LABEL.test(v)) out.push(DNS1123_LABEL_MSG);
  return out;
}

function dns1123Subdomain(v: string): string[] {
  const out: string[] = [];
  if (v.length > 253) out.push('must be no more than 253 characters');
  if (!DNS1123_SUBDOMAIN.test(v)) out.push(DNS1123_SUBDOMAIN_MSG);
  return out;
}

function dns1035Label(v: string): string[] {
  const out: string[] = [];
  if (v.length > 63) out.push('must be no more than 63 characters');
  if (!DNS1035_LABEL.test(v)) out.push(DNS1035_LABEL_MSG);
  return out;
}

/** IANA_SVC_NAME (RFC 6335): a container port's name. */
export function portNameErrors(v: string): string[] {
  const out: string[] = [];
  if (v.length > 15) out.push('must be no more than 15 characters');
  if (!/^[-a-z0-9]+$/.test(v)) out.push('must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)');
  if (v.includes('--')) out.push('must not contain consecutive hyphens');
  if (!/[a-z]/.test(v)) out.push('must contain at least one letter (a-z)');
  if (v.startsWith('-') || v.endsWith('-')) out.push('must not begin or end with a hyphen');
  return out;
}

/** A label or annotation key: `[prefix/]name`, the prefix a DNS-1123 subdomain. */
function qualifiedName(v: string): string[] {
  const parts = v.split('/');
  if (parts.length > 2) return [`a qualified name ${QUALIFIED_NAME_MSG.replace('name part must', 'must')} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`];
  const [prefix, name] = parts.length === 2 ? [parts[0] ?? '', parts[1] ?? ''] : [undefined, parts[0] ?? ''];
  const out: string[] = [];
  if (prefix !== undefined) {
    if (prefix.length === 0) out.push('prefix part must be non-empty');
    else out.push(...dns1123Subdomain(prefix).map((m) => `prefix part ${m}`));
  }
  if (name.length === 0) out.push('name part must be non-empty');
  else {
    if (name.length > 63) out.push('name part must be no more than 63 characters');
    if (!QUALIFIED_NAME.test(name)) out.push(QUALIFIED_NAME_MSG);
  }
  return out;
}

function labelValue(v: string): string[] {
  const out: string[] = [];
  if (v.length > 63) out.push('must be no more than 63 characters');
  if (!LABEL_VALUE.test(v)) out.push(LABEL_VALUE_MSG);
  return out;
}

/** Collects the problems of one object, each prefixed as the API server prefixes them. */
class Collector {
  readonly problems: ApiProblem[] = [];
  constructor(
    private readonly kind: string,
    private readonly name: string,
    private readonly base: readonly PathKey[],
  ) {}
  invalid(path: readonly PathKey[], field: string, value: string | number, messages: readonly string[]): void {
    for (const m of messages) this.add(path, `${field}: Invalid value: ${typeof value === 'string' ? quote(value) : value}: ${m}`);
  }
  add(path: readonly PathKey[], message: string): void {
    this.problems.push({ path: [...this.base, ...path], message: `${this.kind} ${quote(this.name)} is invalid: ${message}` });
  }
  labels(path: readonly PathKey[], field: string, labels: { readonly [k: string]: string } | undefined): void {
    for (const [k, v] of Object.entries(labels ?? {})) {
      this.invalid([...path, k], field, k, qualifiedName(k));
      this.invalid([...path, k], field, v, labelValue(v));
    }
  }
  annotations(path: readonly PathKey[], annotations: { readonly [k: string]: string } | undefined): void {
    let bytes = 0;
    for (const [k, v] of Object.entries(annotations ?? {})) {
      this.invalid([...path, k], 'metadata.annotations', k, qualifiedName(k));
      bytes += Buffer.byteLength(k) + Buffer.byteLength(v);
    }
    if (bytes > ANNOTATIONS_MAX_BYTES) this.add(path, `metadata.annotations: Too long: must have at most ${ANNOTATIONS_MAX_BYTES} bytes`);
  }
  namespace(ns: string | undefined): void {
    if (ns !== undefined) this.invalid(['namespace'], 'metadata.namespace', ns, dns1123Label(ns));
  }
}

function containerPorts(c: Collector, path: readonly PathKey[], ports: readonly RawContainerPort[]): void {
  const names = new Set<string>();
  ports.forEach((p, i) => {
    if (typeof p !== 'object' || p.name === undefined) return;
    const field = `spec.containers[0].ports[${i}].name`;
    const errors = portNameErrors(p.name);
    c.invalid([...path, i, 'name'], field, p.name, errors);
    if (errors.length === 0 && names.has(p.name)) c.add([...path, i, 'name'], `${field}: Duplicate value: ${quote(p.name)}`);
    names.add(p.name);
  });
}

function pod(p: RawPod, base: readonly PathKey[]): ApiProblem[] {
  const c = new Collector('Pod', p.name, base);
  c.invalid(['name'], 'metadata.name', p.name, dns1123Subdomain(p.name));
  c.namespace(p.namespace);
  c.invalid(['node'], 'spec.nodeName', p.node, dns1123Subdomain(p.node));
  c.labels(['labels'], 'metadata.labels', p.labels);
  containerPorts(c, ['ports'], p.ports);
  // A scenario's Pod has a grace period of 0 unless it says otherwise: a preStop sleep must fit it.
  const grace = p.terminationGracePeriodSeconds ?? 0;
  if (p.preStopSleepSeconds !== undefined && p.preStopSleepSeconds > grace) c.invalid(['preStopSleepSeconds'], 'spec.containers[0].lifecycle.preStop.sleep.seconds', p.preStopSleepSeconds, [`must be non-negative and less than terminationGracePeriodSeconds (${grace})`]);
  return c.problems;
}

/** The API server's validation of a Service (and its node port allocation, in `allocated`). */
function service(s: RawService, base: readonly PathKey[], allocated: Map<string, string> | undefined): ApiProblem[] {
  const c = new Collector('Service', s.name, base);
  c.invalid(['name'], 'metadata.name', s.name, dns1035Label(s.name));
  c.namespace(s.namespace);
  c.labels(['selector'], 'spec.selector', s.selector);
  c.annotations(['annotations'], s.annotations);
  const type = s.type ?? 'ClusterIP';
  const names = new Set<string>();
  const ports = new Set<string>();
  const nodePorts = new Set<string>();
  s.ports.forEach((p, i) => {
    const at = (k: string): PathKey[] => ['ports', i, k];
    if (p.name === undefined || p.name === '') {
      if (s.ports.length > 1) c.add(['ports', i], `spec.ports[${i}].name: Required value`);
    } else {
      const errors = dns1123Label(p.name);
      c.invalid(at('name'), `spec.ports[${i}].name`, p.name, errors);
      if (errors.length === 0 && names.has(p.name)) c.add(at('name'), `spec.ports[${i}].name: Duplicate value: ${quote(p.name)}`);
      names.add(p.name);
    }
    const protocol = p.protocol ?? 'TCP';
    const key = `${p.port}/${protocol}`;
    if (ports.has(key)) c.add(['ports', i], `spec.ports[${i}]: Duplicate value: ${quote(key)}`);
    ports.add(key);
    if (p.nodePort !== undefined) {
      if (type === 'ClusterIP') {
        c.add(at('nodePort'), `spec.ports[${i}].nodePort: Forbidden: may not be used when \`type\` is 'ClusterIP'`);
        return;
      }
      const np = `${p.nodePort}/${protocol}`;
      if (nodePorts.has(np)) c.add(at('nodePort'), `spec.ports[${i}].nodePort: Duplicate value: ${p.nodePort}`);
      else if (p.nodePort < NODE_PORT_RANGE.min || p.nodePort > NODE_PORT_RANGE.max) {
        c.add(at('nodePort'), `spec.ports[${i}].nodePort: Invalid value: ${p.nodePort}: provided port is not in the valid range. The range of valid ports is ${NODE_PORT_RANGE.min}-${NODE_PORT_RANGE.max}`);
      } else if (allocated !== undefined) {
        const owner = allocated.get(np);
        if (owner !== undefined && owner !== `${s.namespace ?? 'default'}/${s.name}`) c.add(at('nodePort'), `spec.ports[${i}].nodePort: Invalid value: ${p.nodePort}: provided port is already allocated`);
        else allocated.set(np, `${s.namespace ?? 'default'}/${s.name}`);
      }
      nodePorts.add(np);
    }
  });
  if (s.externalTrafficPolicy !== undefined && type === 'ClusterIP') c.add(['externalTrafficPolicy'], `spec.externalTrafficPolicy: Invalid value: ${quote(s.externalTrafficPolicy)}: may only be set for externally-accessible services`);
  return c.problems;
}

/** Every refusal the API server would make of the scenario's objects, in file order. */
export function apiServerProblems(r: RawScenario): ApiProblem[] {
  const out: ApiProblem[] = [];
  r.cluster.nodes.forEach((n, i) => {
    const c = new Collector('Node', n.name, ['cluster', 'nodes', i]);
    c.invalid(['name'], 'metadata.name', n.name, dns1123Subdomain(n.name));
    out.push(...c.problems);
  });
  // The Services that exist together at the start share the node port allocator.
  const allocated = new Map<string, string>();
  (r.cluster.services ?? []).forEach((s, i) => out.push(...service(s, ['cluster', 'services', i], allocated)));
  (r.cluster.pods ?? []).forEach((p, i) => out.push(...pod(p, ['cluster', 'pods', i])));
  (r.timeline ?? []).forEach((t, i) => {
    const base: PathKey[] = ['timeline', i];
    if (t.do === 'pod.create') out.push(...pod(t.pod, [...base, 'pod']));
    else if (t.do === 'service.create' || t.do === 'service.update') out.push(...service(t.service, [...base, 'service'], undefined));
    else if (t.do === 'workload.scale') {
      // The workload's Pods are named NAME-0, NAME-1, …: the longest must still be a valid name.
      const last = `${t.name}-${Math.max(0, t.replicas - 1)}`;
      const c = new Collector('Pod', last, base);
      c.invalid(['name'], 'metadata.name', last, dns1123Subdomain(last));
      c.namespace(t.namespace);
      c.labels(['labels'], 'metadata.labels', t.labels);
      containerPorts(c, ['ports'], t.ports);
      out.push(...c.problems);
    }
  });
  return out;
}
