/**
 * `nft list ruleset` / `list table` / `list chain`: the canonical text nft 1.0.6 prints — sets
 * before chains, priorities by name (`dstnat - 10`), marks as `0x%08x`, elements sorted and
 * wrapped as nft wraps them, intervals shown as prefixes where they are ones.
 */
import { formatIpv4, formatTime, formatValue, isBitmask } from './datatypes.ts';
import { exprText } from './parser.ts';
import type { Chain, DataType, Element, Expr, Family, Hook, KeyPart, MapLookup, NftObject, NftSet, Rhs, Rule, Ruleset, Source, Stmt, Table } from './types.ts';

const STD_PRIOS: readonly (readonly [string, number])[] = [
  ['raw', -300],
  ['mangle', -150],
  ['dstnat', -100],
  ['filter', 0],
  ['security', 50],
  ['srcnat', 100],
];

/** nft's priority text: a standard name within 10 of the value (when the hook allows it), else the number. */
export function formatPriority(prio: number, hook: Hook): string {
  for (const [name, std] of STD_PRIOS) {
    if (Math.abs(prio - std) <= 10) {
      if (name === 'dstnat' && hook !== 'prerouting') break;
      if (name === 'srcnat' && hook !== 'postrouting') break;
      const off = prio - std;
      return off > 0 ? `${name} + ${off}` : off < 0 ? `${name} - ${-off}` : name;
    }
  }
  return String(prio);
}

function isPrefixInterval(lo: number, hi: number): number | undefined {
  const size = hi - lo + 1;
  if (size <= 0) return undefined;
  const bits = Math.log2(size);
  if (!Number.isInteger(bits)) return undefined;
  if (lo % size !== 0) return undefined;
  return 32 - bits;
}

function formatNumber(type: DataType, n: number): string {
  return formatValue({ type: type as 'integer', n });
}

function formatKeyPart(p: KeyPart): string {
  if (p.kind === 'value') return formatValue(p.value);
  if (p.lo === p.hi) return formatNumber(p.type, p.lo);
  if (p.type === 'ipv4_addr') {
    const len = isPrefixInterval(p.lo, p.hi);
    if (len !== undefined) return `${formatIpv4(p.lo)}/${len}`;
  }
  return `${formatNumber(p.type, p.lo)}-${formatNumber(p.type, p.hi)}`;
}

/** One set element as `nft list` prints it. */
export function formatElement(e: Element, setTimeoutMs?: number): string {
  let s = e.key.map(formatKeyPart).join(' . ');
  if (e.counter !== undefined) s += ` counter packets ${e.counter.packets} bytes ${e.counter.bytes}`;
  if (e.timeoutMs !== undefined) s += ` timeout ${formatTime(e.timeoutMs)}`;
  const expires = e.timeoutMs ?? setTimeoutMs;
  // netsim lists at the instant of the add: nothing has expired yet (the real kernel shows a few ms less).
  if (expires !== undefined) s += ` expires ${formatTime(expires)}`;
  if (e.comment !== undefined) s += ` comment "${e.comment}"`;
  if (e.data !== undefined) s += ` : ${e.data.map(formatValue).join(' . ')}`;
  return s;
}

/** Elements on one line, as in rules' anonymous sets. */
function inlineSet(elements: readonly Element[]): string {
  return `{ ${elements.map((e) => formatElement(e)).join(', ')} }`;
}

function wrapCount(keyType: readonly DataType[]): number {
  const t = keyType[0];
  if (keyType.length !== 1 || t === undefined) return 0;
  switch (t) {
    case 'integer':
    case 'inet_proto':
    case 'inet_service':
    case 'tcp_flag':
    case 'mark':
    case 'iface_index':
    case 'nf_proto':
    case 'u8':
    case 'u16':
    case 'u64':
    case 'dscp':
    case 'ecn':
    case 'uid':
    case 'gid':
    case 'classid':
    case 'time':
    case 'devgroup':
    case 'ether_type':
    case 'iface_type':
    case 'icmp_code':
    case 'ct_dir':
    case 'boolean':
      return 5;
    case 'ipv4_addr':
    case 'ct_state':
    case 'ct_status':
    case 'pkt_type':
      return 2;
    case 'fib_addrtype':
    case 'icmp_type':
    case 'icmpx_code':
    case 'ifname':
    case 'verdict':
      return 0;
  }
}

