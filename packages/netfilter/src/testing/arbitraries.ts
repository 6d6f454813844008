/**
 * fast-check arbitraries for rules and rulesets in canonical form: every generated value is one
 * the real tool accepts and `parseSave(formatSave(r))` gives back deep-equal. They respect what
 * the kernel enforces (NAT targets only in their nat chains, REJECT only in filter, `-i`/`-o` per
 * built-in chain, jumps only "forward" so no loop is reachable, CLASSIFY and TCPMSS only where
 * the kernel takes them, protocol matches under a negated `-p` only in the native forms), so
 * generated rulesets also restore cleanly. They name no kernel object that a fresh host lacks:
 * `-m set` only for the `ipsets` option's names, no `-m nfacct`.
 *
 * @example
 * fc.assert(fc.property(rulesetArbitrary(), (r) => expect(parseSave(formatSave(r))).toEqual(r)), { seed: 1 });
 */
import fc from 'fast-check';
import { probabilityText } from '../matches.ts';
import { IPTABLES_TARGET_NAMES, STANDARD_TARGETS } from '../targets.ts';
import { BUILTIN_CHAINS, TABLE_NAMES } from '../types.ts';
import type {
  AddrMatch,
  AddrType,
  Chain,
  Counters,
  CtState,
  IfaceMatch,
  Ipv4,
  Match,
  NatRange,
  PortMatch,
  PortRange,
  ProtoMatch,
  Rule,
  Ruleset,
  Table,
  TableName,
  Target,
} from '../types.ts';
import { prefixMask } from '../ip.ts';

/** Where a rule lives, which decides the targets and interfaces it may use. */
export interface RuleContext {
  readonly table: TableName;
  readonly chain: string;
  readonly builtin: boolean;
  /** User chains this rule may jump or go to (only "later" chains, so jumps cannot loop). */
  readonly jumpTargets: readonly string[];
  /**
   * ipsets that exist on the host the ruleset is for: `-m set` matches name only these (none
   * when absent, since the real tool refuses a set that does not exist).
   */
  readonly ipsets?: readonly string[];
}

const rare = (n: number): fc.Arbitrary<boolean> => fc.integer({ min: 0, max: n - 1 }).map((k) => k === 0);

export const ipv4Arbitrary: fc.Arbitrary<Ipv4> = fc.integer({ min: 0, max: 0xffffffff }).map((n) => n as Ipv4);

const counters: fc.Arbitrary<Counters> = fc.record({
  packets: fc.integer({ min: 0, max: 2 ** 40 }),
  bytes: fc.integer({ min: 0, max: 2 ** 50 }),
});

const addrMatch: fc.Arbitrary<AddrMatch> = fc
  .record({ addr: ipv4Arbitrary, prefix: fc.integer({ min: 1, max: 32 }), negate: rare(3) })
  .map(({ addr, prefix, negate }) => ({ cidr: { addr: ((addr & prefixMask(prefix)) >>> 0) as Ipv4, prefix }, negate }));

const ifaceName = fc.stringMatching(/^[a-z][a-z0-9.]{0,9}$/);
const ifaceMatch: fc.Arbitrary<IfaceMatch> = fc.record({ name: ifaceName, wildcard: rare(3), negate: rare(3) });

/** Protocols with what each may carry: tcp/udp ports, icmp types, port-based NAT. */
const PROTOS = [6, 17, 1, 47, 50, 132] as const;

const portRange = (): fc.Arbitrary<PortRange> =>
  fc.oneof(
    fc.integer({ min: 0, max: 65535 }).map((p) => ({ from: p, to: p })),
    fc
      .tuple(fc.integer({ min: 0, max: 65535 }), fc.integer({ min: 0, max: 65535 }))
      .map(([a, b]) => ({ from: Math.min(a, b), to: Math.max(a, b) }))
      // A full range leaves no expression behind in nf_tables, so it cannot round-trip.
      .filter((r) => !(r.from === 0 && r.to === 65535)),
  );

