/**
 * Generated `nft -f` inputs for the format campaign: rulesets in the shapes real projects write
 * (block form and knftables' command form, sets, maps, verdict maps, concatenations, intervals,
 * timeouts, counters, comments, limits, quotas, NAT, named objects), and broken ones (wrong value
 * types, missing jump targets, loops, hooks a chain type may not use, statements a hook may not
 * run, map type mismatches, deleting what is still referenced, syntax errors). A case is one to
 * three files applied in order. Every case derives from its seed alone.
 */
import type { NftFile } from './nftLive.ts';

/** A small seeded generator (xorshift32): the same seed gives the same case. */
class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = (seed ^ 0x9e3779b9) >>> 0 || 1;
    for (let i = 0; i < 4; i++) this.u32();
  }
  u32(): number {
    let x = this.s;
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    this.s = x >>> 0;
    return this.s;
  }
  int(lo: number, hi: number): number {
    return lo + (this.u32() % (hi - lo + 1));
  }
  chance(p: number): boolean {
    return this.u32() / 4294967296 < p;
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(0, xs.length - 1)] as T;
  }
  some<T>(xs: readonly T[], lo: number, hi: number): T[] {
    const n = this.int(lo, Math.min(hi, xs.length));
    const pool = [...xs];
    const out: T[] = [];
    for (let i = 0; i < n; i++) out.push(pool.splice(this.int(0, pool.length - 1), 1)[0] as T);
    return out;
  }
}

type Family = 'ip' | 'inet';
type Hook = 'prerouting' | 'input' | 'forward' | 'output' | 'postrouting';

interface SetInfo {
  readonly name: string;
  readonly key: 'ipv4_addr' | 'inet_service' | 'ipv4_addr . inet_service' | 'ipv4_addr . inet_proto . inet_service' | 'ifname' | 'mark';
  readonly map?: 'verdict' | 'ipv4_addr' | 'mark';
  readonly interval: boolean;
}

interface Ctx {
  readonly r: Rng;
  readonly family: Family;
  readonly sets: SetInfo[];
  readonly chains: string[];
}

const NETS = ['192.0.2', '198.51.100', '203.0.113'] as const;

function addr(r: Rng): string {
  return `${r.pick(NETS)}.${r.int(0, 255)}`;
}
function prefix(r: Rng): string {
  const len = r.pick([8, 16, 24, 25, 28, 30, 31, 32]);
  return `${r.pick(NETS)}.${r.int(0, 255)}/${len}`;
}
function addrRange(r: Rng): string {
  const n = r.pick(NETS);
  const a = r.int(0, 250);
  return `${n}.${a}-${n}.${a + r.int(0, 5)}`;
}
function addrAny(r: Rng): string {
  return r.pick([addr, addr, prefix, addrRange])(r);
}
function port(r: Rng): string {
  return String(r.pick([22, 53, 80, 443, 8080, 8443, r.int(1, 65535), r.int(1024, 2000)]));
}
function portAny(r: Rng): string {
  if (r.chance(0.2)) {
    const a = r.int(1, 60000);
    return `${a}-${a + r.int(0, 100)}`;
  }
  if (r.chance(0.05)) return r.pick(['ssh', 'http', 'https', 'domain']);
  return port(r);
}
function mark(r: Rng): string {
  return r.pick(['0x4000', '0x1', '0x00000010', `0x${r.int(0, 0xffff).toString(16)}`, String(r.int(0, 300))]);
}
function anonSet(r: Rng, gen: (r: Rng) => string, lo = 1, hi = 5): string {
  const n = r.int(lo, hi);
  const xs: string[] = [];
  for (let i = 0; i < n; i++) xs.push(gen(r));
  return `{ ${xs.join(', ')} }`;
}
function neg(r: Rng): string {
  return r.chance(0.2) ? '!= ' : '';
}

