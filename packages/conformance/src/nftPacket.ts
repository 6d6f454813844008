/**
 * nftables packets against the kernel: generated nft rulesets loaded with the real `nft -f` into
 * the lab node, the same packets as the whole-host part (and the peer's answer to a forwarded
 * one), compared with a `@netsim/kernel` Host holding the same ruleset.
 *
 * Compared per packet: every rule's `counter` (each generated rule counts right after its
 * matches, so a counter says the rule matched), every frame the node sent, local delivery and
 * the conntrack table. The ruleset mixes base chains at many priorities around the iptables ones
 * (raw -300, conntrack -200, mangle -150, dstnat -100, filter 0, srcnat 100), `nat` chains whose
 * own priority differs from the NAT core's, jumps, gotos and returns, sets, verdict maps, marks,
 * `ct` state and marks, `fib daddr type`, `reject` with its types, `notrack`, DNAT, SNAT and
 * masquerade.
 */
import fc from 'fast-check';
import { emptyRuleset as emptyIptablesRuleset, formatIpv4, type Ipv4 } from '@netsim/netfilter';
import { emptyRuleset, formatTable, tryNftApply } from '@netsim/nftables';
import { traceHostPacket, type HostTraceResult, type RandomSource } from '@netsim/kernel';
import { runIn } from './exec.ts';
import { injectionArb, poolFor, type Pool, type Profile } from './generate.ts';
import type { Injection, Lab } from './lab.ts';
import { diffOutcomes, fromKernel, sortKeys, type Outcome } from './outcome.ts';
import { PROTO_ICMP } from './packet.ts';
import { injectedPacket } from './pathModel.ts';
import { buildNetsimHost, hostSysctls, netsimHostOutcome, replyTo, stepLines, type HostStep, type RpFilter } from './wholeHost.ts';

/** The table every case loads (and the reset deletes). */
export const NFT_TABLE = 'ncf';

export interface NftPacketCase {
  readonly profile: Profile;
  /** `nft -f` input: one `table ip ncf { … }`. */
  readonly nft: string;
  readonly injection: Injection;
}

const RP0: RpFilter = { all: 0, ifaces: { eth0: 0, eth1: 0, vethpod: 0 } };

type HookName = 'prerouting' | 'input' | 'forward' | 'output' | 'postrouting';

// Not -200: a chain there races conntrack's own registration (see docs/fidelity.md).
const PRIORITIES = [-310, -300, -250, -160, -150, -120, -100, -90, -10, 0, 10, 50, 100, 110, 200] as const;

interface Ctx {
  readonly pool: Pool;
  readonly hook: HookName;
  /** Regular chains a rule may jump or go to (none from the regular chains themselves). */
  readonly targets: readonly string[];
  readonly inBase: boolean;
}

const ipArb = (pool: Pool): fc.Arbitrary<string> => pool.addrs.map((a: Ipv4) => formatIpv4(a));

/** A match and the transport protocol it implies (nft refuses a rule implying two). */
interface GenMatch {
  readonly text: string;
  readonly proto?: 'tcp' | 'udp' | 'icmp';
}