function setElements(set: NftSet, elements: readonly Element[]): string {
  const per = wrapCount(set.keyType);
  let out = '{ ';
  let count = 0;
  elements.forEach((e, i) => {
    if (i > 0) {
      if (per > 0 && count < per) out += ', ';
      else {
        if (per > 0) count = 0;
        out += ',\n\t\t\t     ';
      }
    }
    out += formatElement(e, set.timeoutMs);
    count++;
  });
  return `${out} }`;
}

import { compareKeys } from './elements.ts';

function sorted(elements: readonly Element[]): Element[] {
  return [...elements].sort((a, b) => compareKeys(a.key, b.key));
}

function formatSet(set: NftSet): string {
  const lines: string[] = [];
  const kw = set.isMap ? 'map' : 'set';
  const key = set.keyTypeof !== undefined ? `typeof ${set.keyTypeof}` : `type ${set.keyType.join(' . ')}`;
  let type = key;
  if (set.isMap) {
    const data = set.dataTypeof !== undefined ? set.dataTypeof : (set.dataType ?? []).join(' . ');
    type += ` : ${data}`;
  }
  lines.push(`\t${kw} ${set.name} {`, `\t\t${type}`);
  if (set.policy === 'memory') lines.push('\t\tpolicy memory');
  if (set.size !== undefined) lines.push(`\t\tsize ${set.size}`);
  const f = set.flags;
  const showFlags = f.includes('constant') || f.includes('interval') || f.includes('dynamic') || (f.includes('timeout') && set.timeoutMs === undefined);
  if (showFlags) {
    const order = ['constant', 'dynamic', 'interval', 'timeout'] as const;
    lines.push(`\t\tflags ${order.filter((x) => f.includes(x)).join(',')}`);
  }
  if (set.autoMerge === true) lines.push('\t\tauto-merge');
  if (set.counter) lines.push('\t\tcounter');
  if (set.timeoutMs !== undefined) lines.push(`\t\ttimeout ${formatTime(set.timeoutMs)}`);
  if (set.gcIntervalMs !== undefined) lines.push(`\t\tgc-interval ${formatTime(set.gcIntervalMs)}`);
  if (set.comment !== undefined) lines.push(`\t\tcomment "${set.comment}"`);
  if (set.elements.length > 0) lines.push(`\t\telements = ${setElements(set, sorted(set.elements))}`);
  lines.push('\t}');
  return lines.join('\n');
}

function formatObject(o: NftObject): string {
  const lines = [`\t${o.kind} ${o.name} {`];
  if (o.comment !== undefined) lines.push(`\t\tcomment "${o.comment}"`);
  switch (o.kind) {
    case 'counter':
      lines.push(`\t\tpackets ${o.packets} bytes ${o.bytes}`);
      break;
    case 'quota':
      lines.push(`\t\t${o.over ? 'over ' : ''}${byteAmount(o.bytes)}${o.used !== 0 ? ` used ${byteAmount(o.used)}` : ''}`);
      break;
    case 'limit':
      lines.push(
        o.bytes === true
          ? `\t\trate ${o.over ? 'over ' : ''}${byteAmount(o.rate)}/${o.unit}${o.burst !== 0 ? ` burst ${byteAmount(o.burst)}` : ''}`
          : `\t\trate ${o.over ? 'over ' : ''}${o.rate}/${o.unit}${o.burst !== 5 ? ` burst ${o.burst} packets` : ''}`,
      );
      break;
    case 'ct helper':
      lines.push(`\t\ttype "${o.helper}" protocol ${o.protocol}`, `\t\tl3proto ${o.l3proto}`);
      break;
  }
  lines.push('\t}');
  return lines.join('\n');
}

