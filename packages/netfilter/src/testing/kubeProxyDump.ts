/**
 * A generator of kube-proxy-shaped rulesets (iptables mode): the `iptables-save` dump of a node
 * with N ClusterIP services, some with NodePorts, each with a few endpoints, laid out as
 * kube-proxy lays them out (KUBE-SERVICES → KUBE-SVC-* → statistic → KUBE-SEP-* → DNAT, NodePorts
 * through KUBE-NODEPORTS → KUBE-EXT-*, masquerade marking and KUBE-POSTROUTING), for benchmarks
 * and tests at 1k–10k services (~100k rules at 10k).
 *
 * Deterministic: the same options give the same text. Addresses come from the benchmarking range
 * 198.18.0.0/15 (cluster IPs from 198.18.0.0/17, endpoints from 198.19.0.0/16). Chain hashes are
 * a stable 80-bit FNV-based hash in kube-proxy's base32 alphabet (not kube-proxy's SHA-256; only
 * their shape matters here).
 *
 * @example
 * const text = kubeProxyDump({ services: 1000 });
 * const ruleset = parseSave(text);
 */
import { probabilityText, probabilityThreshold } from '../matches.ts';
import { formatIpv4 } from '../ip.ts';
import { quoteSaveString } from '../tokenize.ts';

export interface KubeProxyDumpOptions {
  /** Number of services (one port each). */
  readonly services: number;
  /** Varies names, ports and endpoint counts (default 1). */
  readonly seed?: number;
  /** Endpoints per service are drawn from 1..maxEndpoints (default 4, average 2.5). */
  readonly maxEndpoints?: number;
  /** Every service has exactly this many endpoints (instead of drawing from 1..maxEndpoints). */
  readonly endpoints?: number;
  /** Every n-th service is a NodePort service (default 3). */
  readonly nodePortEvery?: number;
  /**
   * `save` (default): what `iptables-save` prints (canonical order, `/32`, `-m tcp` placement,
   * 11-digit probabilities). `restore`: what kube-proxy writes to `iptables-restore --noflush`
   * (its own option order, 10-digit probabilities), which reads back to the same ruleset.
   */
  readonly format?: 'save' | 'restore';
}

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** 16 base32 characters from a stable hash of `text` (two 32-bit FNV-1a variants). */
function hash16(text: string): string {
  let h1 = 0x811c9dc5;
  let h2 = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193) >>> 0;
    h2 = Math.imul(h2 ^ c, 0x5bd1e995) >>> 0;
    h2 ^= h2 >>> 15;
  }
  let out = '';
  let a = h1;
  let b = h2;
  for (let k = 0; k < 16; k++) {
    const v = (a ^ (b >>> 3)) & 31;
    out += BASE32[v] as string;
    a = (a >>> 5) | ((b & 31) << 27);
    b = Math.imul(b ^ (b >>> 13), 0x85ebca6b) >>> 0;
  }
  return out;
}

/** A small deterministic generator (LCG) for the dump's variety. */
function lcg(seed: number): () => number {
  let s = (seed * 2654435761) >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    // The low bits of an LCG cycle quickly: use the high half.
    return s >>> 16;
  };
}

const CLUSTER_BASE = 0xc6120000; // 198.18.0.0
const ENDPOINT_BASE = 0xc6130000; // 198.19.0.0
const POD_CIDR = '198.19.0.0/16';

interface Service {
  readonly name: string; // ns/svc:port
  readonly clusterIp: string;
  readonly port: number;
  readonly targetPort: number;
  readonly nodePort: number | undefined;
  readonly svcChain: string;
  readonly extChain: string;
  readonly endpoints: readonly { readonly ip: string; readonly chain: string }[];
}

function services(opts: KubeProxyDumpOptions): Service[] {
  const next = lcg(opts.seed ?? 1);
  const maxEndpoints = opts.maxEndpoints ?? 4;
  const nodePortEvery = opts.nodePortEvery ?? 3;
  const out: Service[] = [];
  let endpointIndex = 0;
  for (let i = 0; i < opts.services; i++) {
    const ns = `ns${i % 97}`;
    const name = `${ns}/svc-${i}:p${next() % 3}`;
    const port = [80, 443, 8080, 53, 9090][next() % 5] as number;
    const targetPort = 8000 + (next() % 1000);
    const svcChain = `KUBE-SVC-${hash16(`${name}/tcp`)}`;
    const extChain = `KUBE-EXT-${hash16(`${name}/tcp`).split('').reverse().join('')}`;
    const drawn = 1 + (next() % maxEndpoints);
    const count = opts.endpoints ?? drawn;
    const endpoints: { ip: string; chain: string }[] = [];
    for (let e = 0; e < count; e++) {
      const ip = formatIpv4((ENDPOINT_BASE + 2 + (endpointIndex++ % 65000)) >>> 0);
      endpoints.push({ ip, chain: `KUBE-SEP-${hash16(`${name}/tcp/${ip}:${targetPort}`)}` });
    }
    out.push({
      name,
      clusterIp: formatIpv4((CLUSTER_BASE + 10 + i) >>> 0),
      port,
      targetPort,
      nodePort: i % nodePortEvery === 0 ? 30000 + (i % 2768) : undefined,
      svcChain,
      extChain,
      endpoints,
    });
  }
  return out;
}

