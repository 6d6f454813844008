/**
 * fast-check generators for netfilter-level cases: a ruleset in netsim's data model plus the
 * first packet of a flow, drawn so that the real kernel accepts the ruleset and the lab can watch
 * the packet to the end.
 *
 * What keeps a ruleset loadable: jumps only go "forward" (no loops); every user chain has a
 * declared set of hooks that may reach it, and a rule uses only targets and options valid at all
 * of them (DNAT only where PREROUTING/OUTPUT reach, MASQUERADE only from POSTROUTING, REJECT only
 * in filter INPUT/FORWARD, `-i` only where there is an input interface, …); DROP never in nat.
 *
 * What keeps a case observable and decidable (see `pathModel.ts`): addresses come from a small
 * pool around the lab topology so rules match often; every destination is routable through a
 * neighbour with a permanent entry; the node never gets TCP for itself (its stack would answer);
 * NAT maps to one address, never a range, and never to the node itself; no random NAT ports.
 *
 * Three profiles: `forward` (a packet from a peer, no REJECT), `reject` (REJECT allowed; the nat
 * table and every OUTPUT/POSTROUTING chain stay empty, so the kernel's answer crosses no rule),
 * `local` (the node sends the packet itself, through OUTPUT and POSTROUTING).
 */
import fc from 'fast-check';
import {
  BUILTIN_CHAINS,
  cidr,
  parseIpv4,
  type AddrType,
  type Chain,
  type CtState,
  type Hook,
  type Ipv4,
  type Match,
  type Policy,
  type PortMatch,
  type RejectWith,
  type Rule,
  type Ruleset,
  type Table,
  type TableName,
  type Target,
} from '@netsim/netfilter';
import type { Injection } from './lab.ts';
import { PROTO_ICMP, PROTO_TCP, PROTO_UDP, TCP, type PacketSpec } from './packet.ts';
import type { PeerName } from './topology.ts';

export type Profile = 'forward' | 'reject' | 'local';
export const PROFILES: readonly Profile[] = ['forward', 'reject', 'local'];

/** One netfilter-level case. */
export interface NfCase {
  readonly profile: Profile;
  readonly ruleset: Ruleset;
  readonly injection: Injection;
}

const ip = parseIpv4;

/** Routable addresses that are not the node's: peers (on-link, permanent neighbours) and hosts behind them. */
export const REMOTE: readonly Ipv4[] = ['192.0.2.2', '198.51.100.2', '203.0.113.2', '192.0.2.100', '198.19.0.7', '198.18.0.5', '198.18.3.3', '203.0.113.100'].map(ip);
/** The node's own addresses. */
export const LOCAL: readonly Ipv4[] = ['192.0.2.1', '198.51.100.1', '203.0.113.1'].map(ip);
/** The node's subnet broadcasts (delivered locally). */
export const BROADCAST: readonly Ipv4[] = ['192.0.2.3', '198.51.100.3', '203.0.113.3'].map(ip);

const PORTS = [53, 80, 443, 8080, 30080] as const;
const SOURCE_PORTS = [40000, 40001, 1024, 53, 80] as const;
const IFACES = ['eth0', 'eth1', 'vethpod', 'lo'] as const;
const PREFIXES = [32, 32, 30, 24, 16, 8] as const;

/** Hooks at which a rule sees an input / output interface. */
const HAS_IN: ReadonlySet<Hook> = new Set(['PREROUTING', 'INPUT', 'FORWARD']);
const HAS_OUT: ReadonlySet<Hook> = new Set(['FORWARD', 'OUTPUT', 'POSTROUTING']);

/** Where a chain may be reached from: the table and the built-in hooks that can get there. */
interface ChainCtx {
  readonly pool: Pool;
  readonly table: TableName;
  readonly hooks: readonly Hook[];
  readonly profile: Profile;
  /** User chains this chain may jump or go to. */
  readonly targets: readonly string[];
}

const subset = <T>(hooks: readonly T[], allowed: readonly T[]): boolean => hooks.every((h) => allowed.includes(h));

