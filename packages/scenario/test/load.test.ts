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
      'scenarios/x.yaml:4:1: horizn: unknown key "horizn" (expected one of: format, name, description, seed, horizon, settle, schedule, cluster, controller, timeline, probes, invariants, expect)',
    );
  });

  it('should say which key is missing, at the mapping that lacks it', () => {
    expect(errorOf(valid.replace('    name: web-0\n    gap: 1.5s', '    name: web-0')).message).toBe('scenarios/x.yaml:15:5: timeline[2].gap: missing required key "gap"');
  });

  it('should list the actions that fit when an action is unknown', () => {
    expect(errorOf(valid.replace('do: pod.delete', 'do: pod.explode')).message).toBe(
      'scenarios/x.yaml:13:19: timeline[0].do: expected one of: pod.create, pod.delete, pod.recreate, service.create, service.update, service.delete, agent.crash, agent.restart, watch.gap, watch.reset, watch.delay, iptables.lock, iptables.fail, iptables.restore-fail, iptables.slow, got "pod.explode"',
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
