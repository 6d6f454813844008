/**
 * The whole-host comparison: the lab node against a `@netsim/kernel` Host built from the same
 * topology — routing, rp_filter (generated sysctls), conntrack, NAT and REJECT are netsim's own,
 * not the path model's. A case is a flow: the first packet, then (when the kernel forwarded it
 * out to a peer) that peer's answer to the packet exactly as the kernel sent it, so the reply
 * direction (un-NAT, conntrack state) is compared too.
 *
 * Run it in a lab made with `pinConntrack: false`, so that when conntrack runs at all is the
 * kernel's decision, compared with netsim's.
 *
 * Compared per packet: rule counters (the kernel package reports matched rules, not policies, so
 * policy counters are left to the netfilter-level comparison), every frame the node sent, local
 * delivery, and the conntrack table.
 */
import fc from 'fast-check';
import { formatIpv4, parseIpv4 } from '@netsim/netfilter';
import { Host, traceHostPacket, type HostPacket, type HostTraceResult, type RandomSource, type TraceStep } from '@netsim/kernel';
import { nfCaseArb, PROFILES, type NfCase, type Profile } from './generate.ts';
import type { Injection, Lab, Sysctls } from './lab.ts';
import { UDP_LISTEN_PORTS } from './lab.ts';
import { counterKey, describeConntrack, describeEgress, diffOutcomes, fromKernel, sortKeys, type Outcome } from './outcome.ts';
import { injectedPacket } from './pathModel.ts';
import { PROTO_ICMP, PROTO_TCP, PROTO_UDP, TCP, type PacketSpec, type ParsedIpv4 } from './packet.ts';
import { KNOWN_DISAGREEMENTS, knownCandidates } from './known.ts';
import { parseConntrack } from './readback.ts';
import { renderRestore } from './render.ts';
import { ifaceByName, PEERS, type PeerName, type Topology } from './topology.ts';

/** rp_filter values of a case: `conf/all` and each node interface (0 off, 1 strict, 2 loose). */
export interface RpFilter {
  readonly all: number;
  readonly ifaces: { readonly [iface: string]: number };
}

export interface HostCase extends NfCase {
  readonly rpFilter: RpFilter;
  /**
   * `net.netfilter.nf_conntrack_tcp_loose` (the kernel's default 1 when absent): 0 makes a TCP
   * first packet without SYN INVALID instead of picking the connection up mid-stream.
   */
  readonly tcpLoose?: 0 | 1;
}

/** A whole-host case: a netfilter-level case plus generated sysctls (rp_filter modes, tcp_loose). */
export function hostCaseArb(topology: Topology, profiles: readonly Profile[] = PROFILES): fc.Arbitrary<HostCase> {
  const mode = fc.constantFrom(0, 0, 1, 2);
  const ifaces = fc.tuple(...topology.ifaces.map(() => mode));
  return fc.tuple(nfCaseArb(profiles), mode, ifaces, fc.constantFrom<0 | 1>(1, 1, 0)).map(([c, all, per, tcpLoose]) => ({
    ...c,
    rpFilter: { all, ifaces: Object.fromEntries(topology.ifaces.map((i, k) => [i.name, per[k] as number])) },
    tcpLoose,
  }));
}

/** The sysctls a case writes on the real node. */
export function hostSysctls(rp: RpFilter, tcpLoose: 0 | 1 = 1): Sysctls {
  const s: { [k: string]: number } = { 'net.ipv4.conf.all.rp_filter': rp.all, 'net.ipv4.conf.default.rp_filter': 0, 'net.netfilter.nf_conntrack_tcp_loose': tcpLoose };
  for (const [i, v] of Object.entries(rp.ifaces)) s[`net.ipv4.conf.${i}.rp_filter`] = v;
  return s;
}

/** A fixed-seed random source: the cases avoid every choice the kernel makes at random. */
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
 * netsim's node: the lab topology as `ip`/`sysctl` commands on a `@netsim/kernel` Host. With
 * `pinConntrack` (the lab pins conntrack on) the host tracks always; else it follows its own
 * model of when the kernel tracks (`auto`), which the comparison then checks.
 */