const portMatch: fc.Arbitrary<PortMatch> = fc.record({ range: portRange(), negate: rare(4) });

const tcpFields = fc
  .record(
    {
      sport: portMatch,
      dport: portMatch,
      flags: fc.record({ mask: fc.integer({ min: 1, max: 0x3f }), comp: fc.integer({ min: 0, max: 0x3f }), negate: rare(4) }),
      option: fc.record({ negate: rare(4), value: fc.integer({ min: 1, max: 255 }) }),
    },
    { requiredKeys: [] },
  );

const tcpMatch: fc.Arbitrary<Match> = tcpFields.map((m) => ({ kind: 'tcp', ...m }));

const udpFields = fc.record({ sport: portMatch, dport: portMatch }, { requiredKeys: [] });
const udpMatch: fc.Arbitrary<Match> = udpFields.map((m) => ({ kind: 'udp', ...m }));

/**
 * tcp/udp under a negated `-p`: only what iptables-nft writes as native expressions (a port or
 * flags, no --tcp-option); with nothing to write, or with an option, the match goes to the
 * kernel as an xt match, which refuses a negated protocol.
 */
const tcpMatchNegatedProto: fc.Arbitrary<Match> = tcpFields
  .map(({ option: _o, ...m }) => m)
  .filter((m) => m.sport !== undefined || m.dport !== undefined || m.flags !== undefined)
  .map((m) => ({ kind: 'tcp', ...m }));
const udpMatchNegatedProto: fc.Arbitrary<Match> = udpFields
  .filter((m) => m.sport !== undefined || m.dport !== undefined)
  .map((m) => ({ kind: 'udp', ...m }));

const icmpMatch: fc.Arbitrary<Match> = fc.oneof(
  // Type 255 is `any` (see the any case below).
  fc.record({ type: fc.integer({ min: 0, max: 254 }), negate: rare(4) }).map(({ type, negate }) => ({ kind: 'icmp' as const, icmp: { type, negate } })),
  fc
    .record({ type: fc.integer({ min: 0, max: 254 }), code: fc.integer({ min: 0, max: 255 }), negate: rare(4) })
    .map(({ type, code, negate }) => ({ kind: 'icmp' as const, icmp: { type, code: { from: code, to: code }, negate } })),
  rare(2).map((negate) => ({ kind: 'icmp' as const, icmp: { type: 255, any: true, negate } })),
);

const multiportMatch: fc.Arbitrary<Match> = fc
  .record({
    which: fc.constantFrom('sports' as const, 'dports' as const, 'ports' as const),
    ports: fc.array(
      fc.oneof(
        fc.integer({ min: 0, max: 65535 }).map((p) => ({ from: p, to: p })),
        fc
          .tuple(fc.integer({ min: 0, max: 65535 }), fc.integer({ min: 0, max: 65535 }))
          .filter(([a, b]) => a !== b)
          .map(([a, b]) => ({ from: Math.min(a, b), to: Math.max(a, b) })),
      ),
      { minLength: 1, maxLength: 7 },
    ),
    negate: rare(4),
  })
  .map(({ which, ports, negate }) => ({ kind: 'multiport', which, ports, negate }));

/** Comment text: printable, no newline, at most 255 UTF-8 bytes. */
const commentText = fc
  .string({
    unit: fc.oneof(fc.constantFrom('a', 'Z', '0', '-', '_', ' ', '"', "'", '\\', '/', ':', '.', ';', 'é', '→', '\t'), fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 })),
    maxLength: 40,
  })
  // C strings end at NUL, and a line ends at a newline: no control character but tab.
  .filter((s) => isPrintable(s) && Buffer.byteLength(s, 'utf8') <= 255);

function isPrintable(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if ((c < 32 && c !== 9) || c === 127) return false;
  }
  return true;
}

