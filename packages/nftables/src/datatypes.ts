/**
 * nft's data types: how a value of each type is written in input (symbolic names, numbers,
 * addresses) and how `nft list` prints it. Names and numbers follow nft 1.0.6.
 */
import type { DataType, Value, Verdict } from './types.ts';

const PROTOCOLS: Readonly<Record<string, number>> = {
  icmp: 1, igmp: 2, ggp: 3, ipencap: 4, st: 5, tcp: 6, egp: 8, igp: 9, pup: 12, udp: 17, hmp: 20,
  'xns-idp': 22, rdp: 27, 'iso-tp4': 29, dccp: 33, xtp: 36, ddp: 37, 'idpr-cmtp': 38, ipv6: 41,
  'ipv6-route': 43, 'ipv6-frag': 44, idrp: 45, rsvp: 46, gre: 47, esp: 50, ah: 51, skip: 57,
  'ipv6-icmp': 58, 'ipv6-nonxt': 59, 'ipv6-opts': 60, rspf: 73, vmtp: 81, eigrp: 88, ospf: 89,
  'ax.25': 93, ipip: 94, etherip: 97, encap: 98, pim: 103, ipcomp: 108, vrrp: 112, l2tp: 115,
  isis: 124, sctp: 132, fc: 133, 'mobility-header': 135, udplite: 136, 'mpls-in-ip': 137,
  manet: 138, hip: 139, shim6: 140, wesp: 141, rohc: 142, ethernet: 143, mptcp: 262,
};
const PROTOCOL_NAMES: ReadonlyMap<number, string> = new Map<number, string>(Object.entries(PROTOCOLS).map(([k, v]) => [v, k]));

/** Service names nft resolves through /etc/services (the common ones; printed as numbers). */
const SERVICES: Readonly<Record<string, number>> = {
  ftp: 21, 'ftp-data': 20, ssh: 22, telnet: 23, smtp: 25, domain: 53, bootps: 67, bootpc: 68,
  tftp: 69, http: 80, www: 80, kerberos: 88, pop3: 110, sunrpc: 111, ntp: 123, imap2: 143, imap: 143,
  snmp: 161, bgp: 179, ldap: 389, https: 443, 'microsoft-ds': 445, submission: 587, ldaps: 636,
  imaps: 993, pop3s: 995, openvpn: 1194, mysql: 3306, 'postgresql': 5432, 'http-alt': 8080,
  'domain-s': 853, syslog: 514, rsync: 873, 'kerberos-adm': 749, nfs: 2049, ipp: 631, printer: 515,
  isakmp: 500, 'ipsec-nat-t': 4500, mdns: 5353, 'x11': 6000, 'redis': 6379, 'git': 9418,
};

export const CT_STATE: readonly (readonly [string, number])[] = [
  ['invalid', 1],
  ['established', 2],
  ['related', 4],
  ['new', 8],
  ['untracked', 64],
];
export const CT_STATUS: readonly (readonly [string, number])[] = [
  ['expected', 1],
  ['seen-reply', 2],
  ['assured', 4],
  ['confirmed', 8],
  ['snat', 16],
  ['dnat', 32],
  ['dying', 512],
];
export const TCP_FLAGS: readonly (readonly [string, number])[] = [
  ['fin', 1],
  ['syn', 2],
  ['rst', 4],
  ['psh', 8],
  ['ack', 16],
  ['urg', 32],
  ['ecn', 64],
  ['cwr', 128],
];
const ICMP_TYPES: readonly (readonly [string, number])[] = [
  ['echo-reply', 0],
  ['destination-unreachable', 3],
  ['source-quench', 4],
  ['redirect', 5],
  ['echo-request', 8],
  ['router-advertisement', 9],
  ['router-solicitation', 10],
  ['time-exceeded', 11],
  ['parameter-problem', 12],
  ['timestamp-request', 13],
  ['timestamp-reply', 14],
  ['info-request', 15],
  ['info-reply', 16],
  ['address-mask-request', 17],
  ['address-mask-reply', 18],
];
const NF_PROTO: readonly (readonly [string, number])[] = [
  ['ipv4', 2],
  ['ipv6', 10],
];
export const FIB_ADDRTYPE: readonly (readonly [string, number])[] = [
  ['unspec', 0],
  ['unicast', 1],
  ['local', 2],
  ['broadcast', 3],
  ['anycast', 4],
  ['multicast', 5],
  ['blackhole', 6],
  ['unreachable', 7],
  ['prohibit', 8],
];
const PKT_TYPE: readonly (readonly [string, number])[] = [
  ['host', 0],
  ['broadcast', 1],
  ['multicast', 2],
  ['other', 3],
];