export function buildNetsimHost(topology: Topology, rp: RpFilter, c: NfCase, pinConntrack = false, tcpLoose: 0 | 1 = 1): Host {
  const host = new Host('node', { conntrack: pinConntrack ? 'always' : 'auto' });
  const lines: string[] = [];
  for (const i of topology.ifaces) {
    lines.push(`ip link add ${i.name} type veth`, `ip link set ${i.name} up`, `ip addr add ${formatIpv4(i.addr)}/${i.prefix} dev ${i.name}`);
  }
  for (const r of topology.routes) {
    const dst = r.dst.prefix === 0 ? 'default' : `${formatIpv4(r.dst.addr)}/${r.dst.prefix}`;
    lines.push(`ip route add ${dst}${r.via === undefined ? '' : ` via ${formatIpv4(r.via)}`} dev ${r.dev}`);
  }
  lines.push('sysctl -w net.ipv4.ip_forward=1', `sysctl -w net.ipv4.conf.all.rp_filter=${rp.all}`);
  for (const [i, v] of Object.entries(rp.ifaces)) lines.push(`sysctl -w net.ipv4.conf.${i}.rp_filter=${v}`);
  lines.push(`sysctl -w net.netfilter.nf_conntrack_tcp_loose=${tcpLoose}`);
  host.run(...lines);
  for (const port of UDP_LISTEN_PORTS) host.listen('udp', port, { udpReply: 'silent' });
  host.setRuleset(c.ruleset);
  return host;
}

function nfPacketOf(inj: Injection, topology: Topology): HostPacket {
  return { ...injectedPacket(inj, topology), icmpId: inj.packet.proto === PROTO_ICMP ? inj.packet.icmpId : 0 };
}

const ICMP_NAMES: { readonly [name: string]: readonly [number, number] } = {
  'echo-request': [8, 0],
  'echo-reply': [0, 0],
  'net-unreachable': [3, 0],
  'host-unreachable': [3, 1],
  'protocol-unreachable': [3, 2],
  'port-unreachable': [3, 3],
  'net-prohibited': [3, 9],
  'host-prohibited': [3, 10],
  'admin-prohibited': [3, 13],
  'time-exceeded': [11, 0],
};

const FLAG_BITS: { readonly [name: string]: number } = { SYN: TCP.SYN, FIN: TCP.FIN, RST: TCP.RST, PSH: TCP.PSH, ACK: TCP.ACK, URG: TCP.URG, ECE: TCP.ECE, CWR: TCP.CWR };

/** A frame netsim's node sent, in the same words as the lab's capture (`describeEgress`). */
function egressOf(step: Extract<TraceStep, { kind: 'fate' }>): string {
  const v = step.packet;
  const proto = v.proto === 'tcp' ? PROTO_TCP : v.proto === 'udp' ? PROTO_UDP : v.proto === 'icmp' ? PROTO_ICMP : Number(v.proto);
  const [icmpType, icmpCode] = v.icmp === undefined ? [0, 0] : (ICMP_NAMES[v.icmp] ?? [-1, -1]);
  const flags = (v.flags ?? '').split(',').reduce((acc, f) => acc | (FLAG_BITS[f] ?? 0), 0);
  const id = v.icmpId ?? 0;
  const ip: ParsedIpv4 = { src: parseIpv4(v.src), dst: parseIpv4(v.dst), proto, ttl: 0, totalLength: 0, sport: v.sport ?? id, dport: v.dport ?? id, tcpFlags: flags, icmpType, icmpCode };
  const line = describeEgress(step.iface ?? '?', ip);
  return v.inner === undefined ? line : `${line} quoting ${v.inner}`;
}

/** The lab capture's ICMP errors quote the whole packet; netsim's trace quotes `src:sport > dst:dport`. */
function quoteLikeNetsim(line: string): string {
  return line.replace(/ quoting (?:tcp|udp) (\S+) > (\S+)(?: \[[^\]]*\])?$/, ' quoting $1 > $2').replace(/ quoting icmp (\S+) > (\S+) type \d+ code \d+(?: id \d+)?$/, ' quoting $1 > $2');
}

/** netsim's outcome of one traced packet; `counters` are this packet's matched rules only. */
export function netsimHostOutcome(r: HostTraceResult): Outcome {
  const counters: { [k: string]: number } = {};
  for (const m of r.matched) counters[counterKey(m.table, m.chain, m.index)] = (counters[counterKey(m.table, m.chain, m.index)] ?? 0) + 1;
  const egress = r.trace.filter((s): s is Extract<TraceStep, { kind: 'fate' }> => s.kind === 'fate' && s.fate === 'transmitted').map(egressOf);
  return { counters: sortKeys(counters), egress, delivered: r.fate === 'delivered', conntrack: parseConntrack(r.conntrack.join('\n')).map(describeConntrack).sort() };
}

