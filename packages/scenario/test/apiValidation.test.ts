import { describe, expect, it } from 'vitest';
import { formatIssue, isScenarioError, loadScenario, type ScenarioError } from '../src/index.ts';
import { portNameErrors } from '../src/apiValidation.ts';

const FILE = 'scenarios/x.yaml';

/** A scenario with one Service and one Pod; `svc` and `pod` replace their YAML (indented 4). */
function scenario(svc: string, pod = '{ name: web-0, node: node-1, ports: [8080], labels: { app: web } }', timeline = ''): string {
  return `format: netsim.scenario/v1
name: x
seed: 1
horizon: 10s
settle: 2s
cluster:
  nodes:
    - name: node-1
  services:
    - ${svc}
  pods:
    - ${pod}
controller: { name: kube-proxy:fixed }
${timeline}invariants:
  - { kind: probes-succeed }
expect: { outcome: ok }
`;
}

function errorOf(text: string): ScenarioError {
  try {
    loadScenario(text, { file: FILE });
  } catch (e) {
    if (isScenarioError(e)) return e;
    throw e;
  }
  throw new Error('expected the scenario not to load');
}

function lines(text: string): string[] {
  const e = errorOf(text);
  expect(e.code).toBe('rejected');
  return e.issues.map(formatIssue);
}

