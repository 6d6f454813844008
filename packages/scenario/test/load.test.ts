import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { isScenarioError, loadScenario, loadScenarioFile, type ScenarioError } from '../src/index.ts';

const FILE = 'scenarios/x.yaml';

const valid = `format: netsim.scenario/v1
name: x
seed: 1
horizon: 10s
settle: 2s
cluster:
  nodes:
    - name: node-1
  pods:
    - { name: web-0, node: node-1, ports: [8080, "8081/UDP", { port: 9000, name: metrics }], labels: { app: web } }
controller: { name: toy-dnat:faulty }
timeline:
  - { at: 1s, do: pod.delete, name: web-0 }
  - { at: 1500ms, do: watch.gap, duration: 3s }
  - at: 2s
    do: pod.recreate
    name: web-0
    gap: 1.5s
invariants:
  - { kind: no-stale-dnat, chains: [TOY-DNAT] }
expect: { outcome: violation, invariant: no stale DNAT, between: [2s, 9s] }
`;

function errorOf(text: string, file = FILE): ScenarioError {
  try {
    loadScenario(text, { file });
  } catch (e) {
    if (isScenarioError(e)) return e;
    throw e;
  }
  throw new Error('expected the scenario not to load');
}

describe('loadScenario', () => {
  it('should turn a valid file into the engine scenario with durations in milliseconds and ports in full', () => {
    const f = loadScenario(valid, { file: FILE });
    expect(f.name).toBe('x');
    expect(f.scenario).toMatchObject({ format: 'netsim.sim-scenario/v1', seed: 1, horizonMs: 10_000, settleMs: 2000, controller: { name: 'toy-dnat:faulty' } });
    expect(f.scenario.cluster.pods?.[0]?.ports).toEqual([
      { port: 8080, protocol: 'TCP' },
      { port: 8081, protocol: 'UDP' },
      { port: 9000, protocol: 'TCP', name: 'metrics' },
    ]);
    expect(f.scenario.timeline).toEqual([
      { atMs: 1000, action: { kind: 'pod.delete', name: 'web-0' } },
      { atMs: 1500, action: { kind: 'watch.gap', durationMs: 3000 } },
      { atMs: 2000, action: { kind: 'pod.recreate', name: 'web-0', gapMs: 1500 } },
    ]);
    expect(f.invariants).toEqual([{ kind: 'no-stale-dnat', chains: ['TOY-DNAT'] }]);
    expect(f.expect).toEqual({ outcome: 'violation', invariant: 'no stale DNAT', betweenMs: [2000, 9000] });
  });

  it('should name file, line, column, path and the expected duration for a bad time', () => {
    const e = errorOf(valid.replace('  - at: 2s\n', '  - at: soon\n'));
    expect(e.code).toBe('invalid');
    expect(e.message).toBe('scenarios/x.yaml:15:9: timeline[2].at: expected a duration like "40ms" or "2s", got "soon"');
    expect(e.issues[0]).toEqual({ file: FILE, line: 15, column: 9, path: 'timeline[2].at', message: 'expected a duration like "40ms" or "2s", got "soon"' });
  });

  it('should reject a duration that is not a whole number of milliseconds', () => {
    expect(errorOf(valid.replace('gap: 1.5s', 'gap: 1.0005s')).message).toBe('scenarios/x.yaml:18:10: timeline[2].gap: expected a whole number of milliseconds, got "1.0005s"');
  });

  it('should reject an unknown key at the key, listing the keys that fit', () => {
    expect(errorOf(valid.replace('{ name: toy-dnat:faulty }', '{ name: toy-dnat:faulty, optoins: {} }')).message).toBe(
      'scenarios/x.yaml:11:38: controller.optoins: unknown key "optoins" (expected one of: name, options)',
    );
    expect(errorOf(valid.replace('seed: 1', 'seed: 1\nhorizn: 5s')).message).toBe(
      'scenarios/x.yaml:4:1: horizn: unknown key "horizn" (expected one of: format, name, description, seed, horizon, settle, schedule, swarm, cluster, controller, alongside, timeline, probes, invariants, expect)',
    );
  });

  it('should say which key is missing, at the mapping that lacks it', () => {
    expect(errorOf(valid.replace('    name: web-0\n    gap: 1.5s', '    name: web-0')).message).toBe('scenarios/x.yaml:15:5: timeline[2].gap: missing required key "gap"');
  });

  it('should list the actions that fit when an action is unknown', () => {
    expect(errorOf(valid.replace('do: pod.delete', 'do: pod.explode')).message).toBe(
      'scenarios/x.yaml:13:19: timeline[0].do: expected one of: pod.create, pod.delete, pod.recreate, pod.complete, workload.scale, service.create, service.update, service.delete, agent.crash, agent.restart, node.reboot, node.drain, watch.gap, watch.reset, watch.delay, informer.resync, handlers.slow, iptables.lock, iptables.fail, iptables.restore-fail, iptables.slow, sysctl.set, link.set, addr.add, addr.del, route.add, route.del, host.run, got "pod.explode"',
    );
  });

  it('should ask for quoted label values that YAML would read as booleans', () => {
    expect(errorOf(valid.replace('labels: { app: web }', 'labels: { enabled: true }')).message).toBe(
      'scenarios/x.yaml:10:113: cluster.pods[0].labels.enabled: expected a string (quote values such as "true" or "8080"), got true',
    );
  });

  it('should report every schema problem at once, in file order', () => {
    const e = errorOf(valid.replace('seed: 1', 'seed: -1').replace('chains: [TOY-DNAT]', 'chains: []'));
    expect(e.message.split('\n')).toEqual([
      'scenarios/x.yaml:3:7: seed: expected a non-negative integer, got -1',
      'scenarios/x.yaml:20:36: invariants[0].chains: expected at least one chain, got an empty list',
    ]);
  });

  it('should report dangling references and out-of-range times after the schema passes', () => {
    const e = errorOf(valid.replace('node: node-1, ports', 'node: node-2, ports').replace('at: 1500ms', 'at: 30s').replace('invariant: no stale DNAT', 'invariant: nope'));
    expect(e.code).toBe('reference');
    expect(e.message.split('\n')).toEqual([
      'scenarios/x.yaml:10:28: cluster.pods[0].node: unknown node "node-2" (nodes: node-1)',
      'scenarios/x.yaml:14:11: timeline[1].at: 30s is after the horizon (10s)',
      'scenarios/x.yaml:21:42: expect.invariant: no invariant of this scenario is named "nope" (its invariants: "no stale DNAT")',
    ]);
  });

  it('should report YAML syntax errors with their position', () => {
    const e = errorOf('a: 1\na: 2\n', 'dup.yaml');
    expect(e.code).toBe('syntax');
    expect(e.message).toBe('dup.yaml:2:1: invalid YAML: Map keys must be unique');
  });

  it('should say an empty document needs the scenario mapping', () => {
    expect(errorOf('', 'empty.yaml').message).toMatch(/^empty\.yaml:1:1: expected a mapping with keys format, name, description, seed/);
  });

  it('should report an unreadable file as an io error naming it', async () => {
    const err: unknown = await loadScenarioFile('/nonexistent/x.yaml').catch((e: unknown) => e);
    expect(isScenarioError(err) && err.code).toBe('io');
    expect((err as Error).message).toMatch(/^\/nonexistent\/x\.yaml:1:1: cannot read the file: ENOENT/);
  });

  it('should load the toy fixture from disk', async () => {
    const path = fileURLToPath(new URL('./fixtures/toy-recreate.yaml', import.meta.url));
    const f = await loadScenarioFile(path);
    expect(f).toEqual(loadScenario(readFileSync(path, 'utf8')));
    expect(f.name).toBe('toy-recreate-in-watch-gap');
  });
});