const negArb = fc.oneof({ arbitrary: fc.constant(false), weight: 4 }, { arbitrary: fc.constant(true), weight: 1 });

/**
 * What rules draw addresses and ports from. Rules aimed at the case's own packet half of the time
 * match often enough to exercise jumps, NAT and REJECT; the rest of the pool gives near misses.
 */
export interface Pool {
  readonly addrs: fc.Arbitrary<Ipv4>;
  readonly ports: fc.Arbitrary<number>;
}

/** The pool for a case whose packet is `p` (or a blind pool without one). */
export function poolFor(p?: PacketSpec): Pool {
  const anyAddr = fc.constantFrom(...REMOTE, ...LOCAL, ...BROADCAST);
  const anyPort = fc.constantFrom<number>(...PORTS, ...SOURCE_PORTS);
  if (p === undefined) return { addrs: anyAddr, ports: anyPort };
  return {
    addrs: fc.oneof({ arbitrary: anyAddr, weight: 1 }, { arbitrary: fc.constantFrom(p.src, p.dst), weight: 1 }),
    ports: fc.oneof({ arbitrary: anyPort, weight: 1 }, { arbitrary: fc.constantFrom(p.sport, p.dport), weight: 1 }),
  };
}

function cidrArb(pool: Pool): fc.Arbitrary<{ cidr: ReturnType<typeof cidr>; negate: boolean }> {
  return fc.record({ a: pool.addrs, prefix: fc.constantFrom(...PREFIXES), negate: negArb }).map((r) => ({ cidr: cidr(r.a, r.prefix), negate: r.negate }));
}

function portRangeArb(pool: Pool): fc.Arbitrary<{ from: number; to: number }> {
  return fc.oneof(
    { arbitrary: pool.ports.map((p) => ({ from: p, to: p })), weight: 4 },
    { arbitrary: fc.constantFrom({ from: 1024, to: 65535 }, { from: 80, to: 443 }, { from: 0, to: 1023 }, { from: 30000, to: 32767 }), weight: 1 },
  );
}

function portMatchArb(pool: Pool): fc.Arbitrary<PortMatch> {
  return fc.record({ range: portRangeArb(pool), negate: negArb });
}

const tcpFlagsArb = fc
  .subarray([TCP.SYN, TCP.ACK, TCP.FIN, TCP.RST], { minLength: 1 })
  .chain((mask) => fc.subarray(mask).map((comp) => ({ mask: mask.reduce((a, b) => a | b, 0), comp: comp.reduce((a, b) => a | b, 0) })))
  .chain((f) => negArb.map((negate) => ({ ...f, negate })));

const CT_STATES: readonly CtState[] = ['NEW', 'ESTABLISHED', 'RELATED', 'INVALID', 'UNTRACKED', 'DNAT', 'SNAT'];
const STATE_STATES: readonly CtState[] = ['NEW', 'ESTABLISHED', 'RELATED', 'INVALID', 'UNTRACKED'];
const ADDR_TYPES: readonly AddrType[] = ['LOCAL', 'UNICAST', 'BROADCAST', 'MULTICAST'];

const markValue = fc.constantFrom(0x1, 0x2, 0x4000, 0x4001, 0xff);
const markMask = fc.constantFrom(0xffffffff, 0x4000, 0xff, 0x1);

function addrtypeArb(hooks: readonly Hook[]): fc.Arbitrary<Match> {
  const canIn = subset(hooks, ['PREROUTING', 'INPUT', 'FORWARD']);
  const canOut = subset(hooks, ['OUTPUT', 'POSTROUTING', 'FORWARD']);
  const sel = fc.record({ types: fc.subarray([...ADDR_TYPES], { minLength: 1, maxLength: 2 }), negate: negArb });
  return fc
    .record({
      src: fc.option(sel, { nil: undefined }),
      dst: fc.option(sel, { nil: undefined }),
      limit: fc.constantFrom<'none' | 'in' | 'out'>('none', 'none', ...(canIn ? (['in'] as const) : []), ...(canOut ? (['out'] as const) : [])),
    })
    .filter((r) => r.src !== undefined || r.dst !== undefined)
    .map((r) => ({
      kind: 'addrtype' as const,
      ...(r.src === undefined ? {} : { src: r.src }),
      ...(r.dst === undefined ? {} : { dst: r.dst }),
      limitIfaceIn: r.limit === 'in',
      limitIfaceOut: r.limit === 'out',
    }));
}