/** kube-proxy prints probabilities with %0.10f; the kernel keeps a 31-bit threshold of that. */
function probability(n: number, i: number, format: 'save' | 'restore'): string {
  const text = (1 / (n - i)).toFixed(10);
  return format === 'restore' ? text : probabilityText(probabilityThreshold(Number(text)));
}

/**
 * The dump as text. With the default `save` format, `formatSave(parseSave(text)) === text`.
 */
export function kubeProxyDump(opts: KubeProxyDumpOptions): string {
  const format = opts.format ?? 'save';
  const svcs = services(opts);
  const q = quoteSaveString;
  const lines: string[] = [];
  const push = (s: string): void => {
    lines.push(s);
  };

  // filter: kube-proxy's base rules and a REJECT for services without endpoints (none here).
  push('*filter');
  if (format === 'save') {
    push(':INPUT ACCEPT [0:0]');
    push(':FORWARD ACCEPT [0:0]');
    push(':OUTPUT ACCEPT [0:0]');
  }
  for (const c of ['KUBE-EXTERNAL-SERVICES', 'KUBE-FIREWALL', 'KUBE-FORWARD', 'KUBE-NODEPORTS', 'KUBE-PROXY-FIREWALL', 'KUBE-SERVICES']) push(`:${c} - [0:0]`);
  const filterBuiltin = [
    `-A INPUT -m conntrack --ctstate NEW -m comment --comment ${q('kubernetes load balancer firewall')} -j KUBE-PROXY-FIREWALL`,
    `-A INPUT -m comment --comment ${q('kubernetes health check service ports')} -j KUBE-NODEPORTS`,
    `-A INPUT -m conntrack --ctstate NEW -m comment --comment ${q('kubernetes externally-visible service portals')} -j KUBE-EXTERNAL-SERVICES`,
    '-A INPUT -j KUBE-FIREWALL',
    `-A FORWARD -m comment --comment ${q('kubernetes forwarding rules')} -j KUBE-FORWARD`,
    `-A OUTPUT -m conntrack --ctstate NEW -m comment --comment ${q('kubernetes service portals')} -j KUBE-SERVICES`,
    '-A OUTPUT -j KUBE-FIREWALL',
  ];
  const filterUser =
    format === 'save'
      ? [
          `-A KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment ${q('block incoming localnet connections')} -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP`,
          '-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP',
          `-A KUBE-FORWARD -m comment --comment ${q('kubernetes forwarding rules')} -m mark --mark 0x4000/0x4000 -j ACCEPT`,
          `-A KUBE-FORWARD -m comment --comment ${q('kubernetes forwarding conntrack rule')} -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT`,
        ]
      : [
          '-A KUBE-FIREWALL -m comment --comment "block incoming localnet connections" -d 127.0.0.0/8 ! -s 127.0.0.0/8 -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP',
          '-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP',
          '-A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark 0x4000/0x4000 -j ACCEPT',
          '-A KUBE-FORWARD -m comment --comment "kubernetes forwarding conntrack rule" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT',
        ];
  // iptables-save prints built-in chains first; kube-proxy fills its chains before jumping to them.
  for (const l of format === 'save' ? [...filterBuiltin, ...filterUser] : [...filterUser, ...filterBuiltin]) push(l);
  push('COMMIT');

  // nat: chains declared in the order iptables-save prints them (built-ins, then by name).
  push('*nat');
  const userChains: string[] = ['KUBE-MARK-MASQ', 'KUBE-NODEPORTS', 'KUBE-POSTROUTING', 'KUBE-SERVICES'];
  for (const s of svcs) {
    userChains.push(s.svcChain);
    if (s.nodePort !== undefined) userChains.push(s.extChain);
    for (const e of s.endpoints) userChains.push(e.chain);
  }
  userChains.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  if (format === 'save') {
    for (const c of ['PREROUTING', 'INPUT', 'OUTPUT', 'POSTROUTING']) push(`:${c} ACCEPT [0:0]`);
  }
  for (const c of userChains) push(`:${c} - [0:0]`);

  // Rules per chain, emitted in the chain order above (save) or grouped per service (restore).
  const rules = new Map<string, string[]>();
  const add = (chain: string, spec: string): void => {
    let list = rules.get(chain);
    if (list === undefined) {
      list = [];
      rules.set(chain, list);
    }
    list.push(`-A ${chain} ${spec}`);
  };
  const portals = q('kubernetes service portals');
  add('PREROUTING', `-m comment --comment ${portals} -j KUBE-SERVICES`);
  add('OUTPUT', `-m comment --comment ${portals} -j KUBE-SERVICES`);
  add('POSTROUTING', `-m comment --comment ${q('kubernetes postrouting rules')} -j KUBE-POSTROUTING`);
  if (format === 'save') {
    add('KUBE-MARK-MASQ', '-j MARK --set-xmark 0x4000/0x4000');
    add('KUBE-POSTROUTING', '-m mark ! --mark 0x4000/0x4000 -j RETURN');
    add('KUBE-POSTROUTING', '-j MARK --set-xmark 0x4000/0x0');
    add('KUBE-POSTROUTING', `-m comment --comment ${q('kubernetes service traffic requiring SNAT')} -j MASQUERADE --random-fully`);
  } else {
    add('KUBE-POSTROUTING', '-m mark ! --mark 0x4000/0x4000 -j RETURN');
    add('KUBE-POSTROUTING', '-j MARK --xor-mark 0x4000');
    add('KUBE-POSTROUTING', '-m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully');
    add('KUBE-MARK-MASQ', '-j MARK --or-mark 0x4000');
  }
  for (const s of svcs) {
    const c = q(s.name);
    const cip = q(`${s.name} cluster IP`);
    if (format === 'save') {
      add('KUBE-SERVICES', `-d ${s.clusterIp}/32 -p tcp -m comment --comment ${cip} -m tcp --dport ${s.port} -j ${s.svcChain}`);
      add(s.svcChain, `! -s ${POD_CIDR} -d ${s.clusterIp}/32 -p tcp -m comment --comment ${cip} -m tcp --dport ${s.port} -j KUBE-MARK-MASQ`);
    } else {
      add('KUBE-SERVICES', `-m comment --comment ${cip} -m tcp -p tcp -d ${s.clusterIp} --dport ${s.port} -j ${s.svcChain}`);
      add(s.svcChain, `-m comment --comment ${cip} -m tcp -p tcp -d ${s.clusterIp} --dport ${s.port} ! -s ${POD_CIDR} -j KUBE-MARK-MASQ`);
    }
    if (s.nodePort !== undefined) {
      const ext = q(`masquerade traffic for ${s.name} external destinations`);
      add('KUBE-NODEPORTS', format === 'save' ? `-p tcp -m comment --comment ${c} -m tcp --dport ${s.nodePort} -j ${s.extChain}` : `-m comment --comment ${c} -m tcp -p tcp --dport ${s.nodePort} -j ${s.extChain}`);
      add(s.extChain, `-m comment --comment ${ext} -j KUBE-MARK-MASQ`);
      add(s.extChain, `-j ${s.svcChain}`);
    }
    const n = s.endpoints.length;
    s.endpoints.forEach((e, i) => {
      const to = q(`${s.name} -> ${e.ip}:${s.targetPort}`);
      if (i < n - 1) add(s.svcChain, `-m comment --comment ${to} -m statistic --mode random --probability ${probability(n, i, format)} -j ${e.chain}`);
      else add(s.svcChain, `-m comment --comment ${to} -j ${e.chain}`);
      if (format === 'save') {
        add(e.chain, `-s ${e.ip}/32 -m comment --comment ${c} -j KUBE-MARK-MASQ`);
        add(e.chain, `-p tcp -m comment --comment ${c} -m tcp -j DNAT --to-destination ${e.ip}:${s.targetPort}`);
      } else {
        add(e.chain, `-m comment --comment ${c} -s ${e.ip} -j KUBE-MARK-MASQ`);
        add(e.chain, `-m comment --comment ${c} -m tcp -p tcp -j DNAT --to-destination ${e.ip}:${s.targetPort}`);
      }
    });
  }
  const nodeports = `-m comment --comment ${q('kubernetes service nodeports; NOTE: this must be the last rule in this chain')} -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS`;
  add('KUBE-SERVICES', nodeports);
  if (format === 'save') {
    for (const c of ['PREROUTING', 'INPUT', 'OUTPUT', 'POSTROUTING', ...userChains]) for (const l of rules.get(c) ?? []) push(l);
  } else {
    // kube-proxy writes the service chains first and the jumps into them last.
    for (const c of userChains) if (c !== 'KUBE-SERVICES' && c !== 'KUBE-NODEPORTS') for (const l of rules.get(c) ?? []) push(l);
    for (const c of ['KUBE-NODEPORTS', 'KUBE-SERVICES', 'PREROUTING', 'OUTPUT', 'POSTROUTING']) for (const l of rules.get(c) ?? []) push(l);
  }
  push('COMMIT');
  // One join (with an empty last line for the final newline) makes one flat string, as a file
  // read from disk is; a concatenation would leave a rope that every character access unwraps.
  lines.push('');
  return lines.join('\n');
}