const NET = `format: netsim.scenario/v1
name: net
seed: 1
horizon: 10s
settle: 2s
cluster:
  nodes:
    - name: node-1
      network:
        - ip link add eth1 type physical
        - ip link set eth1 up
        - ip addr add 198.51.100.11/25 dev eth1
  network:
    podNetwork: vxlan
    hosts:
      - name: client
        network: [ip link add eth0 type physical, ip link set eth0 up, ip addr add 198.51.100.12/25 dev eth0]
      - name: gw
        network: [ip route add 198.51.100.128/25 via 192.0.2.3]
        rules: |
          *filter
          :FORWARD ACCEPT [0:0]
          -A FORWARD -m conntrack --ctstate INVALID -j DROP
          COMMIT
    links:
      - { kind: segment, name: uplink2, members: [client/eth0, node-1/eth1] }
controller: { name: kube-proxy:fixed }
timeline:
  - { at: 5s, do: sysctl.set, host: node-1, key: net.ipv4.conf.eth1.rp_filter, value: 1 }
  - { at: 6s, do: link.set, host: node-1, iface: eth1, state: down }
  - { at: 7s, do: addr.del, host: client, iface: eth0, address: 198.51.100.12/25 }
  - { at: 8s, do: host.run, host: gw, command: ip route del 198.51.100.128/25 }
probes:
  - { kind: connect, from: { host: client }, to: 198.51.100.11, port: 30080, every: 500ms }
  - { kind: connect, from: { pod: web-0 }, to: 192.0.2.11, port: 30080, every: 1s }
invariants:
  - { kind: probes-succeed }
expect: { outcome: ok }
`;

