/**
 * Host configuration by command line, in the syntax of `ip` and `sysctl`, for host files and
 * tests:
 *
 * ```
 * ip link add eth0 type physical          # also: veth, bridge, dummy (= physical)
 * ip link add flannel.1 type vxlan id 1 dstport 8472 [local 192.168.1.10]
 * ip link set eth0 up | down | master cni0 | nomaster
 * ip addr add 198.51.100.10/24 dev eth0 [scope global|link|host]
 * ip addr del 198.51.100.10/24 dev eth0
 * ip route add [unicast|local|blackhole|unreachable|prohibit|throw] PREFIX|default
 *              [via GW] [dev DEV] [src ADDR] [table ID|main|local|default] [metric N]
 *              [scope global|link|host] [proto kernel|boot|static] [onlink]
 * ip route del PREFIX|default [table ID] [metric N]
 * ip rule add [not] [from PREFIX|all] [to PREFIX] [fwmark V[/M]] [iif DEV] [oif DEV]
 *             [priority|pref N] lookup|table ID
 * ip rule del priority N
 * sysctl -w KEY=VALUE
 * listen tcp|udp [ADDR:]PORT [silent]          # netsim: a listening socket
 * overlay DEV peer NEXTHOP underlay ADDR      # netsim: the VXLAN FDB, collapsed to L3
 * ```
 */
import { formatCidr, parseCidr, tryParseCidr, tryParseIpv4, type Cidr, type Ipv4 } from '@netsim/netfilter';
import { KernelError } from './errors.ts';
import { TABLE_DEFAULT, TABLE_LOCAL, TABLE_MAIN, type PolicyRule, type RouteType } from './fib.ts';
import type { Host } from './host.ts';
import type { RouteSpec } from './hostConfig.ts';
import type { AddrScope, IfaceKind } from './iface.ts';

/** Splits a command line on whitespace (no quoting: none of these commands needs it). */
export function tokenize(line: string): string[] {
  return line.trim().split(/\s+/).filter((t) => t.length > 0);
}

/** A syntax error about one token; the token is kept so a host file can point at it. */
function bad(message: string, token: string): KernelError {
  return new KernelError('parse', message, { token });
}

function garbage(tok: string): KernelError {
  return bad(`Error: either "to" is duplicate, or "${tok}" is a garbage.`, tok);
}

function need(args: readonly string[], i: number, what: string): string {
  const v = args[i];
  if (v === undefined) throw new KernelError('parse', `Command line is not complete. Try option "help" (missing ${what})`);
  return v;
}

function addr(tok: string): Ipv4 {
  const a = tryParseIpv4(tok);
  if (a === undefined) throw bad(`Error: inet address is expected rather than "${tok}".`, tok);
  return a;
}

function prefixArg(tok: string): Cidr {
  if (tok === 'default' || tok === 'all') return parseCidr('0.0.0.0/0');
  const c = tryParseCidr(tok);
  if (c === undefined) throw bad(`Error: inet prefix is expected rather than "${tok}".`, tok);
  return c;
}

function tableArg(tok: string): number {
  if (tok === 'main') return TABLE_MAIN;
  if (tok === 'local') return TABLE_LOCAL;
  if (tok === 'default') return TABLE_DEFAULT;
  if (!/^[0-9]+$/.test(tok)) throw bad(`Error: argument "${tok}" is wrong: "table" value is invalid`, tok);
  return Number(tok);
}

function intArg(tok: string, what: string): number {
  if (!/^[0-9]+$/.test(tok)) throw bad(`Error: argument "${tok}" is wrong: "${what}" value is invalid`, tok);
  return Number(tok);
}

function scopeArg(tok: string): AddrScope {
  if (tok === 'global' || tok === 'universe') return 'global';
  if (tok === 'link' || tok === 'host') return tok;
  throw bad(`Error: argument "${tok}" is wrong: invalid scope value.`, tok);
}

const ROUTE_TYPES: readonly RouteType[] = ['unicast', 'local', 'blackhole', 'unreachable', 'prohibit', 'throw'];

