/**
 * Typing set and map elements, and the interval rules nft applies to them: a named interval set
 * rejects overlapping elements ("conflicting intervals specified"); an anonymous one merges
 * overlapping and adjacent intervals (nft's automerge).
 */
import type { RawAtom, RawData, RawElement } from './commands.ts';
import { describeType, parseIpv4, parseValue, typeMax, ValueError } from './datatypes.ts';
import type { Span } from './errors.ts';
import type { Token } from './lexer.ts';
import type { DataType, Element, KeyPart, Value } from './types.ts';

/** An error located in the input, raised while typing. */
export class LocatedError extends Error {
  constructor(
    message: string,
    readonly span: Span,
    readonly related?: Span,
    readonly code: 'eval' | 'syntax' | 'unsupported' = 'eval',
  ) {
    super(message);
  }
}

export function tokSpan(t: Token): Span {
  return { line: t.line, col: t.col, endCol: t.endCol };
}

export function typeToken(t: DataType, tok: Token): Value {
  try {
    if (t === 'ifname' && tok.kind !== 'string' && tok.kind !== 'word') throw new ValueError('Could not parse network interface name');
    return parseValue(t, tok.text);
  } catch (e) {
    if (e instanceof ValueError) throw new LocatedError(e.message, tokSpan(tok));
    throw e;
  }
}

function numeric(v: Value): number {
  if (v.type === 'ifname' || v.type === 'verdict') return 0;
  return v.n;
}

/** Types one key part. Ranges and prefixes are kept as intervals. */
export function typeAtom(t: DataType, a: RawAtom): KeyPart {
  switch (a.kind) {
    case 'atom':
      return { kind: 'value', value: typeToken(t, a.tok) };
    case 'list': {
      let n = 0;
      for (const tok of a.toks) n |= numeric(typeToken(t, tok));
      return { kind: 'value', value: { type: t as 'mark', n: n >>> 0 } };
    }
    case 'range': {
      const lo = numeric(typeToken(t, a.lo));
      const hi = numeric(typeToken(t, a.hi));
      if (lo > hi) throw new LocatedError('Range has zero or negative size', a.span);
      return { kind: 'range', type: t, lo, hi, form: 'range' };
    }
    case 'prefix': {
      if (t !== 'ipv4_addr') throw new LocatedError(`Prefix expression is undefined for ${t} types`, a.span);
      const addr = parseIpv4(a.addr.text);
      if (addr === undefined) throw new LocatedError('Could not resolve hostname: Name or service not known', tokSpan(a.addr));
      const mask = a.len === 0 ? 0 : (0xffffffff << (32 - a.len)) >>> 0;
      const lo = (addr & mask) >>> 0;
      return { kind: 'range', type: t, lo, hi: (lo | (~mask >>> 0)) >>> 0, form: 'prefix' };
    }
  }
}

export interface ElementTyping {
  readonly keyType: readonly DataType[];
  /** Map data types; `verdict` for verdict maps; undefined for plain sets. */
  readonly dataType?: readonly DataType[];
}

/** Types one element against its set's declaration; `onVerdict` sees jump/goto targets. */
export function typeElement(typing: ElementTyping, raw: RawElement): Element {
  if (raw.key.length < typing.keyType.length && typing.keyType.length > 1) {
    // nft 1.0.6 for an element with fewer parts than the set's concatenation.
    throw new LocatedError(`invalid data type, expected concatenation of (${typing.keyType.map(describeType).join(', ')})`, raw.span);
  }
  if (raw.key.length !== typing.keyType.length) {
    throw new LocatedError(`datatype mismatch, expected ${typing.keyType.join(' . ')}`, raw.span);
  }
  const key = raw.key.map((a, i) => typeAtom(typing.keyType[i] as DataType, a));
  let data: Value[] | undefined;
  if (typing.dataType !== undefined) {
    if (raw.data === undefined) throw new LocatedError('set definition has no data type, but element has data', raw.span);
    data = typeData(typing.dataType, raw.data, raw.span);
  } else if (raw.data !== undefined) {
    throw new LocatedError('Set element has data, but set is not a map', raw.span);
  }
  return {
    key,
    ...(data !== undefined && { data }),
    ...(raw.timeoutMs !== undefined && { timeoutMs: raw.timeoutMs }),
    ...(raw.comment !== undefined && { comment: raw.comment }),
    ...(raw.counter !== undefined && { counter: raw.counter }),
  };
}