function formatRhs(r: Rhs): string {
  switch (r.kind) {
    case 'value':
      return formatValue(r.value);
    case 'values':
      return r.values.map(formatValue).join(',');
    case 'range':
      return `${formatNumber(r.type, r.lo)}-${formatNumber(r.type, r.hi)}`;
    case 'prefix':
      return `${r.type === 'ipv4_addr' ? formatIpv4(r.addr) : formatNumber(r.type, r.addr)}/${r.len}`;
    case 'mask':
      return `${formatValue(r.value)} / ${formatValue(r.mask)}`;
    case 'set':
      return inlineSet(r.elements);
    case 'setref':
      return `@${r.name}`;
  }
}

function formatLookup(l: MapLookup, kw: 'map' | 'vmap'): string {
  const m = l.map.kind === 'ref' ? `@${l.map.name}` : inlineSet(l.map.elements);
  return `${exprText(l.key)} ${kw} ${m}`;
}

function formatSource(s: Source): string {
  switch (s.kind) {
    case 'value':
      return formatValue(s.value);
    case 'expr':
      return exprText(s.expr);
    case 'map':
      return formatLookup(s.lookup, 'map');
  }
}

function printsEq(left: Expr, right: Rhs): boolean {
  return left.kind === 'binop' || (right.kind === 'value' && isBitmask(right.value.type));
}

/** Number of bits set. */
function bitCount(n: number): number {
  let c = 0;
  for (let x = n >>> 0; x !== 0; x &= x - 1) c++;
  return c;
}

/**
 * nft 1.0.6 lists a several-flag constant compared with `==`/`!=` (`tcp flags != fin|rst`,
 * `ct state == (established | related)`) as one value, not as a flag list: tcp flags in hex
 * (`!= 0x5`), ct state as `established | related` (and `==` left out).
 */
function multiFlagCompare(s: Extract<Stmt, { kind: 'match' }>): string | undefined {
  if ((s.op !== '==' && s.op !== '!=') || s.left.kind === 'binop' || s.right.kind !== 'value') return undefined;
  const v = s.right.value;
  if (v.type !== 'tcp_flag' && v.type !== 'ct_state') return undefined;
  if (bitCount(v.n) < 2) return undefined;
  const l = exprText(s.left);
  if (v.type === 'tcp_flag') return `${l} ${s.op} 0x${v.n.toString(16)}`;
  const names = formatValue(v).split(',').join(' | ');
  return s.op === '==' ? `${l} ${names}` : `${l} != ${names}`;
}

function formatMatch(s: Extract<Stmt, { kind: 'match' }>): string {
  const multi = multiFlagCompare(s);
  if (multi !== undefined) return multi;
  const l = exprText(s.left);
  let op: string;
  switch (s.op) {
    case 'implicit':
      op = s.left.kind === 'binop' ? ' == ' : ' ';
      break;
    case '==':
      op = printsEq(s.left, s.right) ? ' == ' : ' ';
      break;
    case '!=':
    case '<':
    case '<=':
    case '>':
    case '>=':
      op = ` ${s.op} `;
  }
  return `${l}${op}${formatRhs(s.right)}`;
}

function hasIpBefore(stmts: readonly Stmt[], i: number): boolean {
  const ip = (e: Expr): boolean => (e.kind === 'payload' && (e.proto === 'ip' || e.proto === 'icmp')) || (e.kind === 'concat' && e.parts.some(ip)) || (e.kind === 'binop' && ip(e.left));
  // `meta l4proto icmp` is IPv4's ICMP: it fixes the family too.
  const icmp = (s: Stmt): boolean => s.kind === 'match' && s.left.kind === 'meta' && s.left.key === 'l4proto' && s.right.kind === 'value' && s.right.value.type === 'inet_proto' && s.right.value.n === 1;
  return stmts.slice(0, i).some((s) => (s.kind === 'match' && (ip(s.left) || (s.left.kind === 'meta' && s.left.key === 'nfproto'))) || icmp(s));
}

function hasTcpBefore(stmts: readonly Stmt[], i: number): boolean {
  return stmts.slice(0, i).some((s) => s.kind === 'match' && ((s.left.kind === 'payload' && s.left.proto === 'tcp') || (s.left.kind === 'meta' && s.left.key === 'l4proto' && s.right.kind === 'value' && (s.right.value as { n?: number }).n === 6)));
}

