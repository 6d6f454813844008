/**
 * Handshakes per second across a 3-hop path with kube-proxy-sized rulesets:
 *
 *   client 192.0.2.10 — router — node 198.51.100.10 (kube-proxy ruleset, N services) — pod
 *
 * Each handshake is `Network.connect` to a NodePort: SYN, SYN-ACK and ACK through four hosts'
 * datapaths (3 wires each way), DNAT + MASQUERADE on the node, conntrack on every host, a full
 * trace (and again with the lean trace: drops and stack events only). Batches of 500 handshakes to NodePorts cycled over 64 services; after each batch the
 * sockets and conntrack tables are emptied so every batch starts from the same state. Reports the
 * median and the worst batch. `pnpm bench handshake`. Measures, never asserts.
 */
import { formatIpv4, parseSave, type Ruleset } from '@netsim/netfilter';
import { Network, type Host } from '../src/index.ts';

function ms(t0: bigint): number {
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

/** A tiny seeded generator: the simulator injects its own; the bench needs only determinism. */
function rng(seed: number): { int(n: number): number } {
  let s = seed >>> 0;
  return {
    int(n: number): number {
      s = (s + 0x9e3779b9) >>> 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      return Math.floor((((z ^ (z >>> 16)) >>> 0) / 0x100000000) * n);
    },
  };
}

const TARGETS = 64;

interface Service {
  readonly nodePort: number;
  readonly endpoints: readonly string[];
}

/**
 * kube-proxy's iptables-save output for `n` Services (ClusterIP 10.96.x.x, 1–3 endpoints in
 * 10.244.0.0/16, a NodePort for the first 2768), in the shape of docs/examples/kube-proxy-nodeport.rules.
 */
function kubeProxySave(n: number): { ruleset: Ruleset; services: Service[] } {
  const nat: string[] = ['*nat', ':PREROUTING ACCEPT [0:0]', ':INPUT ACCEPT [0:0]', ':OUTPUT ACCEPT [0:0]', ':POSTROUTING ACCEPT [0:0]'];
  const chains: string[] = [':KUBE-MARK-MASQ - [0:0]', ':KUBE-NODEPORTS - [0:0]', ':KUBE-POSTROUTING - [0:0]', ':KUBE-SERVICES - [0:0]'];
  const rules: string[] = [
    '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    '-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    '-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING',
    '-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000',
    '-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN',
    '-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0',
    '-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully',
  ];
  const services: Service[] = [];
  const tail: string[] = [];
  for (let i = 0; i < n; i++) {
    const id = String(i).padStart(6, '0');
    const svc = `KUBE-SVC-S${id}`;
    const name = `ns${i % 50}/svc${i}:http`;
    const clusterIp = formatIpv4(0x0a600001 + i);
    const eps = Array.from({ length: 1 + (i % 3) }, (_, e) => formatIpv4(0x0af40000 + i * 4 + e + 1));
    const nodePort = i < 2768 ? 30000 + i : 0;
    services.push({ nodePort, endpoints: eps });
    chains.push(`:${svc} - [0:0]`);
    rules.push(`-A KUBE-SERVICES -d ${clusterIp}/32 -p tcp -m comment --comment "${name} cluster IP" -m tcp --dport 80 -j ${svc}`);
    rules.push(`-A ${svc} ! -s 10.244.0.0/16 -d ${clusterIp}/32 -p tcp -m comment --comment "${name} cluster IP" -m tcp --dport 80 -j KUBE-MARK-MASQ`);
    eps.forEach((ep, e) => {
      const sep = `KUBE-SEP-S${id}E${e}`;
      const left = eps.length - e;
      chains.push(`:${sep} - [0:0]`);
      rules.push(`-A ${svc} -m comment --comment "${name} -> ${ep}:8080"${left > 1 ? ` -m statistic --mode random --probability ${(1 / left).toFixed(11)}` : ''} -j ${sep}`);
      rules.push(`-A ${sep} -s ${ep}/32 -m comment --comment "${name}" -j KUBE-MARK-MASQ`);
      rules.push(`-A ${sep} -p tcp -m comment --comment "${name}" -m tcp -j DNAT --to-destination ${ep}:8080`);
    });
    if (nodePort !== 0) {
      const ext = `KUBE-EXT-S${id}`;
      chains.push(`:${ext} - [0:0]`);
      rules.push(`-A KUBE-NODEPORTS -p tcp -m comment --comment "${name}" -m tcp --dport ${nodePort} -j ${ext}`);
      rules.push(`-A ${ext} -m comment --comment "masquerade traffic for ${name} external destinations" -j KUBE-MARK-MASQ`);
      rules.push(`-A ${ext} -j ${svc}`);
    }
  }
  tail.push('-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS');
  const text = [...nat, ...chains, ...rules, ...tail, 'COMMIT', ''].join('\n');
  return { ruleset: parseSave(text, { file: `kube-proxy-${n}.rules` }), services };
}

function world(services: number, trace: 'full' | 'lean'): { net: Network; hosts: Host[]; nodePorts: number[] } {
  const shape = kubeProxySave(services);
  const net = new Network({ rng: rng(1), trace });
  const client = net.addHost('client').run('ip link add eth0 type veth', 'ip link set eth0 up', 'ip addr add 192.0.2.10/24 dev eth0', 'ip route add default via 192.0.2.1');
  const router = net
    .addHost('router')
    .run(
      'ip link add eth0 type veth',
      'ip link set eth0 up',
      'ip addr add 192.0.2.1/24 dev eth0',
      'ip link add eth1 type veth',
      'ip link set eth1 up',
      'ip addr add 198.51.100.254/24 dev eth1',
      'sysctl -w net.ipv4.ip_forward=1',
    );
  const node = net
    .addHost('node')
    .run(
      'ip link add eth0 type veth',
      'ip link set eth0 up',
      'ip addr add 198.51.100.10/24 dev eth0',
      'ip link add eth1 type veth',
      'ip link set eth1 up',
      // The Pod network of the ruleset's endpoints (10.244.0.0/16) behind eth1.
      'ip addr add 10.244.255.254/16 dev eth1',
      'ip route add default via 198.51.100.254',
      'sysctl -w net.ipv4.ip_forward=1',
    );
  node.setRuleset(shape.ruleset);
  const pod = net.addHost('pod').run('ip link add eth0 type veth', 'ip link set eth0 up', 'ip route add default via 10.244.255.254 dev eth0 onlink', 'listen tcp 8080');
  const nodePorts: number[] = [];
  for (const s of shape.services.slice(0, TARGETS)) {
    nodePorts.push(s.nodePort);
    for (const ep of s.endpoints) pod.run(`ip addr add ${ep}/32 dev eth0`);
  }
  pod.run('ip route add 10.244.0.0/16 dev eth0');
  net.wire('client/eth0', 'router/eth0').wire('router/eth1', 'node/eth0').wire('node/eth1', 'pod/eth0');
  return { net, hosts: [client, router, node, pod], nodePorts };
}

function reset(hosts: readonly Host[]): void {
  for (const h of hosts) {
    h.conntrack.flush();
    for (const s of h.sockets.listTcp()) h.sockets.closeTcp(s);
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
}

const BATCH = 500;

function bench(services: number, batches: number, trace: 'full' | 'lean'): void {
  const t0 = process.hrtime.bigint();
  const w = world(services, trace);
  const setup = ms(t0);
  // Warm-up: compile the ruleset and the JIT.
  for (let i = 0; i < BATCH; i++) w.net.connect('client', '198.51.100.10', w.nodePorts[i % TARGETS] ?? 30000, { nowMs: i, synRetries: 0 });
  reset(w.hosts);
  const rates: number[] = [];
  let steps = 0;
  let established = 0;
  for (let b = 0; b < batches; b++) {
    const t = process.hrtime.bigint();
    for (let i = 0; i < BATCH; i++) {
      const r = w.net.connect('client', '198.51.100.10', w.nodePorts[i % TARGETS] ?? 30000, { nowMs: b * BATCH + i, synRetries: 0 });
      steps += r.trace.length;
      if (r.kind === 'established') established++;
    }
    rates.push(BATCH / (ms(t) / 1000));
    reset(w.hosts);
  }
  const rules = Object.values(w.hosts[2]?.ruleset.tables.nat.chains ?? {}).reduce((n, c) => n + c.rules.length, 0);
  console.log(
    `${services} services, ${trace} trace (${rules} nat rules; world built in ${setup.toFixed(0)} ms): ` +
      `median ${median(rates).toFixed(0)} handshakes/s, worst batch ${Math.min(...rates).toFixed(0)}/s; ` +
      `${(1e6 / median(rates)).toFixed(0)} µs per handshake, ${(steps / (batches * BATCH)).toFixed(0)} trace steps each; ` +
      `${established}/${batches * BATCH} established`,
  );
}

bench(1000, 20, 'full');
bench(1000, 20, 'lean');
bench(10000, 20, 'full');
bench(10000, 20, 'lean');
