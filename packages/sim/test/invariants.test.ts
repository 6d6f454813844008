import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { emptyRuleset, parseIpv4, type Rule, type Ruleset } from '@netsim/netfilter';
import type { Pod } from '@netsim/kube';
import {
  annotationsAgreeWithRules,
  chainNeverEmpty,
  hasTarget,
  instantiate,
  noDuplicateRules,
  noStaleDnat,
  probesSucceed,
  type InvariantSource,
  type IpOwner,
  type ProbeRecord,
  type WorldView,
} from '../src/index.ts';

const CHAIN = 'ANTREA-NODE-PORT-LOCAL';

function dnat(dport: number, ip: string, port: number, proto: 6 | 17 = 6): Rule {
  const a = parseIpv4(ip);
  return {
    proto: { proto, negate: false },
    matches: [{ kind: proto === 6 ? 'tcp' : 'udp', dport: { negate: false, range: { from: dport, to: dport } } }],
    target: { kind: 'DNAT', to: { minIp: a, maxIp: a, minPort: port, maxPort: port }, random: false, persistent: false },
  };
}

function withChain(name: string, rules: readonly Rule[]): Ruleset {
  const rs = emptyRuleset();
  return { tables: { ...rs.tables, nat: { ...rs.tables.nat, chains: { ...rs.tables.nat.chains, [name]: { name, rules } } } } };
}

function pod(name: string, uid: string, ip: string | undefined, ports: number[], opts: { node?: string; annotations?: Record<string, string>; terminating?: boolean } = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: 'default',
      uid,
      resourceVersion: '1',
      creationTimestamp: 0,
      labels: {},
      annotations: opts.annotations ?? {},
      ...(opts.terminating === true ? { deletionTimestamp: 100, deletionGracePeriodSeconds: 1 } : {}),
    },
    spec: { nodeName: opts.node ?? 'node-1', containers: [{ name: 'c', ports: ports.map((p) => ({ containerPort: p, protocol: 'TCP' as const })) }], terminationGracePeriodSeconds: 0, hostNetwork: false },
    status: { phase: ip === undefined ? 'Pending' : 'Running', ...(ip !== undefined ? { podIP: ip } : {}), podIPs: ip !== undefined ? [{ ip }] : [], conditions: [] },
  };
}

interface ViewInput {
  nowMs: number;
  rules?: Ruleset;
  pods?: Pod[];
  owners?: Record<string, IpOwner>;
  probes?: ProbeRecord[];
  lastDisruptionMs?: number;
  settleMs?: number;
}

function view(v: ViewInput): WorldView {
  return {
    nowMs: v.nowMs,
    nodes: [{ name: 'node-1', ip: '192.0.2.11', podCidr: '198.18.1.0/24' }],
    ruleset: () => v.rules ?? emptyRuleset(),
    pods: () => v.pods ?? [],
    services: () => [],
    agentState: () => 'running',
    probes: () => v.probes ?? [],
    settleMs: v.settleMs ?? 100,
    lastDisruptionMs: v.lastDisruptionMs ?? 0,
    calmSince: () => v.lastDisruptionMs ?? 0,
    ipOwner: (ip) => v.owners?.[ip],
    recheckAt: () => undefined,
  };
}