function formatStmt(s: Stmt, all: readonly Stmt[], i: number, family: Family): string | undefined {
  switch (s.kind) {
    case 'match':
      return s.hidden === true ? undefined : formatMatch(s);
    case 'verdict':
      return formatValue({ type: 'verdict', v: s.verdict });
    case 'vmap':
      return formatLookup(s.lookup, 'vmap');
    case 'counter':
      return `counter packets ${s.packets} bytes ${s.bytes}`;
    case 'log': {
      let out = 'log';
      if (s.prefix !== undefined) out += ` prefix "${s.prefix}"`;
      if (s.group !== undefined) out += ` group ${s.group}`;
      if (s.snaplen !== undefined) out += ` snaplen ${s.snaplen}`;
      if (s.queueThreshold !== undefined) out += ` queue-threshold ${s.queueThreshold}`;
      if (s.level !== undefined && s.level !== 'warn') out += ` level ${s.level}`;
      if (s.flags !== undefined) out += logFlags(s.flags);
      return out;
    }
    case 'limit':
      if (s.bytes === true) return `limit rate ${s.over ? 'over ' : ''}${byteAmount(s.rate)}/${s.unit}${s.burst !== 0 ? ` burst ${byteAmount(s.burst)}` : ''}`;
      return `limit rate ${s.over ? 'over ' : ''}${s.rate}/${s.unit}${s.burst !== 5 ? ` burst ${s.burst} packets` : ''}`;
    case 'quota':
      return `quota ${s.over ? 'over ' : ''}${byteAmount(s.bytes)}${s.used !== 0 ? ` used ${byteAmount(s.used)}` : ''}`;
    case 'ct-count':
      return `ct count ${s.over ? 'over ' : ''}${s.count}`;
    case 'field-set':
      return `${exprText(s.target)} set ${s.source.kind === 'text' ? s.source.text : formatSource(s.source)}`;
    case 'synproxy':
      return s.text;
    case 'objref':
      return s.type === 'ct helper' ? `ct helper set "${s.name}"` : `${s.type} name "${s.name}"`;
    case 'meta-set':
      return `meta mark set ${formatSource(s.source)}`;
    case 'ct-set':
      return `ct mark set ${formatSource(s.source)}`;
    case 'nat': {
      let out: string = s.nat;
      if (s.addr !== undefined || s.port !== undefined) {
        out += s.ipFamily ? ' ip to ' : ' to ';
        if (s.addr !== undefined) out += s.addr.kind === 'range' ? natRange(s.addr.lo, s.addr.hi) : formatSource(s.addr);
        if (s.port !== undefined) out += `:${s.port.lo}${s.port.hi !== s.port.lo ? `-${s.port.hi}` : ''}`;
      }
      if (s.flags.length > 0) {
        const order = ['random', 'fully-random', 'persistent'] as const;
        out += ` ${order.filter((f) => s.flags.includes(f)).join(',')}`;
      }
      return out;
    }
    case 'reject': {
      const w = s.with;
      if (w === undefined) return 'reject';
      if (w.kind === 'tcp-reset') return 'reject with tcp reset';
      if (w.code === 'port-unreachable' && ((family === 'ip' && w.kind === 'icmp') || (family === 'inet' && w.kind === 'icmpx'))) return 'reject';
      return `reject with ${w.kind} ${w.code}`;
    }
    case 'notrack':
      return 'notrack';
    case 'set-update':
      return `${s.op} @${s.set} { ${exprText(s.key)}${s.timeoutMs !== undefined ? ` timeout ${formatTime(s.timeoutMs)}` : ''} }`;
  }
}

/** A NAT address range; one that is a whole prefix prints as the prefix (`a-a` as `a/32`). */
function natRange(lo: number, hi: number): string {
  const size = hi - lo + 1;
  const len = 32 - Math.log2(size);
  if (Number.isInteger(len) && lo % size === 0) return `${formatIpv4(lo)}/${len}`;
  return `${formatIpv4(lo)}-${formatIpv4(hi)}`;
}

