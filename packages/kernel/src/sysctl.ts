/**
 * The sysctls the datapath reads, and `sysctl -w`/`sysctl -n` over them by their real key names.
 *
 * Semantics follow `devinet.c`:
 * - `net.ipv4.conf.default.*` is the template copied into an interface when it is created; changing
 *   it later does not touch existing interfaces.
 * - `net.ipv4.ip_forward` and `net.ipv4.conf.all.forwarding` write `forwarding` of `all`,
 *   `default` and every interface; forwarding is then checked on the *incoming* interface.
 * - rp_filter's effective value is `max(conf.all, conf.<iface>)`; `route_localnet` and
 *   `accept_local` are `conf.all || conf.<iface>`.
 */
import { KernelError } from './errors.ts';
import type { IfaceConf } from './iface.ts';

/** Conntrack timeouts in seconds, named after `net.netfilter.nf_conntrack_*_timeout*`. */
export interface ConntrackTimeouts {
  readonly tcpSynSent: number;
  readonly tcpSynRecv: number;
  readonly tcpEstablished: number;
  readonly tcpFinWait: number;
  readonly tcpCloseWait: number;
  readonly tcpLastAck: number;
  readonly tcpTimeWait: number;
  readonly tcpClose: number;
  readonly udp: number;
  readonly udpStream: number;
}

/** Linux 6.x defaults (checked with `sysctl net.netfilter` on a 6.18 kernel). */
export const DEFAULT_CT_TIMEOUTS: ConntrackTimeouts = {
  tcpSynSent: 120,
  tcpSynRecv: 60,
  tcpEstablished: 432000,
  tcpFinWait: 120,
  tcpCloseWait: 60,
  tcpLastAck: 30,
  tcpTimeWait: 120,
  tcpClose: 10,
  udp: 30,
  udpStream: 120,
};

export interface Sysctls {
  readonly all: IfaceConf;
  readonly default: IfaceConf;
  readonly ctTimeouts: ConntrackTimeouts;
  /** `net.ipv4.ip_local_port_range`, inclusive. */
  readonly localPortRange: readonly [number, number];
  /** `net.ipv4.tcp_syn_retries`: SYN retransmissions before connect gives up. */
  readonly tcpSynRetries: number;
  /**
   * `net.netfilter.nf_conntrack_tcp_loose` (0 or 1, default 1): with 1 conntrack picks up a
   * connection from a mid-stream ACK; with 0 such a first packet gets no entry (INVALID).
   */
  readonly tcpLoose: number;
}

/** A fresh interface's conf when nothing was configured (the kernel's compiled-in defaults). */
export const KERNEL_IFACE_CONF: IfaceConf = {
  rpFilter: 0,
  forwarding: 0,
  routeLocalnet: 0,
  acceptLocal: 0,
  srcValidMark: 0,
};

export function defaultSysctls(): Sysctls {
  return {
    all: KERNEL_IFACE_CONF,
    default: KERNEL_IFACE_CONF,
    ctTimeouts: DEFAULT_CT_TIMEOUTS,
    localPortRange: [32768, 60999],
    tcpSynRetries: 6,
    tcpLoose: 1,
  };
}

/** rp_filter as the datapath applies it. */
export type RpFilterMode = 'off' | 'strict' | 'loose';

/**
 * Effective rp_filter of an interface: the kernel's `IN_DEV_MAXCONF(all, iface)`, then 0 is off,
 * 1 strict and anything else loose (`__fib_validate_source` only tests `rpf == 1`).
 */
export function effectiveRpFilter(sysctls: Sysctls, conf: IfaceConf): { readonly value: number; readonly mode: RpFilterMode } {
  const value = Math.max(sysctls.all.rpFilter, conf.rpFilter);
  return { value, mode: value === 0 ? 'off' : value === 1 ? 'strict' : 'loose' };
}

export function effectiveRouteLocalnet(sysctls: Sysctls, conf: IfaceConf): boolean {
  return sysctls.all.routeLocalnet !== 0 || conf.routeLocalnet !== 0;
}

export function effectiveAcceptLocal(sysctls: Sysctls, conf: IfaceConf): boolean {
  return sysctls.all.acceptLocal !== 0 || conf.acceptLocal !== 0;
}

const CONF_KEYS: { readonly [k: string]: keyof IfaceConf } = {
  rp_filter: 'rpFilter',
  forwarding: 'forwarding',
  route_localnet: 'routeLocalnet',
  accept_local: 'acceptLocal',
  src_valid_mark: 'srcValidMark',
};