/** One match expression (with its value) fit for the family. */
function match(c: Ctx): string {
  const { r } = c;
  const l4 = r.pick(['tcp', 'udp']);
  const all: (() => string)[] = [
    () => `ip saddr ${neg(r)}${addrAny(r)}`,
    () => `ip daddr ${neg(r)}${r.chance(0.3) ? anonSet(r, addrAny) : addrAny(r)}`,
    () => `${l4} dport ${neg(r)}${r.chance(0.4) ? anonSet(r, portAny) : portAny(r)}`,
    () => `${l4} sport ${portAny(r)}`,
    () => `th dport ${r.chance(0.5) ? anonSet(r, port) : port(r)}`,
    () => `meta l4proto ${r.pick(['tcp', 'udp', '{ tcp, udp }', 'icmp', '6', '17'])}`,
    () => `ip protocol ${r.pick(['tcp', 'udp', 'icmp', '{ tcp, udp }'])}`,
    () => `ct state ${r.pick(['new', 'established,related', '{ established, related }', 'invalid', '!= established', 'new,untracked'])}`,
    () => `ct status ${r.pick(['dnat', 'snat', 'dnat,snat', 'assured'])}`,
    () => `ct mark ${mark(r)}`,
    () => `ct direction ${r.pick(['original', 'reply'])}`,
    () => `meta mark ${r.pick(['&', 'and'])} ${mark(r)} ${r.pick(['==', '!='])} ${mark(r)}`,
    () => `mark ${mark(r)}`,
    () => `iifname ${neg(r)}"${r.pick(['eth0', 'lo', 'cni0', 'veth*', 'flannel.1', 'docker0'])}"`,
    () => `oifname ${r.chance(0.3) ? '{ "eth0", "lo", "wg*" }' : `"${r.pick(['eth0', 'cali*', 'kube-ipvs0'])}"`}`,
    () => `fib daddr type ${r.pick(['local', '{ local, broadcast }', '!= local', 'unicast'])}`,
    () => `icmp type ${r.pick(['echo-request', '{ echo-request, echo-reply }', 'destination-unreachable'])}`,
    () => `icmp code ${r.pick(['port-unreachable', '3', 'frag-needed'])}`,
    () => `tcp flags ${r.pick(['& (syn|ack) == syn', 'syn / syn,ack', '== syn', 'syn', '& (fin|syn|rst|ack) != syn', '{ syn, ack }'])}`,
    () => `ip ttl ${r.pick(['< 10', '64', '1-5'])}`,
    () => `ip length ${r.pick(['> 1000', '100-200', '{ 60, 1500 }'])}`,
    () => `ip dscp ${r.pick(['cs1', 'ef', '0x10', '{ af11, af41 }'])}`,
    () => `meta pkttype ${r.pick(['host', 'broadcast', 'multicast', '{ broadcast, multicast }'])}`,
    () => `udp length ${r.int(8, 1500)}`,
    () => `ip saddr . ${l4} dport ${anonSet(r, (x) => `${addr(x)} . ${port(x)}`, 1, 3)}`,
    () => `meta l4proto . th dport ${anonSet(r, (x) => `${x.pick(['tcp', 'udp'])} . ${port(x)}`, 1, 3)}`,
    () => `ip saddr & 255.255.255.0 == ${addr(r)}`,
  ];
  if (c.family === 'inet') all.push(() => `meta nfproto ipv4`);
  const sets = c.sets.filter((s) => s.map === undefined);
  if (sets.length > 0) {
    all.push(() => {
      const s = r.pick(sets);
      switch (s.key) {
        case 'ipv4_addr':
          return `ip ${r.pick(['saddr', 'daddr'])} ${neg(r)}@${s.name}`;
        case 'inet_service':
          return `${l4} dport @${s.name}`;
        case 'ipv4_addr . inet_service':
          return `ip daddr . ${l4} dport @${s.name}`;
        case 'ipv4_addr . inet_proto . inet_service':
          return `ip daddr . meta l4proto . th dport @${s.name}`;
        case 'ifname':
          return `iifname @${s.name}`;
        case 'mark':
          return `meta mark @${s.name}`;
      }
    });
  }
  return r.pick(all)();
}