/** `N UNIT` in the largest unit that divides N exactly, as nft prints byte amounts. */
function byteAmount(n: number): string {
  if (n !== 0 && n % (1024 * 1024) === 0) return `${n / (1024 * 1024)} mbytes`;
  if (n !== 0 && n % 1024 === 0) return `${n / 1024} kbytes`;
  return `${n} bytes`;
}

function logFlags(f: number): string {
  if ((f & 0x2f) === 0x2f) return ' flags all';
  let out = '';
  if ((f & 3) !== 0) out += ` flags tcp ${[(f & 1) !== 0 ? 'sequence' : '', (f & 2) !== 0 ? 'options' : ''].filter((x) => x !== '').join(',')}`;
  if ((f & 4) !== 0) out += ' flags ip options';
  if ((f & 8) !== 0) out += ' flags skuid';
  if ((f & 32) !== 0) out += ' flags ether';
  return out;
}

/** One rule as `nft list` prints it (without indentation). */
export function formatRule(rule: Rule, family: Family): string {
  const parts: string[] = [];
  // The dependencies nft inserts for a reject go first in the rule.
  const ri = rule.stmts.findIndex((s) => s.kind === 'reject');
  const rj = rule.stmts[ri];
  if (rj?.kind === 'reject' && rj.with !== undefined) {
    // The dependency nft added first in the rule shows unless a TCP match follows it; in ip tables
    // only when a statement other than a match stands before the reject.
    const nonMatchBefore = rule.stmts.slice(0, ri).some((s) => s.kind !== 'match');
    if (rj.with.kind === 'tcp-reset' && (family === 'inet' || nonMatchBefore) && !hasTcpBefore(rule.stmts, ri)) parts.push('meta l4proto tcp');
    // `meta nfproto ipv4` shows only when a statement other than a match stands before the reject.
    if (rj.with.kind === 'icmp' && family === 'inet' && nonMatchBefore && !hasIpBefore(rule.stmts, ri)) parts.push('meta nfproto ipv4');
  }
  rule.stmts.forEach((s, i) => {
    const t = formatStmt(s, rule.stmts, i, family);
    if (t !== undefined) parts.push(t);
  });
  if (rule.comment !== undefined) parts.push(`comment "${rule.comment}"`);
  return parts.join(' ');
}

function formatChain(chain: Chain, family: Family, opts: ListOptions): string {
  const lines = [`\tchain ${chain.name} {`];
  if (chain.comment !== undefined) lines.push(`\t\tcomment "${chain.comment}"`);
  if (chain.base !== undefined) {
    const b = chain.base;
    lines.push(`\t\ttype ${b.type} hook ${b.hook} priority ${formatPriority(b.priority, b.hook)}; policy ${b.policy};`);
  }
  for (const r of chain.rules) lines.push(`\t\t${formatRule(r, family)}${opts.handles === true ? ` # handle ${r.handle}` : ''}`);
  lines.push('\t}');
  return lines.join('\n');
}

export interface ListOptions {
  /** `nft -a`: append `# handle N` to rules. */
  readonly handles?: boolean;
}

/** `nft list table FAMILY NAME`. */
export function formatTable(t: Table, opts: ListOptions = {}): string {
  const head = [`table ${t.family} ${t.name} {`];
  if (t.dormant) head.push('\tflags dormant');
  if (t.comment !== undefined) head.push(`\tcomment "${t.comment}"`);
  const objs = [...(t.objects ?? []).map(formatObject), ...t.sets.map(formatSet), ...t.chains.map((c) => formatChain(c, t.family, opts))];
  return `${[...head, objs.join('\n\n')].filter((x) => x !== '').join('\n')}\n}\n`;
}

/** `nft list ruleset`. */
export function formatRuleset(rs: Ruleset, opts: ListOptions = {}): string {
  return rs.tables.map((t) => formatTable(t, opts)).join('');
}

/** `nft list chain FAMILY TABLE CHAIN`: the chain inside its table header. */
export function formatChainListing(t: Table, chain: string, opts: ListOptions = {}): string | undefined {
  const c = t.chains.find((x) => x.name === chain);
  if (c === undefined) return undefined;
  return `table ${t.family} ${t.name} {\n${formatChain(c, t.family, opts)}\n}\n`;
}
