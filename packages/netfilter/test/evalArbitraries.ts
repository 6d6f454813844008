/**
 * fast-check arbitraries for evaluation tests: rulesets whose rules draw addresses, ports and
 * marks from small pools (so generated packets often match), chains that jump only "forward"
 * (no loops, as the kernel requires), and kube-proxy-like runs of same-shape rules so the dispatch
 * index has something to do. Packets draw from the same pools.
 */
import fc from 'fast-check';
import { parseCidr, parseIpv4, type Hook, type Ipv4, type Match, type Packet, type Rule, type Ruleset, type Target } from '../src/index.ts';
import { ruleset } from './evalHelpers.ts';

const ADDRS = ['198.18.0.1', '198.18.0.2', '198.18.0.3', '203.0.113.7', '203.0.113.8', '10.0.0.1'];
const PORTS = [53, 80, 443, 30080, 40000];
const PROTOS = [6, 17, 1];

const addr = fc.constantFrom(...ADDRS);
const port = fc.constantFrom(...PORTS);

const cidrMatch = fc.record({
  a: addr,
  prefix: fc.constantFrom(32, 32, 24, 16, 0),
  neg: fc.integer({ min: 0, max: 5 }).map((n) => n === 0),
}).map(({ a, prefix, neg }) => ({ cidr: parseCidr(`${a}/${prefix}`), negate: neg }));

const portRange = fc.oneof(
  port.map((p) => ({ from: p, to: p })),
  fc.tuple(port, port).map(([a, b]) => ({ from: Math.min(a, b), to: Math.max(a, b) })),
);

const portMatch = fc.record({ range: portRange, negate: fc.integer({ min: 0, max: 4 }).map((n) => n === 0) });

function l4Match(proto: number): fc.Arbitrary<Match> {
  if (proto === 6 || proto === 17) {
    return fc
      .record({ sport: fc.option(portMatch, { nil: undefined }), dport: fc.option(portMatch, { nil: undefined }) })
      .map(({ sport, dport }) => ({
        kind: proto === 6 ? 'tcp' : 'udp',
        ...(sport === undefined ? {} : { sport }),
        ...(dport === undefined ? {} : { dport }),
      }));
  }
  return fc.constant({ kind: 'icmp', icmp: { type: 8, negate: false } });
}

const otherMatch: fc.Arbitrary<Match> = fc.oneof(
  fc.constant<Match>({ kind: 'comment', comment: 'c' }),
  fc.record({ value: fc.constantFrom(0, 1, 0x4000), negate: fc.boolean() }).map<Match>(({ value, negate }) => ({ kind: 'mark', value, mask: 0xffff, negate })),
  fc.constantFrom<Match>(
    { kind: 'conntrack', ctstate: { states: ['NEW'], negate: false } },
    { kind: 'conntrack', ctstate: { states: ['ESTABLISHED', 'RELATED'], negate: false } },
    { kind: 'conntrack', ctstate: { states: ['DNAT'], negate: true } },
    { kind: 'state', states: ['NEW'], negate: false },
  ),
  fc.integer({ min: 0, max: 4 }).map<Match>((k) => ({
    kind: 'statistic',
    mode: 'random',
    probability: { text: '', threshold31: [0, 0x20000000, 0x40000000, 0x60000000, 0x80000000][k] as number },
    negate: false,
  })),
  fc.record({ every: fc.integer({ min: 1, max: 3 }), packet: fc.integer({ min: 0, max: 2 }) }).map<Match>(({ every, packet }) => ({
    kind: 'statistic',
    mode: 'nth',
    every,
    packet: packet % every,
    negate: false,
  })),
  fc.constant<Match>({ kind: 'unknown', module: 'recent', args: ['--rcheck'] }),
  fc.constant<Match>({ kind: 'addrtype', dst: { types: ['LOCAL'], negate: false }, limitIfaceIn: false, limitIfaceOut: false }),
);

