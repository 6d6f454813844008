/**
 * The lab: the {@link TOPOLOGY} built out of real network namespaces, a ruleset loaded with the
 * real `iptables-restore`, packets injected with a raw-socket pump, and the kernel's doing read
 * back (captured frames, `iptables-save -c`, `conntrack -L`).
 *
 * One lab serves many cases: {@link Lab.reset} puts the node back into a known state (sysctls,
 * every table replaced, conntrack flushed and checked empty) before each case, and every frame
 * the node sent is captured up to a sentinel frame queued behind the packet on the same path (see
 * `helper/pump.py`), so a case never sleeps and never depends on timing.
 */
import { fileURLToPath } from 'node:url';
import { formatIpv4 } from '@netsim/netfilter';
import { pythonPath, run, runIn, which } from './exec.ts';
import { createNetns, nextPrefix, releaseNetns } from './netns.ts';
import { buildIpv4, ethernetFrame, fromHex, parseFrame, toHex, type PacketSpec, type ParsedFrame } from './packet.ts';
import { parseConntrack, parseSaveCounters, type ConntrackEntry, type SavedCounters } from './readback.ts';
import { ifaceOfPeer, PEERS, TOPOLOGY, type PeerName, type Topology } from './topology.ts';

const PUMP = fileURLToPath(new URL('../helper/pump.py', import.meta.url));

/** A packet entering the node from a peer's veth, or sent by the node itself. */
export type Injection =
  | { readonly kind: 'ingress'; readonly peer: PeerName; readonly packet: PacketSpec }
  /** Sent from the node by a raw socket (OUTPUT, then POSTROUTING), with `SO_MARK` = `mark`. */
  | { readonly kind: 'local'; readonly packet: PacketSpec; readonly mark: number };

/** A frame the node's capture socket saw. */
export interface CapturedFrame {
  /** The node interface it was seen on. */
  readonly iface: string;
  /** `out`: the node sent it (AF_PACKET `PACKET_OUTGOING`); `in`: it arrived. */
  readonly direction: 'in' | 'out';
  readonly frame: ParsedFrame;
  readonly hex: string;
}

export interface StepObservation {
  readonly frames: readonly CapturedFrame[];
  /** Packets the node's IP layer delivered to a local protocol meanwhile (`Ip: InDelivers`). */
  readonly delivered: number;
  /** For a local send that failed: the errno name (`EPERM` when netfilter dropped it). */
  readonly sendError: string | null;
}

/** The node's sysctls a case sets, by full name (`net.ipv4.conf.all.rp_filter`). */
export type Sysctls = { readonly [key: string]: number };

/**
 * Keeps conntrack on in the node. The kernel tracks connections in a namespace only while some
 * rule needs it (a NAT, `conntrack`/`state` match, CONNMARK, CT…): with iptables-nft, empty nat
 * chains do not count. A Kubernetes node always has such rules, and netsim always tracks, so the
 * lab pins conntrack with one counting-only rule in the `security` table, which the cases never
 * list (so `iptables-restore` leaves it alone) and the readback ignores.
 */
const KEEP_CONNTRACK = '*security\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n-A OUTPUT -m conntrack --ctstate INVALID\nCOMMIT\n';

const EMPTY_TABLES: { readonly [t: string]: string } = {
  raw: '*raw\n:PREROUTING ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\nCOMMIT\n',
  mangle: '*mangle\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\nCOMMIT\n',
  nat: '*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\nCOMMIT\n',
  filter: '*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\nCOMMIT\n',
};

/**
 * `text` plus an empty section for each of the four tables it does not list, so that loading it
 * replaces every table (a table the text leaves out would otherwise keep the previous case's rules).
 */
export function withEveryTable(text: string): string {
  const listed = new Set([...text.matchAll(/^\*(raw|mangle|nat|filter)\s*$/gm)].map((m) => m[1]));
  const missing = ['raw', 'mangle', 'nat', 'filter'].filter((t) => !listed.has(t));
  return missing.length === 0 ? text : `${missing.map((t) => EMPTY_TABLES[t] as string).join('')}${text.endsWith('\n') || text === '' ? text : `${text}\n`}`;
}