function nonTerminal(c: Ctx): string {
  const { r } = c;
  return r.pick([
    () => 'counter',
    () => `counter packets ${r.int(0, 100)} bytes ${r.int(0, 100000)}`,
    () => `log prefix "${r.pick(['drop: ', 'x', 'kube '])}"${r.chance(0.5) ? ` level ${r.pick(['info', 'warn', 'debug', 'err'])}` : ''}`,
    () => `limit rate ${r.chance(0.3) ? 'over ' : ''}${r.int(1, 100)}/${r.pick(['second', 'minute', 'hour'])}${r.chance(0.5) ? ` burst ${r.int(1, 20)} packets` : ''}`,
    () => `limit rate ${r.int(1, 4096)} ${r.pick(['bytes', 'kbytes', 'mbytes'])}/second`,
    () => `quota ${r.chance(0.3) ? 'over ' : ''}${r.int(1, 2048)} ${r.pick(['bytes', 'kbytes', 'mbytes'])}`,
    () => `meta mark set ${r.pick([mark(r), 'meta mark or 0x4000', 'meta mark and 0xffff0000', 'ct mark', 'meta mark xor 0x4000', 'meta mark and 0xfff0ffff or 0x40000'])}`,
    () => `ct mark set ${r.pick([mark(r), 'meta mark', 'ct mark and 0xff'])}`,
    () => 'notrack',
  ])();
}

function natStmt(c: Ctx, hook: Hook, hasProto: boolean): string | undefined {
  const { r } = c;
  const ipk = c.family === 'inet' && r.chance(0.5) ? ' ip' : '';
  const withPort = hasProto && r.chance(0.5);
  switch (hook) {
    case 'prerouting':
    case 'output':
      return r.pick([
        () => `dnat${ipk} to ${addr(r)}${withPort ? `:${port(r)}` : ''}`,
        () => (hasProto ? `redirect to :${port(r)}` : 'redirect'),
        () => `dnat${ipk} to ${addrRange(r)}`,
      ])();
    case 'postrouting':
    case 'input':
      return r.pick([
        () => `masquerade${r.chance(0.4) ? ` ${r.pick(['random', 'fully-random', 'persistent', 'random,persistent'])}` : ''}`,
        () => `snat${ipk} to ${r.chance(0.5) ? addrRange(r) : addr(r)}${withPort ? `:${r.int(1024, 2000)}-${r.int(2001, 65535)}` : ''}`,
        () => (withPort ? `masquerade to :${r.int(1024, 2000)}-${r.int(2001, 65535)}` : 'masquerade'),
      ])();
    case 'forward':
      return undefined;
  }
}