function targetArb(laterChains: readonly string[]): fc.Arbitrary<Target | undefined> {
  const base: fc.Arbitrary<Target | undefined>[] = [
    fc.constant(undefined),
    fc.constantFrom<Target>({ kind: 'ACCEPT' }, { kind: 'DROP' }, { kind: 'RETURN' }, { kind: 'LOG', prefix: 'x' }),
    fc.constantFrom(0x1, 0x4000).map<Target>((v) => ({ kind: 'MARK', value: v, mask: v })),
    addr.map<Target>((a) => ({ kind: 'DNAT', to: { minIp: parseIpv4(a), maxIp: parseIpv4(a) }, random: false, persistent: false })),
    fc.constant<Target>({ kind: 'unknown', name: 'CHECKSUM', args: [] }),
  ];
  if (laterChains.length > 0) {
    const c = fc.constantFrom(...laterChains);
    base.push(c.map<Target>((chain) => ({ kind: 'jump', chain })), c.map<Target>((chain) => ({ kind: 'goto', chain })));
  }
  return fc.oneof(...base);
}

/** A general rule: random header fields, a protocol-consistent l4 match, other modules, a target. */
function ruleArb(laterChains: readonly string[]): fc.Arbitrary<Rule> {
  return fc
    .record({
      src: fc.option(cidrMatch, { nil: undefined }),
      dst: fc.option(cidrMatch, { nil: undefined }),
      proto: fc.option(fc.constantFrom(...PROTOS), { nil: undefined }),
      inIface: fc.option(fc.constantFrom({ name: 'eth', wildcard: true, negate: false }, { name: 'eth1', wildcard: false, negate: true }), { nil: undefined }),
      others: fc.array(otherMatch, { maxLength: 2 }),
      l4First: fc.boolean(),
      target: targetArb(laterChains),
    })
    .chain((r) =>
      (r.proto === undefined ? fc.constant<Match[]>([]) : fc.option(l4Match(r.proto), { nil: undefined }).map((m) => (m === undefined ? [] : [m]))).map(
        (l4): Rule => ({
          ...(r.src === undefined ? {} : { src: r.src }),
          ...(r.dst === undefined ? {} : { dst: r.dst }),
          ...(r.proto === undefined ? {} : { proto: { proto: r.proto, negate: false } }),
          ...(r.inIface === undefined ? {} : { inIface: r.inIface }),
          matches: r.l4First ? [...l4, ...r.others] : [...r.others, ...l4],
          ...(r.target === undefined ? {} : { target: r.target }),
        }),
      ),
    );
}

/** A kube-proxy-like run: same shape (`-d A/32 -p tcp --dport P`, or `-p tcp --dport P`), random keys. */
function serviceRunArb(laterChains: readonly string[]): fc.Arbitrary<Rule[]> {
  return fc.record({ withDst: fc.boolean(), proto: fc.constantFrom(6, 17), n: fc.integer({ min: 2, max: 12 }) }).chain(({ withDst, proto, n }) =>
    fc.array(
      fc.record({ a: addr, p: port, extra: fc.option(otherMatch, { nil: undefined }), before: fc.boolean(), target: targetArb(laterChains) }).map(
        ({ a, p, extra, before, target }): Rule => {
          const l4: Match = { kind: proto === 6 ? 'tcp' : 'udp', dport: { range: { from: p, to: p }, negate: false } };
          const matches: Match[] = extra === undefined ? [l4] : before ? [extra, l4] : [l4, extra];
          return {
            ...(withDst ? { dst: { cidr: parseCidr(`${a}/32`), negate: false } } : {}),
            proto: { proto, negate: false },
            matches,
            ...(target === undefined ? {} : { target }),
          };
        },
      ),
      { minLength: n, maxLength: n },
    ),
  );
}

function chainArb(laterChains: readonly string[]): fc.Arbitrary<Rule[]> {
  return fc
    .array(fc.oneof({ weight: 3, arbitrary: ruleArb(laterChains).map((r) => [r]) }, { weight: 2, arbitrary: serviceRunArb(laterChains) }), { maxLength: 4 })
    .map((parts) => parts.flat());
}

const USER_CHAINS = ['U1', 'U2', 'U3'];

/** A ruleset with nat and filter tables (user chains U1..U3 jumping only to later ones). */
export const rulesetArb: fc.Arbitrary<Ruleset> = fc
  .record({
    natPre: chainArb(USER_CHAINS),
    natOut: chainArb(USER_CHAINS),
    filterIn: chainArb(USER_CHAINS),
    filterPolicy: fc.constantFrom('ACCEPT' as const, 'DROP' as const),
    mangleFwd: chainArb([]),
    u1: chainArb(['U2', 'U3']),
    u2: chainArb(['U3']),
    u3: chainArb([]),
    fu1: chainArb(['U2', 'U3']),
    fu2: chainArb(['U3']),
    fu3: chainArb([]),
  })
  .map((c) =>
    ruleset({
      nat: { PREROUTING: c.natPre, OUTPUT: c.natOut, U1: c.u1, U2: c.u2, U3: c.u3 },
      filter: { INPUT: { policy: c.filterPolicy, rules: c.filterIn }, U1: c.fu1, U2: c.fu2, U3: c.fu3 },
      mangle: { FORWARD: c.mangleFwd },
    }),
  );