/** Parses the arguments of `ip route add` after the verb. */
export function parseRouteArgs(args: readonly string[]): RouteSpec {
  let i = 0;
  let type: RouteType = 'unicast';
  const first = need(args, 0, 'prefix');
  if ((ROUTE_TYPES as readonly string[]).includes(first)) {
    type = first as RouteType;
    i++;
  }
  const dst = prefixArg(need(args, i++, 'prefix'));
  const spec: { -readonly [K in keyof RouteSpec]: RouteSpec[K] } = { dst, type };
  while (i < args.length) {
    const k = args[i++] ?? '';
    switch (k) {
      case 'via':
        spec.via = addr(need(args, i++, 'gateway'));
        break;
      case 'dev':
        spec.dev = need(args, i++, 'device');
        break;
      case 'src':
        spec.src = addr(need(args, i++, 'source'));
        break;
      case 'table':
        spec.table = tableArg(need(args, i++, 'table'));
        break;
      case 'metric':
      case 'priority':
      case 'preference':
        spec.metric = intArg(need(args, i++, 'metric'), 'metric');
        break;
      case 'scope':
        spec.scope = scopeArg(need(args, i++, 'scope'));
        break;
      case 'proto': {
        const p = need(args, i++, 'protocol');
        if (p !== 'kernel' && p !== 'boot' && p !== 'static') throw new KernelError('parse', `Error: argument "${p}" is wrong: "protocol" value is invalid`);
        spec.proto = p;
        break;
      }
      case 'onlink':
        spec.onlink = true;
        break;
      default:
        throw garbage(k);
    }
  }
  return spec;
}

function parseRuleArgs(args: readonly string[]): Omit<PolicyRule, 'priority'> & { priority?: number } {
  const r: { -readonly [K in keyof PolicyRule]?: PolicyRule[K] } = {};
  let table: number | undefined;
  for (let i = 0; i < args.length; ) {
    const k = args[i++] ?? '';
    switch (k) {
      case 'not':
        r.not = true;
        break;
      case 'from': {
        const v = need(args, i++, 'prefix');
        if (v !== 'all') r.from = prefixArg(v);
        break;
      }
      case 'to': {
        const v = need(args, i++, 'prefix');
        if (v !== 'all') r.to = prefixArg(v);
        break;
      }
      case 'fwmark': {
        const v = need(args, i++, 'fwmark');
        const [val, mask] = v.split('/');
        const n = Number(val);
        const m = mask === undefined ? 0xffffffff : Number(mask);
        if (!Number.isInteger(n) || !Number.isInteger(m)) throw new KernelError('parse', `Error: argument "${v}" is wrong: fwmark value is invalid`);
        r.fwmark = { value: n >>> 0, mask: m >>> 0 };
        break;
      }
      case 'iif':
      case 'dev':
        r.iif = need(args, i++, 'device');
        break;
      case 'oif':
        r.oif = need(args, i++, 'device');
        break;
      case 'priority':
      case 'pref':
      case 'preference':
        r.priority = intArg(need(args, i++, 'priority'), 'preference');
        break;
      case 'table':
      case 'lookup':
        table = tableArg(need(args, i++, 'table'));
        break;
      default:
        throw garbage(k);
    }
  }
  if (table === undefined) throw new KernelError('parse', 'Error: a rule needs "lookup TABLE".');
  return { ...r, table };
}

function linkKind(tok: string): IfaceKind {
  switch (tok) {
    case 'physical':
    case 'dummy':
      return 'physical';
    case 'veth':
      return 'veth';
    case 'bridge':
      return 'bridge';
    case 'vxlan':
      return 'overlay';
    default:
      throw bad(`Error: Unknown device type "${tok}".`, tok);
  }
}

function linkCommand(host: Host, args: readonly string[]): void {
  const verb = need(args, 0, 'verb');
  if (verb === 'add') {
    const name = need(args, 1, 'device name');
    if (args[2] !== 'type') throw new KernelError('parse', 'Error: "type" is required: ip link add NAME type KIND');
    const kind = linkKind(need(args, 3, 'type'));
    if (kind !== 'overlay') {
      if (args.length > 4) throw garbage(args[4] ?? '');
      host.addIface(name, kind);
      return;
    }
    let vni: number | undefined;
    let port = 4789;
    let local: Ipv4 | undefined;
    for (let i = 4; i < args.length; ) {
      const k = args[i++] ?? '';
      if (k === 'id') vni = intArg(need(args, i++, 'id'), 'id');
      else if (k === 'dstport') port = intArg(need(args, i++, 'dstport'), 'dstport');
      else if (k === 'local') local = addr(need(args, i++, 'local'));
      else if (k === 'dev') i++;
      else if (k === 'nolearning') continue;
      else throw garbage(k);
    }
    if (vni === undefined) throw new KernelError('parse', 'Error: vxlan: missing virtual network identifier (id).');
    host.addOverlay(name, { vni, port, ...(local !== undefined ? { local } : {}) });
    return;
  }
  if (verb === 'set') {
    const name = need(args, 1, 'device name');
    for (let i = 2; i < args.length; ) {
      const k = args[i++] ?? '';
      if (k === 'up' || k === 'down') host.setLinkUp(name, k === 'up');
      else if (k === 'master') host.setMaster(name, need(args, i++, 'master'));
      else if (k === 'nomaster') host.setMaster(name, null);
      else throw garbage(k);
    }
    return;
  }
  throw new KernelError('parse', `Command "${verb}" is unknown, try "ip link help".`);
}

