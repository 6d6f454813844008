/**
 * What happened to one packet, in a form both sides produce and that compares by equality: the
 * kernel's side is read from the lab (`fromKernel`), netsim's side is computed (`pathModel.ts`).
 * Every field is a sorted list of short strings so a disagreement prints as a readable diff.
 */
import { formatIpv4, type TableName } from '@netsim/netfilter';
import { describePacket, PROTO_ICMP, PROTO_TCP, type ParsedIpv4 } from './packet.ts';
import type { ConntrackEntry, SavedCounters } from './readback.ts';
import type { StepObservation } from './lab.ts';

export interface Outcome {
  /**
   * Non-zero packet counters: `filter FORWARD #2` for the second rule of filter FORWARD,
   * `nat POSTROUTING policy` for a built-in chain's policy counter.
   */
  readonly counters: { readonly [key: string]: number };
  /** Frames the node sent, in the order sent: `eth1 tcp 198.51.100.1:40000 > 198.18.0.5:80 [SYN]`. */
  readonly egress: readonly string[];
  /** The packet was handed to a local protocol (`Ip: InDelivers` grew). */
  readonly delivered: boolean;
  /** Conntrack entries, sorted: `tcp SYN_SENT 192.0.2.2:40000>198.18.0.5:80 reply 198.18.0.5:80>198.51.100.1:40000 unreplied mark=0`. */
  readonly conntrack: readonly string[];
}

export function counterKey(table: TableName, chain: string, index: number | 'policy'): string {
  return `${table} ${chain} ${index === 'policy' ? 'policy' : `#${index}`}`;
}

/** Counters from `iptables-save -c`, non-zero only. */
export function countersFromSave(saved: SavedCounters): { [key: string]: number } {
  const out: { [key: string]: number } = {};
  for (const table of ['raw', 'mangle', 'nat', 'filter'] as const) {
    const t = saved[table];
    if (t === undefined) continue;
    for (const name of t.order) {
      const c = t.chains[name];
      if (c === undefined) continue;
      if (c.policy !== '-' && c.policyPackets > 0) out[counterKey(table, name, 'policy')] = c.policyPackets;
      c.rules.forEach((r, i) => {
        if (r.packets > 0) out[counterKey(table, name, i + 1)] = r.packets;
      });
    }
  }
  return sortKeys(out);
}

export function sortKeys(o: { readonly [key: string]: number }): { [key: string]: number } {
  const out: { [key: string]: number } = {};
  for (const k of Object.keys(o).sort()) out[k] = o[k] as number;
  return out;
}

/** One egress frame as a line: interface, then the packet; ICMP errors name the packet they quote. */
export function describeEgress(iface: string, ip: ParsedIpv4): string {
  const base = `${iface} ${describePacket(ip)}`;
  return ip.quoted === undefined ? base : `${base} quoting ${describePacket(ip.quoted)}`;
}

export function describeConntrack(e: ConntrackEntry): string {
  const proto = e.proto === PROTO_TCP ? 'tcp' : e.proto === 17 ? 'udp' : e.proto === PROTO_ICMP ? 'icmp' : `proto${e.proto}`;
  const t = (src: number, sport: number, dst: number, dport: number): string =>
    e.proto === PROTO_ICMP ? `${formatIpv4(src)}>${formatIpv4(dst)} id=${sport}` : `${formatIpv4(src)}:${sport}>${formatIpv4(dst)}:${dport}`;
  const parts = [proto];
  if (e.tcpState !== undefined) parts.push(e.tcpState);
  if (e.proto === PROTO_ICMP) parts.push(`type=${e.icmpType ?? 0}`);
  parts.push(t(e.orig.src, e.orig.sport, e.orig.dst, e.orig.dport));
  parts.push(`reply ${t(e.reply.src, e.reply.sport, e.reply.dst, e.reply.dport)}`);
  if (e.unreplied) parts.push('unreplied');
  parts.push(`mark=${e.mark}`);
  return parts.join(' ');
}

/** The kernel's outcome: the lab's capture, counters and conntrack table after one packet. */
export function fromKernel(obs: StepObservation, saved: SavedCounters, ct: readonly ConntrackEntry[]): Outcome {
  const egress: string[] = [];
  for (const f of obs.frames) {
    if (f.direction !== 'out') continue;
    egress.push(f.frame.ip === undefined ? `${f.iface} ethertype 0x${f.frame.ethertype.toString(16).padStart(4, '0')}` : describeEgress(f.iface, f.frame.ip));
  }
  return {
    counters: countersFromSave(saved),
    egress,
    delivered: obs.delivered > 0,
    conntrack: ct.map(describeConntrack).sort(),
  };
}

/** Field-by-field differences, each one line; empty when the outcomes agree. */
export function diffOutcomes(kernel: Outcome, netsim: Outcome): string[] {
  const out: string[] = [];
  const keys = [...new Set([...Object.keys(kernel.counters), ...Object.keys(netsim.counters)])].sort();
  for (const k of keys) {
    const a = kernel.counters[k] ?? 0;
    const b = netsim.counters[k] ?? 0;
    if (a !== b) out.push(`counter ${k}: kernel ${a}, netsim ${b}`);
  }
  if (JSON.stringify(kernel.egress) !== JSON.stringify(netsim.egress)) {
    out.push(`egress: kernel [${kernel.egress.join('; ')}], netsim [${netsim.egress.join('; ')}]`);
  }
  if (kernel.delivered !== netsim.delivered) out.push(`local delivery: kernel ${kernel.delivered}, netsim ${netsim.delivered}`);
  if (JSON.stringify(kernel.conntrack) !== JSON.stringify(netsim.conntrack)) {
    out.push(`conntrack: kernel [${kernel.conntrack.join('; ')}], netsim [${netsim.conntrack.join('; ')}]`);
  }
  return out;
}