describe('loadScenario: networks', () => {
  it('should load node lines, hosts with rules, links, network actions and connect probes', () => {
    const f = loadScenario(NET, { file: FILE });
    expect(f.scenario.cluster.nodes[0]?.network).toEqual(['ip link add eth1 type physical', 'ip link set eth1 up', 'ip addr add 198.51.100.11/25 dev eth1']);
    expect(f.scenario.cluster.network?.podNetwork).toBe('vxlan');
    expect(f.scenario.cluster.network?.hosts?.[1]?.rules).toBe('*filter\n:FORWARD ACCEPT [0:0]\n-A FORWARD -m conntrack --ctstate INVALID -j DROP\nCOMMIT\n');
    expect(f.scenario.cluster.network?.links).toEqual([{ kind: 'segment', name: 'uplink2', members: ['client/eth0', 'node-1/eth1'] }]);
    expect(f.scenario.timeline.map((t) => t.action)).toEqual([
      { kind: 'sysctl.set', host: 'node-1', key: 'net.ipv4.conf.eth1.rp_filter', value: '1' },
      { kind: 'link.set', host: 'node-1', iface: 'eth1', state: 'down' },
      { kind: 'addr.del', host: 'client', iface: 'eth0', address: '198.51.100.12/25' },
      { kind: 'host.run', host: 'gw', command: 'ip route del 198.51.100.128/25' },
    ]);
    expect(f.scenario.probes).toEqual([
      { kind: 'connect', from: { host: 'client' }, to: '198.51.100.11', port: 30080, everyMs: 500 },
      { kind: 'connect', from: { pod: 'web-0' }, to: '192.0.2.11', port: 30080, everyMs: 1000 },
    ]);
  });

  it('should point at the node line the kernel refuses, with the kernel\'s message', () => {
    const e = errorOf(NET.replace('ip addr add 198.51.100.11/25 dev eth1', 'ip addr add 198.51.100.11/25 dev eth2'));
    expect(e.code).toBe('network');
    expect(e.issues).toHaveLength(1);
    expect(e.issues[0]).toMatchObject({ line: 12, column: 11, path: 'cluster.nodes[0].network[2]' });
    expect(e.issues[0]?.message).toMatch(/eth2/);
  });

  it('should point at a host\'s rules that do not parse, a link to a missing interface, and a timeline command that would fail', () => {
    expect(errorOf(NET.replace('--ctstate INVALID', '--ctstate BOGUS')).issues[0]).toMatchObject({ line: 20, path: 'cluster.network.hosts[1].rules' });
    expect(errorOf(NET.replace('members: [client/eth0, node-1/eth1]', 'members: [client/eth0, node-1/eth5]')).message).toBe(
      'scenarios/x.yaml:26:64: cluster.network.links[0].members[1]: host "node-1" has no interface "eth5" (add it with "ip link add eth5 type physical")',
    );
    const e = errorOf(NET.replace('iface: eth1, state: down', 'iface: eth4, state: down'));
    expect(e.code).toBe('network');
    expect(e.issues[0]).toMatchObject({ line: 30, column: 5, path: 'timeline[1]' });
  });

  it('should report unknown hosts and a node named after a built-in host as references', () => {
    const e = errorOf(NET.replace('host: gw, command', 'host: router, command').replace('from: { host: client }', 'from: { host: lb2 }').replace('[client/eth0, node-1/eth1]', '[client/eth0, fw/eth1]'));
    expect(e.code).toBe('reference');
    expect(e.message.split('\n')).toEqual([
      'scenarios/x.yaml:26:64: cluster.network.links[0].members[1]: unknown host "fw" (hosts: node-1, lb, gw, ext, client)',
      'scenarios/x.yaml:32:35: timeline[3].host: unknown host "router" (hosts: node-1, lb, gw, ext, client)',
      'scenarios/x.yaml:34:36: probes[0].from.host: unknown host "lb2" (hosts: node-1, lb, gw, ext, client)',
    ]);
    expect(errorOf(NET.replace('    - name: node-1\n', '    - name: gw\n').replace('node-1/eth1', 'gw/eth1').replaceAll('host: node-1', 'host: gw')).message).toMatch(/^scenarios\/x\.yaml:8:13: cluster\.nodes\[0\]\.name: "gw" names a built-in host of the data plane/);
  });

  it('should reject a connect probe to something that is not an IPv4 address and a bad address on an action', () => {
    const e = errorOf(NET.replace('to: 198.51.100.11,', 'to: node-1,').replace('address: 198.51.100.12/25', 'address: 198.51.100.12'));
    expect(e.code).toBe('invalid');
    expect(e.message.split('\n')).toEqual([
      'scenarios/x.yaml:31:65: timeline[2].address: expected an address with its prefix like 198.51.100.11/25, got "198.51.100.12"',
      'scenarios/x.yaml:34:50: probes[0].to: expected an IPv4 address like 198.51.100.11, got "node-1"',
    ]);
  });
});

