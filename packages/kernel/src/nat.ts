/**
 * NAT bindings and packet rewriting, after `nf_nat_core.c`.
 *
 * A binding is decided once per connection and manip type (source or destination), on the first
 * packet that reaches a nat hook for that type; a walk that asks for no NAT stores a null binding
 * all the same, so later rule changes never affect the flow (a null source binding still moves the
 * source port when another entry holds the reply tuple, as the kernel's does). The binding rewrites the
 * entry's reply tuple; every later packet, in both directions, is rewritten from the tuples.
 *
 * Port choice follows `get_unique_tuple`: without `--random`/`--random-fully` a source mapping
 * first keeps the original tuple when it is in range and unused, then reuses the mapping of an
 * existing connection from the same source, then keeps the port if unused; otherwise it scans the
 * range from an offset drawn from the injected random source (the kernel draws `get_random_u16`),
 * at most 128 attempts, halving the window on each retry as the kernel does.
 */
import type { Ipv4, NatRequest } from '@netsim/netfilter';
import { invertTuple, type ConntrackTable, type CtDir, type CtEntry, type Tuple } from './conntrack.ts';

/** Injected randomness: a uniform integer in `[0, maxExclusive)`. */
export interface RandomSource {
  int(maxExclusive: number): number;
}

export type Manip = 'src' | 'dst';

/** The range a NAT target maps into. Absent bounds mean "keep". */
interface NatRangeSpec {
  readonly minIp?: number;
  readonly maxIp?: number;
  readonly minPort?: number;
  readonly maxPort?: number;
  readonly randomAll: boolean;
  readonly persistent: boolean;
}

export type NatSetupResult =
  | { readonly ok: true; readonly changed: boolean; readonly kind: NatRequest['kind'] | 'none' }
  | { readonly ok: false; readonly reason: 'masquerade-no-address' };

/** What {@link setupNat} needs from the host. */
export interface NatEnv {
  readonly table: ConntrackTable;
  readonly rng: RandomSource;
  readonly nowMs: number;
  /** MASQUERADE's source: `inet_select_addr(out, nexthop, RT_SCOPE_UNIVERSE)`, 0 when none. */
  masqueradeAddr(outIface: string, nexthop: Ipv4): Ipv4 | 0;
}

const MAX_ATTEMPTS = 128;

function used(cand: Tuple, ct: CtEntry, env: NatEnv): boolean {
  return env.table.isTaken(invertTuple(cand), ct, env.nowMs);
}

const PROTO_ICMP = 1;

/** The part of a tuple a manip rewrites besides the address: the port, or an ICMP query's id (kept in `sport` for both manips). */
function keyOf(t: Tuple, manip: Manip): number {
  return manip === 'src' || t.proto === PROTO_ICMP ? t.sport : t.dport;
}

function inRange(t: Tuple, manip: Manip, r: NatRangeSpec): boolean {
  const ip = manip === 'src' ? t.src : t.dst;
  const port = keyOf(t, manip);
  if (r.minIp !== undefined && (ip < r.minIp || ip > (r.maxIp ?? r.minIp))) return false;
  if (r.minPort !== undefined && (port < r.minPort || port > (r.maxPort ?? r.minPort))) return false;
  return true;
}

function withManip(t: Tuple, manip: Manip, ip: number, port: number): Tuple {
  if (t.proto === PROTO_ICMP) {
    return manip === 'src' ? { src: ip as Ipv4, dst: t.dst, proto: t.proto, sport: port, dport: t.dport } : { src: t.src, dst: ip as Ipv4, proto: t.proto, sport: port, dport: t.dport };
  }
  return manip === 'src'
    ? { src: ip as Ipv4, dst: t.dst, proto: t.proto, sport: port, dport: t.dport }
    : { src: t.src, dst: ip as Ipv4, proto: t.proto, sport: t.sport, dport: port };
}

/**
 * A deterministic stand-in for the kernel's `jhash` in `find_best_ips_proto` (which picks an
 * address from a range by hashing the source, and the destination unless `--persistent`).
 */
function mix32(x: number): number {
  let h = x >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b) >>> 0;
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35) >>> 0;
  h ^= h >>> 16;
  return h >>> 0;
}

function pickIp(t: Tuple, manip: Manip, r: NatRangeSpec): number {
  const cur = manip === 'src' ? t.src : t.dst;
  if (r.minIp === undefined) return cur;
  const max = r.maxIp ?? r.minIp;
  if (max <= r.minIp) return r.minIp;
  // Keep the current address when it is already in range, as the kernel does.
  if (cur >= r.minIp && cur <= max) return cur;
  const dist = max - r.minIp + 1;
  const h = mix32(t.src ^ (r.persistent ? 0 : t.dst));
  return r.minIp + (h % dist);
}