function terminal(c: Ctx, self: string, hook: Hook | undefined, nat: boolean, hasProto: boolean): string {
  const { r } = c;
  const others = c.chains.filter((x) => x !== self);
  const opts: (() => string | undefined)[] = [
    () => r.pick(['accept', 'drop', 'return', 'continue']),
    () => (others.length > 0 ? `${r.pick(['jump', 'goto'])} ${r.pick(others)}` : undefined),
    () => (nat ? undefined : `reject${r.chance(0.6) ? ` with ${r.pick(['tcp reset', 'icmp type port-unreachable', 'icmp type host-prohibited', 'icmpx type admin-prohibited', 'icmp port-unreachable', 'icmpx type no-route'])}` : ''}`),
    () => (others.length > 1 ? `numgen random mod 2 vmap { 0 : jump ${others[0]}, 1 : jump ${others[1]} }` : undefined),
    () => `ct state vmap { established : accept, related : accept, invalid : drop${others.length > 0 ? `, new : jump ${r.pick(others)}` : ''} }`,
    () => (nat && hook !== undefined ? natStmt(c, hook, hasProto) : undefined),
    () => (nat && hook !== undefined ? natStmt(c, hook, hasProto) : undefined),
  ];
  const vmaps = c.sets.filter((s) => s.map === 'verdict');
  if (vmaps.length > 0) {
    opts.push(() => {
      const m = r.pick(vmaps);
      switch (m.key) {
        case 'ipv4_addr . inet_proto . inet_service':
          return `ip daddr . meta l4proto . th dport vmap @${m.name}`;
        case 'ipv4_addr':
          return `ip daddr vmap @${m.name}`;
        case 'inet_service':
          return `tcp dport vmap @${m.name}`;
        case 'ipv4_addr . inet_service':
          return `ip daddr . tcp dport vmap @${m.name}`;
        case 'ifname':
          return `iifname vmap @${m.name}`;
        case 'mark':
          return `meta mark vmap @${m.name}`;
      }
    });
  }
  for (;;) {
    const t = r.pick(opts)();
    if (t !== undefined) return t;
  }
}

function rule(c: Ctx, self: string, hook: Hook | undefined, nat: boolean): string {
  const { r } = c;
  const parts: string[] = [];
  const n = r.int(0, 3);
  for (let i = 0; i < n; i++) parts.push(match(c));
  if (r.chance(0.4)) parts.push(nonTerminal(c));
  const hasProto = parts.some((p) => /^(tcp|udp|meta l4proto (tcp|udp)$|ip protocol (tcp|udp)$|th )/.test(p));
  if (r.chance(0.85) || parts.length === 0) {
    let natProto = hasProto;
    if (nat && !hasProto && r.chance(0.5)) {
      parts.push(r.pick(['meta l4proto tcp', 'tcp dport 80', 'udp dport 53']));
      natProto = true;
    }
    parts.push(terminal(c, self, hook, nat, natProto));
  }
  if (r.chance(0.2)) parts.push(`comment "${r.pick(['kube-proxy rule', 'allow', 'x y z', 'cali:abc123'])}"`);
  return parts.join(' ');
}

function element(r: Rng, s: SetInfo, chains: readonly string[]): string {
  let k: string;
  switch (s.key) {
    case 'ipv4_addr':
      k = s.interval ? addrAny(r) : addr(r);
      break;
    case 'inet_service':
      k = s.interval ? portAny(r) : port(r);
      break;
    case 'ipv4_addr . inet_service':
      k = `${addr(r)} . ${port(r)}`;
      break;
    case 'ipv4_addr . inet_proto . inet_service':
      k = `${addr(r)} . ${r.pick(['tcp', 'udp', 'sctp'])} . ${port(r)}`;
      break;
    case 'ifname':
      k = `"${r.pick(['eth0', 'eth1', 'lo', 'cni0', 'wg0'])}"`;
      break;
    case 'mark':
      k = mark(r);
      break;
  }
  if (s.map === undefined) return k;
  if (s.map === 'verdict') return `${k} : ${chains.length > 0 && r.chance(0.6) ? `${r.pick(['jump', 'goto'])} ${r.pick(chains)}` : r.pick(['accept', 'drop'])}`;
  if (s.map === 'ipv4_addr') return `${k} : ${addr(r)}`;
  return `${k} : ${mark(r)}`;
}