const CT_KEYS: { readonly [k: string]: keyof ConntrackTimeouts } = {
  nf_conntrack_tcp_timeout_syn_sent: 'tcpSynSent',
  nf_conntrack_tcp_timeout_syn_recv: 'tcpSynRecv',
  nf_conntrack_tcp_timeout_established: 'tcpEstablished',
  nf_conntrack_tcp_timeout_fin_wait: 'tcpFinWait',
  nf_conntrack_tcp_timeout_close_wait: 'tcpCloseWait',
  nf_conntrack_tcp_timeout_last_ack: 'tcpLastAck',
  nf_conntrack_tcp_timeout_time_wait: 'tcpTimeWait',
  nf_conntrack_tcp_timeout_close: 'tcpClose',
  nf_conntrack_udp_timeout: 'udp',
  nf_conntrack_udp_timeout_stream: 'udpStream',
};

/** A parsed sysctl key: which object it addresses. */
export type SysctlTarget =
  | { readonly kind: 'ip_forward' }
  | { readonly kind: 'conf'; readonly scope: 'all' | 'default' | { readonly iface: string }; readonly field: keyof IfaceConf }
  | { readonly kind: 'ct'; readonly field: keyof ConntrackTimeouts }
  | { readonly kind: 'local_port_range' }
  | { readonly kind: 'tcp_syn_retries' }
  | { readonly kind: 'tcp_loose' };

function notFound(key: string): KernelError {
  return new KernelError('sysctl', `sysctl: cannot stat /proc/sys/${key.replaceAll('.', '/')}: No such file or directory`);
}

/**
 * Resolves a key (`net.ipv4.conf.eth0.rp_filter`, or the `/`-separated form) against the known
 * interface names; unknown keys fail with the real tool's message.
 */
export function parseSysctlKey(key: string, ifaceNames: readonly string[]): SysctlTarget {
  const k = key.replaceAll('/', '.');
  if (k === 'net.ipv4.ip_forward') return { kind: 'ip_forward' };
  if (k === 'net.ipv4.ip_local_port_range') return { kind: 'local_port_range' };
  if (k === 'net.ipv4.tcp_syn_retries') return { kind: 'tcp_syn_retries' };
  if (k === 'net.netfilter.nf_conntrack_tcp_loose') return { kind: 'tcp_loose' };
  const ct = /^net\.netfilter\.([a-z_]+)$/.exec(k);
  if (ct !== null) {
    const field = CT_KEYS[ct[1] ?? ''];
    if (field !== undefined) return { kind: 'ct', field };
    throw notFound(k);
  }
  // Interface names may contain dots (eth0.100), so the field is the last component.
  const m = /^net\.ipv4\.conf\.(.+)\.([a-z_]+)$/.exec(k);
  if (m !== null) {
    const scopeName = m[1] ?? '';
    const field = CONF_KEYS[m[2] ?? ''];
    if (field === undefined) throw notFound(k);
    if (scopeName === 'all' || scopeName === 'default') return { kind: 'conf', scope: scopeName, field };
    if (ifaceNames.includes(scopeName)) return { kind: 'conf', scope: { iface: scopeName }, field };
  }
  throw notFound(k);
}

/** Parses a value for a target; the kernel rejects what does not parse as an integer. */
export function parseSysctlValue(target: SysctlTarget, key: string, value: string): number | readonly [number, number] {
  const bad = (): KernelError => new KernelError('sysctl', `sysctl: setting key "${key}": Invalid argument`);
  if (target.kind === 'local_port_range') {
    const parts = value.trim().split(/\s+/);
    const lo = Number(parts[0]);
    const hi = Number(parts[1]);
    if (parts.length !== 2 || !Number.isInteger(lo) || !Number.isInteger(hi) || lo < 1 || hi > 65535 || lo > hi) throw bad();
    return [lo, hi];
  }
  const v = value.trim();
  if (!/^-?[0-9]+$/.test(v)) throw bad();
  const n = Number(v);
  // /proc/sys integers are C ints: the kernel stores rp_filter=3 or forwarding=5 as given.
  if (n < -2147483648 || n > 2147483647) throw bad();
  if (target.kind === 'ct' && n < 0) throw bad();
  if (target.kind === 'tcp_syn_retries' && (n < 1 || n > 127)) throw bad();
  // A u8 with min 0 and max 1 in the kernel (proc_dou8vec_minmax): 2 or -1 is EINVAL.
  if (target.kind === 'tcp_loose' && n !== 0 && n !== 1) throw bad();
  return n;
}

/** Sets one field of a conf from the integer written to `/proc/sys`. */
export function withConfField(conf: IfaceConf, field: keyof IfaceConf, n: number): IfaceConf {
  return { ...conf, [field]: n };
}