/** The `-m` modules of one rule, given its protocol. */
function matchesArb(pool: Pool, proto: number | null, hooks: readonly Hook[]): fc.Arbitrary<Match[]> {
  const portMatch = portMatchArb(pool);
  const opt = <T>(a: fc.Arbitrary<T>, weight: number): fc.Arbitrary<T | undefined> =>
    fc.oneof({ arbitrary: fc.constant(undefined), weight: 10 - weight }, { arbitrary: a, weight });
  const l4 =
    proto === PROTO_TCP
      ? opt(
          fc
            .record({ sport: fc.option(portMatch, { nil: undefined }), dport: fc.option(portMatch, { nil: undefined }), flags: fc.option(tcpFlagsArb, { nil: undefined }) })
            .map((r): Match => ({ kind: 'tcp', ...(r.sport ? { sport: r.sport } : {}), ...(r.dport ? { dport: r.dport } : {}), ...(r.flags ? { flags: r.flags } : {}) })),
          4,
        )
      : proto === PROTO_UDP
        ? opt(
            fc
              .record({ sport: fc.option(portMatch, { nil: undefined }), dport: fc.option(portMatch, { nil: undefined }) })
              .map((r): Match => ({ kind: 'udp', ...(r.sport ? { sport: r.sport } : {}), ...(r.dport ? { dport: r.dport } : {}) })),
            4,
          )
        : proto === PROTO_ICMP
          ? opt(
              fc.record({ type: fc.constantFrom(8, 0, 3), negate: negArb }).map((r): Match => ({ kind: 'icmp', icmp: { type: r.type, negate: r.negate } })),
              3,
            )
          : fc.constant(undefined);
  const multiport =
    proto === PROTO_TCP || proto === PROTO_UDP
      ? opt(
          fc
            .record({ which: fc.constantFrom('sports' as const, 'dports' as const, 'ports' as const), ports: fc.uniqueArray(portRangeArb(pool), { minLength: 1, maxLength: 3, selector: (r) => `${r.from}:${r.to}` }), negate: negArb })
            .map((r): Match => ({ kind: 'multiport', ...r })),
          2,
        )
      : fc.constant(undefined);
  const mark = opt(fc.record({ value: markValue, mask: markMask, negate: negArb }).map((r): Match => ({ kind: 'mark', value: (r.value & r.mask) >>> 0, mask: r.mask, negate: r.negate })), 2);
  const ct = opt(
    fc.record({ states: fc.subarray([...CT_STATES], { minLength: 1, maxLength: 3 }), negate: negArb }).map((s): Match => ({ kind: 'conntrack', ctstate: s })),
    2,
  );
  const state = opt(fc.record({ states: fc.subarray([...STATE_STATES], { minLength: 1, maxLength: 2 }), negate: negArb }).map((s): Match => ({ kind: 'state', ...s })), 1);
  const addrtype = opt(addrtypeArb(hooks), 2);
  const comment = opt(fc.constantFrom('netsim conformance', 'k8s svc', 'x').map((c): Match => ({ kind: 'comment', comment: c })), 1);
  return fc.tuple(l4, multiport, mark, ct, state, addrtype, comment).map((ms) => ms.filter((m): m is Match => m !== undefined));
}