function setDecl(r: Rng, s: SetInfo, chains: readonly string[], inline: boolean): string {
  const parts = [`type ${s.key}${s.map !== undefined ? ` : ${s.map}` : ''}`];
  const flags: string[] = [];
  if (s.interval) flags.push('interval');
  const timeout = s.map === undefined && r.chance(0.15);
  if (timeout) flags.push('timeout');
  if (flags.length > 0) parts.push(`flags ${flags.join(',')}`);
  if (timeout && r.chance(0.5)) parts.push(`timeout ${r.pick(['1h', '30m', '10800s', '1d'])}`);
  if (r.chance(0.2)) parts.push(`comment "${r.pick(['Active ClusterIPs', 'ports', 'set x'])}"`);
  if (s.interval && r.chance(0.3)) parts.push('auto-merge');
  if (r.chance(0.7)) {
    const els: string[] = [];
    const n = r.int(1, 7);
    for (let i = 0; i < n; i++) els.push(element(r, s, chains));
    // One element per key (a map listing a key twice with other data is refused in ways that depend on the rest of the batch).
    const byKey = new Map(els.map((e) => [e.split(' : ')[0], e]));
    parts.push(`elements = { ${[...byKey.values()].join(', ')} }`);
  }
  return inline ? `{ ${parts.join('; ')}; }` : `{\n\t\t${parts.join('\n\t\t')}\n\t}`;
}

const BASES: readonly { type: 'filter' | 'nat' | 'route'; hooks: readonly Hook[] }[] = [
  { type: 'filter', hooks: ['prerouting', 'input', 'forward', 'output', 'postrouting'] },
  { type: 'nat', hooks: ['prerouting', 'input', 'output', 'postrouting'] },
  { type: 'route', hooks: ['output'] },
];

function priority(r: Rng, type: string, hook: Hook): string {
  const names = ['raw', 'mangle', 'filter', 'security', ...(hook === 'prerouting' ? ['dstnat'] : []), ...(hook === 'postrouting' ? ['srcnat'] : [])];
  return r.pick([
    () => r.pick(names),
    () => `${r.pick(names)} ${r.pick(['+', '-'])} ${r.int(1, 20)}`,
    () => String(r.pick([-300, -150, -110, -100, -90, 0, 10, 50, 100, 110, r.int(-400, 400)])),
    () => (type === 'nat' ? (hook === 'prerouting' || hook === 'output' ? '-100' : '100') : '0'),
  ])();
}

export interface NftCase {
  readonly seed: number;
  /** What the broken part is, when the case is meant to fail (for reading a disagreement). */
  readonly mutation?: string;
  readonly files: readonly NftFile[];
}

interface Built {
  readonly family: Family;
  readonly table: string;
  readonly sets: SetInfo[];
  readonly chains: { name: string; base?: { type: string; hook: Hook }; rules: string[] }[];
}

function build(r: Rng): Built {
  const family: Family = r.pick(['ip', 'inet']);
  const table = r.pick(['filter', 'nat', 'kube-proxy', 'fw', 't', 'flannel']);
  const sets: SetInfo[] = [];
  const nsets = r.int(0, 3);
  for (let i = 0; i < nsets; i++) {
    const isMap = r.chance(0.4);
    const key = r.pick(['ipv4_addr', 'inet_service', 'ipv4_addr . inet_service', 'ipv4_addr . inet_proto . inet_service', 'ifname', 'mark'] as const);
    const interval = !isMap && (key === 'ipv4_addr' || key === 'inet_service') && r.chance(0.5);
    sets.push({ name: r.pick(['cluster-ips', 'svc', 'allowed', 'ports', 'nodeports']) + String(i), key, interval, ...(isMap && { map: r.pick(['verdict', 'verdict', 'ipv4_addr', 'mark'] as const) }) });
  }
  const chainNames: string[] = [];
  const nchains = r.int(1, 5);
  const chains: Built['chains'] = [];
  for (let i = 0; i < nchains; i++) {
    const name = r.pick(['input', 'forward', 'services', 'masquerading', 'svc-ABC/ns/p80', 'DOCKER', 'mark-for-masq', 'c']) + String(i);
    chainNames.push(name);
    const isBase = i === 0 || r.chance(0.4);
    if (isBase) {
      const b = r.pick(BASES);
      chains.push({ name, base: { type: b.type, hook: r.pick(b.hooks) }, rules: [] });
    } else chains.push({ name, rules: [] });
  }
  const c: Ctx = { r, family, sets, chains: chainNames };
  // Rules may only jump forward (to a later chain): no loops unless a mutation makes one.
  chains.forEach((ch, i) => {
    const later = chainNames.slice(i + 1).filter((n) => chains.find((x) => x.name === n)?.base === undefined);
    const cc: Ctx = { ...c, chains: later };
    const nrules = r.int(0, 4);
    const nat = ch.base?.type === 'nat';
    for (let k = 0; k < nrules; k++) ch.rules.push(rule(cc, ch.name, ch.base?.hook, nat));
  });
  return { family, table, sets, chains };
}

