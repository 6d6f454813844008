/**
 * One Linux host (a node, a Pod's network namespace, an external client, a router): its
 * configuration as an immutable {@link HostConfig} value, its ruleset as an immutable `Ruleset`
 * value, and its runtime state — the conntrack table, the TCP/UDP sockets of its stack and the
 * netfilter `nth` counters.
 *
 * Configuration and ruleset changes replace the held value atomically (a packet in flight never
 * sees half a change); the compiled FIB and ruleset are rebuilt lazily, once per value. An
 * nftables ruleset ({@link Host.nft}) sits beside the iptables one; the datapath runs both.
 */
import { compile, createEvalState, emptyRuleset, formatIpv4, parseCidr, tryParseIpv4, type CompiledRuleset, type EvalState, type Hook, type Ipv4, type Ruleset } from '@netsim/netfilter';
import { createNftEvalState, emptyRuleset as emptyNftRuleset, pruneCounts, withCounters, type NftEvalState, type Ruleset as NftRuleset } from '@netsim/nftables';
import { ConntrackTable, formatCtEntry } from './conntrack.ts';
import { rulesetNeedsConntrack } from './conntrackNeed.ts';
import { KernelError } from './errors.ts';
import { compileFib, formatRoute, formatRule, type Fib, type PolicyRule } from './fib.ts';
import * as hc from './hostConfig.ts';
import type { AddrScope, Iface, IfaceKind, OverlayConf } from './iface.ts';
import { formatIfaceAddr } from './iface.ts';
import { runHostCommand } from './ipCommand.ts';
import { indexNftHooks, nftNeedsConntrack, type NftHookChains } from './nft.ts';
import { SocketTable } from './sockets.ts';
import { defaultSysctls, type Sysctls } from './sysctl.ts';

export class Host {
  readonly name: string;
  private cfg: hc.HostConfig;
  private fibCache: Fib | null = null;
  private rs: Ruleset;
  private compiledCache: CompiledRuleset | null = null;
  /** The connection tracking table (`conntrack -L`). */
  readonly conntrack: ConntrackTable;
  /** The TCP/UDP sockets of the host's stack (listeners live in the config). */
  readonly sockets: SocketTable;
  /** `statistic --mode nth` counters, per rule instance. */
  readonly evalState: EvalState;
  private nftRs: NftRuleset = emptyNftRuleset();
  private nftHooksCache: ReadonlyMap<Hook, NftHookChains> | null = null;
  /** nft state that outlives a packet: `numgen inc` counters, `counter` counts, dynamic set members. */
  readonly nftState: NftEvalState = createNftEvalState();
  private ctMode: ConntrackMode;
  private ctNeeded: boolean | null = null;

  constructor(name: string, opts: { sysctls?: Sysctls; ruleset?: Ruleset; conntrack?: ConntrackMode } = {}) {
    this.name = name;
    this.ctMode = opts.conntrack ?? 'auto';
    this.cfg = hc.newHostConfig(name, opts.sysctls ?? defaultSysctls());
    this.rs = opts.ruleset ?? emptyRuleset();
    this.conntrack = new ConntrackTable();
    this.sockets = new SocketTable();
    this.evalState = createEvalState();
  }

  /** The current configuration value. */
  get config(): hc.HostConfig {
    return this.cfg;
  }

  /** Replaces the configuration (for reducers from `hostConfig.ts` or a whole new value). */
  setConfig(cfg: hc.HostConfig): void {
    if (cfg.name !== this.name) throw new KernelError('config', `setConfig: config of "${cfg.name}" given to host "${this.name}"`);
    this.cfg = cfg;
    this.fibCache = null;
  }

  private update(f: (c: hc.HostConfig) => hc.HostConfig): this {
    this.setConfig(f(this.cfg));
    return this;
  }

  /** The routing state compiled from the current configuration. */
  get fib(): Fib {
    if (this.fibCache === null) this.fibCache = compileFib(this.cfg.ifaces, this.cfg.routes, this.cfg.rules);
    return this.fibCache;
  }

  /** The ruleset value currently in force. */
  get ruleset(): Ruleset {
    return this.rs;
  }

  /** Swaps the ruleset atomically (what a whole `iptables-restore` commit does). */
  setRuleset(rs: Ruleset): this {
    if (rs !== this.rs) {
      if (rs.tables.nat.absent !== this.rs.tables.nat.absent) this.nftHooksCache = null;
      this.rs = rs;
      this.compiledCache = null;
      this.ctNeeded = null;
    }
    return this;
  }

  /** The nftables ruleset in force beside the iptables one (as loaded; see {@link nftListing} for counters). */
  get nft(): NftRuleset {
    return this.nftRs;
  }

  /**
   * Swaps the nft ruleset atomically (what one `nft -f` transaction does). Counters of rules the
   * new value keeps go on counting; those of removed rules are forgotten.
   */
  setNft(rs: NftRuleset): this {
    if (rs !== this.nftRs) {
      this.nftRs = rs;
      this.nftHooksCache = null;
      this.ctNeeded = null;
      pruneCounts(rs, this.nftState);
    }
    return this;
  }