function targetArb(c: ChainCtx, proto: number | null): fc.Arbitrary<Target | undefined> {
  const options: { arbitrary: fc.Arbitrary<Target | undefined>; weight: number }[] = [
    { arbitrary: fc.constant({ kind: 'ACCEPT' } as const), weight: 4 },
    { arbitrary: fc.constant({ kind: 'RETURN' } as const), weight: 2 },
    { arbitrary: fc.constant(undefined), weight: 2 },
  ];
  if (c.table !== 'nat') options.push({ arbitrary: fc.constant({ kind: 'DROP' } as const), weight: 2 });
  if (c.targets.length > 0) {
    options.push({ arbitrary: fc.constantFrom(...c.targets).map((chain): Target => ({ kind: 'jump', chain })), weight: 4 });
    options.push({ arbitrary: fc.constantFrom(...c.targets).map((chain): Target => ({ kind: 'goto', chain })), weight: 1 });
  }
  if (c.table === 'mangle' || c.table === 'raw') {
    options.push({ arbitrary: fc.record({ value: markValue, mask: markMask }).map((m): Target => ({ kind: 'MARK', value: (m.value & m.mask) >>> 0, mask: m.mask })), weight: 3 });
  }
  if (c.table === 'mangle') {
    options.push({ arbitrary: fc.record({ value: markValue, mask: markMask }).map((m): Target => ({ kind: 'CONNMARK', mode: 'set-xmark', value: (m.value & m.mask) >>> 0, mask: m.mask })), weight: 1 });
  }
  if (c.table === 'raw') options.push({ arbitrary: fc.constant({ kind: 'NOTRACK' } as const), weight: 1 });
  const ported = proto === PROTO_TCP || proto === PROTO_UDP;
  if (c.table === 'nat' && subset(c.hooks, ['PREROUTING', 'OUTPUT'])) {
    options.push({
      arbitrary: fc
        .record({ to: fc.constantFrom(...REMOTE), port: ported ? fc.option(fc.constantFrom(...PORTS), { nil: undefined }) : fc.constant(undefined) })
        .map((r): Target => ({ kind: 'DNAT', to: { minIp: r.to, maxIp: r.to, ...(r.port === undefined ? {} : { minPort: r.port, maxPort: r.port }) }, random: false, persistent: false })),
      weight: 4,
    });
  }
  if (c.table === 'nat' && subset(c.hooks, ['POSTROUTING', 'INPUT'])) {
    options.push({
      arbitrary: fc.constantFrom(...LOCAL, ...REMOTE).map((to): Target => ({ kind: 'SNAT', to: { minIp: to, maxIp: to }, random: false, randomFully: false, persistent: false })),
      weight: 2,
    });
  }
  if (c.table === 'nat' && subset(c.hooks, ['POSTROUTING'])) {
    options.push({ arbitrary: fc.constant({ kind: 'MASQUERADE', random: false, randomFully: false } as const), weight: 3 });
  }
  if (c.profile === 'reject' && c.table === 'filter' && subset(c.hooks, ['INPUT', 'FORWARD'])) {
    const withs: RejectWith[] = ['icmp-port-unreachable', 'icmp-host-prohibited', 'icmp-net-unreachable', 'icmp-admin-prohibited', ...(proto === PROTO_TCP ? (['tcp-reset'] as const) : [])];
    options.push({ arbitrary: fc.constantFrom(...withs).map((w): Target => ({ kind: 'REJECT', with: w })), weight: 4 });
  }
  return fc.oneof(...options);
}