const CT_STATES: readonly CtState[] = ['INVALID', 'NEW', 'RELATED', 'ESTABLISHED', 'UNTRACKED', 'SNAT', 'DNAT'];
const STATE_STATES: readonly CtState[] = ['INVALID', 'NEW', 'RELATED', 'ESTABLISHED', 'UNTRACKED'];
const ADDR_TYPES: readonly AddrType[] = ['UNSPEC', 'UNICAST', 'LOCAL', 'BROADCAST', 'ANYCAST', 'MULTICAST', 'BLACKHOLE', 'UNREACHABLE', 'PROHIBIT', 'THROW', 'NAT', 'XRESOLVE'];

/** A non-empty subset, in the order of `all` (the order iptables prints). */
function subset<T>(all: readonly T[]): fc.Arbitrary<T[]> {
  return fc.subarray([...all], { minLength: 1 });
}

/**
 * Modules netsim keeps verbatim, with options as iptables-save prints them (it prints back what it
 * parsed, so only the canonical spelling round-trips). No `nfacct`: it names a kernel object the
 * real tool requires to exist.
 */
const unknownMatch: fc.Arbitrary<Match> = fc.constantFrom<Match>(
  { kind: 'unknown', module: 'limit', args: ['--limit', '10/day'] },
  { kind: 'unknown', module: 'limit', args: ['--limit', '3/min', '--limit-burst', '7'] },
  { kind: 'unknown', module: 'pkttype', args: ['!', '--pkt-type', 'unicast'] },
  { kind: 'unknown', module: 'ttl', args: ['--ttl-eq', '1'] },
);

/** `-m recent` in the combinations the kernel loads (`--set`/`--remove` take no condition). */
const recentMatch: fc.Arbitrary<Match> = fc
  .record({
    mode: fc.constantFrom('set' as const, 'rcheck' as const, 'update' as const, 'remove' as const),
    negate: rare(4),
    // Up to 2^31-1: the real tool prints larger ones negative, which it cannot read back.
    seconds: fc.option(fc.integer({ min: 1, max: 0x7fffffff }), { nil: undefined }),
    reap: fc.boolean(),
    hitcount: fc.constantFrom(0, 0, 1, 2, 20),
    rttl: rare(3),
    name: fc.constantFrom('DEFAULT', 'KUBE-SEP-ABCDEF', 'ssh'),
    mask: fc.constantFrom(0xffffffff, 0xffffff00, 0),
    side: fc.constantFrom('source' as const, 'dest' as const),
  })
  .map((r): Match => {
    const check = r.mode === 'rcheck' || r.mode === 'update';
    const seconds = check ? r.seconds : undefined;
    return {
      kind: 'recent',
      mode: r.mode,
      negate: r.negate,
      ...(seconds !== undefined && { seconds }),
      reap: seconds !== undefined && r.reap,
      hitcount: check ? r.hitcount : 0,
      rttl: check && r.rttl,
      name: r.name,
      mask: r.mask as Ipv4,
      side: r.side,
    };
  });

/** Matches that do not depend on the rule's protocol; `-m set` only with `ipsets` to name. */
function plainMatchFor(ipsets: readonly string[] | undefined): fc.Arbitrary<Match> {
  return ipsets === undefined || ipsets.length === 0 ? plainMatch : fc.oneof(plainMatch, setMatch(fc.constantFrom(...ipsets)));
}

function setMatch(name: fc.Arbitrary<string>): fc.Arbitrary<Match> {
  return fc
    .record({ setName: name, flags: fc.array(fc.constantFrom('src' as const, 'dst' as const), { minLength: 1, maxLength: 3 }), negate: rare(3) })
    .map((m) => ({ kind: 'set' as const, ...m }));
}