/** UDP ports the node listens on, so that local UDP is delivered without an ICMP reply. */
export const UDP_LISTEN_PORTS: readonly number[] = [53, 80, 443, 8080, 30080];

/**
 * Which iptables the lab loads rules with. `nft` (iptables-nft, what `iptables` is on current
 * distributions and what kube-proxy uses) is the default; `legacy` (iptables-legacy, x_tables)
 * serves to tell a kernel behaviour from an iptables-nft translation detail.
 */
export type Backend = 'nft' | 'legacy';

/** The restore/save commands of a backend. */
export function backendTools(backend: Backend): { readonly restore: string; readonly save: string } {
  if (backend === 'legacy') return { restore: 'iptables-legacy-restore', save: 'iptables-legacy-save' };
  return which('iptables-nft-restore') !== undefined && which('iptables-nft-save') !== undefined
    ? { restore: 'iptables-nft-restore', save: 'iptables-nft-save' }
    : { restore: 'iptables-restore', save: 'iptables-save' };
}

export interface LabNames {
  readonly node: string;
  readonly peers: { readonly [P in PeerName]: string };
}

/** Settings every case shares, written once at creation (see docs/conformance.md). */
function baseSysctls(t: Topology): Sysctls {
  const s: { [k: string]: number } = {
    'net.ipv4.ip_forward': 1,
    // ICMP errors (REJECT's, and unreachables) must never be rate limited between cases.
    'net.ipv4.icmp_ratelimit': 0,
    'net.ipv4.icmp_ratemask': 0,
    // Echo requests to the node get no reply, so local ICMP stays silent like local UDP.
    'net.ipv4.icmp_echo_ignore_all': 1,
    // A packet forwarded out the interface it came in on would otherwise trigger an ICMP redirect.
    'net.ipv4.conf.all.send_redirects': 0,
    'net.ipv4.conf.default.send_redirects': 0,
  };
  for (const i of t.ifaces) s[`net.ipv4.conf.${i.name}.send_redirects`] = 0;
  return s;
}

/**
 * Writes sysctls inside a namespace through /proc/sys (whose net/ entries belong to the writer's
 * network namespace), with `sh` alone: no dependency on procps' `sysctl`. Keys are dotted names
 * without dots inside components, as all the lab's are.
 */
function writeSysctls(netns: string, s: Sysctls): void {
  const pairs = Object.keys(s)
    .sort()
    .map((k) => `${k}=${s[k]}`);
  const script = 'for kv in "$@"; do k=${kv%%=*}; printf %s "${kv#*=}" > "/proc/sys/$(printf %s "$k" | tr . /)" || exit 1; done';
  runIn(netns, 'sh', ['-c', script, 'sh', ...pairs]);
}

/** Reads one sysctl of a namespace (for tests and diagnostics). */
export function readSysctl(netns: string, key: string): string {
  return runIn(netns, 'cat', [`/proc/sys/${key.replace(/\./g, '/')}`]).trim();
}

/**
 * A live lab. Create with {@link Lab.create}, always {@link Lab.destroy} (in `finally` / `afterAll`);
 * the namespaces are also removed if the process exits or is interrupted first.
 *
 * @example
 * const lab = Lab.create();
 * try {
 *   lab.reset({ ruleset, sysctls: {} });
 *   const [obs] = lab.inject([{ kind: 'ingress', peer: 'client', packet }]);
 *   const counters = lab.counters();
 * } finally { lab.destroy(); }
 */
export class Lab {
  readonly names: LabNames;
  readonly topology: Topology;
  readonly backend: Backend;
  /** Conntrack pinned on (see KEEP_CONNTRACK); false: on only while a rule needs it, as on Linux. */
  readonly pinConntrack: boolean;
  private readonly tools: { readonly restore: string; readonly save: string };
  private readonly python: string;
  private destroyed = false;
  /** The sysctl values last written, so a case that changes none costs no process. */
  private readonly written = new Map<string, number>();