function ruleArb(c: ChainCtx): fc.Arbitrary<Rule> {
  const canIn = subset(c.hooks, [...HAS_IN]);
  const canOut = subset(c.hooks, [...HAS_OUT]);
  const ifaceArb = fc.record({ name: fc.constantFrom(...IFACES, 'eth', 'veth'), negate: negArb }).map((r) => ({
    name: r.name,
    wildcard: r.name === 'eth' || r.name === 'veth',
    negate: r.negate,
  }));
  const opt = <T>(a: fc.Arbitrary<T>, weight: number): fc.Arbitrary<T | undefined> =>
    fc.oneof({ arbitrary: fc.constant(undefined), weight: 10 - weight }, { arbitrary: a, weight });
  return fc
    .record({
      src: opt(cidrArb(c.pool), 3),
      dst: opt(cidrArb(c.pool), 3),
      inIface: canIn ? opt(ifaceArb, 2) : fc.constant(undefined),
      outIface: canOut ? opt(ifaceArb, 2) : fc.constant(undefined),
      proto: opt(fc.record({ proto: fc.constantFrom(PROTO_TCP, PROTO_TCP, PROTO_UDP, PROTO_ICMP), negate: fc.oneof({ arbitrary: fc.constant(false), weight: 8 }, { arbitrary: fc.constant(true), weight: 1 }) }), 5),
    })
    .chain((h) => {
      const proto = h.proto === undefined || h.proto.negate ? null : h.proto.proto;
      return fc.record({ matches: matchesArb(c.pool, proto, c.hooks), target: targetArb(c, proto) }).map((m): Rule => ({
        ...(h.src === undefined ? {} : { src: h.src }),
        ...(h.dst === undefined ? {} : { dst: h.dst }),
        ...(h.inIface === undefined ? {} : { inIface: h.inIface }),
        ...(h.outIface === undefined ? {} : { outIface: h.outIface }),
        ...(h.proto === undefined ? {} : { proto: h.proto }),
        matches: m.matches,
        ...(m.target === undefined ? {} : { target: m.target }),
      }));
    });
}

const USER_CHAINS = ['NCF-A', 'NCF-B', 'NCF-C'] as const;

/** Built-in chains that stay empty (with ACCEPT policy) in a profile. */
function frozen(profile: Profile, table: TableName, hook: Hook): boolean {
  if (profile !== 'reject') return false;
  return table === 'nat' || hook === 'OUTPUT' || hook === 'POSTROUTING';
}

function tableArb(name: TableName, profile: Profile, pool: Pool): fc.Arbitrary<Table> {
  const builtins = BUILTIN_CHAINS[name];
  const open = builtins.filter((h) => !frozen(profile, name, h));
  const hookSet = open.length === 0 ? fc.constant<Hook[]>([]) : fc.subarray([...open], { minLength: 1 });
  return fc.tuple(...USER_CHAINS.map(() => hookSet)).chain((sets) => {
    // User chain k reaches only chains after it whose hook set covers its own: no loops, and every
    // target valid wherever the chain is reached from.
    const users = USER_CHAINS.map((n, k) => ({ name: n, hooks: sets[k] as Hook[] })).filter((u) => u.hooks.length > 0);
    const targetsFrom = (hooks: readonly Hook[], after: number): string[] => users.filter((u, k) => k > after && subset(hooks, u.hooks)).map((u) => u.name);
    const policyArb = (hook: Hook): fc.Arbitrary<Policy> =>
      name === 'nat' || frozen(profile, name, hook)
        ? fc.constant<Policy>('ACCEPT')
        : fc.oneof({ arbitrary: fc.constant<Policy>('ACCEPT'), weight: name === 'filter' ? 3 : 8 }, { arbitrary: fc.constant<Policy>('DROP'), weight: 1 });
    const builtinArbs = builtins.map((hook) =>
      frozen(profile, name, hook)
        ? fc.constant<Chain>({ name: hook, policy: 'ACCEPT', counters: { packets: 0, bytes: 0 }, rules: [] })
        : fc
            .record({
              policy: policyArb(hook),
              rules: fc.array(ruleArb({ pool, table: name, hooks: [hook], profile, targets: targetsFrom([hook], -1) }), { maxLength: 4 }),
            })
            .map((r): Chain => ({ name: hook, policy: r.policy, counters: { packets: 0, bytes: 0 }, rules: r.rules })),
    );
    const userArbs = users.map((u, k) => fc.array(ruleArb({ pool, table: name, hooks: u.hooks, profile, targets: targetsFrom(u.hooks, k) }), { maxLength: 3 }).map((rules): Chain => ({ name: u.name, rules })));
    return fc.tuple(fc.tuple(...builtinArbs), fc.tuple(...userArbs)).map(([bs, us]): Table => {
      const chains: { [n: string]: Chain } = {};
      for (const c of [...bs, ...us]) chains[c.name] = c;
      return { name, chains };
    });
  });
}