/** The kernel side in the same terms: rule counters only, ICMP quotes shortened like netsim's. */
function kernelHostOutcome(o: Outcome): Outcome {
  const counters: { [k: string]: number } = {};
  for (const [k, v] of Object.entries(o.counters)) if (!k.endsWith(' policy')) counters[k] = v;
  return { ...o, counters, egress: o.egress.map(quoteLikeNetsim) };
}

function addCounters(a: { readonly [k: string]: number }, b: { readonly [k: string]: number }): { [k: string]: number } {
  const out: { [k: string]: number } = { ...a };
  for (const [k, v] of Object.entries(b)) out[k] = (out[k] ?? 0) + v;
  return sortKeys(out);
}

/**
 * The answer of the peer a forwarded packet reached: source and destination (and ports) swapped;
 * a SYN is answered SYN-ACK, other TCP with an ACK, UDP in kind, an echo request with an echo
 * reply carrying the id the request left with. Undefined when the packet did not leave towards a
 * peer.
 */
export function replyTo(egressLine: string, topology: Topology): Injection | undefined {
  const m = /^(\S+) (tcp|udp|icmp) (\d+\.\d+\.\d+\.\d+)(?::(\d+))? > (\d+\.\d+\.\d+\.\d+)(?::(\d+))?(?: \[([A-Z,]+|none)\])?(?: type (\d+) code (\d+)(?: id (\d+))?)?$/.exec(egressLine);
  if (m === null) return undefined;
  const iface = ifaceByName(topology, m[1] as string);
  if (iface === undefined) return undefined;
  const proto = m[2] === 'tcp' ? PROTO_TCP : m[2] === 'udp' ? PROTO_UDP : PROTO_ICMP;
  const flags = (m[7] ?? '').split(',').reduce((acc, f) => acc | (FLAG_BITS[f] ?? 0), 0);
  if (proto === PROTO_TCP && (flags & TCP.RST) !== 0) return undefined;
  if (proto === PROTO_ICMP && m[8] !== '8') return undefined;
  const packet: PacketSpec = {
    src: parseIpv4(m[5] as string),
    dst: parseIpv4(m[3] as string),
    proto,
    sport: Number(m[6] ?? 0),
    dport: Number(m[4] ?? 0),
    tcpFlags: proto !== PROTO_TCP ? 0 : (flags & TCP.SYN) !== 0 ? TCP.SYN | TCP.ACK : TCP.ACK,
    icmpType: 0,
    icmpCode: 0,
    icmpId: proto === PROTO_ICMP ? Number(m[10] ?? 0) : 0,
    // The packets the lab sends start at seq 0x1000 and ack 0x2000 (packet.ts): answer in window.
    ...(proto === PROTO_TCP ? ((flags & TCP.SYN) !== 0 ? { seq: 0x5000, ack: 0x1001 } : { seq: 0x2000, ack: 0x1000 }) : {}),
  };
  const peer: PeerName | undefined = PEERS.find((p) => p === iface.peer);
  return peer === undefined ? undefined : { kind: 'ingress', peer, packet };
}

export interface HostStep {
  readonly injection: Injection;
  readonly kernel: Outcome;
  readonly netsim: Outcome;
  readonly trace: HostTraceResult;
  readonly diffs: readonly string[];
}

export interface HostCaseResult {
  readonly rulesetText: string;
  readonly steps: readonly HostStep[];
  /** All steps' differences, each prefixed with its packet number. */
  readonly diffs: readonly string[];
}

/**
 * Runs one whole-host case: the first packet, then the answer to it when the kernel forwarded it
 * to a peer (an echo request gets the echo reply with the id it left with).
 */
