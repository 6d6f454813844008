import { describe, expect, it } from 'vitest';
import type { Ipv4, NatRequest } from '@netsim/netfilter';
import { ConntrackTable, invertTuple, type CtEntry, type Tuple } from '../src/conntrack.ts';
import { manipIcmpError, manipPacket, setupNat, type NatEnv, type NatFields, type NatInner, type RandomSource } from '../src/nat.ts';
import { ip, scripted, seeded } from './helpers.ts';

const client: Tuple = { src: ip('198.51.100.10'), dst: ip('198.51.100.1'), proto: 6, sport: 40001, dport: 30080 };
const dnat: NatRequest = { kind: 'DNAT', to: { minIp: ip('203.0.113.9'), maxIp: ip('203.0.113.9'), minPort: 8080, maxPort: 8080 }, random: false, persistent: false };
const masq: NatRequest = { kind: 'MASQUERADE', random: false, randomFully: false };
const masqFully: NatRequest = { kind: 'MASQUERADE', random: false, randomFully: true };

function env(table: ConntrackTable, rng: RandomSource = seeded(1), addr: Ipv4 | 0 = ip('203.0.113.1')): NatEnv {
  return { table, rng, nowMs: 0, masqueradeAddr: () => addr };
}

const out = { iface: 'n1', nexthop: ip('203.0.113.9') };

function bind(table: ConntrackTable, t: Tuple, reqs: { dst?: NatRequest; src?: NatRequest }, e: NatEnv = env(table)): CtEntry {
  const ct = table.create(t, 0, 120);
  expect(setupNat(ct, 'dst', reqs.dst, e, out).ok).toBe(true);
  expect(setupNat(ct, 'src', reqs.src, e, out).ok).toBe(true);
  expect(table.confirm(ct, 0)).toBe(true);
  return ct;
}

describe('NAT bindings', () => {
  it('should DNAT and MASQUERADE keeping the source port when unique, as the kernel did on 6.18', () => {
    const t = new ConntrackTable();
    const ct = bind(t, client, { dst: dnat, src: masq });
    // Real run: src=198.51.100.10 dst=198.51.100.1 sport=40001 dport=30080 src=203.0.113.9 dst=203.0.113.1 sport=8080 dport=40001
    expect(ct.reply).toEqual({ src: ip('203.0.113.9'), dst: ip('203.0.113.1'), proto: 6, sport: 8080, dport: 40001 });
    expect([ct.dstNat, ct.srcNat, ct.natDoneDst, ct.natDoneSrc, ct.masqIface]).toEqual([true, true, true, true, 'n1']);
  });

  it('should store a no-NAT binding that leaves the tuple alone but marks NAT as decided', () => {
    const t = new ConntrackTable();
    const ct = bind(t, client, {});
    expect(ct.reply).toEqual(invertTuple(client));
    expect([ct.dstNat, ct.srcNat, ct.natDoneDst, ct.natDoneSrc]).toEqual([false, false, true, true]);
  });

  it('should pick another port from the injected source when the kept port would clash', () => {
    const t = new ConntrackTable();
    bind(t, client, { dst: dnat, src: masq });
    // A second client with the same source port lands on the same endpoint: 203.0.113.1:40001 is taken.
    const rng = scripted([5000]);
    const ct = bind(t, { ...client, src: ip('198.51.100.11') }, { dst: dnat, src: masq }, env(t, rng));
    expect(ct.reply.dport).toBe(1024 + 5000);
    expect(rng.calls).toEqual([65536]);
  });

  it('should draw the port with --random-fully even when the original port is free', () => {
    const t = new ConntrackTable();
    const rng = scripted([7]);
    const ct = bind(t, client, { dst: dnat, src: masqFully }, env(t, rng));
    expect(ct.reply.dport).toBe(1024 + 7);
  });

  it('should give the same ports for the same seed', () => {
    const ports = (seed: number): number[] => {
      const t = new ConntrackTable();
      const e = env(t, seeded(seed));
      return [0, 1, 2, 3].map((i) => bind(t, { ...client, src: ip(`198.51.100.${20 + i}`) }, { dst: dnat, src: masqFully }, e).reply.dport);
    };
    expect(ports(42)).toEqual(ports(42));
    expect(ports(42)).not.toEqual(ports(43));
  });

  it('should reuse the mapping of an existing connection from the same source (find_appropriate_src)', () => {
    const t = new ConntrackTable();
    const rng = scripted([100]);
    bind(t, client, { dst: dnat, src: masq });
    const clash = bind(t, { ...client, src: ip('198.51.100.11') }, { dst: dnat, src: masq }, env(t, rng));
    expect(clash.reply.dport).toBe(1124);
    // Same source 198.51.100.11:40001 to another destination: the existing mapping :1124 is reused.
    const again = bind(t, { ...client, src: ip('198.51.100.11'), dport: 30081 }, { dst: { ...dnat, to: { minIp: ip('203.0.113.10'), minPort: 8080 } }, src: masq }, env(t, rng));
    expect(again.reply.dport).toBe(1124);
    expect(rng.calls.length).toBe(1);
  });

  it('should keep privileged source ports in the privileged ranges', () => {
    const t = new ConntrackTable();
    const first = bind(t, { ...client, sport: 700 }, { dst: dnat, src: masqFully }, env(t, scripted([0])));
    expect(first.reply.dport).toBe(600);
    const low = bind(t, { ...client, sport: 100 }, { dst: dnat, src: masqFully }, env(t, scripted([510])));
    expect(low.reply.dport).toBe(511);
  });

  it('should give up after the kernel attempt budget when the port range is exhausted (then confirm clashes)', () => {
    const t = new ConntrackTable();
    const one: NatRequest = { kind: 'SNAT', to: { minIp: ip('203.0.113.1'), minPort: 5000, maxPort: 5000 }, random: false, randomFully: false, persistent: false };
    bind(t, client, { dst: dnat, src: one });
    const ct = t.create({ ...client, src: ip('198.51.100.11') }, 0, 120);
    const e = env(t);
    setupNat(ct, 'dst', dnat, e, out);
    setupNat(ct, 'src', one, e, out);
    expect(ct.reply.dport).toBe(5000);
    expect(t.confirm(ct, 0)).toBe(false);
  });

  it('should refuse MASQUERADE when no address can be chosen', () => {
    const t = new ConntrackTable();
    const ct = t.create(client, 0, 120);
    expect(setupNat(ct, 'src', masq, env(t, seeded(1), 0), out)).toEqual({ ok: false, reason: 'masquerade-no-address' });
  });
});

