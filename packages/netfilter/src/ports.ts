/**
 * @internal
 * Port and service parsing shared by tcp, udp, multiport and the NAT targets, with the real
 * tool's messages.
 */
import { paramProblem } from './failure.ts';
import { lookupService, parseUintBase0, serviceName } from './names.ts';
import type { PortRange } from './types.ts';

/** A port or service name (xtables_parse_port); `undefined` when neither. */
export function tryParsePort(text: string, proto: number): number | undefined {
  const svc = lookupService(text, proto);
  if (svc !== undefined) return svc;
  const n = parseUintBase0(text);
  return n !== undefined && n <= 65535 ? n : undefined;
}

export function parsePort(text: string, proto: number, argIndex: number): number {
  const p = tryParsePort(text, proto);
  if (p === undefined) throw paramProblem(`invalid port/service \`${text}' specified`, argIndex);
  return p;
}

/** `--sport`/`--dport` of tcp and udp: `p`, `a:b`, `a:` (to 65535), `:b` (from 0). */
export function parsePortRange(text: string, proto: number, argIndex: number): PortRange {
  const colon = text.indexOf(':');
  if (colon < 0) {
    const p = parsePort(text, proto, argIndex);
    return { from: p, to: p };
  }
  const a = text.slice(0, colon);
  const b = text.slice(colon + 1);
  const from = a === '' ? 0 : parsePort(a, proto, argIndex);
  const to = b === '' ? 65535 : parsePort(b, proto, argIndex);
  if (from > to) throw paramProblem('invalid portrange (min > max)', argIndex);
  return { from, to };
}

/** A range as iptables-save prints it: `p` or `a:b`. */
export function formatPortRange(r: PortRange): string {
  return r.from === r.to ? String(r.from) : `${r.from}:${r.to}`;
}

/** A port as `iptables -L` prints it: a service name unless numeric output was asked for. */
export function listPort(port: number, proto: number, numeric: boolean): string {
  if (!numeric) {
    const name = serviceName(port, proto);
    if (name !== undefined) return name;
  }
  return String(port);
}

/**
 * A port range as xtables' guided parser reads it (udp's `--sport`/`--dport`): each side a service
 * name or a decimal number taken modulo 2^16, no order check between the sides.
 */
export function parsePortRangeX6(text: string, proto: number, argIndex: number): PortRange {
  const one = (part: string, empty: number): number => {
    if (part === '') return empty;
    if (/^[0-9]+$/.test(part)) return Number(part) % 65536;
    const svc = lookupService(part, proto) ?? lookupService(part, proto === 17 ? 6 : 17);
    if (svc === undefined) throw paramProblem(`Port "${part}" does not resolve to anything.\n`, argIndex);
    return svc;
  };
  const colon = text.indexOf(':');
  if (colon < 0) {
    const p = one(text, -1);
    if (p < 0) throw paramProblem(`Port "${text}" does not resolve to anything.\n`, argIndex);
    return { from: p, to: p };
  }
  return { from: one(text.slice(0, colon), 0), to: one(text.slice(colon + 1), 65535) };
}