  /** The nft ruleset with its counters as `nft list ruleset` shows them now. */
  get nftListing(): NftRuleset {
    return withCounters(this.nftRs, this.nftState);
  }

  /** The nft base chains at a hook (undefined when none). */
  nftChainsAt(hook: Hook): NftHookChains | undefined {
    if (this.nftHooksCache === null) this.nftHooksCache = indexNftHooks(this.nftRs, this.rs.tables.nat.absent !== true);
    return this.nftHooksCache.get(hook);
  }

  /**
   * Whether this host tracks connections now. `auto` (the default) follows the kernel: only
   * while a rule needs conntrack (a nat rule, a conntrack/state match, CONNMARK, …). Entries made
   * earlier stay until they expire, as in the kernel.
   */
  get tracking(): boolean {
    if (this.ctMode !== 'auto') return this.ctMode === 'always';
    if (this.ctNeeded === null) this.ctNeeded = rulesetNeedsConntrack(this.rs) || nftNeedsConntrack(this.nftRs);
    return this.ctNeeded;
  }

  /** Forces conntrack on (`always`, as if some module held it) or off, or back to `auto`. */
  setConntrackMode(mode: ConntrackMode): this {
    this.ctMode = mode;
    return this;
  }

  /** The current ruleset compiled for evaluation (compiled once per ruleset value). */
  get compiled(): CompiledRuleset {
    if (this.compiledCache === null) this.compiledCache = compile(this.rs);
    return this.compiledCache;
  }

  iface(name: string): Iface {
    return hc.findIface(this.cfg, name);
  }

  hasIface(name: string): boolean {
    return this.cfg.ifaces.some((i) => i.name === name);
  }

  /** `ip link add NAME type KIND`. */
  addIface(name: string, kind: IfaceKind, opts: hc.AddIfaceOptions = {}): this {
    return this.update((c) => hc.addIface(c, name, kind, opts));
  }

  /** Adds an overlay device (VXLAN-like). */
  addOverlay(name: string, overlay: Omit<OverlayConf, 'fdb'> & { readonly fdb?: OverlayConf['fdb'] }, opts: { up?: boolean } = {}): this {
    return this.update((c) => hc.addIface(c, name, 'overlay', { ...opts, overlay: { ...overlay, fdb: overlay.fdb ?? [] } }));
  }

  /** Tells an overlay device which underlay address is behind a next hop. */
  setOverlayPeer(name: string, nexthop: Ipv4, underlay: Ipv4): this {
    return this.update((c) => hc.setOverlayPeer(c, name, nexthop, underlay));
  }

  /**
   * `ip link set NAME up|down`. Taking an interface down also deletes the conntrack entries whose
   * MASQUERADE binding was made for it, as the kernel's masquerade notifier does.
   */
  setLinkUp(name: string, up: boolean): this {
    this.update((c) => hc.setLinkUp(c, name, up));
    if (!up) for (const e of this.conntrack.list(-Infinity)) if (e.masqIface === name) this.conntrack.remove(e);
    return this;
  }

  setMaster(name: string, bridge: string | null): this {
    return this.update((c) => hc.setMaster(c, name, bridge));
  }

  /** `ip addr add CIDR dev NAME`, e.g. `addAddr('eth0', '198.51.100.10/24')`. */
  addAddr(name: string, cidrText: string, scope: AddrScope = 'global'): this {
    const { addr, prefix } = parseHostCidr(cidrText);
    return this.update((c) => hc.addAddr(c, name, addr, prefix, scope));
  }

  /**
   * `ip addr del CIDR dev NAME`. Conntrack entries source-NATed to a removed address by
   * MASQUERADE are deleted, as the kernel's masquerade notifier does.
   */
  delAddr(name: string, cidrText: string): this {
    const { addr, prefix } = parseHostCidr(cidrText);
    const before = new Set(this.cfg.ifaces.flatMap((i) => i.addrs.map((a) => a.addr as number)));
    this.update((c) => hc.delAddr(c, name, addr, prefix));
    const after = new Set(this.cfg.ifaces.flatMap((i) => i.addrs.map((a) => a.addr as number)));
    for (const e of this.conntrack.list(-Infinity)) {
      if (e.masqIface !== null && before.has(e.reply.dst) && !after.has(e.reply.dst)) this.conntrack.remove(e);
    }
    return this;
  }