describe('load-time validation of what the API server would refuse', () => {
  it('should accept a Service and Pod a real cluster accepts', () => {
    expect(() => loadScenario(scenario('{ name: web, type: NodePort, selector: { app: web }, ports: [{ name: http, port: 80, targetPort: 8080, nodePort: 30080 }, { name: https, port: 443, nodePort: 32767 }] }'), { file: FILE })).not.toThrow();
  });

  it('should refuse a Service name that is not a DNS-1035 label, with the API server message at the name', () => {
    expect(lines(scenario('{ name: 1web, selector: { app: web }, ports: [{ port: 80 }] }'))).toEqual([
      `${FILE}:10:15: cluster.services[0].name: Service "1web" is invalid: metadata.name: Invalid value: "1web": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`,
    ]);
    const long = `s${'x'.repeat(63)}`;
    expect(lines(scenario(`{ name: ${long}, selector: { app: web }, ports: [{ port: 80 }] }`))).toEqual([`${FILE}:10:15: cluster.services[0].name: Service "${long}" is invalid: metadata.name: Invalid value: "${long}": must be no more than 63 characters`]);
  });

  it('should refuse node ports outside 30000-32767, on a ClusterIP Service, duplicated or allocated twice', () => {
    expect(lines(scenario('{ name: web, type: NodePort, selector: { app: web }, ports: [{ name: a, port: 80, nodePort: 40000 }, { name: b, port: 81, nodePort: 29999 }] }'))).toEqual([
      `${FILE}:10:99: cluster.services[0].ports[0].nodePort: Service "web" is invalid: spec.ports[0].nodePort: Invalid value: 40000: provided port is not in the valid range. The range of valid ports is 30000-32767`,
      `${FILE}:10:139: cluster.services[0].ports[1].nodePort: Service "web" is invalid: spec.ports[1].nodePort: Invalid value: 29999: provided port is not in the valid range. The range of valid ports is 30000-32767`,
    ]);
    expect(lines(scenario('{ name: web, selector: { app: web }, ports: [{ port: 80, nodePort: 30080 }] }'))).toEqual([`${FILE}:10:74: cluster.services[0].ports[0].nodePort: Service "web" is invalid: spec.ports[0].nodePort: Forbidden: may not be used when \`type\` is 'ClusterIP'`]);
    expect(lines(scenario('{ name: web, type: NodePort, selector: { app: web }, ports: [{ name: a, port: 80, nodePort: 30080 }, { name: b, port: 81, nodePort: 30080 }] }'))).toEqual([
      `${FILE}:10:139: cluster.services[0].ports[1].nodePort: Service "web" is invalid: spec.ports[1].nodePort: Duplicate value: 30080`,
    ]);
    const two = scenario('{ name: web, type: NodePort, selector: { app: web }, ports: [{ port: 80, nodePort: 30080 }] }').replace('  pods:', '    - { name: api, type: NodePort, selector: { app: web }, ports: [{ port: 80, nodePort: 30080 }] }\n  pods:');
    expect(lines(two)).toEqual([`${FILE}:11:90: cluster.services[1].ports[0].nodePort: Service "api" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated`]);
  });

  it('should require names on the ports of a multi-port Service, as DNS-1123 labels, unique; and refuse duplicate ports', () => {
    expect(lines(scenario('{ name: web, selector: { app: web }, ports: [{ port: 80 }, { name: Http, port: 81 }, { name: a, port: 82 }, { name: a, port: 82 }] }'))).toEqual([
      `${FILE}:10:52: cluster.services[0].ports[0]: Service "web" is invalid: spec.ports[0].name: Required value`,
      `${FILE}:10:74: cluster.services[0].ports[1].name: Service "web" is invalid: spec.ports[1].name: Invalid value: "Http": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
      `${FILE}:10:115: cluster.services[0].ports[3]: Service "web" is invalid: spec.ports[3]: Duplicate value: "82/TCP"`,
      `${FILE}:10:123: cluster.services[0].ports[3].name: Service "web" is invalid: spec.ports[3].name: Duplicate value: "a"`,
    ]);
  });

  it('should refuse container port names that are not IANA service names, and duplicates, on Pods the timeline creates too', () => {
    expect(portNameErrors('http')).toEqual([]);
    expect(portNameErrors('a-very-long-port-name')).toEqual(['must be no more than 15 characters']);
    expect(portNameErrors('8080')).toEqual(['must contain at least one letter (a-z)']);
    expect(portNameErrors('-a--b')).toEqual(['must not contain consecutive hyphens', 'must not begin or end with a hyphen']);
    expect(portNameErrors('Http_1')).toEqual(['must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)']);
    const timeline = 'timeline:\n  - { at: 1s, do: pod.create, pod: { name: web-1, node: node-1, ports: [{ port: 80, name: web }, { port: 81, name: web }] } }\n';
    expect(lines(scenario('{ name: web, selector: { app: web }, ports: [{ port: 80 }] }', '{ name: web-0, node: node-1, ports: [{ port: 8080, name: metrics_port }] }', timeline))).toEqual([
      `${FILE}:12:64: cluster.pods[0].ports[0].name: Pod "web-0" is invalid: spec.containers[0].ports[0].name: Invalid value: "metrics_port": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)`,
      `${FILE}:15:116: timeline[0].pod.ports[1].name: Pod "web-1" is invalid: spec.containers[0].ports[1].name: Duplicate value: "web"`,
    ]);
  });

  it('should refuse a preStop sleep longer than the Pod grace period (0 unless given), and accept one that fits', () => {
    const svc = '{ name: web, selector: { app: web }, ports: [{ port: 80 }] }';
    expect(() => loadScenario(scenario(svc, '{ name: web-0, node: node-1, ports: [8080], terminationGracePeriodSeconds: 30, preStopSleepSeconds: 30 }'), { file: FILE })).not.toThrow();
    const timeline = 'timeline:\n  - { at: 1s, do: pod.create, pod: { name: web-1, node: node-1, ports: [8080], preStopSleepSeconds: 5 } }\n';
    expect(lines(scenario(svc, '{ name: web-0, node: node-1, ports: [8080], terminationGracePeriodSeconds: 10, preStopSleepSeconds: 11 }', timeline))).toEqual([
      `${FILE}:12:107: cluster.pods[0].preStopSleepSeconds: Pod "web-0" is invalid: spec.containers[0].lifecycle.preStop.sleep.seconds: Invalid value: 11: must be non-negative and less than terminationGracePeriodSeconds (10)`,
      `${FILE}:15:101: timeline[0].pod.preStopSleepSeconds: Pod "web-1" is invalid: spec.containers[0].lifecycle.preStop.sleep.seconds: Invalid value: 5: must be non-negative and less than terminationGracePeriodSeconds (0)`,
    ]);
  });

  it('should refuse bad label keys and values, selectors, and externalTrafficPolicy on a ClusterIP Service', () => {
    expect(lines(scenario('{ name: web, selector: { app: web }, externalTrafficPolicy: Local, ports: [{ port: 80 }] }', '{ name: web-0, node: node-1, ports: [8080], labels: { "-app": "we b" } }'))).toEqual([
      `${FILE}:10:67: cluster.services[0].externalTrafficPolicy: Service "web" is invalid: spec.externalTrafficPolicy: Invalid value: "Local": may only be set for externally-accessible services`,
      `${FILE}:12:69: cluster.pods[0].labels.-app: Pod "web-0" is invalid: metadata.labels: Invalid value: "-app": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
      `${FILE}:12:69: cluster.pods[0].labels.-app: Pod "web-0" is invalid: metadata.labels: Invalid value: "we b": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
    ]);
  });
});

describe('YAML aliases', () => {
  it('should report an alias to no anchor at the alias', () => {
    const e = errorOf('format: netsim.scenario/v1\nname: *nope\n');
    expect(e.code).toBe('syntax');
    expect(e.issues.map(formatIssue)).toEqual([`${FILE}:2:7: invalid YAML: the alias *nope refers to no anchor &nope set before it`]);
  });

  it('should refuse an alias bomb (billion laughs) quickly, at its first alias, without expanding it', () => {
    const bomb = ['a: &a [x, x, x, x, x, x, x, x, x]', ...'bcdefghij'.split('').map((c, i) => `${c}: &${c} [${Array(9).fill(`*${'abcdefghij'[i] ?? ''}`).join(', ')}]`)].join('\n');
    const e = errorOf(`${bomb}\n`);
    expect(e.code).toBe('syntax');
    expect(e.issues.map(formatIssue)).toEqual([`${FILE}:2:8: invalid YAML: its aliases expand to more than 1000 references (an alias bomb, "billion laughs"); a scenario file may not nest aliases this deeply`]);
  });

  it('should still load a file that uses a few aliases', () => {
    const text = scenario('&svc { name: web, selector: { app: web }, ports: [{ port: 80 }] }').replace('  pods:', '    - { name: api, selector: { app: web }, ports: [{ port: 81 }] }\n  pods:');
    expect(loadScenario(text.replace('invariants:', 'x-ref: *svc\ninvariants:').replace('x-ref: *svc\n', ''), { file: FILE }).scenario.cluster.services).toHaveLength(2);
  });
});
