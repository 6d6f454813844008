/**
 * Scenario-described networks: per-node host-file lines, extra hosts and links, the vxlan Pod
 * network, network actions on the timeline, the `connect` probe, and errors that name the field.
 */
import { describe, expect, it } from 'vitest';
import { World, checkScenarioNetwork, isSimError, probesSucceed, runScenario, story, type ClusterSpec, type SimScenario, type TimedAction } from '../src/index.ts';

/** client-0 on node-2 calls a socket on node-1's own address (no controller, no masquerade). */
function overlayCluster(rp: number): ClusterSpec {
  return {
    nodes: [
      { name: 'node-1', network: [`sysctl -w net.ipv4.conf.all.rp_filter=${rp}`, 'listen tcp 22'] },
      { name: 'node-2', network: [`sysctl -w net.ipv4.conf.all.rp_filter=${rp}`] },
    ],
    network: { podNetwork: 'vxlan' },
    pods: [
      { name: 'web-0', node: 'node-1', ports: [{ port: 8080, protocol: 'TCP' }] },
      { name: 'client-0', node: 'node-2', ports: [] },
    ],
  };
}

function scenario(cluster: ClusterSpec, timeline: readonly TimedAction[] = [], probes: SimScenario['probes'] = [{ kind: 'connect', from: { pod: 'client-0' }, to: '192.0.2.11', port: 22, everyMs: 500 }]): SimScenario {
  return { format: 'netsim.sim-scenario/v1', seed: 1, cluster, controller: { name: 'none' }, timeline, probes, horizonMs: 6000, settleMs: 1000 };
}

async function run(s: SimScenario, opts: { readonly check?: boolean } = {}): Promise<{ readonly world: World; readonly lines: string[] }> {
  const world = new World({ seed: s.seed, cluster: s.cluster, probes: s.probes ?? [], invariants: opts.check === false ? [] : [probesSucceed()], settleMs: s.settleMs });
  for (const t of s.timeline) world.at(t.atMs, t.action);
  await world.run(s.horizonMs);
  return { world, lines: story(world.events) };
}

const MULTI_HOMED: ClusterSpec = {
  nodes: [{ name: 'node-1', network: ['ip link add eth1 type physical', 'ip link set eth1 up', 'ip addr add 198.51.100.11/25 dev eth1', 'listen tcp 22'] }],
  network: {
    hosts: [
      {
        name: 'fw',
        network: ['ip link add eth0 type physical', 'ip link set eth0 up', 'ip addr add 198.51.100.1/25 dev eth0', 'ip link add eth1 type physical', 'ip link set eth1 up', 'ip addr add 198.51.100.129/25 dev eth1', 'ip link add eth2 type physical', 'ip link set eth2 up', 'ip addr add 192.0.2.3/24 dev eth2', 'sysctl -w net.ipv4.ip_forward=1'],
      },
      { name: 'client', network: ['ip link add eth0 type physical', 'ip link set eth0 up', 'ip addr add 198.51.100.130/25 dev eth0', 'ip route add default via 198.51.100.129'] },
      { name: 'gw', network: ['ip route add 198.51.100.128/25 via 192.0.2.3'] },
    ],
    links: [
      { kind: 'segment', name: 'uplink2', members: ['fw/eth0', 'node-1/eth1'] },
      { kind: 'wire', ends: ['fw/eth1', 'client/eth0'] },
      { kind: 'segment', name: 'lan', members: ['fw/eth2'] },
    ],
  },
};

const STATEFUL_GW = '*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n-A FORWARD -m conntrack --ctstate INVALID -j DROP\nCOMMIT\n';