function addrCommand(host: Host, args: readonly string[]): void {
  const verb = need(args, 0, 'verb');
  const cidr = need(args, 1, 'address');
  let dev: string | undefined;
  let scope: AddrScope = 'global';
  for (let i = 2; i < args.length; ) {
    const k = args[i++] ?? '';
    if (k === 'dev') dev = need(args, i++, 'device');
    else if (k === 'scope') scope = scopeArg(need(args, i++, 'scope'));
    else throw garbage(k);
  }
  if (dev === undefined) throw new KernelError('parse', 'Not enough information: "dev" argument is required.');
  if (verb === 'add') host.addAddr(dev, cidr, scope);
  else if (verb === 'del' || verb === 'delete') host.delAddr(dev, cidr);
  else throw new KernelError('parse', `Command "${verb}" is unknown, try "ip address help".`);
}

function routeCommand(host: Host, args: readonly string[]): void {
  const verb = need(args, 0, 'verb');
  const rest = args.slice(1);
  if (verb === 'add') host.addRoute(parseRouteArgs(rest));
  else if (verb === 'del' || verb === 'delete') {
    const spec = parseRouteArgs(rest);
    host.delRoute(formatCidr(spec.dst), spec.table);
  } else throw new KernelError('parse', `Command "${verb}" is unknown, try "ip route help".`);
}

function ruleCommand(host: Host, args: readonly string[]): void {
  const verb = need(args, 0, 'verb');
  if (verb === 'add') host.addRule(parseRuleArgs(args.slice(1)));
  else if (verb === 'del' || verb === 'delete') {
    const i = args.findIndex((a) => a === 'priority' || a === 'pref' || a === 'preference');
    if (i < 0) throw new KernelError('parse', 'netsim deletes rules by priority: ip rule del priority N');
    host.delRule(intArg(need(args, i + 1, 'priority'), 'preference'));
  } else throw new KernelError('parse', `Command "${verb}" is unknown, try "ip rule help".`);
}

/**
 * Runs one configuration command against a host (see the module comment for the syntax).
 * Errors are {@link KernelError}s: `parse` for syntax, `config`/`not-found`/`sysctl` for what the
 * kernel refuses.
 *
 * @example
 * runHostCommand(host, 'ip route add default via 198.51.100.254');
 */
export function runHostCommand(host: Host, line: string): void {
  const t = tokenize(line);
  const cmd = t[0];
  if (cmd === undefined) return;
  if (cmd === 'ip') {
    const obj = need(t, 1, 'object');
    const rest = t.slice(2);
    if (obj === 'link' || obj === 'l') linkCommand(host, rest);
    else if (obj === 'addr' || obj === 'address' || obj === 'a') addrCommand(host, rest);
    else if (obj === 'route' || obj === 'r' || obj === 'ro') routeCommand(host, rest);
    else if (obj === 'rule' || obj === 'ru') ruleCommand(host, rest);
    else throw bad(`Object "${obj}" is unknown, try "ip help".`, obj);
    return;
  }
  if (cmd === 'sysctl') {
    const args = t.slice(1).filter((a) => a !== '-w' && a !== '-q');
    if (args.length === 0) throw new KernelError('parse', 'sysctl: no variables specified');
    for (const a of args) {
      const eq = a.indexOf('=');
      if (eq < 0) throw new KernelError('parse', `sysctl: "${a}" must be of the form name=value`);
      host.sysctl(a.slice(0, eq), a.slice(eq + 1));
    }
    return;
  }
  if (cmd === 'listen') {
    const proto = need(t, 1, 'protocol');
    if (proto !== 'tcp' && proto !== 'udp') throw new KernelError('parse', `listen: protocol must be tcp or udp, not "${proto}"`);
    const where = need(t, 2, 'port');
    const colon = where.lastIndexOf(':');
    const port = intArg(colon < 0 ? where : where.slice(colon + 1), 'port');
    if (port < 1 || port > 65535) throw new KernelError('parse', `listen: port ${port} is out of range`);
    const a = colon < 0 ? undefined : addr(where.slice(0, colon));
    const mode = t[3];
    if (mode !== undefined && mode !== 'silent' && mode !== 'echo') throw garbage(mode);
    host.listen(proto, port, { ...(a !== undefined && a !== 0 ? { addr: a } : {}), ...(mode !== undefined ? { udpReply: mode } : {}) });
    return;
  }
  if (cmd === 'overlay') {
    const dev = need(t, 1, 'device');
    if (t[2] !== 'peer' || t[4] !== 'underlay') throw new KernelError('parse', 'overlay: expected "overlay DEV peer NEXTHOP underlay ADDR"');
    host.setOverlayPeer(dev, addr(need(t, 3, 'next hop')), addr(need(t, 5, 'underlay address')));
    return;
  }
  throw bad(`unknown command "${cmd}" (expected ip, sysctl, listen or overlay)`, cmd);
}