const plainMatch: fc.Arbitrary<Match> = fc.oneof(
  commentText.map((comment) => ({ kind: 'comment' as const, comment })),
  fc
    .record({ value: fc.integer({ min: 0, max: 0xffffffff }), mask: fc.integer({ min: 0, max: 0xffffffff }), negate: rare(3) })
    .map((m) => ({ kind: 'mark' as const, ...m })),
  fc.record({ states: subset(CT_STATES), negate: rare(3) }).map((ctstate) => ({ kind: 'conntrack' as const, ctstate })),
  fc.record({ states: subset(STATE_STATES), negate: rare(3) }).map((m) => ({ kind: 'state' as const, ...m })),
  fc
    .record(
      { src: fc.record({ types: subset(ADDR_TYPES), negate: rare(3) }), dst: fc.record({ types: subset(ADDR_TYPES), negate: rare(3) }) },
      { requiredKeys: [] },
    )
    .filter((m) => m.src !== undefined || m.dst !== undefined)
    .map((m) => ({ kind: 'addrtype' as const, ...m, limitIfaceIn: false, limitIfaceOut: false })),
  fc.record({ t: fc.integer({ min: 0, max: 0x80000000 }), negate: rare(3) }).map(({ t, negate }) => ({
    kind: 'statistic' as const,
    mode: 'random' as const,
    probability: { text: probabilityText(t), threshold31: t },
    negate,
  })),
  fc
    .integer({ min: 1, max: 1000 })
    .chain((every) => fc.record({ every: fc.constant(every), packet: fc.integer({ min: 0, max: every - 1 }), negate: rare(3) }))
    .map((m) => ({ kind: 'statistic' as const, mode: 'nth' as const, ...m })),
  fc
    .record(
      {
        srcRange: fc.record({ from: ipv4Arbitrary, to: ipv4Arbitrary, negate: rare(3) }),
        dstRange: fc.record({ from: ipv4Arbitrary, to: ipv4Arbitrary, negate: rare(3) }),
      },
      { requiredKeys: [] },
    )
    .filter((m) => m.srcRange !== undefined || m.dstRange !== undefined)
    .map((m) => ({ kind: 'iprange' as const, ...m })),
  unknownMatch,
  recentMatch,
);

/** The matches of a rule with protocol `proto`: at most one tcp/udp/icmp match, anywhere in the list. */
function matchesFor(proto: ProtoMatch | undefined, ipsets: readonly string[] | undefined): fc.Arbitrary<Match[]> {
  const p = proto?.proto;
  const negated = proto?.negate === true;
  const l4: fc.Arbitrary<Match>[] = [];
  if (p === 6) l4.push(negated ? tcpMatchNegatedProto : tcpMatch);
  if (p === 17) l4.push(negated ? udpMatchNegatedProto : udpMatch);
  if (p === 1 && !negated) l4.push(icmpMatch);
  const multiport = p !== undefined && (p === 6 || p === 17 || p === 132) && !negated;
  const plain = plainMatchFor(ipsets);
  return fc
    .record({
      plain: fc.array(multiport ? fc.oneof(plain, multiportMatch) : plain, { maxLength: 3 }),
      l4: l4.length === 0 ? fc.constant(undefined) : fc.option(fc.oneof(...l4), { nil: undefined }),
      at: fc.nat(),
    })
    .map(({ plain, l4: m, at }) => {
      if (m === undefined) return plain;
      const out = [...plain];
      out.splice(at % (plain.length + 1), 0, m);
      return out;
    });
}

const natRange = (withPorts: boolean): fc.Arbitrary<NatRange> => {
  const ips = fc.record({ minIp: ipv4Arbitrary, maxIp: ipv4Arbitrary, single: fc.boolean() }).map(({ minIp, maxIp, single }) => ({ minIp, maxIp: single ? minIp : maxIp }));
  const ports = fc
    .tuple(fc.integer({ min: 1, max: 65535 }), fc.integer({ min: 1, max: 65535 }))
    .map(([a, b]) => ({ minPort: Math.min(a, b), maxPort: Math.max(a, b) }));
  if (!withPorts) return ips;
  return fc.oneof(ips, fc.tuple(ips, ports).map(([i, p]) => ({ ...i, ...p })), ports);
};

