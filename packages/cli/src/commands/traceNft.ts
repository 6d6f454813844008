/**
 * `netsim trace --nft FILE` without `--host`: one packet through one hook of an nftables ruleset
 * (and of an iptables-save dump given with `--ruleset`), every base chain and iptables table at
 * the hook in the kernel's priority order. nft chains print as `nft monitor trace` does; `nat`
 * chains and the iptables nat table run together at the NAT core's place (dstnat -100 at
 * prerouting/output, srcnat 100 at input/postrouting), the first one asking for NAT deciding it.
 */
import { readFileSync } from 'node:fs';
import {
  BUILTIN_CHAINS,
  TABLE_NAMES,
  compile,
  createEvalState,
  evaluateTable,
  seededRandom31,
  type AddrType,
  type ConntrackView,
  type Hook,
  type Packet,
  type Ruleset,
  type TableName,
} from '@netsim/netfilter';
import {
  createNftEvalState,
  evaluateBaseChain,
  formatNftPacket,
  formatNftTrace,
  hookSchedule,
  iptablesPriority,
  tryNftApply,
  emptyRuleset as emptyNftRuleset,
  type HookStep,
  type IptablesTableName,
  type NftBaseChainRef,
  type NftNatRequest,
  type NftPacket,
  type Ruleset as NftRuleset,
} from '@netsim/nftables';
import { formatTraceText } from './trace.ts';

/** An nft file that does not load: the real tool's message, exit status 2. */
export class NftTraceInputError extends Error {
  override readonly name = 'NftTraceInputError';
}

/** Reads an nft ruleset file and applies it to an empty ruleset, as `nft -f FILE` on a fresh host. */
export function loadNftFile(path: string): NftRuleset {
  let text: string;
  try {
    text = readFileSync(path === '-' ? 0 : path, 'utf8');
  } catch (e) {
    throw new NftTraceInputError(`cannot read nft ruleset ${path}: ${(e as Error).message}`);
  }
  const r = tryNftApply(emptyNftRuleset(), text, { file: path === '-' ? '/dev/stdin' : path });
  if (!r.ok) throw new NftTraceInputError(`nft -f ${path} fails:\n${r.error.stderr.replace(/\n$/, '')}`);
  return r.ruleset;
}

const HOOK_LC: Readonly<Record<Hook, 'prerouting' | 'input' | 'forward' | 'output' | 'postrouting'>> = {
  PREROUTING: 'prerouting',
  INPUT: 'input',
  FORWARD: 'forward',
  OUTPUT: 'output',
  POSTROUTING: 'postrouting',
};

const RTN: Readonly<Record<AddrType, number>> = { UNSPEC: 0, UNICAST: 1, LOCAL: 2, BROADCAST: 3, ANYCAST: 4, MULTICAST: 5, BLACKHOLE: 6, UNREACHABLE: 7, PROHIBIT: 8, THROW: 9, NAT: 10, XRESOLVE: 11 };

export interface NftHookTraceInput {
  readonly nft: NftRuleset;
  /** The iptables side, when `--ruleset` was given too. */
  readonly iptables?: Ruleset;
  readonly packet: Packet;
  readonly hook: Hook;
  readonly conntrack: ConntrackView;
  readonly addrType: (addr: number, iface: string | null) => AddrType;
  readonly seed: number;
  readonly skipNat: boolean;
}

export interface NftHookTraceStep {
  /** `nft FAMILY TABLE CHAIN` or `iptables TABLE`. */
  readonly where: string;
  readonly priority: number;
  readonly verdict: string;
  readonly lines: readonly string[];
}

export interface NftHookTraceRun {
  readonly hook: Hook;
  readonly steps: readonly NftHookTraceStep[];
  /** `accept`, `drop`, `reject …` or `unsupported (…)`. */
  readonly verdict: string;
  readonly nat: string;
  readonly mark: number;
}

function ctViewOf(c: ConntrackView): { state: 'invalid' | 'established' | 'related' | 'new' | 'untracked'; status: number; mark: number } {
  const state = c.state === 'NEW' ? 'new' : c.state === 'ESTABLISHED' ? 'established' : c.state === 'RELATED' ? 'related' : c.state === 'UNTRACKED' ? 'untracked' : 'invalid';
  return { state, status: (c.snat ? 16 : 0) | (c.dnat ? 32 : 0) | (state === 'established' ? 2 : 0), mark: c.ctmark };
}

function nftNatText(n: NftNatRequest): string {
  const ip = (a: number): string => `${a >>> 24}.${(a >>> 16) & 255}.${(a >>> 8) & 255}.${a & 255}`;
  const addr = n.addr === undefined ? '' : n.addr.lo === n.addr.hi ? ip(n.addr.lo) : `${ip(n.addr.lo)}-${ip(n.addr.hi)}`;
  const port = n.port === undefined ? '' : n.port.lo === n.port.hi ? `:${n.port.lo}` : `:${n.port.lo}-${n.port.hi}`;
  const to = addr !== '' || port !== '' ? ` to ${addr}${port}` : '';
  return `${n.kind}${to}${n.flags.length > 0 ? ` ${n.flags.join(',')}` : ''}`;
}