function portBounds(t: Tuple, manip: Manip, r: NatRangeSpec): { min: number; size: number } | null {
  if (r.minPort !== undefined) {
    const a = r.minPort;
    const b = r.maxPort ?? r.minPort;
    const min = Math.min(a, b);
    return { min, size: Math.max(a, b) - min + 1 };
  }
  // ICMP ids: the whole 16-bit space, for both manips.
  if (t.proto === PROTO_ICMP) return { min: 0, size: 65536 };
  // No port range given: a destination mapping never changes the port.
  if (manip === 'dst') return null;
  const port = t.sport;
  if (port < 1024) return port < 512 ? { min: 1, size: 511 } : { min: 600, size: 424 };
  return { min: 1024, size: 64512 };
}

/** `nf_nat_l4proto_unique_tuple`: a free port (TCP, UDP) or ICMP query id. */
function uniquePort(t: Tuple, manip: Manip, r: NatRangeSpec, ct: CtEntry, env: NatEnv): Tuple {
  if (t.proto !== 6 && t.proto !== 17 && t.proto !== PROTO_ICMP) return t;
  const b = portBounds(t, manip, r);
  if (b === null) return t;
  let off = r.randomAll || manip === 'src' ? env.rng.int(65536) : 0;
  let attempts = Math.min(b.size, MAX_ATTEMPTS);
  let cand = t;
  const ip = manip === 'src' ? t.src : t.dst;
  for (;;) {
    for (let i = 0; i < attempts; i++, off++) {
      cand = withManip(t, manip, ip, b.min + (off % b.size));
      if (!used(cand, ct, env)) return cand;
    }
    if (attempts >= b.size || attempts < 16) return cand;
    attempts = attempts >> 1;
    off = env.rng.int(65536);
  }
}

/**
 * `find_appropriate_src`: an existing connection from the same source address, port and
 * protocol whose source mapping lies in the range gives the mapping to reuse.
 */
function findAppropriateSrc(orig: Tuple, r: NatRangeSpec, ct: CtEntry, env: NatEnv): Tuple | undefined {
  for (const other of env.table.findBySource(orig.proto, orig.src, orig.sport, env.nowMs)) {
    if (other === ct) continue;
    // The source part of the other connection's inverted reply tuple (address and port or id).
    const mappedSrc = invertTuple(other.reply);
    const mapped = withManip(orig, 'src', mappedSrc.src, mappedSrc.sport);
    if (inRange(mapped, 'src', r)) return mapped;
  }
  return undefined;
}

function getUniqueTuple(curr: Tuple, manip: Manip, r: NatRangeSpec, ct: CtEntry, env: NatEnv): Tuple {
  if (manip === 'src' && !r.randomAll) {
    if (inRange(curr, manip, r)) {
      if (!used(curr, ct, env)) return curr;
    } else {
      const found = findAppropriateSrc(curr, r, ct, env);
      if (found !== undefined && !used(found, ct, env)) return found;
    }
  }
  const ip = pickIp(curr, manip, r);
  let t = withManip(curr, manip, ip, keyOf(curr, manip));
  if (!r.randomAll) {
    if (r.minPort !== undefined) {
      const single = (r.maxPort ?? r.minPort) === r.minPort;
      if (inRange(t, manip, r) && (single || !used(t, ct, env))) return t;
    } else if (!used(t, ct, env)) {
      return t;
    }
  }
  t = uniquePort(t, manip, r, ct, env);
  return t;
}

/**
 * Decides the binding of `ct` for `manip` from the nat walk's request (`undefined`: no NAT).
 * Updates the entry's reply tuple and NAT status, and marks the manip type as decided.
 */
export function setupNat(
  ct: CtEntry,
  manip: Manip,
  req: NatRequest | undefined,
  env: NatEnv,
  out: { readonly iface: string | null; readonly nexthop: Ipv4 },
): NatSetupResult {
  const curr = invertTuple(ct.reply);
  if (req === undefined) {
    // nf_nat_alloc_null_binding: the range is the current address alone, the port left to the
    // protocol. The tuple stays unless another connection already holds its reply: then a source
    // binding moves the source port (or ICMP id) as SNAT would; a destination binding keeps its
    // port (only an ICMP id can move), leaving any clash to confirmation.
    const addr = manip === 'src' ? curr.src : curr.dst;
    const next = getUniqueTuple(curr, manip, { minIp: addr, maxIp: addr, randomAll: false, persistent: false }, ct, env);
    return { ok: true, changed: bind(ct, manip, curr, next), kind: 'none' };
  }
  let r: NatRangeSpec;
  switch (req.kind) {
    case 'DNAT':
    case 'SNAT': {
      const to = req.to;
      r = {
        ...(to?.minIp !== undefined ? { minIp: to.minIp, maxIp: to.maxIp ?? to.minIp } : {}),
        ...(to?.minPort !== undefined ? { minPort: to.minPort, maxPort: to.maxPort ?? to.minPort } : {}),
        randomAll: req.random || (req.kind === 'SNAT' && req.randomFully),
        persistent: req.persistent,
      };
      break;
    }
    case 'MASQUERADE': {
      const addr = out.iface === null ? 0 : env.masqueradeAddr(out.iface, out.nexthop);
      if (addr === 0) return { ok: false, reason: 'masquerade-no-address' };
      r = {
        minIp: addr,
        maxIp: addr,
        ...(req.toPorts !== undefined ? { minPort: req.toPorts.from, maxPort: req.toPorts.to } : {}),
        randomAll: req.random || req.randomFully,
        persistent: false,
      };
      break;
    }
  }
  const next = getUniqueTuple(curr, manip, r, ct, env);
  const changed = bind(ct, manip, curr, next);
  if (manip === 'src' && req.kind === 'MASQUERADE') ct.masqIface = out.iface;
  return { ok: true, changed, kind: req.kind };
}

