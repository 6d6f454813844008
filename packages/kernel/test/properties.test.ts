/**
 * Property tests of the NAT/conntrack contract. The default run is short and seeded; a longer
 * campaign: `NETSIM_KERNEL_RUNS=5000 NETSIM_KERNEL_SEED=7 pnpm vitest run --project @netsim/kernel properties`.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ipv4, type Ipv4, type NatRequest } from '@netsim/netfilter';
import { ConntrackTable, invertTuple, type Tuple } from '../src/conntrack.ts';
import { manipPacket, setupNat, type NatFields } from '../src/nat.ts';
import type { TraceStep } from '../src/trace.ts';
import { seeded } from './helpers.ts';
import { append, emptyRuleset, rule, T } from './rules.ts';
import { nodeWorld } from './topo.ts';

const RUNS = Number(process.env.NETSIM_KERNEL_RUNS ?? 60);
const SEED = Number(process.env.NETSIM_KERNEL_SEED ?? 20250117);
const TIMEOUT = Math.max(10_000, RUNS * 40);

const addr = fc.integer({ min: 0x0a000001, max: 0x0a0000fe }).map((n) => ipv4(n));
const port = fc.integer({ min: 1, max: 65535 });
// TCP, UDP, and ICMP echo requests (id in `sport`, `type << 8 | code` in `dport`).
const tuple: fc.Arbitrary<Tuple> = fc.oneof(
  fc.record({ src: addr, dst: addr, proto: fc.constantFrom(6, 17), sport: port, dport: port }),
  fc.record({ src: addr, dst: addr, proto: fc.constant(1), sport: fc.integer({ min: 0, max: 65535 }), dport: fc.constant(0x0800) }),
);
const range = fc.option(fc.tuple(port, fc.integer({ min: 0, max: 20 })), { nil: undefined });
const dnat: fc.Arbitrary<NatRequest | undefined> = fc.option(
  fc.record({ ip: addr, r: range }).map(({ ip, r }): NatRequest => ({
    kind: 'DNAT',
    to: { minIp: ip, maxIp: ip, ...(r !== undefined ? { minPort: Math.min(r[0], 65535 - r[1]), maxPort: Math.min(r[0], 65535 - r[1]) + r[1] } : {}) },
    random: false,
    persistent: false,
  })),
  { nil: undefined },
);
const snat: fc.Arbitrary<NatRequest | undefined> = fc.option(
  fc.oneof(
    fc.record({ ip: addr, fully: fc.boolean() }).map(({ ip, fully }): NatRequest => ({ kind: 'SNAT', to: { minIp: ip, maxIp: ip }, random: false, randomFully: fully, persistent: false })),
    fc.boolean().map((fully): NatRequest => ({ kind: 'MASQUERADE', random: false, randomFully: fully })),
  ),
  { nil: undefined },
);

function fields(t: Tuple): NatFields {
  return t.proto === 1
    ? { src: t.src, dst: t.dst, proto: 1, sport: 0, dport: 0, icmpId: t.sport }
    : { src: t.src, dst: t.dst, proto: t.proto, sport: t.sport, dport: t.dport, icmpId: 0 };
}

describe('NAT properties', () => {
  it(
    'should restore the original tuple when un-NATing the reply, and produce the reply tuple forward, for any bindings',
    () => {
      fc.assert(
        fc.property(fc.array(tuple, { minLength: 1, maxLength: 6 }), dnat, snat, fc.integer(), (flows, d, s, seed) => {
          const table = new ConntrackTable();
          const env = { table, rng: seeded(seed), nowMs: 0, masqueradeAddr: (): Ipv4 => ipv4(0xc0000201) };
          for (const orig of flows) {
            if (table.find(orig, 0) !== undefined || table.find(invertTuple(orig), 0) !== undefined) continue;
            const ct = table.create(orig, 0, 120);
            setupNat(ct, 'dst', d, env, { iface: 'eth0', nexthop: orig.dst });
            setupNat(ct, 'src', s, env, { iface: 'eth0', nexthop: orig.dst });
            if (!table.confirm(ct, 0)) continue;
            const fwd = fields(orig);
            manipPacket(fwd, ct, 'original', 'dst');
            manipPacket(fwd, ct, 'original', 'src');
            expect(fwd).toEqual(fields(invertTuple(ct.reply)));
            const back = fields(ct.reply);
            manipPacket(back, ct, 'reply', 'dst');
            manipPacket(back, ct, 'reply', 'src');
            expect(back).toEqual(fields(invertTuple(orig)));
          }
        }),
        { seed: SEED, numRuns: RUNS },
      );
    },
    TIMEOUT,
  );

  it(
    'should keep reply tuples unique across confirmed entries',
    () => {
      fc.assert(
        fc.property(fc.array(tuple, { minLength: 2, maxLength: 12 }), snat, fc.integer(), (flows, s, seed) => {
          const table = new ConntrackTable();
          const env = { table, rng: seeded(seed), nowMs: 0, masqueradeAddr: (): Ipv4 => ipv4(0xc0000201) };
          for (const orig of flows) {
            if (table.find(orig, 0) !== undefined) continue;
            const ct = table.create(orig, 0, 120);
            setupNat(ct, 'dst', undefined, env, { iface: 'eth0', nexthop: orig.dst });
            setupNat(ct, 'src', s, env, { iface: 'eth0', nexthop: orig.dst });
            table.confirm(ct, 0);
          }
          const keys = table.list(0).flatMap((e) => [JSON.stringify(e.orig), JSON.stringify(e.reply)]);
          expect(new Set(keys).size).toBe(keys.length);
        }),
        { seed: SEED, numRuns: RUNS },
      );
    },
    TIMEOUT,
  );
});

function natWalks(trace: readonly TraceStep[], host: string): number {
  return trace.filter((s) => s.kind === 'table' && s.table === 'nat' && s.host === host).length;
}

const nodePortRules = fc.record({
  podPort: fc.constantFrom(8080, 8081, 8082),
  masq: fc.boolean(),
  fully: fc.boolean(),
});

describe('datapath properties', () => {
  it(
    'should walk nat chains only for the first packet of a flow: handshake, data and retransmissions never re-run them',
    () => {
      fc.assert(
        fc.property(nodePortRules, fc.integer({ min: 1, max: 5 }), fc.integer(), ({ podPort, masq, fully }, sends, seed) => {
          const w = nodeWorld(seed);
          w.pod.run('listen tcp 8081', 'listen tcp 8082');
          let rs = append(emptyRuleset(), 'nat', 'PREROUTING', rule({ p: 'tcp', dport: 30080 }, T.dnat(`203.0.113.9:${podPort}`)));
          if (masq) rs = append(rs, 'nat', 'POSTROUTING', rule({ o: 'eth1' }, T.masq(fully)));
          w.node.setRuleset(rs);
          const r = w.net.connect('client', '198.51.100.10', 30080, { nowMs: 0 });
          if (r.kind !== 'established') throw new Error(`expected established, got ${r.kind}`);
          // The SYN walks PREROUTING and (with rules there) POSTROUTING; nothing else ever does.
          const firstWalks = natWalks(r.trace, 'node');
          expect(firstWalks).toBe(masq ? 2 : 1);
          const confirmedAt = r.trace.findIndex((s) => s.kind === 'conntrack' && s.host === 'node' && s.event === 'confirmed');
          expect(r.trace.slice(confirmedAt).some((s) => s.kind === 'table' && s.table === 'nat' && s.host === 'node')).toBe(false);
          for (let i = 1; i <= sends; i++) {
            const d = w.net.sendData(r.connection, { nowMs: i * 100 });
            expect(d.kind).toBe('acked');
            expect(natWalks(d.trace, 'node')).toBe(0);
          }
        }),
        { seed: SEED, numRuns: Math.max(10, Math.floor(RUNS / 2)) },
      );
    },
    TIMEOUT,
  );

  it(
    'should never change an established flow binding whatever rule edits follow',
    () => {
      fc.assert(
        fc.property(fc.array(fc.constantFrom(8080, 8081, 8082, 9999), { minLength: 1, maxLength: 6 }), fc.integer(), (edits, seed) => {
          const w = nodeWorld(seed);
          w.pod.run('listen tcp 8081', 'listen tcp 8082');
          const dnatTo = (p: number): ReturnType<typeof emptyRuleset> =>
            append(append(emptyRuleset(), 'nat', 'PREROUTING', rule({ p: 'tcp', dport: 30080 }, T.dnat(`203.0.113.9:${p}`))), 'nat', 'POSTROUTING', rule({ o: 'eth1' }, T.masq(true)));
          w.node.setRuleset(dnatTo(8080));
          const r = w.net.connect('client', '198.51.100.10', 30080, { nowMs: 0 });
          if (r.kind !== 'established') throw new Error(r.kind);
          const [entry] = w.node.conntrack.list(0);
          const before = JSON.stringify(entry?.reply);
          edits.forEach((p, i) => {
            w.node.setRuleset(dnatTo(p));
            expect(w.net.sendData(r.connection, { nowMs: (i + 1) * 100 }).kind).toBe('acked');
            expect(JSON.stringify(w.node.conntrack.list(0)[0]?.reply)).toBe(before);
          });
        }),
        { seed: SEED, numRuns: Math.max(10, Math.floor(RUNS / 2)) },
      );
    },
    TIMEOUT,
  );

  it(
    'should show every client the address and port it targeted as the SYN-ACK source, whatever the NAT',
    () => {
      fc.assert(
        fc.property(nodePortRules, fc.integer({ min: 1024, max: 65535 }), fc.integer(), ({ podPort, masq, fully }, sport, seed) => {
          const w = nodeWorld(seed);
          w.pod.run('listen tcp 8081', 'listen tcp 8082');
          let rs = append(emptyRuleset(), 'nat', 'PREROUTING', rule({ p: 'tcp', dport: 30080 }, T.dnat(`203.0.113.9:${podPort}`)));
          if (masq) rs = append(rs, 'nat', 'POSTROUTING', rule({ o: 'eth1' }, T.masq(fully)));
          w.node.setRuleset(rs);
          const r = w.net.connect('client', '198.51.100.10', 30080, { nowMs: 0, sport });
          const synAck = r.trace.find((s) => s.kind === 'wire' && s.to.host === 'client');
          expect(synAck?.kind === 'wire' && synAck.packet).toMatchObject({ src: '198.51.100.10', sport: 30080, dst: '192.0.2.10', dport: sport });
        }),
        { seed: SEED, numRuns: Math.max(10, Math.floor(RUNS / 2)) },
      );
    },
    TIMEOUT,
  );
});