export function runHostCase(lab: Lab, c: HostCase): HostCaseResult {
  const rulesetText = renderRestore(c.ruleset);
  lab.reset({ ruleset: rulesetText, sysctls: hostSysctls(c.rpFilter, c.tcpLoose) });
  const host = buildNetsimHost(lab.topology, c.rpFilter, c, lab.pinConntrack, c.tcpLoose);
  const rng = rngFrom(1);
  const steps: HostStep[] = [];
  let kernelBefore: { [k: string]: number } = {};
  let netsimBefore: { [k: string]: number } = {};
  let next: Injection | undefined = c.injection;
  for (let n = 0; n < 2 && next !== undefined; n++) {
    const inj: Injection = next;
    const [obs] = lab.inject([inj]);
    if (obs === undefined) throw new Error('conformance: the pump returned no observation');
    const kernelAll = kernelHostOutcome(fromKernel(obs, lab.counters(), lab.conntrack()));
    const trace = traceHostPacket(host, nfPacketOf(inj, lab.topology), { rng, nowMs: n * 1000 });
    const netsimStep = netsimHostOutcome(trace);
    // Counters accumulate over the flow on both sides; compare the totals after each packet.
    const netsimAll: Outcome = { ...netsimStep, counters: addCounters(netsimBefore, netsimStep.counters) };
    steps.push({ injection: inj, kernel: kernelAll, netsim: netsimAll, trace, diffs: diffOutcomes(kernelAll, netsimAll) });
    kernelBefore = { ...kernelAll.counters };
    netsimBefore = netsimAll.counters;
    const forwarded = kernelAll.egress.length === 1 ? kernelAll.egress[0] : undefined;
    // Only a forwarded packet gets an answer: one to the node itself would meet its TCP/UDP stack,
    // which traceHostPacket does not run.
    next = n === 0 && inj.kind === 'ingress' && forwarded !== undefined ? replyTo(forwarded, lab.topology) : undefined;
  }
  void kernelBefore;
  return { rulesetText, steps, diffs: steps.flatMap((s, i) => s.diffs.map((d) => `packet ${i + 1}: ${d}`)) };
}

/** A known reason for a whole-host difference (see docs/fidelity.md). */
export interface KnownHostIssue {
  readonly id: string;
  /** Why the kernel and netsim differ, with the evidence and the owner, in full sentences. */
  readonly reason: string;
  /** The case and its result show what causes it. */
  applies(c: HostCase, r: HostCaseResult): boolean;
  /** Confirmed when the same case on an iptables-legacy lab agrees with netsim. */
  readonly legacyAgrees: boolean;
}

/**
 * The known whole-host differences: the iptables-nft translation details of the netfilter-level
 * list (`known.ts`) whose pattern the case's ruleset contains — they change what the kernel's
 * rules match, whichever netsim package evaluates them. netsim's own are fixed and keep an
 * agreement test in test/wholeHost.test.ts: kernel-icmp-conntrack-without-id (conntrack keyed
 * ICMP echo flows without the echo id), kernel-output-reroute-changes-oif-for-filter (filter
 * OUTPUT saw the re-routed `-o`), kernel-addrtype-limit-iface-broadcast (another interface's
 * subnet broadcast was BROADCAST under `--limit-iface-in/out`) and broadcast delivery (dropped as
 * not modelled), all fixed in @netsim/kernel.
 */
export const KNOWN_HOST_ISSUES: readonly KnownHostIssue[] = KNOWN_DISAGREEMENTS.filter((k) => k.legacyAgrees).map((k) => ({
  id: k.id,
  reason: k.reason,
  applies: (c: HostCase, r: HostCaseResult) => knownCandidates(c, r.steps.flatMap((s) => s.diffs)).includes(k),
  legacyAgrees: k.legacyAgrees,
}));

export type HostVerdict =
  | { readonly kind: 'agree' }
  /** netsim says it does not model something the case needs, or a rule is undecidable. */
  | { readonly kind: 'undecided'; readonly reason: string }
  /** `confirmed`: the same case on iptables-legacy came out as the issue says. */
  | { readonly kind: 'known'; readonly issues: readonly KnownHostIssue[]; readonly confirmed: boolean }
  | { readonly kind: 'new' };

/**
 * Classifies a whole-host result: agreement, a known issue, something netsim does not model, or
 * new. `onLegacy` runs the same case on an iptables-legacy lab, when there is one: a known issue
 * then counts only if legacy's result confirms it.
 */
export function classifyHostCase(c: HostCase, r: HostCaseResult, onLegacy?: () => HostCaseResult): HostVerdict {
  for (const s of r.steps) {
    const why = s.trace.reason ?? '';
    if (s.trace.fate === 'unknown' || why.includes('is not modelled')) return { kind: 'undecided', reason: why === '' ? 'an undecidable rule' : why };
  }
  if (r.diffs.length === 0) return { kind: 'agree' };
  const issues = KNOWN_HOST_ISSUES.filter((k) => k.applies(c, r));
  if (issues.length === 0) return { kind: 'new' };
  if (onLegacy === undefined) return { kind: 'known', issues, confirmed: false };
  const legacyAgrees = onLegacy().diffs.length === 0;
  const confirmed = issues.filter((k) => k.legacyAgrees === legacyAgrees);
  return confirmed.length > 0 ? { kind: 'known', issues: confirmed, confirmed: true } : { kind: 'new' };
}