  private constructor(names: LabNames, topology: Topology, backend: Backend, pinConntrack: boolean, python: string) {
    this.names = names;
    this.topology = topology;
    this.backend = backend;
    this.pinConntrack = pinConntrack;
    this.tools = backendTools(backend);
    this.python = python;
  }

  /** Builds the namespaces, links, addresses, routes and neighbours of `topology`. */
  static create(opts: { readonly topology?: Topology; readonly backend?: Backend; readonly pinConntrack?: boolean } = {}): Lab {
    const topology = opts.topology ?? TOPOLOGY;
    const backend = opts.backend ?? 'nft';
    const pinConntrack = opts.pinConntrack ?? true;
    const python = pythonPath();
    if (python === undefined) throw new Error('conformance lab: python3 not found (the packet pump needs it)');
    const prefix = nextPrefix();
    const names: LabNames = {
      node: `${prefix}-node`,
      peers: { client: `${prefix}-client`, uplink2: `${prefix}-uplink2`, pod: `${prefix}-pod` },
    };
    const all = [names.node, ...PEERS.map((p) => names.peers[p])];
    const created: string[] = [];
    try {
      for (const ns of all) {
        createNetns(ns);
        created.push(ns);
        // Before any link exists, so no interface ever gets IPv6 (no DAD, no router solicitations).
        writeSysctls(ns, { 'net.ipv6.conf.all.disable_ipv6': 1, 'net.ipv6.conf.default.disable_ipv6': 1 });
      }
      for (const i of topology.ifaces) {
        const peer = topology.peers[i.peer];
        run('ip', ['link', 'add', i.name, 'netns', names.node, 'address', i.mac, 'type', 'veth', 'peer', 'name', peer.iface, 'netns', names.peers[i.peer], 'address', peer.mac]);
        run('ip', ['-n', names.peers[i.peer], 'link', 'set', peer.iface, 'up']);
      }
      const batch: string[] = ['link set lo up'];
      for (const i of topology.ifaces) {
        const peer = topology.peers[i.peer];
        batch.push(`link set ${i.name} up`);
        batch.push(`address add ${formatIpv4(i.addr)}/${i.prefix} brd + dev ${i.name}`);
        batch.push(`neighbour replace ${formatIpv4(peer.addr)} lladdr ${peer.mac} dev ${i.name} nud permanent`);
      }
      for (const r of topology.routes) {
        const dst = r.dst.prefix === 0 ? 'default' : `${formatIpv4(r.dst.addr)}/${r.dst.prefix}`;
        batch.push(`route add ${dst}${r.via === undefined ? '' : ` via ${formatIpv4(r.via)}`} dev ${r.dev}`);
      }
      run('ip', ['-n', names.node, '-batch', '-'], { input: batch.join('\n') + '\n' });
      writeSysctls(names.node, baseSysctls(topology));
      if (pinConntrack) runIn(names.node, backendTools(backend).restore, [], { input: KEEP_CONNTRACK });
    } catch (e) {
      for (const ns of created) releaseNetns(ns);
      throw e;
    }
    return new Lab(names, topology, backend, pinConntrack, python);
  }

  /**
   * Puts the node into a known state for one case: writes `sysctls`, replaces all four tables with
   * `ruleset` (iptables-save text; a table it does not list is loaded empty) with the real
   * `iptables-restore`, which also zeroes every counter, flushes conntrack and checks it is empty.
   */
  reset(state: { readonly ruleset: string; readonly sysctls: Sysctls }): void {
    this.assertLive();
    const changed: { [k: string]: number } = {};
    for (const [k, v] of Object.entries(state.sysctls)) if (this.written.get(k) !== v) changed[k] = v;
    if (Object.keys(changed).length > 0) {
      // Forget first: if the write fails half-way, the next reset writes everything again.
      for (const k of Object.keys(changed)) this.written.delete(k);
      writeSysctls(this.names.node, changed);
      for (const [k, v] of Object.entries(changed)) this.written.set(k, v);
    }
    this.restore(withEveryTable(state.ruleset));
    runIn(this.names.node, 'conntrack', ['-F']);
    const left = this.conntrack();
    if (left.length > 0) throw new Error(`conformance lab: conntrack still holds ${left.length} entries after a flush`);
  }