/** Stores the binding `curr` → `next` (`nf_nat_setup_info`): the NAT status bit only when the tuple changed. */
function bind(ct: CtEntry, manip: Manip, curr: Tuple, next: Tuple): boolean {
  ct.reply = invertTuple(next);
  if (manip === 'src') {
    const changed = next.src !== curr.src || keyOf(next, 'src') !== keyOf(curr, 'src');
    ct.natDoneSrc = true;
    if (changed) ct.srcNat = true;
    return changed;
  }
  const changed = next.dst !== curr.dst || keyOf(next, 'dst') !== keyOf(curr, 'dst');
  ct.natDoneDst = true;
  if (changed) ct.dstNat = true;
  return changed;
}

/** A packet's addressing, as NAT rewrites it (`icmpId`: an ICMP query's identifier). */
export interface NatFields {
  src: Ipv4;
  dst: Ipv4;
  sport: number;
  dport: number;
  readonly proto: number;
  icmpId: number;
}

/** Whether `manip` applies to a packet travelling in `dir` (`nf_nat_packet`'s status test). */
export function natApplies(ct: CtEntry, dir: CtDir, manip: Manip): boolean {
  const srcSide = manip === 'src' ? dir === 'original' : dir === 'reply';
  return srcSide ? ct.srcNat : ct.dstNat;
}

/**
 * Rewrites a packet of `ct` travelling in `dir` for `manip` (`nf_nat_manip_pkt`): the target is
 * the inverse of the other direction's tuple. TCP and UDP get the port of that side, an ICMP
 * query gets the target's identifier whichever the manip (`icmp_manip_pkt`). Returns whether
 * anything changed.
 */
export function manipPacket(p: NatFields, ct: CtEntry, dir: CtDir, manip: Manip): boolean {
  if (!natApplies(ct, dir, manip)) return false;
  const target = dir === 'original' ? invertTuple(ct.reply) : invertTuple(ct.orig);
  const ports = p.proto === 6 || p.proto === 17;
  let changed = false;
  if (p.proto === PROTO_ICMP && p.icmpId !== target.sport) {
    p.icmpId = target.sport;
    changed = true;
  }
  if (manip === 'src') {
    changed ||= p.src !== target.src || (ports && p.sport !== target.sport);
    p.src = target.src;
    if (ports) p.sport = target.sport;
    return changed;
  }
  changed ||= p.dst !== target.dst || (ports && p.dport !== target.dport);
  p.dst = target.dst;
  if (ports) p.dport = target.dport;
  return changed;
}

/** The embedded header of an ICMP error, as NAT rewrites it (ICMP queries keep their id in `sport`). */
export interface NatInner {
  src: Ipv4;
  dst: Ipv4;
  sport: number;
  dport: number;
  readonly proto: number;
}

/**
 * `nf_nat_icmp_reply_translation` for an ICMP error related to `ct`, travelling in `dir`: the
 * embedded header is put back as its sender saw it (the opposite manip, from the other
 * direction's tuple) and the outer header made to look like a reply of the connection.
 */
export function manipIcmpError(outer: NatFields, inner: NatInner, ct: CtEntry, dir: CtDir, manip: Manip): boolean {
  if (!natApplies(ct, dir, manip)) return false;
  const other = dir === 'original' ? ct.reply : ct.orig;
  // An embedded ICMP query takes the other tuple's identifier, whichever the manip.
  if (inner.proto === PROTO_ICMP) inner.sport = other.sport;
  if (manip === 'src') {
    // Inner gets the opposite (destination) manip.
    inner.dst = other.dst;
    if (inner.proto !== PROTO_ICMP) inner.dport = other.dport;
    outer.src = other.dst;
  } else {
    inner.src = other.src;
    if (inner.proto !== PROTO_ICMP) inner.sport = other.sport;
    outer.dst = other.src;
  }
  return true;
}