describe('scenario networks: the vxlan Pod network', () => {
  it('should route other nodes\' Pod CIDRs over flannel.1, as flannel\'s vxlan backend does', async () => {
    const { world } = await run(scenario(overlayCluster(0), [], [{ kind: 'connect', from: { pod: 'client-0' }, to: '198.18.0.2', port: 8080, everyMs: 1000 }]));
    const routes = world.datapath?.host('node-1').formatRoutes() ?? '';
    expect(routes).toContain('198.18.1.0/24 via 198.18.1.0 dev flannel.1 onlink');
    expect(world.datapath?.host('node-1').formatAddrs()).toContain('inet 198.18.0.0/32 scope global flannel.1');
    // Pod to Pod across nodes: encapsulated between the node IPs, delivered on the far side.
    expect(world.view.probes()).toEqual([expect.objectContaining({ id: 'connect default/client-0 → 198.18.0.2:8080', ok: true, detail: expect.stringMatching(/^accepted by pod\d+\.default\.web-0 on 198\.18\.0\.2:8080 from 198\.18\.1\.2:\d+$/) as unknown })]);
  });

  it('should drop an unmasqueraded Pod\'s SYN to another node\'s address under strict rp_filter, and pass it under loose', async () => {
    const strict = await run(scenario(overlayCluster(1)));
    expect(strict.world.view.probes()[0]).toMatchObject({ ok: false, outcome: 'timed-out' });
    expect(strict.world.view.probes()[0]?.detail).toMatch(/^tcp 198\.18\.1\.2:\d+ > 192\.0\.2\.11:22 \[SYN\] dropped at node-1: route back to 198\.18\.1\.2 leaves by flannel\.1, not eth0 \(rp_filter=1 on eth0\)$/);
    const loose = await run(scenario(overlayCluster(2)));
    expect(loose.world.view.probes()[0]).toMatchObject({ ok: true, outcome: 'established' });
    // The first answer of a connect probe is told, good or bad.
    expect(loose.lines.some((l) => /probe connect default\/client-0 → 192\.0\.2\.11:22 succeeds: accepted by node-1 on 192\.0\.2\.11:22 from 198\.18\.1\.2:\d+$/.test(l))).toBe(true);
  });

  it('should apply a sysctl change from the timeline, tell it in the story and count it as a disruption', async () => {
    const { world, lines } = await run(scenario(overlayCluster(2), [{ atMs: 2000, action: { kind: 'sysctl.set', host: 'node-1', key: 'net.ipv4.conf.all.rp_filter', value: '1' } }]));
    expect(lines).toContain('7. t=2000ms on node-1: sysctl -w net.ipv4.conf.all.rp_filter=1');
    expect(world.datapath?.host('node-1').getSysctl('net.ipv4.conf.all.rp_filter')).toBe('1');
    expect(lines.join('\n')).toMatch(/t=2500ms probe connect default\/client-0 → 192\.0\.2\.11:22 fails: timed-out/);
    // Failures are forgiven for the settle time after the change, then count.
    expect(lines.at(-1)).toMatch(/^\d+\. t=3500ms VIOLATION of "probes succeed": .* 1500ms after the last disruption \(settle time 1000ms\)$/);
  });
});

describe('scenario networks: a multi-homed node', () => {
  it('should answer a client that targets the secondary address from that address, over the default route', async () => {
    const s = scenario(MULTI_HOMED, [], [{ kind: 'connect', from: { host: 'client' }, to: '198.51.100.11', port: 22, everyMs: 500 }]);
    const { world } = await run(s);
    expect(world.view.probes()[0]).toMatchObject({ ok: true, detail: expect.stringMatching(/^accepted by node-1 on 198\.51\.100\.11:22 from 198\.51\.100\.130:\d+$/) as unknown });
  });

  it('should lose the SYN-ACK at a stateful firewall on the return path that never saw the SYN', async () => {
    const hosts = MULTI_HOMED.network?.hosts?.map((h) => (h.name === 'gw' ? { ...h, rules: STATEFUL_GW } : h));
    const s = scenario({ ...MULTI_HOMED, network: { ...MULTI_HOMED.network, ...(hosts !== undefined ? { hosts } : {}) } }, [], [{ kind: 'connect', from: { host: 'client' }, to: '198.51.100.11', port: 22, everyMs: 500 }]);
    const { world } = await run(s);
    expect(world.view.probes()[0]?.detail).toMatch(/^tcp 198\.51\.100\.11:22 > 198\.51\.100\.130:\d+ \[SYN,ACK\] dropped at gw: filter FORWARD rule 1: DROP$/);
  });

  it('should take an interface down and an address away from the timeline', async () => {
    const probes: SimScenario['probes'] = [{ kind: 'connect', from: { host: 'client' }, to: '198.51.100.11', port: 22, everyMs: 500 }];
    const down = await run(scenario(MULTI_HOMED, [{ atMs: 1200, action: { kind: 'link.set', host: 'node-1', iface: 'eth1', state: 'down' } }], probes));
    expect(down.lines).toContain('3. t=1200ms on node-1: ip link set eth1 down');
    expect(down.lines.join('\n')).toMatch(/t=1500ms probe connect client → 198\.51\.100\.11:22 fails: (timed-out|unreachable)/);
    const moved = await run(
      scenario(
        MULTI_HOMED,
        [
          { atMs: 1200, action: { kind: 'addr.del', host: 'node-1', iface: 'eth1', address: '198.51.100.11/25' } },
          { atMs: 1200, action: { kind: 'addr.add', host: 'node-1', iface: 'eth1', address: '198.51.100.12/25' } },
        ],
        [...(probes ?? []), { kind: 'connect', from: { host: 'client' }, to: '198.51.100.12', port: 22, everyMs: 500 }],
      ),
      { check: false },
    );
    const ids = moved.world.view.probes().map((p) => [p.id, p.ok]);
    expect(ids).toEqual([
      ['connect client → 198.51.100.11:22', false],
      ['connect client → 198.51.100.12:22', true],
    ]);
  });
});