  /** `iptables-restore --version` of the backend, e.g. `iptables-restore v1.8.9 (nf_tables)`. */
  toolVersion(): string {
    return run(this.tools.restore, ['--version']).trim();
  }

  /** Loads iptables-save text with the real `iptables-restore` (tables listed are replaced). */
  restore(text: string, opts: { readonly noflush?: boolean; readonly counters?: boolean } = {}): void {
    this.assertLive();
    const args = [...(opts.noflush === true ? ['--noflush'] : []), ...(opts.counters === true ? ['--counters'] : [])];
    runIn(this.names.node, this.tools.restore, args, { input: text });
  }

  /** `iptables-save` of the node, verbatim (with `-c` when `counters`). */
  save(opts: { readonly counters?: boolean } = {}): string {
    this.assertLive();
    return runIn(this.names.node, this.tools.save, opts.counters === true ? ['-c'] : []);
  }

  /** Per-rule and per-policy packet counters, read with `iptables-save -c`. */
  counters(): SavedCounters {
    return parseSaveCounters(this.save({ counters: true }));
  }

  /** The conntrack table (`conntrack -L`). */
  conntrack(): ConntrackEntry[] {
    this.assertLive();
    return parseConntrack(runIn(this.names.node, 'conntrack', ['-L']));
  }

  /**
   * Sends each packet in turn, each followed by its sentinel, and returns per packet every frame
   * the node saw or sent until the sentinel. Throws if anything was captured before the first
   * packet (something in the lab sent a frame by itself) or a sentinel never arrived.
   */
  inject(steps: readonly Injection[]): StepObservation[] {
    this.assertLive();
    const req = {
      node: `/run/netns/${this.names.node}`,
      udpPorts: UDP_LISTEN_PORTS,
      timeoutMs: 5000,
      steps: steps.map((s, i) => {
        const ip = buildIpv4(s.packet, i + 1);
        if (s.kind === 'local') {
          const out = this.topology.ifaces[0];
          if (out === undefined) throw new Error('conformance lab: topology has no interface');
          return { kind: 'l3', dst: formatIpv4(s.packet.dst), packet: toHex(ip), mark: s.mark >>> 0, sentinelIface: out.name };
        }
        const peer = this.topology.peers[s.peer];
        const iface = ifaceOfPeer(this.topology, s.peer);
        return { kind: 'l2', netns: `/run/netns/${this.names.peers[s.peer]}`, iface: peer.iface, frame: toHex(ethernetFrame(iface.mac, peer.mac, ip)) };
      }),
    };
    const out = run(this.python, [PUMP], { input: JSON.stringify(req), timeoutMs: 30_000 });
    const answer = JSON.parse(out) as {
      steps: { frames: { ifname: string; pkttype: number; hex: string }[]; delivered: number; sendError: string | null }[];
      stray: { ifname: string; pkttype: number; hex: string }[];
    };
    if (answer.stray.length > 0) {
      throw new Error(`conformance lab: ${answer.stray.length} frame(s) captured before the first packet was sent (first on ${answer.stray[0]?.ifname}: ${answer.stray[0]?.hex.slice(0, 80)})`);
    }
    return answer.steps.map((st) => ({
      frames: st.frames.map((f) => ({
        iface: f.ifname,
        direction: f.pkttype === 4 ? 'out' : 'in',
        frame: parseFrame(fromHex(f.hex)),
        hex: f.hex,
      })),
      delivered: st.delivered,
      sendError: st.sendError,
    }));
  }

  /** Removes every namespace of the lab. Safe to call twice. */
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    const errors: unknown[] = [];
    for (const ns of [this.names.node, ...PEERS.map((p) => this.names.peers[p])]) {
      try {
        releaseNetns(ns);
      } catch (e) {
        errors.push(e);
      }
    }
    if (errors.length > 0) throw new AggregateError(errors, 'conformance lab: could not remove every namespace');
  }

  private assertLive(): void {
    if (this.destroyed) throw new Error('conformance lab: used after destroy()');
  }
}