function atomSpan(a: RawAtom): Span {
  return a.kind === 'atom' ? tokSpan(a.tok) : a.span;
}

function typeData(types: readonly DataType[], d: RawData, span: Span): Value[] {
  if (types.length === 1 && types[0] === 'verdict') {
    if (d.kind !== 'verdict') {
      const first = d.parts[0];
      const last = d.parts[d.parts.length - 1];
      const at = first !== undefined && last !== undefined ? { ...atomSpan(first), endCol: atomSpan(last).endCol } : span;
      throw new LocatedError("Can't parse symbolic netfilter verdict expressions", at);
    }
    switch (d.verdict) {
      case 'jump':
      case 'goto':
        return [{ type: 'verdict', v: { kind: d.verdict, chain: d.chain?.name ?? '' } }];
      case 'accept':
      case 'drop':
      case 'continue':
      case 'return':
        return [{ type: 'verdict', v: { kind: d.verdict } }];
    }
  }
  if (d.kind === 'verdict') throw new LocatedError(`datatype mismatch, expected ${types.join(' . ')}, expression has type netfilter verdict`, span);
  if (d.parts.length !== types.length) throw new LocatedError(`datatype mismatch, expected ${types.join(' . ')}`, span);
  return d.parts.map((p, i) => {
    const kp = typeAtom(types[i] as DataType, p);
    if (kp.kind !== 'value') throw new LocatedError('map data must be a single value', span);
    return kp.value;
  });
}

/** A string that identifies a key (for lookups; not an order). */
export function keyId(key: readonly KeyPart[]): string {
  let s = '';
  for (const p of key) {
    if (p.kind === 'range') s += `${p.lo}-${p.hi}|`;
    else {
      const v = p.value;
      s += v.type === 'ifname' ? `"${v.s}|` : v.type === 'verdict' ? '?|' : `${v.n}|`;
    }
  }
  return s;
}