function blockForm(r: Rng, b: Built): string {
  const lines: string[] = [];
  if (r.chance(0.3)) lines.push('#!/usr/sbin/nft -f', 'flush ruleset');
  if (r.chance(0.2)) lines.push(`define LAN = ${prefix(r)}`);
  lines.push(`table ${b.family} ${b.table} {`);
  if (r.chance(0.15)) lines.push(`\tcomment "${r.pick(['rules for kube-proxy', 'fw'])}"`);
  const chainNames = b.chains.map((c) => c.name).filter((n, i) => b.chains[i]?.base === undefined);
  for (const s of b.sets) lines.push(`\t${s.map !== undefined ? 'map' : 'set'} ${s.name} ${setDecl(r, s, chainNames, r.chance(0.3))}`);
  for (const c of b.chains) {
    lines.push(`\tchain ${c.name} {`);
    if (c.base !== undefined) lines.push(`\t\ttype ${c.base.type} hook ${c.base.hook} priority ${priority(r, c.base.type, c.base.hook)};${r.chance(0.6) ? ` policy ${r.pick(['accept', 'drop'])};` : ''}`);
    for (const rl of c.rules) lines.push(`\t\t${rl}`);
    lines.push('\t}');
  }
  lines.push('}');
  return `${lines.join('\n')}\n`;
}

function commandForm(r: Rng, b: Built): string {
  const t = `${b.family} ${b.table}`;
  const lines = [`add table ${t}${r.chance(0.3) ? ' { comment "rules for kube-proxy" ; }' : ''}`];
  for (const c of b.chains) {
    if (c.base !== undefined) lines.push(`add chain ${t} ${c.name} { type ${c.base.type} hook ${c.base.hook} priority ${priority(r, c.base.type, c.base.hook)} ; }`);
    else lines.push(`add chain ${t} ${c.name}`);
  }
  const chainNames = b.chains.filter((c) => c.base === undefined).map((c) => c.name);
  for (const s of b.sets) lines.push(`add ${s.map !== undefined ? 'map' : 'set'} ${t} ${s.name} ${setDecl(r, s, chainNames, true)}`);
  for (const c of b.chains) {
    if (r.chance(0.5)) lines.push(`flush chain ${t} ${c.name}`);
    for (const rl of c.rules) lines.push(`add rule ${t} ${c.name} ${rl}`);
  }
  return `${lines.join('\n')}\n`;
}

/** A follow-up file: partial-sync style changes to what the first file made. */
function followUp(r: Rng, b: Built): string {
  const t = `${b.family} ${b.table}`;
  const lines: string[] = [];
  const n = r.int(1, 4);
  for (let i = 0; i < n; i++) {
    const which = r.int(0, 5);
    const s = b.sets.length > 0 ? r.pick(b.sets) : undefined;
    const c = r.pick(b.chains);
    const regular = b.chains.filter((x) => x.base === undefined).map((x) => x.name);
    if (which === 0 && s !== undefined) lines.push(`add element ${t} ${s.name} { ${element(r, s, regular)} }`);
    else if (which === 1 && s !== undefined) lines.push(`flush ${s.map !== undefined ? 'map' : 'set'} ${t} ${s.name}`);
    else if (which === 2) lines.push(`flush chain ${t} ${c.name}`);
    else if (which === 3) lines.push(`add rule ${t} ${c.name} ${rule({ r, family: b.family, sets: b.sets, chains: [] }, c.name, c.base?.hook, c.base?.type === 'nat')}`);
    else if (which === 4) lines.push(`insert rule ${t} ${c.name} counter accept`);
    else lines.push(`delete element ${t} ${s?.name ?? 'nope'} { ${s !== undefined ? element(r, s, regular) : '192.0.2.1'} }`);
  }
  return `${lines.join('\n')}\n`;
}