const DSCP: readonly (readonly [string, number])[] = [
  ['cs0', 0x00], ['cs1', 0x08], ['cs2', 0x10], ['cs3', 0x18], ['cs4', 0x20], ['cs5', 0x28], ['cs6', 0x30], ['cs7', 0x38],
  ['df', 0x00], ['be', 0x00], ['lephb', 0x01], ['af11', 0x0a], ['af12', 0x0c], ['af13', 0x0e], ['af21', 0x12],
  ['af22', 0x14], ['af23', 0x16], ['af31', 0x1a], ['af32', 0x1c], ['af33', 0x1e], ['af41', 0x22], ['af42', 0x24],
  ['af43', 0x26], ['va', 0x2c], ['ef', 0x2e],
];
const ECN: readonly (readonly [string, number])[] = [
  ['not-ect', 0], ['ect1', 1], ['ect0', 2], ['ce', 3],
];
const ICMP_CODE: readonly (readonly [string, number])[] = [
  ['net-unreachable', 0], ['host-unreachable', 1], ['prot-unreachable', 2], ['port-unreachable', 3],
  ['net-prohibited', 9], ['host-prohibited', 10], ['admin-prohibited', 13], ['frag-needed', 4],
];
const ETHER_TYPE: readonly (readonly [string, number])[] = [
  ['ip', 0x0800], ['arp', 0x0806], ['ip6', 0x86dd], ['8021q', 0x8100], ['8021ad', 0x88a8], ['vlan', 0x8100],
];
const IFACE_TYPE: readonly (readonly [string, number])[] = [
  ['ether', 0x0001], ['ppp', 0x0200], ['ipip', 0x0300], ['ipip6', 0x0301], ['loopback', 0x0304], ['sit', 0x0308], ['ipgre', 0x030a],
];
/** /etc/iproute2/group as Debian ships it. */
const DEVGROUP: readonly (readonly [string, number])[] = [['default', 0]];
const CT_DIR: readonly (readonly [string, number])[] = [
  ['original', 0], ['reply', 1],
];
const BOOLEAN: readonly (readonly [string, number])[] = [
  ['exists', 1], ['missing', 0],
];
/** The users and groups every Debian system has (nft prints ids by name through the passwd and group files). */
const UIDS: readonly (readonly [string, number])[] = [['root', 0], ['daemon', 1], ['bin', 2], ['sys', 3], ['nobody', 65534]];
const GIDS: readonly (readonly [string, number])[] = [['root', 0], ['daemon', 1], ['bin', 2], ['sys', 3], ['adm', 4], ['nogroup', 65534]];

const SYMBOLS: Partial<Record<DataType, readonly (readonly [string, number])[]>> = {
  ct_state: CT_STATE,
  ct_status: CT_STATUS,
  tcp_flag: TCP_FLAGS,
  icmp_type: ICMP_TYPES,
  nf_proto: NF_PROTO,
  fib_addrtype: FIB_ADDRTYPE,
  pkt_type: PKT_TYPE,
  dscp: DSCP,
  ecn: ECN,
  icmp_code: ICMP_CODE,
  ether_type: ETHER_TYPE,
  iface_type: IFACE_TYPE,
  devgroup: DEVGROUP,
  ct_dir: CT_DIR,
  boolean: BOOLEAN,
  uid: UIDS,
  gid: GIDS,
};

/** Types whose values are bit sets: `a,b` lists OR together and print split into names. */
export function isBitmask(t: DataType): boolean {
  return t === 'ct_state' || t === 'ct_status' || t === 'tcp_flag';
}

/** The names `type …` accepts in set declarations. */
export const SET_TYPE_NAMES: ReadonlySet<string> = new Set<DataType>([
  'ipv4_addr', 'inet_proto', 'inet_service', 'mark', 'ifname', 'iface_index', 'ct_state', 'ct_status',
  'tcp_flag', 'icmp_type', 'nf_proto', 'fib_addrtype', 'pkt_type', 'integer', 'verdict', 'dscp', 'ecn',
  'icmp_code', 'ether_type', 'iface_type', 'devgroup', 'ct_dir', 'uid', 'gid', 'classid', 'time', 'boolean',
]);

/** Width in bytes of a value as the kernel stores it (set keys, sort order). */
export function typeBytes(t: DataType): number {
  switch (t) {
    case 'ipv4_addr':
    case 'mark':
    case 'ct_state':
    case 'ct_status':
    case 'fib_addrtype':
    case 'integer':
    case 'iface_index':
    case 'devgroup':
    case 'uid':
    case 'gid':
    case 'classid':
    case 'time':
      return 4;
    case 'u64':
      return 8;
    case 'inet_service':
    case 'ether_type':
    case 'iface_type':
    case 'u16':
      return 2;
    case 'dscp':
    case 'ecn':
    case 'icmp_code':
    case 'ct_dir':
    case 'boolean':
    case 'u8':
    case 'inet_proto':
    case 'tcp_flag':
    case 'icmp_type':
    case 'icmpx_code':
    case 'nf_proto':
    case 'pkt_type':
      return 1;
    case 'ifname':
      return 16;
    case 'verdict':
      return 4;
  }
}