/** The whole-host cases of a seed, in order. */
export function hostCampaignCases(topology: Topology, seed: number, runs: number, profiles: readonly Profile[] = PROFILES): HostCase[] {
  return fc.sample(hostCaseArb(topology, profiles), { seed, numRuns: runs });
}

export interface HostCampaignResult {
  readonly seed: number;
  readonly runs: number;
  readonly agreed: number;
  readonly undecided: readonly { readonly index: number; readonly reason: string }[];
  readonly disagreements: readonly { readonly index: number; readonly case: HostCase; readonly result: HostCaseResult; readonly verdict: HostVerdict }[];
}

/** Runs `runs` whole-host cases of `seed` (or only case `replay`). */
export function runHostCampaign(
  lab: Lab,
  opts: {
    readonly seed: number;
    readonly runs: number;
    readonly profiles?: readonly Profile[];
    readonly replay?: number;
    /** An iptables-legacy lab (`pinConntrack: false`) to confirm known issues on. */
    readonly legacy?: Lab;
    readonly onCase?: (index: number, v: HostVerdict) => void;
  },
): HostCampaignResult {
  const cases = hostCampaignCases(lab.topology, opts.seed, opts.replay === undefined ? opts.runs : opts.replay + 1, opts.profiles);
  let agreed = 0;
  let ran = 0;
  const undecided: { index: number; reason: string }[] = [];
  const disagreements: { index: number; case: HostCase; result: HostCaseResult; verdict: HostVerdict }[] = [];
  cases.forEach((c, index) => {
    if (opts.replay !== undefined && index !== opts.replay) return;
    const result = runHostCase(lab, c);
    const legacy = opts.legacy;
    const verdict = classifyHostCase(c, result, legacy === undefined ? undefined : () => runHostCase(legacy, c));
    ran++;
    opts.onCase?.(index, verdict);
    if (verdict.kind === 'agree') agreed++;
    else if (verdict.kind === 'undecided') undecided.push({ index, reason: verdict.reason });
    else disagreements.push({ index, case: c, result, verdict });
  });
  return { seed: opts.seed, runs: ran, agreed, undecided, disagreements };
}

/** A whole-host disagreement as a human reads it. */
export function formatHostDisagreement(c: HostCase, r: HostCaseResult, replay: string): string {
  const lines = [
    `DISAGREEMENT (whole host, ${c.profile}, rp_filter all=${c.rpFilter.all} ${Object.entries(c.rpFilter.ifaces).map(([i, v]) => `${i}=${v}`).join(' ')}, nf_conntrack_tcp_loose=${c.tcpLoose ?? 1}) — replay with: ${replay}`,
    ...r.diffs.map((d) => `  - ${d}`),
    'ruleset (iptables-restore input):',
    ...r.rulesetText
      .trimEnd()
      .split('\n')
      .map((l) => `  ${l}`),
  ];
  lines.push(...stepLines(r.steps));
  return lines.join('\n');
}

/** Each packet of a case, what the kernel and netsim made of it, and netsim's fate (for disagreement reports). */
export function stepLines(steps: readonly HostStep[]): string[] {
  const lines: string[] = [];
  steps.forEach((s, i) => {
    const p = s.injection.packet;
    const where = s.injection.kind === 'ingress' ? `from ${s.injection.peer}` : 'sent by the node';
    lines.push(`packet ${i + 1}: ${p.proto === PROTO_TCP ? 'tcp' : p.proto === PROTO_UDP ? 'udp' : 'icmp'} ${formatIpv4(p.src)}${p.proto === PROTO_ICMP ? '' : `:${p.sport}`} > ${formatIpv4(p.dst)}${p.proto === PROTO_ICMP ? '' : `:${p.dport}`} ${where}`);
    lines.push(`  kernel: counters ${JSON.stringify(s.kernel.counters)} egress [${s.kernel.egress.join('; ')}] delivered ${s.kernel.delivered} conntrack [${s.kernel.conntrack.join('; ')}]`);
    lines.push(`  netsim: counters ${JSON.stringify(s.netsim.counters)} egress [${s.netsim.egress.join('; ')}] delivered ${s.netsim.delivered} conntrack [${s.netsim.conntrack.join('; ')}]`);
    lines.push(`  netsim trace: fate ${s.trace.fate}${s.trace.reason === null ? '' : ` (${s.trace.reason})`}`);
  });
  return lines;
}