describe('loadScenario: scale and route actions', () => {
  const SCALE = valid.replace('    gap: 1.5s\n', '    gap: 1.5s\n  - { at: 3s, do: workload.scale, name: web, replicas: 3, nodes: [node-1], labels: { app: web }, ports: [8080, "9090/UDP"] }\n');
  const ROUTE = NET.replace('command: ip route del 198.51.100.128/25 }\n', 'command: ip route del 198.51.100.128/25 }\n  - { at: 9s, do: route.add, host: gw, route: 198.51.100.128/25 via 192.0.2.3 }\n');

  it('should load workload.scale with its template, and route.add with the ip route arguments', () => {
    expect(loadScenario(SCALE, { file: FILE }).scenario.timeline[3]).toEqual({
      atMs: 3000,
      action: { kind: 'workload.scale', name: 'web', replicas: 3, nodes: ['node-1'], labels: { app: 'web' }, ports: [{ port: 8080, protocol: 'TCP' }, { port: 9090, protocol: 'UDP' }] },
    });
    expect(loadScenario(ROUTE, { file: FILE }).scenario.timeline[4]).toEqual({ atMs: 9000, action: { kind: 'route.add', host: 'gw', route: '198.51.100.128/25 via 192.0.2.3' } });
  });

  it('should point at an unknown node and a bad replica count of a scale', () => {
    expect(errorOf(SCALE.replace('nodes: [node-1]', 'nodes: [node-1, node-9]')).message).toBe('scenarios/x.yaml:19:75: timeline[3].nodes[1]: unknown node "node-9" (nodes: node-1)');
    expect(errorOf(SCALE.replace('replicas: 3', 'replicas: -1')).message).toBe('scenarios/x.yaml:19:56: timeline[3].replicas: expected a replica count from 0 to 1000, got -1');
    expect(errorOf(SCALE.replace('nodes: [node-1]', 'nodes: []')).message).toBe('scenarios/x.yaml:19:66: timeline[3].nodes: expected at least one node, got an empty list');
  });

  it('should point at a route change the kernel would refuse when it runs', () => {
    const e = errorOf(ROUTE.replace('do: route.add, host: gw, route: 198.51.100.128/25', 'do: route.del, host: gw, route: 198.51.100.0/25'));
    expect(e.code).toBe('network');
    expect(e.issues[0]).toMatchObject({ line: 33, column: 5, path: 'timeline[4]' });
  });
});

describe('loadScenario: a controller per node', () => {
  const PER_NODE = valid.replace('    - name: node-1\n', '    - name: node-1\n      controller: { name: toy-dnat:fixed, options: { workers: 2 } }\n');

  it('should load a node controller with its options', () => {
    expect(loadScenario(PER_NODE, { file: FILE }).scenario.cluster.nodes).toEqual([{ name: 'node-1', controller: { name: 'toy-dnat:fixed', options: { workers: 2 } } }]);
  });

  it('should point at an unknown key of a node controller', () => {
    expect(errorOf(PER_NODE.replace('options: { workers: 2 }', 'opts: {}')).message).toBe('scenarios/x.yaml:9:43: cluster.nodes[0].controller.opts: unknown key "opts" (expected one of: name, options)');
  });
});
