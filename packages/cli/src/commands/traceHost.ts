/**
 * `netsim trace --host FILE`: one packet through one whole host — routing, rp_filter, conntrack,
 * NAT and every netfilter hook in the kernel's order — from a host file (see docs/datapath.md).
 * Prints each decision, then the fate, the egress and the conntrack table; `--json` prints
 * `{ host, packet, fate, egress, matched, conntrack, reason, trace }`.
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { allBranches, formatProbability, seededRandom31, type Branch, type BranchDraw, type UnknownPolicy } from '@netsim/netfilter';
import { formatHostTrace, parseHostFile, traceHostPacket, type HostTraceResult } from '@netsim/kernel';
import { tryNftApply } from '@netsim/nftables';
import { formatPacketSpec, parsePacketSpec } from '../packetSpec.ts';

/** A host file or packet the command cannot use: printed as `netsim trace: …`, exit status 2. */
export class HostTraceInputError extends Error {
  override readonly name = 'HostTraceInputError';
}

export interface HostTraceCliOptions {
  /** A host file; or, with `hostCommands`, absent. */
  readonly host?: string;
  /**
   * The host given on the command line instead of a file: host-file lines (`ip addr add …`,
   * `sysctl -w …`, `listen tcp 22`), each one `--host-cmd`, plus an optional `--ruleset FILE`.
   */
  readonly hostCommands?: readonly string[];
  readonly ruleset?: string;
  readonly packet: string;
  readonly mark?: number;
  readonly seed: number;
  /** What to do at a rule that cannot be evaluated (`--unknown`); default `stop`. */
  readonly unknown?: UnknownPolicy;
  /** Per-module overrides of `unknown` (`--unknown MODULE=POLICY`). */
  readonly unknownModules?: Readonly<Record<string, UnknownPolicy>>;
  /** An nft ruleset file applied to the host after its own (`--nft`), as one more `nft -f`. */
  readonly nft?: string;
}

export interface HostTraceRun {
  readonly hostName: string;
  readonly packet: string;
  readonly result: HostTraceResult;
}

let stdinText: string | undefined;

/** A file, or standard input for `-` (read once: a host rebuilt per branch reads it again). */
function read(path: string, what: string): string {
  try {
    if (path === '-') return (stdinText ??= readFileSync(0, 'utf8'));
    return readFileSync(path, 'utf8');
  } catch (e) {
    throw new HostTraceInputError(`cannot read ${what} ${path}: ${(e as Error).message}`);
  }
}

function loadHostFile(path: string) {
  const text = read(path, 'host file');
  return parseHostFile(text, path, (p) => read(p === '-' || isAbsolute(p) ? p : join(dirname(path), p), 'ruleset'));
}

/**
 * Builds the host from `--host-cmd` lines: they are exactly host-file lines, so errors name the
 * argument as `--host-cmd:N:COL` where N counts the `--host-cmd` options from 1.
 */
function hostFromCommands(lines: readonly string[], ruleset: string | undefined) {
  if (lines.length === 0) throw new HostTraceInputError('give --host FILE, or the host as --host-cmd lines');
  const bad = lines.findIndex((l) => l.includes('\n'));
  if (bad >= 0) throw new HostTraceInputError(`--host-cmd #${bad + 1} holds a newline: give one host-file line per --host-cmd`);
  const text = [...lines, ...(ruleset !== undefined ? [`iptables-restore ${ruleset}`] : [])].join('\n');
  return parseHostFile(text, '--host-cmd', (p) => read(p, 'ruleset'));
}

function loadHost(o: HostTraceCliOptions) {
  const host = o.host !== undefined ? loadHostFile(o.host) : hostFromCommands(o.hostCommands ?? [], o.ruleset);
  if (o.nft !== undefined) {
    const r = tryNftApply(host.nft, read(o.nft, 'nft ruleset'), { file: o.nft === '-' ? '/dev/stdin' : o.nft });
    if (!r.ok) throw new HostTraceInputError(`nft -f ${o.nft} fails:\n${r.error.stderr.replace(/\n$/, '')}`);
    host.setNft(r.ruleset);
  }
  return host;
}

function packetOf(o: HostTraceCliOptions) {
  const packet = parsePacketSpec(o.packet);
  return o.mark !== undefined ? { ...packet, mark: o.mark >>> 0 } : packet;
}

/** Loads the host file, walks the packet through the host, returns what the printers need. */
export function runHostTrace(o: HostTraceCliOptions): HostTraceRun {
  const host = loadHost(o);
  const packet = packetOf(o);
  const draw = seededRandom31(o.seed);
  const result = traceHostPacket(host, packet, { rng: { int: (max) => Math.floor((draw() / 0x80000000) * max) }, ...(o.unknown !== undefined ? { unknown: o.unknown } : {}), ...(o.unknownModules !== undefined ? { unknownModules: o.unknownModules } : {}) });
  return { hostName: host.name, packet: formatPacketSpec(packet), result };
}

export interface HostBranchesRun {
  readonly hostName: string;
  readonly packet: string;
  readonly branches: readonly Branch<HostTraceResult>[];
}

/**
 * `--all-branches` through a whole host: the host is built afresh for every outcome (conntrack
 * empty each time) and only `statistic --mode random` draws are enumerated; SNAT port choices
 * come from the seed as in a single trace.
 */
export function runHostBranches(o: HostTraceCliOptions): HostBranchesRun {
  const packet = packetOf(o);
  const hostName = loadHost(o).name;
  const branches = allBranches((random31) => {
    const draw = seededRandom31(o.seed);
    return traceHostPacket(loadHost(o), packet, {
      rng: { int: (max) => Math.floor((draw() / 0x80000000) * max) },
      random31,
      ...(o.unknown !== undefined ? { unknown: o.unknown } : {}),
      ...(o.unknownModules !== undefined ? { unknownModules: o.unknownModules } : {}),
    });
  });
  return { hostName, packet: formatPacketSpec(packet), branches };
}

/** The `--all-branches` human report: one block per outcome, headed by its probability. */
export function formatHostBranchesReport(run: HostBranchesRun): string {
  const n = run.branches.length;
  const blocks = run.branches.map((b, i) => `## outcome ${i + 1} of ${n}: probability ${formatProbability(b.probability)}\n${formatHostTrace(b.result)}`);
  return `# ${run.packet}  through host ${run.hostName}  (${n} outcome${n === 1 ? '' : 's'})\n${blocks.join('')}`;
}

function resultJson(r: HostTraceResult): object {
  return {
    fate: r.fate,
    egress: r.egress,
    dnat: r.dnat,
    snat: r.snat,
    masquerade: r.masquerade,
    matched: r.matched,
    conntrack: r.conntrack,
    reason: r.reason,
    trace: r.trace,
  };
}

/** The `--all-branches --json` report. */
export function hostBranchesJson(run: HostBranchesRun): object {
  return {
    host: run.hostName,
    packet: run.packet,
    branches: run.branches.map((b) => ({ probability: formatProbability(b.probability), draws: b.draws satisfies readonly BranchDraw[], ...resultJson(b.result) })),
  };
}

/** The human report. */
export function formatHostTraceReport(run: HostTraceRun, seed: number): string {
  return `# ${run.packet}  through host ${run.hostName}  (seed ${seed})\n${formatHostTrace(run.result)}`;
}

/** The `--json` report. */
export function hostTraceJson(run: HostTraceRun): object {
  const r = run.result;
  return { host: run.hostName, packet: run.packet, ...resultJson(r) };
}