describe('route changes on the timeline', () => {
  it('should delete and add a route on a host: the client loses its way to the second NIC and finds it again', async () => {
    const probes: SimScenario['probes'] = [{ kind: 'connect', from: { host: 'client' }, to: '198.51.100.11', port: 22, everyMs: 500 }];
    const { lines } = await run(
      scenario(
        MULTI_HOMED,
        [
          { atMs: 1200, action: { kind: 'route.del', host: 'client', route: 'default via 198.51.100.129' } },
          { atMs: 2200, action: { kind: 'route.add', host: 'client', route: 'default via 198.51.100.129' } },
        ],
        probes,
      ),
      { check: false },
    );
    expect(lines).toContain('3. t=1200ms on client: ip route del default via 198.51.100.129');
    const text = lines.join('\n');
    expect(text).toMatch(/t=1500ms probe connect client → 198\.51\.100\.11:22 fails: error \(ENETUNREACH: Network is unreachable\)$/m);
    expect(text).toContain('t=2200ms on client: ip route add default via 198.51.100.129');
    expect(text).toContain('t=2500ms probe connect client → 198.51.100.11:22 succeeds again');
  });
});

describe('scenario networks: errors name the field', () => {
  function simErrorOf(f: () => unknown): { readonly path: unknown; readonly message: string } {
    try {
      f();
    } catch (e) {
      if (isSimError(e)) return { path: e.path, message: e.message };
      throw e;
    }
    throw new Error('expected a SimError');
  }

  it('should name the node line the kernel refuses', () => {
    const cluster: ClusterSpec = { nodes: [{ name: 'node-1', network: ['ip link add eth1 type physical', 'ip addr add 198.51.100.11/25 dev eth9'] }] };
    expect(simErrorOf(() => new World({ seed: 1, cluster }))).toEqual({ path: ['cluster', 'nodes', 0, 'network', 1], message: expect.stringMatching(/^scenario cluster\.nodes\[0\]\.network\[1\]: .*eth9/) as unknown });
  });

  it('should name a link to an interface that does not exist, and a host defined twice', () => {
    const bad: ClusterSpec = { nodes: [{ name: 'node-1' }], network: { links: [{ kind: 'wire', ends: ['node-1/eth0', 'gw/eth7'] }] } };
    expect(simErrorOf(() => new World({ seed: 1, cluster: bad }))).toEqual({ path: ['cluster', 'network', 'links', 0, 'ends', 1], message: 'scenario cluster.network.links[0].ends[1]: host "gw" has no interface "eth7" (add it with "ip link add eth7 type physical")' });
    const twice: ClusterSpec = { nodes: [{ name: 'node-1' }], network: { hosts: [{ name: 'fw', network: [] }, { name: 'fw', network: [] }] } };
    expect(simErrorOf(() => checkScenarioNetwork(scenario(twice, [], [])))).toMatchObject({ path: ['cluster', 'network', 'hosts', 1, 'name'] });
  });

  it('should name a timeline command that would fail when it runs, and an unknown host', () => {
    const s = scenario(MULTI_HOMED, [{ atMs: 100, action: { kind: 'link.set', host: 'node-1', iface: 'eth3', state: 'up' } }], []);
    expect(simErrorOf(() => checkScenarioNetwork(s))).toMatchObject({ path: ['timeline', 0, 'action'] });
    const unknown = scenario(MULTI_HOMED, [{ atMs: 100, action: { kind: 'host.run', host: 'router', command: 'ip route add default via 192.0.2.1' } }], []);
    expect(simErrorOf(() => checkScenarioNetwork(unknown))).toMatchObject({ path: ['timeline', 0, 'action', 'host'], message: expect.stringContaining('unknown host "router"') as unknown });
  });

  it('should refuse a node named after a built-in host once the data plane is built', () => {
    expect(simErrorOf(() => new World({ seed: 1, cluster: { nodes: [{ name: 'gw' }] }, datapath: true })).message).toBe('cluster.nodes: a node cannot be named "gw" (a host of the data plane: lb, gw, ext)');
  });

  it('should run a described network through runScenario with a registered controller', async () => {
    const r = await runScenario({ ...scenario(overlayCluster(1)), controller: { name: 'idle' } }, { controllers: { idle: () => ({ name: 'idle', create: () => ({ start: () => undefined }) }) }, invariants: [probesSucceed()] });
    expect(r.outcome).toMatchObject({ status: 'violation', violation: { invariant: 'probes succeed' } });
  });
});