/** Maximum value of a numeric type. */
export function typeMax(t: DataType): number {
  const b = typeBytes(t);
  if (t === 'dscp') return 63;
  if (t === 'ecn') return 3;
  if (t === 'u64') return Number.MAX_SAFE_INTEGER;
  return b >= 4 ? 0xffffffff : 2 ** (8 * b) - 1;
}

export function formatIpv4(n: number): string {
  return `${(n >>> 24) & 255}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

export function parseIpv4(s: string): number | undefined {
  const m = /^(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(s);
  if (m === null) return undefined;
  let n = 0;
  for (let k = 1; k <= 4; k++) {
    const o = Number(m[k]);
    if (o > 255) return undefined;
    n = n * 256 + o;
  }
  return n;
}

/** nft's number syntax: decimal or 0x hex. */
export function parseNumber(s: string): number | undefined {
  if (/^0x[0-9a-fA-F]+$/.test(s)) return parseInt(s.slice(2), 16);
  // A leading zero is octal, as strtoull with base 0 reads it (`ip ttl 064` is 52).
  if (/^0[0-7]+$/.test(s)) return parseInt(s.slice(1), 8);
  if (/^\d+$/.test(s)) return Number(s);
  return undefined;
}

/** Why a symbol is not a value of a type: nft's message. */
export class ValueError extends Error {}

/** Parses one constant of type `t` written as `text`. */
export function parseValue(t: DataType, text: string): Value {
  if (t === 'ifname') {
    if (text.length >= 16) throw new ValueError('String exceeds maximum length of 16');
    return { type: t, s: text };
  }
  if (t === 'time') {
    const ms = parseTime(text);
    if (ms === undefined) throw new ValueError('Could not parse time');
    return { type: t, n: ms };
  }
  if (t === 'classid') {
    if (text === 'none') return { type: t, n: 0 };
    if (text === 'root') return { type: t, n: 0xffffffff };
    const m = /^([0-9a-fA-F]*):([0-9a-fA-F]*)$/.exec(text);
    if (m === null) throw new ValueError('Could not parse TC classid');
    return { type: t, n: ((parseInt(m[1] || '0', 16) << 16) | parseInt(m[2] || '0', 16)) >>> 0 };
  }
  if (t === 'verdict') throw new ValueError(`Could not parse verdict`);
  if (t === 'ipv4_addr') {
    // The resolver reads a bare number as the address it encodes (`80` is 0.0.0.80).
    if (/^\d+$/.test(text) && Number(text) <= 0xffffffff) return { type: t, n: Number(text) };
    const n = parseIpv4(text);
    if (n === undefined) throw new ValueError('Could not resolve hostname: Name or service not known');
    return { type: t, n };
  }
  const num = parseNumber(text);
  if (num !== undefined) {
    if (num > typeMax(t)) throw new ValueError(t === 'inet_service' ? 'Service out of range' : `Value ${text} exceeds valid range 0-${typeMax(t)}`);
    return { type: t, n: num };
  }
  if (t === 'inet_proto') {
    const p = PROTOCOLS[text];
    if (p === undefined) throw new ValueError(`Could not resolve protocol name`);
    return { type: t, n: p };
  }
  if (t === 'inet_service') {
    const p = SERVICES[text];
    if (p === undefined) throw new ValueError('Could not resolve service: Servname not supported for ai_socktype');
    return { type: t, n: p };
  }
  if (t === 'iface_index') {
    if (text === 'lo') return { type: t, n: 1 };
    throw new ValueError(`Interface does not exist`);
  }
  const table = SYMBOLS[t];
  const hit = table?.find(([name]) => name === text);
  if (hit !== undefined) return { type: t, n: hit[1] };
  throw new ValueError(`Could not parse ${describeType(t)}`);
}

/** nft's description of a type, as its messages use it. */
export function describeType(t: DataType): string {
  switch (t) {
    case 'ipv4_addr':
      return 'IPv4 address';
    case 'inet_proto':
      return 'Internet protocol';
    case 'inet_service':
      return 'internet network service';
    case 'mark':
      return 'packet mark';
    case 'ifname':
      return 'network interface name';
    case 'iface_index':
      return 'network interface index';
    case 'verdict':
      return 'netfilter verdict';
    case 'ct_state':
      return 'conntrack state';
    case 'ct_status':
      return 'conntrack status';
    case 'tcp_flag':
      return 'TCP flag';
    case 'icmp_type':
      return 'ICMP type';
    case 'icmpx_code':
      return 'icmpx code';
    case 'nf_proto':
      return 'netfilter protocol';
    case 'fib_addrtype':
      return 'fib address type';
    case 'pkt_type':
      return 'packet type';
    case 'integer':
    case 'u8':
    case 'u16':
    case 'u64':
      return 'integer';
    case 'dscp':
      return 'Differentiated Services Code Point';
    case 'ecn':
      return 'Explicit Congestion Notification';
    case 'icmp_code':
      return 'icmp code';
    case 'ether_type':
      return 'Ethernet protocol';
    case 'iface_type':
      return 'network interface type';
    case 'devgroup':
      return 'devgroup name';
    case 'ct_dir':
      return 'conntrack direction';
    case 'uid':
      return 'user ID';
    case 'gid':
      return 'group ID';
    case 'classid':
      return 'TC classid';
    case 'time':
      return 'Relative time';
    case 'boolean':
      return 'boolean type';
  }
}

/** How `nft list` prints a value. */
export function formatValue(v: Value): string {
  switch (v.type) {
    case 'ifname':
      return `"${v.s}"`;
    case 'time':
      return formatTime(v.n);
    case 'classid':
      return v.n === 0 ? 'none' : v.n === 0xffffffff ? 'root' : `${(v.n >>> 16).toString(16)}:${(v.n & 0xffff).toString(16)}`;
    case 'u8':
    case 'u16':
    case 'u64':
      return String(v.n);
    case 'verdict':
      return formatVerdict(v.v);
    case 'ipv4_addr':
      return formatIpv4(v.n);
    case 'mark':
      return `0x${v.n.toString(16).padStart(8, '0')}`;
    case 'inet_proto':
      return PROTOCOL_NAMES.get(v.n) ?? String(v.n);
    case 'iface_index':
      return v.n === 1 ? '"lo"' : String(v.n);
    case 'inet_service':
    case 'integer':
    case 'icmpx_code':
      return String(v.n);
    case 'ct_state':
    case 'ct_status':
    case 'tcp_flag':
      return formatBits(v.type, v.n);
    case 'icmp_type':
    case 'nf_proto':
    case 'fib_addrtype':
    case 'pkt_type':
    case 'dscp':
    case 'ecn':
    case 'icmp_code':
    case 'ether_type':
    case 'iface_type':
    case 'devgroup':
    case 'ct_dir':
    case 'boolean':
    case 'uid':
    case 'gid': {
      if (v.type === 'uid' || v.type === 'gid') return String(v.n);
      const hit = (SYMBOLS[v.type] ?? []).find(([, n]) => n === v.n);
      if (hit !== undefined) return v.type === 'devgroup' ? `"${hit[0]}"` : hit[0];
      if (v.type === 'dscp' || v.type === 'ether_type' || v.type === 'iface_type') return `0x${v.n.toString(16).padStart(v.type === 'dscp' ? 2 : 4, '0')}`;
      return String(v.n);
    }
  }
}

function formatBits(t: DataType, n: number): string {
  const names: string[] = [];
  let rest = n;
  for (const [name, bit] of SYMBOLS[t] ?? []) {
    if ((n & bit) !== 0) {
      names.push(name);
      rest &= ~bit;
    }
  }
  if (rest !== 0 || names.length === 0) names.push(`0x${rest.toString(16)}`);
  return names.join(',');
}

export function formatVerdict(v: Verdict): string {
  switch (v.kind) {
    case 'jump':
    case 'goto':
      return `${v.kind} ${v.chain}`;
    case 'accept':
    case 'drop':
    case 'continue':
    case 'return':
    case 'queue':
      return v.kind;
  }
}

/** nft's time syntax: `1d2h3m4s5ms`, or a bare number of seconds. */
export function parseTime(s: string): number | undefined {
  if (/^\d+$/.test(s)) return Number(s) * 1000;
  const m = /^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+)s)?(?:(\d+)ms)?$/.exec(s);
  if (m === null || s === '') return undefined;
  const [d, h, mi, sec, ms] = [m[1], m[2], m[3], m[4], m[5]].map((x) => (x === undefined ? 0 : Number(x))) as [number, number, number, number, number];
  return (((d * 24 + h) * 60 + mi) * 60 + sec) * 1000 + ms;
}

/** How nft prints a duration. */
export function formatTime(ms: number): string {
  let rest = ms;
  const d = Math.floor(rest / 86_400_000);
  rest -= d * 86_400_000;
  const h = Math.floor(rest / 3_600_000);
  rest -= h * 3_600_000;
  const m = Math.floor(rest / 60_000);
  rest -= m * 60_000;
  const s = Math.floor(rest / 1000);
  const milli = rest - s * 1000;
  let out = '';
  if (d > 0) out += `${d}d`;
  if (h > 0) out += `${h}h`;
  if (m > 0) out += `${m}m`;
  if (s > 0) out += `${s}s`;
  if (milli > 0) out += `${milli}ms`;
  return out === '' ? '0s' : out;
}