/** The broken inputs: each names what it breaks. */
const MUTATIONS: readonly { readonly name: string; readonly apply: (r: Rng, text: string, b: Built) => { text: string; extra?: string } }[] = [
  { name: 'jump-missing-chain', apply: (r, text, b) => ({ text: addRule(text, b, `${r.pick(['jump', 'goto'])} no-such-chain`) }) },
  { name: 'bad-port', apply: (r, text, b) => ({ text: addRule(text, b, `tcp dport ${r.pick(['foo', '70000', '-1', '80-'])} accept`) }) },
  { name: 'bad-address', apply: (r, text, b) => ({ text: addRule(text, b, `ip saddr ${r.pick(['300.1.1.1', '192.0.2.1/33', '192.0.2', 'ab.cd'])} accept`) }) },
  { name: 'typo-statement', apply: (r, text, b) => ({ text: addRule(text, b, `tcp dport 22 ${r.pick(['acept', 'dorp', 'jmp x', 'counter packets'])}`) }) },
  { name: 'missing-set', apply: (_r, text, b) => ({ text: addRule(text, b, 'ip saddr @no-such-set accept') }) },
  { name: 'nat-in-filter', apply: (r, text, b) => ({ text: addBase(text, b, 'filter', r.pick(['prerouting', 'output', 'postrouting'] as const), 'meta l4proto tcp dnat to 192.0.2.1:80') }) },
  { name: 'nat-hook-forward', apply: (_r, text, b) => ({ text: addBase(text, b, 'nat', 'forward', 'accept') }) },
  { name: 'route-hook-input', apply: (_r, text, b) => ({ text: addBase(text, b, 'route', 'input', 'accept') }) },
  { name: 'dnat-postrouting', apply: (_r, text, b) => ({ text: addBase(text, b, 'nat', 'postrouting', 'dnat to 192.0.2.1') }) },
  { name: 'masquerade-prerouting', apply: (_r, text, b) => ({ text: addBase(text, b, 'nat', 'prerouting', 'masquerade') }) },
  {
    name: 'loop',
    apply: (_r, text) => ({
      text: text.replace(/\n}\n$/, `\n\tchain loop-a {\n\t\tjump loop-b\n\t}\n\tchain loop-b {\n\t\tjump loop-a\n\t}\n\tchain loop-base {\n\t\ttype filter hook input priority 0;\n\t\tjump loop-a\n\t}\n}\n`),
    }),
  },
  { name: 'map-type-mismatch', apply: (_r, text, b) => ({ text: addRule(text, b, 'ip daddr vmap { 192.0.2.1 : accept, 80 : drop }') }) },
  { name: 'map-data-mismatch', apply: (_r, text) => ({ text: text.replace(/\n}\n$/, '\n\tmap badmap {\n\t\ttype ipv4_addr : verdict\n\t\telements = { 192.0.2.1 : 192.0.2.2 }\n\t}\n}\n') }) },
  { name: 'vmap-on-set', apply: (_r, text) => ({ text: text.replace(/\n}\n$/, '\n\tset plain { type ipv4_addr; }\n\tchain vs {\n\t\tip daddr vmap @plain\n\t}\n}\n') }) },
  { name: 'delete-referenced-set', apply: (_r, text, b) => ({ text: text.replace(/\n}\n$/, '\n\tset used { type ipv4_addr; }\n\tchain uses {\n\t\tip saddr @used accept\n\t}\n}\n'), extra: `delete set ${b.family} ${b.table} used\n` }) },
  { name: 'delete-nonempty-chain', apply: (_r, text, b) => ({ text, extra: `delete chain ${b.family} ${b.table} ${b.chains[0]?.name ?? 'x'}\n` }) },
  { name: 'delete-missing', apply: (r, text, b) => ({ text, extra: `delete ${r.pick(['chain', 'set', 'map'])} ${b.family} ${b.table} nothing-here\n` }) },
  { name: 'missing-brace', apply: (_r, text) => ({ text: text.replace(/\n}\n$/, '\n') }) },
  { name: 'missing-separator', apply: (_r, text) => ({ text: text.replace(/priority ([^;]+);/, 'priority $1') }) },
  { name: 'bad-priority-name', apply: (_r, text, b) => ({ text: addBase(text, b, 'filter', 'input', 'accept', 'dstnat') }) },
  { name: 'undefined-variable', apply: (_r, text, b) => ({ text: addRule(text, b, 'ip saddr $NOPE accept') }) },
  { name: 'interval-needs-flag', apply: (_r, text) => ({ text: text.replace(/\n}\n$/, '\n\tset noint {\n\t\ttype ipv4_addr\n\t\telements = { 192.0.2.0/24 }\n\t}\n}\n') }) },
  { name: 'create-existing', apply: (_r, text, b) => ({ text, extra: `create table ${b.family} ${b.table}\n` }) },
  { name: 'statement-after-verdict', apply: (_r, text, b) => ({ text: addRule(text, b, 'accept counter') }) },
  { name: 'port-without-protocol', apply: (_r, text, b) => ({ text: addBase(text, b, 'nat', 'prerouting', 'ip daddr 192.0.2.1 dnat to 192.0.2.2:80') }) },
];