function matchArb(c: Ctx): fc.Arbitrary<GenMatch> {
  const m = (arb: fc.Arbitrary<string>, proto?: GenMatch['proto']) => arb.map((text): GenMatch => (proto === undefined ? { text } : { text, proto }));
  const neg = fc.constantFrom('', '', '', '!= ');
  const port = c.pool.ports;
  const choices: fc.Arbitrary<GenMatch>[] = [
    m(fc.tuple(neg, ipArb(c.pool), fc.constantFrom('', '', '/24', '/16')).map(([n, a, p]) => `ip saddr ${n}${p === '' ? a : `${a}${p}`}`)),
    m(fc.tuple(neg, ipArb(c.pool), fc.constantFrom('', '', '/24', '/16')).map(([n, a, p]) => `ip daddr ${n}${p === '' ? a : `${a}${p}`}`)),
    m(fc.constant('meta l4proto tcp'), 'tcp'),
    m(fc.constant('meta l4proto udp'), 'udp'),
    m(fc.constant('meta l4proto icmp'), 'icmp'),
    m(fc.tuple(neg, port).map(([n, p]) => `tcp dport ${n}${p}`), 'tcp'),
    m(fc.tuple(port, port).map(([a, b]) => `udp dport ${Math.min(a, b)}-${Math.max(a, b)}`), 'udp'),
    m(fc.tuple(port, port).map(([a, b]) => `th dport { ${[...new Set([a, b])].sort((x, y) => x - y).join(', ')} }`)),
    m(fc.constantFrom('new', 'established', 'related,established', 'invalid', 'untracked').map((s) => `ct state ${s}`)),
    m(fc.constantFrom('0x00000001', '0x00004000').map((v) => `meta mark ${v}`)),
    m(fc.constantFrom('0x00000002', '0x00000000').map((v) => `ct mark ${v}`)),
    m(fc.constantFrom('local', '!= local').map((t) => `fib daddr type ${t}`)),
    m(fc.constantFrom('tcp flags syn / syn,ack', 'tcp flags == syn', 'tcp flags != syn', 'tcp flags & ack == ack', 'tcp flags rst'), 'tcp'),
    m(fc.tuple(ipArb(c.pool), port).map(([a, p]) => `ip daddr . th dport { ${a} . ${p} }`)),
  ];
  if (c.hook === 'prerouting' || c.hook === 'input' || c.hook === 'forward') choices.push(m(fc.constantFrom('eth0', 'eth1', 'vethpod', 'lo', 'eth*').map((i) => `iifname "${i}"`)));
  if (c.hook === 'forward' || c.hook === 'output' || c.hook === 'postrouting') choices.push(m(fc.constantFrom('eth0', 'eth1', 'vethpod', 'lo').map((i) => `oifname "${i}"`)));
  return fc.oneof(...choices);
}

function verdictArb(c: Ctx, tcp: boolean): fc.Arbitrary<string> {
  const v: fc.Arbitrary<string>[] = [fc.constantFrom('', '', 'accept', 'drop')];
  if (c.targets.length > 0) v.push(fc.tuple(fc.constantFrom('jump', 'goto'), fc.constantFrom(...c.targets)).map(([k, t]) => `${k} ${t}`));
  if (!c.inBase) v.push(fc.constant('return'));
  if (c.hook === 'input' || c.hook === 'forward' || c.hook === 'output') {
    v.push(fc.constantFrom('reject', 'reject with icmp type host-unreachable', 'reject with icmp type admin-prohibited'));
    if (tcp) v.push(fc.constant('reject with tcp reset'));
  }
  return fc.oneof(...v);
}

function stmtArb(): fc.Arbitrary<string> {
  return fc.constantFrom('', '', '', 'meta mark set 0x00000001', 'meta mark set 0x00004000', 'ct mark set 0x00000002', 'ct mark set meta mark');
}

function ruleArb(c: Ctx): fc.Arbitrary<string> {
  return fc.array(matchArb(c), { maxLength: 2 }).filter((ms) => new Set(ms.map((m) => m.proto).filter((p) => p !== undefined)).size <= 1).chain((ms) => {
    const tcp = ms.some((m) => m.proto === 'tcp');
    return fc.tuple(stmtArb(), verdictArb(c, tcp)).map(([s, v]) => [...ms.map((m) => m.text), 'counter', s, v].filter((x) => x !== '').join(' '));
  });
}

function natRuleArb(pool: Pool, kind: 'dnat' | 'snat'): fc.Arbitrary<string> {
  const match = fc.oneof(
    pool.ports.map((p) => `tcp dport ${p}`),
    ipArb(pool).map((a) => `ip daddr ${a}`),
    fc.constant('meta l4proto udp'),
  );
  if (kind === 'dnat') {
    return fc.tuple(match, fc.constantFrom('203.0.113.2', '198.18.0.5', '198.51.100.2'), fc.constantFrom('', ':8080')).map(([m, a, p]) => (p === '' ? `${m} counter dnat to ${a}` : `${m} meta l4proto tcp counter dnat to ${a}${p}`));
  }
  return fc.tuple(match, fc.constantFrom('masquerade', 'masquerade persistent', 'snat to 198.51.100.1', 'oifname "eth1" masquerade')).map(([m, s]) => `${m} counter ${s}`);
}