const logTarget: fc.Arbitrary<Target> = fc
  .record(
    {
      prefix: fc.stringMatching(/^[A-Za-z0-9 :_.-]{1,29}$/),
      level: fc.constantFrom('0', '1', '2', '3', '5', '6', '7'),
      flags: fc.subarray(['tcp-sequence', 'tcp-options', 'ip-options', 'uid', 'macdecode'], { minLength: 1 }),
    },
    { requiredKeys: [] },
  )
  .map((t) => ({ kind: 'LOG', ...t }));

const nflogTarget: fc.Arbitrary<Target> = fc
  .record(
    {
      prefix: fc.stringMatching(/^[A-Za-z0-9 _-]{1,30}$/),
      group: fc.integer({ min: 1, max: 65535 }),
      size: fc.integer({ min: 0, max: 0xffffffff }),
      threshold: fc.integer({ min: 1, max: 65535 }),
    },
    { requiredKeys: [] },
  )
  .map(({ prefix, group, size, threshold }) => {
    const args: string[] = [];
    if (prefix !== undefined) args.push('--nflog-prefix', prefix);
    if (group !== undefined) args.push('--nflog-group', String(group));
    if (size !== undefined) args.push('--nflog-size', String(size));
    if (threshold !== undefined) args.push('--nflog-threshold', String(threshold));
    return { kind: 'NFLOG', args };
  });

const u32 = fc.integer({ min: 0, max: 0xffffffff });

/** Targets valid in every table and chain. */
const anywhereTarget: fc.Arbitrary<Target> = fc.oneof(
  fc.constantFrom<Target>({ kind: 'ACCEPT' }, { kind: 'RETURN' }, { kind: 'TRACE' }),
  fc.record({ value: u32, mask: u32 }).map(({ value, mask }) => ({ kind: 'MARK' as const, value, mask })),
  fc.oneof(
    fc.record({ value: u32, mask: u32 }).map(({ value, mask }) => ({ kind: 'CONNMARK' as const, mode: 'set-xmark' as const, value, mask })),
    fc.record({ mode: fc.constantFrom('save' as const, 'restore' as const), nfmask: u32, ctmask: u32 }).map((t) => ({ kind: 'CONNMARK' as const, ...t, value: 0, mask: 0 })),
  ),
  logTarget,
  nflogTarget,
);