/** A ruleset in all four tables for `profile`, its rules often aimed at `packet` when given. */
export function rulesetArb(profile: Profile, packet?: PacketSpec): fc.Arbitrary<Ruleset> {
  const pool = poolFor(packet);
  return fc
    .tuple(tableArb('raw', profile, pool), tableArb('mangle', profile, pool), tableArb('nat', profile, pool), tableArb('filter', profile, pool))
    .map(([raw, mangle, nat, filter]) => ({ tables: { raw, mangle, nat, filter } }));
}

// The common shapes, plus combinations conntrack refuses (tcp_valid_flags) and ones it accepts with URG, PSH, ECE or CWR.
const TCP_FLAGS = [TCP.SYN, TCP.SYN, TCP.SYN, TCP.ACK, TCP.ACK | TCP.PSH, TCP.SYN | TCP.ACK, TCP.RST, TCP.FIN | TCP.ACK, 0, TCP.SYN | TCP.FIN, TCP.SYN | TCP.RST, TCP.FIN, TCP.URG | TCP.PSH | TCP.FIN, TCP.SYN | TCP.URG, TCP.SYN | TCP.ECE | TCP.CWR, TCP.SYN | TCP.ACK | TCP.URG] as const;

function packetArb(src: fc.Arbitrary<Ipv4>, dst: (proto: number) => fc.Arbitrary<Ipv4>): fc.Arbitrary<PacketSpec> {
  return fc
    .constantFrom(PROTO_TCP, PROTO_TCP, PROTO_TCP, PROTO_UDP, PROTO_UDP, PROTO_ICMP)
    .chain((proto) =>
      fc.record({
        src,
        dst: dst(proto),
        proto: fc.constant(proto),
        sport: proto === PROTO_ICMP ? fc.constant(0) : fc.constantFrom(...SOURCE_PORTS),
        dport: proto === PROTO_ICMP ? fc.constant(0) : fc.constantFrom(...PORTS),
        tcpFlags: proto === PROTO_TCP ? fc.constantFrom(...TCP_FLAGS) : fc.constant(0),
        icmpType: fc.constant(proto === PROTO_ICMP ? 8 : 0),
        icmpCode: fc.constant(0),
        icmpId: proto === PROTO_ICMP ? fc.constantFrom(1, 7) : fc.constant(0),
      }),
    )
    .filter((p) => p.src !== p.dst);
}

/** The first packet of a flow for `profile`. */
export function injectionArb(profile: Profile): fc.Arbitrary<Injection> {
  if (profile === 'local') {
    return fc.record({
      kind: fc.constant('local' as const),
      packet: packetArb(fc.oneof({ arbitrary: fc.constantFrom(...LOCAL), weight: 4 }, { arbitrary: fc.constantFrom(...REMOTE), weight: 1 }), () => fc.constantFrom(...REMOTE)),
      mark: fc.constantFrom(0, 0, 0x1, 0x4000),
    });
  }
  return fc.record({
    kind: fc.constant('ingress' as const),
    peer: fc.constantFrom<PeerName>('client', 'client', 'uplink2', 'pod'),
    // UDP and ICMP may be for the node (a bound UDP port, an ignored echo): silent local delivery.
    packet: packetArb(fc.constantFrom(...REMOTE), (proto) => (proto === PROTO_TCP ? fc.constantFrom(...REMOTE) : fc.constantFrom(...REMOTE, ...LOCAL, ...BROADCAST))),
  });
}

/** A whole netfilter-level case. */
export function nfCaseArb(profiles: readonly Profile[] = PROFILES): fc.Arbitrary<NfCase> {
  return fc
    .constantFrom(...profiles)
    .chain((profile) => injectionArb(profile).map((injection) => ({ profile, injection })))
    .chain(({ profile, injection }) => rulesetArb(profile, injection.packet).map((ruleset): NfCase => ({ profile, ruleset, injection })));
}