  /**
   * Runs configuration commands in `ip`/`sysctl` syntax, one per line (see `ipCommand.ts`).
   *
   * @example
   * host.run('ip addr add 198.51.100.10/24 dev eth0', 'ip link set eth0 up', 'ip route add default via 198.51.100.1');
   */
  run(...lines: string[]): this {
    for (const l of lines) for (const line of l.split('\n')) runHostCommand(this, line.replace(/#.*$/, ''));
    return this;
  }

  /** `ip route add …` from a structured spec. */
  addRoute(spec: hc.RouteSpec): this {
    return this.update((c) => hc.addRoute(c, spec));
  }

  delRoute(dstText: string, table?: number): this {
    const dst = dstText === 'default' ? parseCidr('0.0.0.0/0') : parseCidr(dstText);
    return this.update((c) => hc.delRoute(c, dst, table));
  }

  addRule(rule: Omit<PolicyRule, 'priority'> & { readonly priority?: number }): this {
    return this.update((c) => hc.addRule(c, rule));
  }

  delRule(priority: number): this {
    return this.update((c) => hc.delRule(c, priority));
  }

  /** `sysctl -w key=value`. */
  sysctl(key: string, value: string | number): this {
    return this.update((c) => hc.setSysctl(c, key, String(value)));
  }

  /** `sysctl -n key`. */
  getSysctl(key: string): string {
    return hc.getSysctl(this.cfg, key);
  }

  /** Opens a listening socket (`addr` defaults to the wildcard). */
  listen(proto: 'tcp' | 'udp', port: number, opts: { addr?: Ipv4; udpReply?: 'echo' | 'silent' } = {}): this {
    return this.update((c) =>
      hc.addListener(c, { proto, port, addr: opts.addr ?? 0, ...(opts.udpReply !== undefined ? { udpReply: opts.udpReply } : {}) }),
    );
  }

  /** Closes listening sockets on a port. Established connections stay. */
  unlisten(proto: 'tcp' | 'udp', port: number): this {
    return this.update((c) => hc.removeListener(c, proto, port));
  }

  /** Whether `addr` is one of this host's addresses. */
  isLocal(addr: number): boolean {
    return this.fib.localAddrs.has(addr);
  }

  /** `ip -4 addr`-like listing. */
  formatAddrs(): string {
    const lines: string[] = [];
    for (const i of this.cfg.ifaces) {
      const flags = i.up ? 'UP' : 'DOWN';
      lines.push(`${i.index}: ${i.name}: <${flags}> ${i.kind}${i.master !== undefined ? ` master ${i.master}` : ''}`);
      for (const a of i.addrs) lines.push(`    inet ${formatIfaceAddr(a)} scope ${a.scope}${a.secondary ? ' secondary' : ''} ${i.name}`);
    }
    return lines.join('\n');
  }

  /** `ip route show table all` (IPv4 part). */
  formatRoutes(): string {
    return this.fib.routes.map(formatRoute).join('\n');
  }

  /** `ip rule`. */
  formatRules(): string {
    return this.cfg.rules.map(formatRule).join('\n');
  }

  /** A JSON-serialisable snapshot of configuration and runtime state at `nowMs`. */
  snapshot(nowMs: number): HostSnapshot {
    return {
      name: this.name,
      ifaces: this.cfg.ifaces.map((i) => ({
        name: i.name,
        kind: i.kind,
        up: i.up,
        addrs: i.addrs.map((a) => `${formatIfaceAddr(a)}${a.secondary ? ' secondary' : ''}`),
        ...(i.master !== undefined ? { master: i.master } : {}),
      })),
      routes: this.fib.routes.map(formatRoute),
      rules: this.cfg.rules.map(formatRule),
      listeners: this.cfg.listeners.map((l) => `${l.proto} ${l.addr === 0 ? '0.0.0.0' : formatIpv4(l.addr)}:${l.port}`),
      conntrack: this.conntrack.list(nowMs).map((e) => formatCtEntry(e, nowMs)),
    };
  }
}

/** When a host tracks connections: `auto` as the kernel (when a rule needs it), or forced. */
export type ConntrackMode = 'auto' | 'always' | 'never';

export interface HostSnapshot {
  readonly name: string;
  readonly ifaces: readonly { readonly name: string; readonly kind: IfaceKind; readonly up: boolean; readonly addrs: readonly string[]; readonly master?: string }[];
  readonly routes: readonly string[];
  readonly rules: readonly string[];
  readonly listeners: readonly string[];
  /** Entries as `conntrack -L` prints them. */
  readonly conntrack: readonly string[];
}

/** `a.b.c.d/n` keeping the host bits (as `ip addr` takes it); a bare address is `/32`. */
export function parseHostCidr(text: string): { addr: Ipv4; prefix: number } {
  const slash = text.indexOf('/');
  // A bad address and a bad prefix get the same message from `ip`, so one check serves both.
  const addr = tryParseIpv4(slash < 0 ? text : text.slice(0, slash));
  const prefixText = slash < 0 ? '32' : text.slice(slash + 1);
  const prefix = Number(prefixText);
  if (addr === undefined || !/^[0-9]{1,2}$/.test(prefixText) || prefix > 32) {
    throw new KernelError('config', `Error: any valid prefix is expected rather than "${text}".`);
  }
  return { addr, prefix };
}
