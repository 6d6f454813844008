/**
 * `netsim trace --host FILE`: one packet through one whole host — routing, rp_filter, conntrack,
 * NAT and every netfilter hook in the kernel's order — from a host file (see docs/datapath.md).
 * Prints each decision, then the fate, the egress and the conntrack table; `--json` prints
 * `{ host, packet, fate, egress, matched, conntrack, reason, trace }`.
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { seededRandom31 } from '@netsim/netfilter';
import { formatHostTrace, parseHostFile, traceHostPacket, type HostTraceResult } from '@netsim/kernel';
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
}

export interface HostTraceRun {
  readonly hostName: string;
  readonly packet: string;
  readonly result: HostTraceResult;
}

function read(path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    throw new HostTraceInputError(`cannot read ${what} ${path}: ${(e as Error).message}`);
  }
}

function loadHostFile(path: string) {
  const text = read(path, 'host file');
  return parseHostFile(text, path, (p) => read(isAbsolute(p) ? p : join(dirname(path), p), 'ruleset'));
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

/** Loads the host file, walks the packet through the host, returns what the printers need. */
export function runHostTrace(o: HostTraceCliOptions): HostTraceRun {
  const host = o.host !== undefined ? loadHostFile(o.host) : hostFromCommands(o.hostCommands ?? [], o.ruleset);
  let packet = parsePacketSpec(o.packet);
  if (o.mark !== undefined) packet = { ...packet, mark: o.mark >>> 0 };
  const draw = seededRandom31(o.seed);
  const result = traceHostPacket(host, packet, { rng: { int: (max) => Math.floor((draw() / 0x80000000) * max) } });
  return { hostName: host.name, packet: formatPacketSpec(packet), result };
}

/** The human report. */
export function formatHostTraceReport(run: HostTraceRun, seed: number): string {
  return `# ${run.packet}  through host ${run.hostName}  (seed ${seed})\n${formatHostTrace(run.result)}`;
}

/** The `--json` report. */
export function hostTraceJson(run: HostTraceRun): object {
  const r = run.result;
  return {
    host: run.hostName,
    packet: run.packet,
    fate: r.fate,
    egress: r.egress,
    matched: r.matched,
    conntrack: r.conntrack,
    reason: r.reason,
    trace: r.trace,
  };
}