describe('NAT packet rewriting', () => {
  it('should rewrite original packets forward and replies back to the original tuple', () => {
    const t = new ConntrackTable();
    const ct = bind(t, client, { dst: dnat, src: masq });
    const p: NatFields = { src: client.src, dst: client.dst, proto: 6, sport: client.sport, dport: client.dport, icmpId: 0 };
    manipPacket(p, ct, 'original', 'dst');
    manipPacket(p, ct, 'original', 'src');
    expect(p).toEqual({ src: ip('203.0.113.1'), dst: ip('203.0.113.9'), proto: 6, sport: 40001, dport: 8080, icmpId: 0 });
    const r: NatFields = { src: ip('203.0.113.9'), dst: ip('203.0.113.1'), proto: 6, sport: 8080, dport: 40001, icmpId: 0 };
    manipPacket(r, ct, 'reply', 'dst');
    manipPacket(r, ct, 'reply', 'src');
    expect(r).toEqual({ src: client.dst, dst: client.src, proto: 6, sport: client.dport, dport: client.sport, icmpId: 0 });
  });

  it('should put an ICMP error back as the client sent its packet and make it come from the address the client targeted', () => {
    const t = new ConntrackTable();
    const ct = bind(t, client, { dst: dnat });
    const outer: NatFields = { src: ip('203.0.113.1'), dst: client.src, proto: 1, sport: 0, dport: 0, icmpId: 0 };
    const inner: NatInner = { src: client.src, dst: ip('203.0.113.9'), proto: 6, sport: 40001, dport: 8080 };
    expect(manipIcmpError(outer, inner, ct, 'reply', 'dst')).toBe(false);
    expect(manipIcmpError(outer, inner, ct, 'reply', 'src')).toBe(true);
    expect(inner).toEqual({ src: client.src, dst: client.dst, proto: 6, sport: 40001, dport: 30080 });
    expect(outer.src).toBe(client.dst);
  });
});