/** Compares two element keys the way nft sorts a listing (see {@link keyBytes}). */
export function compareKeys(a: readonly KeyPart[], b: readonly KeyPart[]): number {
  if (a.length === 1 && b.length === 1) {
    const x = a[0] as KeyPart;
    const y = b[0] as KeyPart;
    const xv = partLow(x);
    const yv = partLow(y);
    if (typeof xv === 'number' && typeof yv === 'number') return xv - yv;
  }
  const ab = keyBytes(a);
  const bb = keyBytes(b);
  // nft imports the concatenated bytes as a host-endian (little-endian) number: the last byte is
  // the most significant.
  const n = Math.max(ab.length, bb.length);
  for (let i = n - 1; i >= 0; i--) {
    const d = (ab[i] ?? 0) - (bb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

function partLow(p: KeyPart): number | string {
  if (p.kind === 'range') return p.lo;
  const v = p.value;
  if (v.type === 'ifname') return v.s;
  if (v.type === 'verdict') return 0;
  return v.n;
}

/** The bytes of a key as the kernel stores them (network order for addresses and ports). */
export function keyBytes(key: readonly KeyPart[]): number[] {
  const out: number[] = [];
  for (const p of key) {
    const v = p.kind === 'range' ? p.lo : p.value;
    const type = p.kind === 'range' ? p.type : p.value.type;
    if (typeof v === 'number' || (v.type !== 'ifname' && v.type !== 'verdict')) {
      const n = typeof v === 'number' ? v : (v as { n: number }).n;
      switch (type) {
        case 'ipv4_addr':
          out.push((n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255);
          break;
        case 'inet_service':
          out.push((n >>> 8) & 255, n & 255);
          break;
        case 'inet_proto':
        case 'tcp_flag':
        case 'icmp_type':
        case 'icmpx_code':
        case 'nf_proto':
        case 'pkt_type':
        case 'u8':
        case 'dscp':
        case 'ecn':
        case 'icmp_code':
        case 'ct_dir':
        case 'boolean':
          out.push(n & 255);
          break;
        case 'u16':
          out.push((n >>> 8) & 255, n & 255);
          break;
        case 'ether_type':
        case 'iface_type':
          out.push(n & 255, (n >>> 8) & 255);
          break;
        case 'u64':
          for (let i = 0; i < 8; i++) out.push(Math.floor(n / 2 ** (8 * i)) & 255);
          break;
        case 'uid':
        case 'gid':
        case 'devgroup':
        case 'classid':
        case 'time':
        case 'ct_state':
        case 'ct_status':
        case 'fib_addrtype':
        case 'iface_index':
        case 'ifname':
        case 'integer':
        case 'mark':
        case 'verdict':
          // Host byte order (little-endian).
          out.push(n & 255, (n >>> 8) & 255, (n >>> 16) & 255, (n >>> 24) & 255);
      }
    } else if (v.type === 'ifname') {
      for (let i = 0; i < 16; i++) out.push(i < v.s.length ? v.s.charCodeAt(i) : 0);
    }
  }
  return out;
}

/** Interval of a single-part key. */
function interval(e: Element): [number, number] | undefined {
  if (e.key.length !== 1) return undefined;
  const p = e.key[0] as KeyPart;
  if (p.kind === 'range') return [p.lo, p.hi];
  const v = p.value;
  if (v.type === 'ifname' || v.type === 'verdict') return undefined;
  return [v.n, v.n];
}

/**
 * Named interval sets: an element overlapping one already present fails with nft's message; the
 * related span is the earlier element when it came from the same command.
 */
export function checkConflicts(existing: readonly Element[], added: readonly { el: Element; span: Span }[]): void {
  const seen: { lo: number; hi: number; span?: Span }[] = [];
  for (const e of existing) {
    const iv = interval(e);
    if (iv !== undefined) seen.push({ lo: iv[0], hi: iv[1] });
  }
  for (const { el, span } of added) {
    const iv = interval(el);
    if (iv === undefined) continue;
    const hit = seen.find((s) => s.lo <= iv[1] && iv[0] <= s.hi && !(s.lo === iv[0] && s.hi === iv[1]));
    if (hit !== undefined) {
      // nft points at the contained interval and underlines the one containing it.
      const containsHit = iv[0] <= hit.lo && hit.hi <= iv[1];
      if (containsHit && hit.span !== undefined) throw new LocatedError('conflicting intervals specified', hit.span, span);
      throw new LocatedError('conflicting intervals specified', span, hit.span);
    }
    seen.push({ lo: iv[0], hi: iv[1], span });
  }
}

/** Anonymous interval sets: overlapping and adjacent intervals merge into one (nft's automerge). */
export function automerge(elements: readonly Element[], type: DataType): Element[] {
  const ivs = elements.map((e) => ({ e, iv: interval(e) }));
  if (ivs.some((x) => x.iv === undefined)) return [...elements];
  const sorted = [...ivs].sort((a, b) => (a.iv as [number, number])[0] - (b.iv as [number, number])[0]);
  const out: { lo: number; hi: number; e: Element }[] = [];
  for (const { e, iv } of sorted) {
    const [lo, hi] = iv as [number, number];
    const last = out[out.length - 1];
    if (last !== undefined && lo <= last.hi + 1 && last.hi < typeMax(type)) {
      if (hi > last.hi) {
        last.hi = hi;
        last.e = { key: [{ kind: 'range', type, lo: last.lo, hi, form: 'range' }] };
      }
      continue;
    }
    if (last !== undefined && lo <= last.hi) continue;
    out.push({ lo, hi, e });
  }
  return out.map((x) => x.e);
}