function targetFor(ctx: RuleContext, proto: ProtoMatch | undefined): fc.Arbitrary<Target | undefined> {
  const portProto = proto !== undefined && !proto.negate && [6, 17, 132].includes(proto.proto);
  const options: fc.Arbitrary<Target | undefined>[] = [fc.constant(undefined), anywhereTarget];
  // Kept verbatim, so written as iptables-save prints them. The kernel takes CLASSIFY and
  // TCPMSS's path-MTU clamping only from FORWARD, OUTPUT and POSTROUTING (through a user chain
  // too, so they go in those built-in chains only), and TCPMSS only on `-p tcp`.
  const late = ctx.builtin && (ctx.chain === 'FORWARD' || ctx.chain === 'OUTPUT' || ctx.chain === 'POSTROUTING');
  const tcp = proto?.proto === 6 && !proto.negate;
  if (late) options.push(fc.constantFrom<Target>({ kind: 'unknown', name: 'CLASSIFY', args: ['--set-class', '0001:0002'] }, { kind: 'unknown', name: 'CLASSIFY', args: ['--set-class', 'ffff:000a'] }));
  if (tcp) options.push(fc.constant<Target>({ kind: 'unknown', name: 'TCPMSS', args: ['--set-mss', '1400'] }));
  if (tcp && late) options.push(fc.constant<Target>({ kind: 'unknown', name: 'TCPMSS', args: ['--clamp-mss-to-pmtu'] }));
  if (ctx.table !== 'nat') options.push(fc.constant<Target>({ kind: 'DROP' }));
  if (ctx.jumpTargets.length > 0) {
    options.push(
      fc.record({ chain: fc.constantFrom(...ctx.jumpTargets), isGoto: rare(3) }).map(({ chain, isGoto }) => (isGoto ? { kind: 'goto' as const, chain } : { kind: 'jump' as const, chain })),
    );
  }
  const hook = ctx.builtin ? ctx.chain : undefined;
  if (ctx.table === 'filter' && hook !== undefined) {
    const types = ['icmp-net-unreachable', 'icmp-host-unreachable', 'icmp-port-unreachable', 'icmp-proto-unreachable', 'icmp-net-prohibited', 'icmp-host-prohibited', 'icmp-admin-prohibited'] as const;
    const withTypes = proto?.proto === 6 && !proto.negate ? [...types, 'tcp-reset' as const] : [...types];
    options.push(fc.constantFrom(...withTypes).map((w) => ({ kind: 'REJECT' as const, with: w })));
  }
  if (ctx.table === 'nat' && (hook === 'PREROUTING' || hook === 'OUTPUT')) {
    options.push(fc.record({ to: natRange(portProto), random: fc.boolean(), persistent: fc.boolean() }).map((t) => ({ kind: 'DNAT' as const, ...t })));
  }
  if (ctx.table === 'nat' && (hook === 'POSTROUTING' || hook === 'INPUT')) {
    options.push(
      fc.record({ to: natRange(portProto), random: fc.boolean(), randomFully: fc.boolean(), persistent: fc.boolean() }).map((t) => ({ kind: 'SNAT' as const, ...t })),
    );
  }
  if (ctx.table === 'nat' && hook === 'POSTROUTING') {
    const toPorts = portProto
      ? fc.option(
          fc.tuple(fc.integer({ min: 0, max: 65535 }), fc.integer({ min: 0, max: 65535 })).map(([a, b]) => ({ from: Math.min(a, b), to: Math.max(a, b) })),
          { nil: undefined },
        )
      : fc.constant(undefined);
    options.push(
      fc.record({ toPorts, random: fc.boolean(), randomFully: fc.boolean() }).map(({ toPorts: p, random, randomFully }) => ({
        kind: 'MASQUERADE' as const,
        ...(p !== undefined && { toPorts: p }),
        random,
        randomFully,
      })),
    );
  }
  if (ctx.table === 'raw') {
    options.push(
      fc.constantFrom<Target>({ kind: 'NOTRACK' }, { kind: 'CT', notrack: true, args: [] }, { kind: 'CT', notrack: false, args: ['--zone', '1'] }, { kind: 'CT', notrack: true, args: ['--zone', '2'] }),
    );
  }
  return fc.oneof(...options);
}

/** One rule for the chain described by `ctx`. */
export function ruleArbitrary(ctx: RuleContext): fc.Arbitrary<Rule> {
  const noIn = ctx.builtin && (ctx.chain === 'OUTPUT' || ctx.chain === 'POSTROUTING');
  const noOut = ctx.builtin && (ctx.chain === 'INPUT' || ctx.chain === 'PREROUTING');
  const proto: fc.Arbitrary<ProtoMatch | undefined> = fc.option(
    fc.record({ proto: fc.constantFrom(...PROTOS), negate: rare(4) }),
    { nil: undefined, freq: 3 },
  );
  return fc
    .record({
      src: fc.option(addrMatch, { nil: undefined }),
      dst: fc.option(addrMatch, { nil: undefined }),
      inIface: noIn ? fc.constant(undefined) : fc.option(ifaceMatch, { nil: undefined, freq: 3 }),
      outIface: noOut ? fc.constant(undefined) : fc.option(ifaceMatch, { nil: undefined, freq: 3 }),
      proto,
      fragment: fc.option(fc.record({ negate: fc.boolean() }), { nil: undefined, freq: 8 }),
      counters: fc.option(counters, { nil: undefined, freq: 3 }),
    })
    .chain((head) =>
      fc.record({ matches: matchesFor(head.proto, ctx.ipsets), target: targetFor(ctx, head.proto) }).map(({ matches, target }) => {
        const rule: { -readonly [K in keyof Rule]: Rule[K] } = { matches };
        if (head.src) rule.src = head.src;
        if (head.dst) rule.dst = head.dst;
        if (head.inIface) rule.inIface = head.inIface;
        if (head.outIface) rule.outIface = head.outIface;
        if (head.proto) rule.proto = head.proto;
        if (head.fragment) rule.fragment = head.fragment;
        if (target) rule.target = target;
        if (head.counters) rule.counters = head.counters;
        return rule;
      }),
    );
}