export const packetArb: fc.Arbitrary<Packet> = fc
  .record({
    src: addr,
    dst: addr,
    proto: fc.constantFrom(...PROTOS),
    sport: port,
    dport: port,
    mark: fc.constantFrom(0, 1, 0x4000),
    fragment: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
    inIface: fc.constantFrom('eth0', 'eth1', null),
  })
  .map((p) => ({
    src: parseIpv4(p.src),
    dst: parseIpv4(p.dst),
    proto: p.proto,
    sport: p.proto === 1 ? 0 : p.sport,
    dport: p.proto === 1 ? 0 : p.dport,
    tcpFlags: 0x02,
    icmpType: 8,
    icmpCode: 0,
    inIface: p.inIface,
    outIface: null,
    mark: p.mark,
    lengthBytes: 60,
    fragment: p.fragment,
  }));

/**
 * Packets aimed at a given ruleset: addresses, ports and protocols taken from its rules (so that
 * rules of generators with uniform random addresses match now and then), mixed with the pools.
 */
export function packetsAimedAt(rs: Ruleset): fc.Arbitrary<Packet> {
  const addrs = new Set<number>(ADDRS.map((a) => parseIpv4(a)));
  const ports = new Set<number>(PORTS);
  const protos = new Set<number>([6, 17, 1]);
  const ifaces = new Set<string>(['eth0', 'lo']);
  for (const t of Object.values(rs.tables)) {
    for (const c of Object.values(t.chains)) {
      for (const r of c.rules) {
        if (r.src !== undefined) addrs.add(r.src.cidr.addr);
        if (r.dst !== undefined) addrs.add(r.dst.cidr.addr);
        if (r.proto !== undefined && r.proto.proto !== 0) protos.add(r.proto.proto);
        for (const i of [r.inIface, r.outIface]) if (i !== undefined) ifaces.add(i.wildcard ? `${i.name}0` : i.name);
        for (const m of r.matches) {
          if (m.kind === 'tcp' || m.kind === 'udp') for (const pm of [m.sport, m.dport]) if (pm !== undefined) ports.add(pm.range.from).add(pm.range.to);
          if (m.kind === 'multiport') for (const pr of m.ports) ports.add(pr.from);
          if (m.kind === 'iprange') for (const ir of [m.srcRange, m.dstRange]) if (ir !== undefined) addrs.add(ir.from);
        }
      }
    }
  }
  const addr = fc.constantFrom(...[...addrs].sort((a, b) => a - b));
  const port = fc.constantFrom(...[...ports].sort((a, b) => a - b));
  const iface = fc.constantFrom(null, ...[...ifaces].sort());
  return fc
    .record({
      src: addr,
      dst: addr,
      proto: fc.constantFrom(...[...protos].sort((a, b) => a - b)),
      sport: port,
      dport: port,
      tcpFlags: fc.integer({ min: 0, max: 255 }),
      icmp: fc.tuple(fc.integer({ min: 0, max: 16 }), fc.integer({ min: 0, max: 4 })),
      mark: fc.constantFrom(0, 1, 0x4000, 0xffffffff),
      fragment: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
      inIface: iface,
      outIface: iface,
    })
    .map((p) => ({
      src: p.src as Ipv4,
      dst: p.dst as Ipv4,
      proto: p.proto,
      sport: p.sport,
      dport: p.dport,
      tcpFlags: p.tcpFlags,
      icmpType: p.icmp[0],
      icmpCode: p.icmp[1],
      inIface: p.inIface,
      outIface: p.outIface,
      mark: p.mark,
      lengthBytes: 60,
      fragment: p.fragment,
    }));
}

export const hookArb: fc.Arbitrary<Hook> = fc.constantFrom<Hook>('PREROUTING', 'INPUT', 'FORWARD', 'OUTPUT');