interface ChainSpec {
  readonly name: string;
  readonly head?: string;
  readonly rules: readonly string[];
}

function renderTable(chains: readonly ChainSpec[]): string {
  const body = chains.map((c) => `\tchain ${c.name} {\n${c.head !== undefined ? `\t\t${c.head}\n` : ''}${c.rules.map((r) => `\t\t${r}\n`).join('')}\t}\n`).join('');
  return `table ip ${NFT_TABLE} {\n${body}}\n`;
}

/** The hooks a packet of `inj` passes on the node. */
function hooksOf(inj: Injection): readonly HookName[] {
  return inj.kind === 'local' ? ['output', 'postrouting'] : ['prerouting', 'input', 'forward', 'postrouting'];
}

/** One generated nft case: the whole-host packets, a table of base chains at their hooks, two regular chains. */
export function nftPacketCaseArb(profiles: readonly Profile[] = ['forward', 'local', 'reject']): fc.Arbitrary<NftPacketCase> {
  return fc
    .constantFrom(...profiles)
    .chain((profile) => injectionArb(profile).map((injection) => ({ profile, injection })))
    .chain(({ profile, injection }) => {
      const pool = poolFor(injection.packet);
      const hooks = hooksOf(injection);
      const sub2 = fc.array(ruleArb({ pool, hook: 'forward', targets: [], inBase: false }), { maxLength: 2 });
      const sub1 = fc.array(ruleArb({ pool, hook: 'forward', targets: [], inBase: false }), { maxLength: 2 });
      const base = fc.array(
        fc.record({ hook: fc.constantFrom(...hooks), prio: fc.constantFrom(...PRIORITIES), policy: fc.constantFrom('accept', 'accept', 'accept', 'drop') }).chain((b) =>
          fc.array(ruleArb({ pool, hook: b.hook, targets: ['sub1', 'sub2'], inBase: true }), { minLength: 1, maxLength: 3 }).map((rules) => ({ ...b, rules })),
        ),
        { minLength: 1, maxLength: 3 },
      );
      const natPre = fc.option(fc.tuple(fc.constantFrom(-150, -100, -90, 0), fc.array(natRuleArb(pool, 'dnat'), { minLength: 1, maxLength: 2 })), { freq: 2 });
      const natPost = fc.option(fc.tuple(fc.constantFrom(50, 100, 150), fc.array(natRuleArb(pool, 'snat'), { minLength: 1, maxLength: 2 })), { freq: 2 });
      const notrack = fc.option(pool.ports.map((p) => `tcp dport ${p} counter notrack`), { freq: 6 });
      return fc.tuple(base, sub1, sub2, natPre, natPost, notrack).map(([bs, s1, s2, pre, post, nt]): NftPacketCase => {
        const chains: ChainSpec[] = bs.map((b, i) => ({ name: `b${i}`, head: `type filter hook ${b.hook} priority ${b.prio}; policy ${b.policy};`, rules: b.rules }));
        if (pre !== null) chains.push({ name: 'natpre', head: `type nat hook ${injection.kind === 'local' ? 'output' : 'prerouting'} priority ${pre[0]}; policy accept;`, rules: pre[1] });
        if (post !== null) chains.push({ name: 'natpost', head: `type nat hook postrouting priority ${post[0]}; policy accept;`, rules: post[1] });
        if (nt !== null) chains.push({ name: 'raw', head: `type filter hook ${injection.kind === 'local' ? 'output' : 'prerouting'} priority raw; policy accept;`, rules: [nt] });
        chains.push({ name: 'sub1', rules: s1 }, { name: 'sub2', rules: s2 });
        return { profile, nft: renderTable(chains), injection };
      });
    });
}