/** Appends a rule to the first regular chain (or the last chain) of a block-form text. */
function addRule(text: string, b: Built, ruleText: string): string {
  const target = b.chains.find((c) => c.base === undefined) ?? b.chains[b.chains.length - 1];
  if (target === undefined) return text;
  const head = `\tchain ${target.name} {\n`;
  const i = text.indexOf(head);
  if (i < 0) return text;
  const end = text.indexOf('\n\t}', i);
  return `${text.slice(0, end)}\n\t\t${ruleText}${text.slice(end)}`;
}

function addBase(text: string, _b: Built, type: string, hook: string, ruleText: string, prio = '0'): string {
  return text.replace(/\n}\n$/, `\n\tchain extra-base {\n\t\ttype ${type} hook ${hook} priority ${prio}; policy accept;\n\t\t${ruleText}\n\t}\n}\n`);
}

/**
 * The case for a seed: mostly valid rulesets, about a third broken in one way. Block form or
 * command form, sometimes followed by a partial-sync file.
 *
 * @example
 * const c = nftCase(7); // { seed: 7, files: [{ name: 'rules-7.nft', text: 'table inet …' }] }
 */
export function nftCase(seed: number): NftCase {
  const r = new Rng(seed);
  const b = build(r);
  const name = `rules-${seed}.nft`;
  const broken = r.chance(0.35);
  if (broken) {
    const m = r.pick(MUTATIONS);
    const { text, extra } = m.apply(r, blockForm(r, b), b);
    const files: NftFile[] = [{ name, text }];
    if (extra !== undefined) files.push({ name: `update-${seed}.nft`, text: extra });
    return { seed, mutation: m.name, files };
  }
  const text = r.chance(0.35) ? commandForm(r, b) : blockForm(r, b);
  const files: NftFile[] = [{ name, text }];
  if (r.chance(0.35)) files.push({ name: `update-${seed}.nft`, text: followUp(r, b) });
  return { seed, files };
}

/** The names of the broken-input kinds the generator makes. */
export const NFT_MUTATIONS: readonly string[] = MUTATIONS.map((m) => m.name);