/** Walks the packet through every base chain and iptables table at the hook, in priority order. */
export function traceNftHook(o: NftHookTraceInput): NftHookTraceRun {
  const hookLc = HOOK_LC[o.hook];
  const tables: IptablesTableName[] = [];
  if (o.iptables !== undefined) {
    for (const t of TABLE_NAMES) {
      const chain = o.iptables.tables[t].chains[o.hook];
      if (BUILTIN_CHAINS[t].includes(o.hook) && chain !== undefined && (chain.rules.length > 0 || chain.policy === 'DROP')) tables.push(t);
    }
  }
  const natPrio = iptablesPriority('nat', hookLc);
  // NAT chains run inside the NAT core, at its priority; among themselves, by their own.
  const schedule = hookSchedule(o.nft, hookLc, tables)
    .map((s, i) => ({ s, i, at: s.kind === 'nft' && s.chain.type === 'nat' ? natPrio : s.priority, sub: s.priority }))
    .sort((a, b) => a.at - b.at || a.sub - b.sub || a.i - b.i)
    .map((x) => x.s);
  const compiled = o.iptables === undefined ? undefined : compile(o.iptables);
  const draw = seededRandom31(o.seed);
  const nftState = createNftEvalState();
  const ipState = createEvalState();
  let mark = o.packet.mark;
  let ctmark = o.conntrack.ctmark;
  let nat = 'none';
  let natDecided = o.skipNat || o.conntrack.state !== 'NEW';
  const steps: NftHookTraceStep[] = [];
  const finish = (verdict: string): NftHookTraceRun => ({ hook: o.hook, steps, verdict, nat, mark });
  const isNat = (s: HookStep): boolean => (s.kind === 'nft' ? s.chain.type === 'nat' : s.table === 'nat');
  for (const step of schedule) {
    if (isNat(step) && natDecided) continue;
    if (step.kind === 'iptables') {
      if (compiled === undefined || o.iptables === undefined) continue;
      const res = evaluateTable(compiled, step.table as TableName, o.hook, { ...o.packet, mark }, { addrType: o.addrType, conntrack: { ...o.conntrack, ctmark }, random31: draw, state: ipState }, {});
      mark = res.mark;
      ctmark = res.ctmark;
      const v = res.verdict;
      const verdict = v.kind === 'ACCEPT' ? (res.nat !== undefined ? `ACCEPT (${res.nat.kind})` : 'ACCEPT') : v.kind === 'DROP' ? (v.byPolicy ? 'DROP (policy)' : 'DROP') : v.kind === 'REJECT' ? `REJECT --reject-with ${v.with}` : `unknown: ${v.reason}`;
      steps.push({ where: `iptables ${step.table}`, priority: step.priority, verdict, lines: formatTraceText(o.iptables, res.trace, false) });
      if (res.nat !== undefined) {
        nat = `${res.nat.kind} (iptables nat)`;
        natDecided = true;
      }
      if (v.kind !== 'ACCEPT') return finish(verdict);
      continue;
    }
    const ref: NftBaseChainRef = step.chain;
    const packet: NftPacket = {
      saddr: o.packet.src,
      daddr: o.packet.dst,
      protocol: o.packet.proto,
      sport: o.packet.sport,
      dport: o.packet.dport,
      tcpFlags: o.packet.tcpFlags,
      icmpType: o.packet.icmpType,
      ...(o.packet.inIface !== null && { iifname: o.packet.inIface }),
      ...(o.packet.outIface !== null && { oifname: o.packet.outIface }),
      mark,
      ...(o.packet.ttl !== undefined && { ttl: o.packet.ttl }),
      length: o.packet.lengthBytes,
    };
    const r = evaluateBaseChain(
      ref,
      packet,
      {
        hook: hookLc,
        conntrack: { ...ctViewOf(o.conntrack), mark: ctmark },
        fibAddrType: (a) => RTN[o.addrType(a, null)],
        random32: () => (draw() * 2) >>> 0,
        trace: true,
      },
      nftState,
    );
    mark = r.mark;
    if (r.ctMark !== undefined) ctmark = r.ctMark;
    const id = 'trace id 00000001';
    const lines = [`${id} ${ref.family} ${ref.table.name} ${ref.chain.name} packet: ${formatNftPacket(packet)}`, ...formatNftTrace(r.trace).split('\n').filter((l) => l !== '').map((l) => `${id} ${l}`)];
    const verdict =
      r.verdict === 'unsupported'
        ? `unsupported (${r.unsupported ?? '?'})`
        : r.verdict === 'reject'
          ? `reject${r.reject === undefined ? '' : r.reject.kind === 'tcp-reset' ? ' with tcp reset' : ` with ${r.reject.kind} ${r.reject.code}`}`
          : r.nat !== undefined
            ? `accept (${r.nat.kind})`
            : r.verdict;
    steps.push({ where: `nft ${ref.family} ${ref.table.name} ${ref.chain.name}`, priority: ref.type === 'nat' ? natPrio : ref.priority, verdict, lines });
    if (r.nat !== undefined) {
      nat = nftNatText(r.nat);
      natDecided = true;
    }
    if (r.verdict !== 'accept') return finish(verdict);
  }
  return finish('accept');
}

/** The human report: each chain or table in hook order with its trace lines, then the outcome. */
export function formatNftHookTrace(run: NftHookTraceRun, header: string): string {
  const lines = [header];
  for (const s of run.steps) lines.push(`${s.where} (${run.hook}, priority ${s.priority}): ${s.verdict}`, ...s.lines.map((l) => `    ${l}`));
  lines.push(`verdict: ${run.verdict}`, `nat: ${run.nat}`, `mark: 0x${(run.mark >>> 0).toString(16)}`);
  return `${lines.join('\n')}\n`;
}

/** The `--json` report. */
export function nftHookTraceJson(run: NftHookTraceRun, packet: string): object {
  return { packet, hook: run.hook, verdict: run.verdict, nat: run.nat, mark: `0x${(run.mark >>> 0).toString(16)}`, steps: run.steps };
}