/** Per-rule counters of an `nft list` text, as `nft CHAIN #N` (N counts the chain's counters), non-zero only. */
export function nftCounters(listing: string): { [key: string]: number } {
  const out: { [key: string]: number } = {};
  let chain = '';
  let n = 0;
  for (const line of listing.split('\n')) {
    const c = /^\s*chain (\S+) \{/.exec(line);
    if (c !== null) {
      chain = c[1] ?? '';
      n = 0;
      continue;
    }
    const m = /counter packets (\d+) bytes \d+/.exec(line);
    if (m === null) continue;
    n++;
    const packets = Number(m[1]);
    if (packets > 0) out[`nft ${chain} #${n}`] = packets;
  }
  return sortKeys(out);
}

/** One packet of an nft case: the same record as a whole-host step. */
export type NftStep = HostStep;

export type NftCaseResult =
  | { readonly kind: 'ran'; readonly steps: readonly NftStep[]; readonly diffs: readonly string[] }
  /** One side refused the ruleset (a disagreement when only one did). */
  | { readonly kind: 'load'; readonly kernelError: string | null; readonly netsimError: string | null };

function rngFrom(seed: number): RandomSource {
  let x = seed >>> 0 || 1;
  return {
    int(max: number): number {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      return (x >>> 0) % max;
    },
  };
}

/**
 * The lab captures what the node sends through `lo` (a REJECT's answer to its own packet) and
 * counts any local delivery; netsim's trace records a loopback as the packet entering by `lo`.
 */
function withLoopback(r: HostTraceResult): HostTraceResult {
  const trace = r.trace.flatMap((s) => (s.kind === 'enter' && s.via === 'loopback' ? [{ kind: 'fate' as const, host: s.host, fate: 'transmitted' as const, iface: 'lo', packet: s.packet }, s] : [s]));
  const delivered = r.trace.some((s) => s.kind === 'fate' && s.fate === 'delivered');
  return { ...r, trace, fate: delivered ? 'delivered' : r.fate };
}

/** Deletes the case table (if any) from the lab node; the iptables side is reset empty by `lab.reset`. */
function clearNft(lab: Lab): void {
  runIn(lab.names.node, 'nft', ['-f', '-'], { input: `add table ip ${NFT_TABLE}\ndelete table ip ${NFT_TABLE}\n` });
}

function loadError(e: unknown): string {
  const s = e instanceof Error ? e.message : String(e);
  return s.split('\n').find((l) => l.includes('Error:')) ?? s.split('\n')[0] ?? s;
}

/** Runs one case: the first packet, then the answer to it when the kernel forwarded it to a peer. */
export function runNftPacketCase(lab: Lab, c: NftPacketCase): NftCaseResult {
  clearNft(lab);
  lab.reset({ ruleset: '', sysctls: hostSysctls(RP0) });
  const mine = tryNftApply(emptyRuleset(), c.nft, { file: '/dev/stdin' });
  let kernelError: string | null = null;
  try {
    runIn(lab.names.node, 'nft', ['-f', '-'], { input: c.nft });
  } catch (e) {
    kernelError = loadError(e);
  }
  const netsimError = mine.ok ? null : (mine.error.stderr.split('\n')[0] ?? 'error');
  if (!mine.ok || kernelError !== null) return { kind: 'load', kernelError, netsimError };
  const host = buildNetsimHost(lab.topology, RP0, { profile: c.profile, ruleset: emptyIptablesRuleset(), injection: c.injection }, lab.pinConntrack);
  host.setNft(mine.ruleset);
  const rng = rngFrom(1);
  const steps: NftStep[] = [];
  let next: Injection | undefined = c.injection;
  for (let n = 0; n < 2 && next !== undefined; n++) {
    const inj: Injection = next;
    const [obs] = lab.inject([inj]);
    if (obs === undefined) throw new Error('conformance: the pump returned no observation');
    const k = fromKernel(obs, lab.counters(), lab.conntrack());
    const kernel: Outcome = { ...k, counters: nftCounters(runIn(lab.names.node, 'nft', ['list', 'table', 'ip', NFT_TABLE])), egress: k.egress.map(quoteLikeNetsim) };
    const trace = traceHostPacket(host, { ...injectedPacket(inj, lab.topology), icmpId: inj.packet.proto === PROTO_ICMP ? inj.packet.icmpId : 0 }, { rng, nowMs: n * 1000 });
    const ns = netsimHostOutcome(withLoopback(trace));
    const table = host.nftListing.tables.find((t) => t.name === NFT_TABLE);
    const netsim: Outcome = { ...ns, counters: table === undefined ? {} : nftCounters(formatTable(table)) };
    steps.push({ injection: inj, kernel, netsim, trace, diffs: diffOutcomes(kernel, netsim) });
    const forwarded = kernel.egress.length === 1 ? kernel.egress[0] : undefined;
    next = n === 0 && inj.kind === 'ingress' && forwarded !== undefined ? replyTo(forwarded, lab.topology) : undefined;
  }
  return { kind: 'ran', steps, diffs: steps.flatMap((s, i) => s.diffs.map((d) => `packet ${i + 1}: ${d}`)) };
}

/** The lab capture's ICMP errors quote the whole packet; netsim's trace quotes `src:sport > dst:dport`. */
function quoteLikeNetsim(line: string): string {
  return line.replace(/ quoting (?:tcp|udp) (\S+) > (\S+)(?: \[[^\]]*\])?$/, ' quoting $1 > $2').replace(/ quoting icmp (\S+) > (\S+) type \d+ code \d+(?: id \d+)?$/, ' quoting $1 > $2');
}