describe('no stale DNAT', () => {
  const rules = withChain(CHAIN, [dnat(61001, '198.18.1.5', 8080)]);
  const web0old = { pod: 'default/web-0', uid: 'a1a1a1a1-0000-4000-8000-000000000001', node: 'node-1' };

  it('should accept a rule that targets a live Pod and a declared port', () => {
    const inv = instantiate(noStaleDnat({ chains: [CHAIN] }));
    expect(inv.check(view({ nowMs: 1000, rules, pods: [pod('web-0', 'u1', '198.18.1.5', [8080])] }))).toBeUndefined();
  });

  it('should tolerate a stale rule within the settle time and report it after, saying who had the IP', () => {
    const inv = instantiate(noStaleDnat({ chains: [CHAIN] }));
    const moved = [pod('web-0', 'b7b7b7b7-0000-4000-8000-000000000002', '198.18.1.6', [8080])];
    const owners = { '198.18.1.5': web0old };
    expect(inv.check(view({ nowMs: 1000, rules, pods: moved, owners }))).toBeUndefined();
    expect(inv.check(view({ nowMs: 1100, rules, pods: moved, owners }))).toBeUndefined();
    const r = inv.check(view({ nowMs: 1101, rules, pods: moved, owners }));
    expect(r).toEqual({
      message:
        'DNAT tcp --dport 61001 → 198.18.1.5:8080 in ANTREA-NODE-PORT-LOCAL on node-1 is stale: 198.18.1.5 was default/web-0 (uid a1a1) but default/web-0 is now 198.18.1.6 (uid b7b7) (for 101ms, longer than the 100ms settle time)',
      state: { node: 'node-1', chain: CHAIN, index: 1, rule: 'tcp --dport 61001 → 198.18.1.5:8080', formerOwner: 'default/web-0', formerUid: web0old.uid },
    });
  });

  it('should restart the settle clock when the problem goes away and comes back', () => {
    const inv = instantiate(noStaleDnat({ chains: [CHAIN], settleMs: 50 }));
    const gone = view({ nowMs: 0, rules, pods: [] });
    expect(inv.check(gone)).toBeUndefined();
    expect(inv.check(view({ nowMs: 40, rules, pods: [pod('web-0', 'u1', '198.18.1.5', [8080])] }))).toBeUndefined();
    expect(inv.check(view({ nowMs: 60, rules, pods: [] }))).toBeUndefined();
    expect(inv.check(view({ nowMs: 111, rules, pods: [] }))).toMatchObject({ message: expect.stringMatching(/no Pod ever had 198\.18\.1\.5 \(for 51ms/) as unknown });
  });

  it('should restart the settle clock of a problem that went away while another stayed', () => {
    const inv = instantiate(noStaleDnat({ chains: [CHAIN], settleMs: 50 }));
    const a = dnat(61001, '198.18.1.5', 8080);
    const b = dnat(61002, '198.18.1.6', 8080);
    const both = withChain(CHAIN, [a, b]);
    const onlyB = withChain(CHAIN, [b]);
    expect(inv.check(view({ nowMs: 0, rules: both }))).toBeUndefined();
    expect(inv.check(view({ nowMs: 10, rules: onlyB }))).toBeUndefined();
    // The same rules again (the memoised problem list), then a comes back: its clock starts at 40.
    expect(inv.check(view({ nowMs: 20, rules: onlyB }))).toBeUndefined();
    expect(inv.check(view({ nowMs: 40, rules: both }))).toBeUndefined();
    expect(inv.check(view({ nowMs: 51, rules: both }))).toMatchObject({ message: expect.stringContaining('--dport 61002') as unknown });
    const inv2 = instantiate(noStaleDnat({ chains: [CHAIN], settleMs: 50 }));
    for (const [t, rs] of [[0, both], [10, onlyB], [40, withChain(CHAIN, [b, a])]] as const) expect(inv2.check(view({ nowMs: t, rules: rs }))).toBeUndefined();
    expect(inv2.check(view({ nowMs: 89, rules: withChain(CHAIN, [a]) }))).toBeUndefined();
    expect(inv2.check(view({ nowMs: 91, rules: withChain(CHAIN, [a]) }))).toMatchObject({ message: expect.stringContaining('--dport 61001') as unknown });
  });

  it('should flag a port the Pod does not declare and a terminating Pod', () => {
    const inv = instantiate(noStaleDnat({ chains: [CHAIN], settleMs: 0 }));
    expect(inv.check(view({ nowMs: 1, rules, pods: [pod('web-0', 'u1', '198.18.1.5', [9090])] }))).toMatchObject({ message: expect.stringContaining('default/web-0 has 198.18.1.5 but declares no TCP port 8080') as unknown });
    const inv2 = instantiate(noStaleDnat({ chains: [CHAIN], settleMs: 0 }));
    const term = pod('web-0', 'u1', '198.18.1.5', [8080], { terminating: true });
    expect(inv2.check(view({ nowMs: 1, rules, pods: [term], owners: { '198.18.1.5': { pod: 'default/web-0', uid: 'u1', node: 'node-1' } } }))).toMatchObject({
      message: expect.stringContaining('which is terminating') as unknown,
    });
  });
});

describe('chain never empty once programmed', () => {
  const masq: Rule = { matches: [], target: { kind: 'MASQUERADE', random: false, randomFully: true } };
  const ret: Rule = { matches: [], target: { kind: 'RETURN' } };

  it('should accept an empty chain before it was ever programmed', () => {
    const inv = instantiate(chainNeverEmpty({ chain: 'FLANNEL-POSTRTG' }));
    expect(inv.check(view({ nowMs: 0, rules: withChain('FLANNEL-POSTRTG', []) }))).toBeUndefined();
  });

  it('should catch a chain flushed after it was programmed, at the very step', () => {
    const inv = instantiate(chainNeverEmpty({ chain: 'FLANNEL-POSTRTG' }));
    expect(inv.check(view({ nowMs: 0, rules: withChain('FLANNEL-POSTRTG', [ret, masq]) }))).toBeUndefined();
    expect(inv.check(view({ nowMs: 5, rules: withChain('FLANNEL-POSTRTG', []) }))).toEqual({
      message: 'FLANNEL-POSTRTG on node-1 is empty (it had 2 rules)',
      state: { node: 'node-1', chain: 'FLANNEL-POSTRTG', rules: 0 },
    });
  });

  it('should catch a missing required rule and a deleted chain', () => {
    const inv = instantiate(chainNeverEmpty({ chain: 'FLANNEL-POSTRTG', required: hasTarget('MASQUERADE') }));
    expect(inv.check(view({ nowMs: 0, rules: withChain('FLANNEL-POSTRTG', [ret]) }))).toBeUndefined();
    expect(inv.check(view({ nowMs: 1, rules: withChain('FLANNEL-POSTRTG', [ret, masq]) }))).toBeUndefined();
    expect(inv.check(view({ nowMs: 2, rules: withChain('FLANNEL-POSTRTG', [ret]) }))).toMatchObject({ message: 'FLANNEL-POSTRTG on node-1 is missing a required rule: no MASQUERADE rule' });
    expect(inv.check(view({ nowMs: 3, rules: emptyRuleset() }))).toMatchObject({ message: 'FLANNEL-POSTRTG on node-1 was deleted after it had been programmed' });
  });
});

describe('no duplicate rules', () => {
  it('should report two identical rules in one chain, ignoring counters', () => {
    const inv = instantiate(noDuplicateRules({ chains: [CHAIN] }));
    const a = dnat(61001, '198.18.1.5', 8080);
    expect(inv.check(view({ nowMs: 0, rules: withChain(CHAIN, [a, dnat(61002, '198.18.1.5', 8081)]) }))).toBeUndefined();
    expect(inv.check(view({ nowMs: 1, rules: withChain(CHAIN, [a, dnat(61002, '198.18.1.5', 8081), { ...a, counters: { packets: 3, bytes: 180 } }]) }))).toEqual({
      message: 'ANTREA-NODE-PORT-LOCAL on node-1 holds the same rule at positions 1 and 3',
      state: { node: 'node-1', chain: CHAIN, positions: [1, 3] },
    });
  });
});

describe('annotations agree with rules', () => {
  const annot = (m: object[]): Record<string, string> => ({ 'nodeportlocal.antrea.io': JSON.stringify(m) });

  it('should accept a Pod whose every published mapping has its rule and no extra rule', () => {
    const inv = instantiate(annotationsAgreeWithRules({ annotation: 'nodeportlocal.antrea.io', chain: CHAIN, settleMs: 0 }));
    const p = pod('web-0', 'u1', '198.18.1.5', [8080, 8081], { annotations: annot([{ podPort: 8080, nodeIP: '192.0.2.11', nodePort: 61001, protocol: 'tcp' }]) });
    expect(inv.check(view({ nowMs: 0, pods: [p], rules: withChain(CHAIN, [dnat(61001, '198.18.1.5', 8080)]) }))).toBeUndefined();
  });

  it('should report a published mapping without its rule, and a rule nobody publishes', () => {
    const p = pod('web-0', 'u1', '198.18.1.6', [8080], { annotations: annot([{ podPort: 8080, nodeIP: '192.0.2.11', nodePort: 61001, protocol: 'tcp' }]) });
    const inv = instantiate(annotationsAgreeWithRules({ annotation: 'nodeportlocal.antrea.io', chain: CHAIN, settleMs: 0 }));
    expect(inv.check(view({ nowMs: 0, pods: [p], rules: withChain(CHAIN, [dnat(61001, '198.18.1.5', 8080)]) }))).toMatchObject({
      message: 'default/web-0 publishes node port 61001 → 198.18.1.6:8080/tcp but ANTREA-NODE-PORT-LOCAL on node-1 has no such DNAT rule',
    });
    const inv2 = instantiate(annotationsAgreeWithRules({ annotation: 'nodeportlocal.antrea.io', chain: CHAIN, settleMs: 0 }));
    expect(inv2.check(view({ nowMs: 0, pods: [], rules: withChain(CHAIN, [dnat(61001, '198.18.1.5', 8080)]) }))).toMatchObject({
      message: expect.stringContaining('DNAT tcp --dport 61001 → 198.18.1.5:8080 in ANTREA-NODE-PORT-LOCAL on node-1 is published by no Pod annotation') as unknown,
    });
  });

  it('should report a malformed annotation', () => {
    const inv = instantiate(annotationsAgreeWithRules({ annotation: 'nodeportlocal.antrea.io', chain: CHAIN, settleMs: 0 }));
    const p = pod('web-0', 'u1', '198.18.1.5', [8080], { annotations: { 'nodeportlocal.antrea.io': '{oops' } });
    expect(inv.check(view({ nowMs: 0, pods: [p] }))).toMatchObject({ message: expect.stringContaining("default/web-0's nodeportlocal.antrea.io annotation is not JSON") as unknown });
  });
});

describe('probes succeed', () => {
  const failed: ProbeRecord = { id: 'pod-egress default/web-0→203.0.113.10:443', kind: 'pod-egress', ok: false, outcome: 'timeout', detail: 'no reply: source not masqueraded', atMs: 900 };

  it('should tolerate a failure within the settle time after a disruption', () => {
    expect(probesSucceed({ settleMs: 500 }).check(view({ nowMs: 900, probes: [failed], lastDisruptionMs: 600 }))).toBeUndefined();
  });

  it('should report a failure after the settle time', () => {
    expect(probesSucceed({ settleMs: 200 }).check(view({ nowMs: 900, probes: [failed], lastDisruptionMs: 600 }))).toEqual({
      message: 'probe pod-egress default/web-0→203.0.113.10:443 failed at t=900ms: timeout (no reply: source not masqueraded), 300ms after the last disruption (settle time 200ms)',
      state: { probe: failed.id, outcome: 'timeout', detail: failed.detail },
    });
  });
});

describe('invariant memos', () => {
  // The built-in invariants remember work per immutable object (a chain's rule array, the Pod
  // list, an annotation text, a rule). Feeding one instance views that share objects from step
  // to step, and another instance deep copies of the same views (nothing shared, so nothing
  // remembered), must give the same answers at every step.
  const OTHER = 'OTHER-CHAIN';
  const NODES = ['node-1', 'node-2'];
  const annot = (m: object[]): Record<string, string> => ({ 'nodeportlocal.antrea.io': JSON.stringify(m) });
  const masq: Rule = { matches: [], target: { kind: 'MASQUERADE', random: false, randomFully: true } };
  const RULES: readonly Rule[] = [
    dnat(61001, '198.18.1.5', 8080),
    dnat(61002, '198.18.1.6', 8080),
    dnat(61003, '198.18.1.7', 9090, 17),
    dnat(61001, '198.18.1.5', 8080),
    dnat(61004, '198.18.1.8', 8080),
    masq,
  ];
  const PODS: readonly Pod[] = [
    pod('web-0', 'u1', '198.18.1.5', [8080], { annotations: annot([{ podPort: 8080, nodeIP: '192.0.2.11', nodePort: 61001, protocol: 'tcp' }]) }),
    pod('web-0', 'u2', '198.18.1.6', [8080], { annotations: annot([{ podPort: 8080, nodeIP: '192.0.2.11', nodePort: 61002, protocol: 'tcp' }]) }),
    pod('web-1', 'u3', '198.18.1.7', [9090], { node: 'node-2', annotations: { 'nodeportlocal.antrea.io': '{oops' } }),
    pod('web-1', 'u4', '198.18.1.8', [8080], { terminating: true }),
    pod('web-2', 'u5', '198.18.1.5', [9090]),
    pod('web-2', 'u6', undefined, [8080]),
  ];
  const OWNERS: Record<string, IpOwner> = {
    '198.18.1.5': { pod: 'default/web-2', uid: 'u5', node: 'node-1' },
    '198.18.1.6': { pod: 'default/web-0', uid: 'u1', node: 'node-1' },
    '198.18.1.8': { pod: 'default/web-1', uid: 'u4', node: 'node-1' },
  };
  type Op =
    | { readonly op: 'rules'; readonly node: number; readonly chain: string; readonly picks: readonly number[] }
    | { readonly op: 'share'; readonly from: number; readonly to: number }
    | { readonly op: 'rename'; readonly node: number }
    | { readonly op: 'pods'; readonly picks: readonly number[] }
    | { readonly op: 'wait'; readonly ms: number };
  const opArb: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ op: fc.constant('rules' as const), node: fc.nat(1), chain: fc.constantFrom(CHAIN, OTHER), picks: fc.array(fc.nat(RULES.length - 1), { maxLength: 4 }) }),
    fc.record({ op: fc.constant('share' as const), from: fc.nat(1), to: fc.nat(1) }),
    fc.record({ op: fc.constant('rename' as const), node: fc.nat(1) }),
    fc.record({ op: fc.constant('pods' as const), picks: fc.uniqueArray(fc.nat(PODS.length - 1), { maxLength: 4 }) }),
    fc.record({ op: fc.constant('wait' as const), ms: fc.integer({ min: 0, max: 120 }) }),
  );
  const sources = (): InvariantSource[] => [
    noStaleDnat({ chains: [CHAIN, OTHER], settleMs: 50 }),
    noDuplicateRules({ chains: [CHAIN, OTHER] }),
    noDuplicateRules({ settleMs: 30 }),
    annotationsAgreeWithRules({ annotation: 'nodeportlocal.antrea.io', chain: CHAIN, settleMs: 40 }),
    annotationsAgreeWithRules({ annotation: 'nodeportlocal.antrea.io', chain: OTHER, settleMs: 0 }),
  ];

  function twoNodeView(nowMs: number, rules: readonly Ruleset[], pods: readonly Pod[], rechecks: number[]): WorldView {
    return {
      nowMs,
      nodes: NODES.map((name, i) => ({ name, ip: `192.0.2.${11 + i}`, podCidr: `198.18.${i + 1}.0/24` })),
      ruleset: (node) => rules[NODES.indexOf(node)] as Ruleset,
      pods: () => pods,
      services: () => [],
      agentState: () => 'running',
      probes: () => [],
      settleMs: 100,
      lastDisruptionMs: 0,
      calmSince: () => 0,
      ipOwner: (ip) => OWNERS[ip],
      recheckAt: (t) => void rechecks.push(t),
    };
  }

  it('should answer exactly as without them, step by step', () => {
    // One set of sources for every sequence, as a property campaign shares them across runs.
    const shared = sources();
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 1, maxLength: 30 }), (ops) => {
        const remembering = shared.map(instantiate);
        const fresh = sources().map(instantiate);
        let rules: Ruleset[] = [emptyRuleset(), emptyRuleset()];
        let pods: readonly Pod[] = [];
        let now = 0;
        for (const o of ops) {
          switch (o.op) {
            case 'rules': {
              const rs = rules[o.node] as Ruleset;
              const next = withChain(o.chain, o.picks.map((i) => RULES[i] as Rule));
              rules = rules.map((r, i) => (i === o.node ? { tables: { ...rs.tables, nat: { ...rs.tables.nat, chains: { ...rs.tables.nat.chains, [o.chain]: next.tables.nat.chains[o.chain] as { name: string; rules: readonly Rule[] } } } } } : r));
              break;
            }
            case 'share':
              rules = rules.map((r, i) => (i === o.to ? (rules[o.from] as Ruleset) : r));
              break;
            case 'rename': {
              // The rule array moves to the other name, as `iptables -E` keeps the rules.
              const rs = rules[o.node] as Ruleset;
              const { [CHAIN]: a, [OTHER]: b, ...rest } = rs.tables.nat.chains;
              const chains = { ...rest, ...(a !== undefined ? { [OTHER]: { name: OTHER, rules: a.rules } } : {}), ...(b !== undefined ? { [CHAIN]: { name: CHAIN, rules: b.rules } } : {}) };
              rules = rules.map((r, i) => (i === o.node ? { tables: { ...rs.tables, nat: { ...rs.tables.nat, chains } } } : r));
              break;
            }
            case 'pods':
              pods = o.picks.map((i) => PODS[i] as Pod);
              break;
            case 'wait':
              now += o.ms;
              break;
          }
          const rechecksA: number[] = [];
          const rechecksB: number[] = [];
          const a = twoNodeView(now, rules, pods, rechecksA);
          const b = twoNodeView(now, structuredClone(rules), structuredClone(pods), rechecksB);
          const got = remembering.map((inv) => inv.check(a));
          const want = fresh.map((inv) => inv.check(b));
          expect(got).toEqual(want);
          expect(rechecksA).toEqual(rechecksB);
          // Every check again at the same instant, now with nothing changed: the memo path.
          expect(remembering.map((inv) => inv.check(a))).toEqual(fresh.map((inv) => inv.check(twoNodeView(now, structuredClone(rules), structuredClone(pods), []))));
        }
      }),
      { seed: 424242, numRuns: 120 },
    );
  });
});