const userChainName = fc
  .stringMatching(/^[A-Z][A-Z0-9_-]{0,20}$/)
  .map((s) => `C${s}`)
  // `-j NAME` means the target when one has that name, so a chain must not be called CT or CONNMARK.
  .filter((n) => !IPTABLES_TARGET_NAMES.has(n) && !STANDARD_TARGETS.has(n));

export interface TableArbitraryOptions {
  /** Most user chains per table (default 4). */
  readonly maxUserChains?: number;
  /** Most rules per chain (default 5). */
  readonly maxRules?: number;
  /** ipsets that exist, for `-m set` matches (none by default: see `RuleContext.ipsets`). */
  readonly ipsets?: readonly string[];
}

/** One table, present or (sometimes) absent. */
export function tableArbitrary(name: TableName, opts: TableArbitraryOptions = {}): fc.Arbitrary<Table> {
  const maxRules = opts.maxRules ?? 5;
  const builtins = BUILTIN_CHAINS[name];
  const policy = name === 'nat' ? fc.constant('ACCEPT' as const) : fc.constantFrom('ACCEPT' as const, 'DROP' as const);
  return fc.oneof(
    { weight: 1, arbitrary: fc.constant(absentTable(name)) },
    {
      weight: 4,
      arbitrary: fc.uniqueArray(userChainName, { maxLength: opts.maxUserChains ?? 4 }).chain((userNames) => {
        const sorted = [...userNames].sort();
        const chainArb = (chain: string, builtin: boolean, k: number): fc.Arbitrary<Rule[]> =>
          fc.array(ruleArbitrary({ table: name, chain, builtin, jumpTargets: builtin ? sorted : sorted.slice(k + 1), ...(opts.ipsets !== undefined && { ipsets: opts.ipsets }) }), { maxLength: maxRules });
        return fc
          .record({
            builtin: fc.tuple(...builtins.map((hook) => fc.record({ policy, counters, rules: chainArb(hook, true, -1) }))),
            user: fc.tuple(...sorted.map((chain, k) => chainArb(chain, false, k))),
          })
          .map(({ builtin, user }) => {
            const chains: { [n: string]: Chain } = {};
            builtins.forEach((hook, k) => {
              const b = builtin[k] as { policy: 'ACCEPT' | 'DROP'; counters: Counters; rules: Rule[] };
              chains[hook] = { name: hook, policy: b.policy, counters: b.counters, rules: b.rules };
            });
            sorted.forEach((chain, k) => {
              chains[chain] = { name: chain, rules: user[k] as Rule[] };
            });
            return { name, chains };
          });
      }),
    },
  );
}

function absentTable(name: TableName): Table {
  const chains: { [n: string]: Chain } = {};
  for (const hook of BUILTIN_CHAINS[name]) chains[hook] = { name: hook, policy: 'ACCEPT', counters: { packets: 0, bytes: 0 }, rules: [] };
  return { name, absent: true, chains };
}

/** A whole ruleset: each of the four tables present (with chains and rules) or absent. */
export function rulesetArbitrary(opts: TableArbitraryOptions = {}): fc.Arbitrary<Ruleset> {
  return fc
    .tuple(...TABLE_NAMES.map((t) => tableArbitrary(t, opts)))
    .map(([raw, mangle, nat, filter]) => ({ tables: { raw, mangle, nat, filter } as Ruleset['tables'] }));
}