export type NftVerdict = { readonly kind: 'agree' } | { readonly kind: 'undecided'; readonly reason: string } | { readonly kind: 'new' };

/** Agreement, something netsim does not model (a refused ruleset on both sides counts as agreement), or new. */
export function classifyNftCase(r: NftCaseResult): NftVerdict {
  if (r.kind === 'load') {
    if (r.kernelError !== null && r.netsimError !== null) return { kind: 'agree' };
    return { kind: 'new' };
  }
  for (const s of r.steps) if (s.trace.fate === 'unknown') return { kind: 'undecided', reason: s.trace.reason ?? 'unknown' };
  return r.diffs.length === 0 ? { kind: 'agree' } : { kind: 'new' };
}

export function nftCampaignCases(seed: number, runs: number): NftPacketCase[] {
  return fc.sample(nftPacketCaseArb(), { seed, numRuns: runs });
}

export interface NftCampaignResult {
  readonly seed: number;
  readonly runs: number;
  readonly agreed: number;
  /** Cases both sides refused to load. */
  readonly refused: number;
  readonly undecided: readonly { readonly index: number; readonly reason: string }[];
  readonly disagreements: readonly { readonly index: number; readonly case: NftPacketCase; readonly result: NftCaseResult }[];
}

/** Runs `runs` cases of `seed` (or only case `replay`). */
export function runNftPacketCampaign(lab: Lab, opts: { readonly seed: number; readonly runs: number; readonly replay?: number; readonly onCase?: (index: number, v: NftVerdict) => void }): NftCampaignResult {
  const cases = nftCampaignCases(opts.seed, opts.replay === undefined ? opts.runs : opts.replay + 1);
  let agreed = 0;
  let refused = 0;
  let ran = 0;
  const undecided: { index: number; reason: string }[] = [];
  const disagreements: { index: number; case: NftPacketCase; result: NftCaseResult }[] = [];
  cases.forEach((c, index) => {
    if (opts.replay !== undefined && index !== opts.replay) return;
    const result = runNftPacketCase(lab, c);
    const v = classifyNftCase(result);
    ran++;
    opts.onCase?.(index, v);
    if (v.kind === 'agree') {
      agreed++;
      if (result.kind === 'load') refused++;
    } else if (v.kind === 'undecided') undecided.push({ index, reason: v.reason });
    else disagreements.push({ index, case: c, result });
  });
  return { seed: opts.seed, runs: ran, agreed, refused, undecided, disagreements };
}

/** A disagreement as a human reads it. */
export function formatNftDisagreement(c: NftPacketCase, r: NftCaseResult, replay: string): string {
  const lines = [`DISAGREEMENT (nft packets, ${c.profile}) — replay with: ${replay}`];
  if (r.kind === 'load') lines.push(`  - load: kernel ${r.kernelError ?? 'accepts'}, netsim ${r.netsimError ?? 'accepts'}`);
  else lines.push(...r.diffs.map((d) => `  - ${d}`));
  lines.push('ruleset (nft -f input):', ...c.nft.trimEnd().split('\n').map((l) => `  ${l}`));
  if (r.kind === 'ran') lines.push(...stepLines(r.steps));
  return lines.join('\n');
}

