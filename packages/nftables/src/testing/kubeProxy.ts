/**
 * Realistic kube-proxy `nftables`-mode transactions, in the shape knftables writes them to
 * `nft -f -`: the base chains and helper chains, the `cluster-ips`/`nodeport-ips` sets and the
 * `service-ips`/`service-nodeports`/`no-endpoint-*`/`firewall-ips` verdict maps, one
 * `service-HASH-ns/name/proto/port` chain per Service port (masquerade check, then
 * `numgen random mod N vmap { … }` over its endpoints) and one `endpoint-HASH-…` chain per
 * endpoint (hairpin masquerade, `dnat to`). Names and shapes follow kube-proxy's nftables
 * proxier; hashes are made up (stable per service), addresses come from test ranges.
 */

export interface KubeProxyNftOptions {
  /** Number of Services (each one TCP port). */
  readonly services: number;
  /** Endpoints per Service (default 2). */
  readonly endpoints?: number;
  /** Every k-th Service is a NodePort (default 4; 0 for none). */
  readonly nodePortEvery?: number;
  /** Every k-th Service has no endpoints (default 10; 0 for none): it goes to `no-endpoint-services`. */
  readonly noEndpointsEvery?: number;
}

const B32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** A stable made-up 8-character base32 hash, like kube-proxy's chain-name hashes. */
export function fakeHash(s: string): string {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619) >>> 0;
  let out = '';
  for (let i = 0; i < 8; i++) {
    out += B32[h & 31];
    h = Math.imul(h ^ (h >>> 13), 2654435761) >>> 0;
  }
  return out;
}

function ip(base: number, i: number): string {
  const n = base + i;
  return `${(n >>> 24) & 255}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

/** The ClusterIP of Service `i` (in 172.30.0.0/16 from .1, past 255 into the next /24s). */
export function clusterIp(i: number): string {
  return ip(0xac1e0000, i + 1);
}

/** Endpoint `e` of Service `i` (10.180.0.0/16 range of pod IPs). */
export function endpointIp(i: number, e: number): string {
  return ip(0x0ab40000, i * 4 + e + 1);
}

export function serviceChain(i: number): string {
  const name = `ns${i % 7}/svc${i}/tcp/p80`;
  return `service-${fakeHash(name)}-${name}`;
}

export function endpointChain(i: number, e: number): string {
  const name = `ns${i % 7}/svc${i}/tcp/p80`;
  const ep = endpointIp(i, e);
  return `endpoint-${fakeHash(`${name}${ep}`)}-${name}__${ep}/8080`;
}

const HEADER = `add table ip kube-proxy { comment "rules for kube-proxy" ; }
add chain ip kube-proxy cluster-ips-check
add chain ip kube-proxy filter-prerouting-pre-dnat { type filter hook prerouting priority -110 ; }
add chain ip kube-proxy filter-output-pre-dnat { type filter hook output priority -110 ; }
add chain ip kube-proxy filter-forward { type filter hook forward priority 0 ; }
add chain ip kube-proxy filter-input { type filter hook input priority 0 ; }
add chain ip kube-proxy filter-output { type filter hook output priority 0 ; }
add chain ip kube-proxy firewall-check
add chain ip kube-proxy mark-for-masquerade
add chain ip kube-proxy masquerading
add chain ip kube-proxy nat-output { type nat hook output priority -100 ; }
add chain ip kube-proxy nat-postrouting { type nat hook postrouting priority 100 ; }
add chain ip kube-proxy nat-prerouting { type nat hook prerouting priority -100 ; }
add chain ip kube-proxy nodeport-endpoints-check
add chain ip kube-proxy reject-chain { comment "helper for @no-endpoint-services / @no-endpoint-nodeports" ; }
add chain ip kube-proxy services
add chain ip kube-proxy service-endpoints-check
add set ip kube-proxy cluster-ips { type ipv4_addr ; comment "Active ClusterIPs" ; }
add set ip kube-proxy nodeport-ips { type ipv4_addr ; comment "IPs that accept NodePort traffic" ; }
add map ip kube-proxy firewall-ips { type ipv4_addr . inet_proto . inet_service : verdict ; comment "destinations that are subject to LoadBalancerSourceRanges" ; }
add map ip kube-proxy no-endpoint-nodeports { type inet_proto . inet_service : verdict ; comment "vmap to drop or reject packets to service nodeports with no endpoints" ; }
add map ip kube-proxy no-endpoint-services { type ipv4_addr . inet_proto . inet_service : verdict ; comment "vmap to drop or reject packets to services with no endpoints" ; }
add map ip kube-proxy service-ips { type ipv4_addr . inet_proto . inet_service : verdict ; comment "ClusterIP, ExternalIP and LoadBalancer IP traffic" ; }
add map ip kube-proxy service-nodeports { type inet_proto . inet_service : verdict ; comment "NodePort traffic" ; }
`;

const FLUSH_FIXED: readonly string[] = [
  'cluster-ips-check', 'filter-prerouting-pre-dnat', 'filter-output-pre-dnat', 'filter-forward', 'filter-input', 'filter-output',
  'firewall-check', 'mark-for-masquerade', 'masquerading', 'nat-output', 'nat-postrouting', 'nat-prerouting',
  'nodeport-endpoints-check', 'reject-chain', 'services', 'service-endpoints-check',
];

const FIXED_RULES = `add rule ip kube-proxy cluster-ips-check ip daddr @cluster-ips reject comment "Reject traffic to invalid ports of ClusterIPs"
add rule ip kube-proxy cluster-ips-check ip daddr { 172.30.0.0/16 } drop comment "Drop traffic to unallocated ClusterIPs"
add rule ip kube-proxy filter-prerouting-pre-dnat ct state new jump firewall-check
add rule ip kube-proxy filter-forward ct state new jump service-endpoints-check
add rule ip kube-proxy filter-forward ct state new jump cluster-ips-check
add rule ip kube-proxy filter-input ct state new jump nodeport-endpoints-check
add rule ip kube-proxy filter-input ct state new jump service-endpoints-check
add rule ip kube-proxy filter-output ct state new jump service-endpoints-check
add rule ip kube-proxy filter-output-pre-dnat ct state new jump firewall-check
add rule ip kube-proxy filter-output ct state new jump cluster-ips-check
add rule ip kube-proxy firewall-check ip daddr . meta l4proto . th dport vmap @firewall-ips
add rule ip kube-proxy mark-for-masquerade mark set mark or 0x4000
add rule ip kube-proxy masquerading mark and 0x4000 == 0 return
add rule ip kube-proxy masquerading mark set mark xor 0x4000
add rule ip kube-proxy masquerading masquerade fully-random
add rule ip kube-proxy nat-output jump services
add rule ip kube-proxy nat-postrouting jump masquerading
add rule ip kube-proxy nat-prerouting jump services
add rule ip kube-proxy nodeport-endpoints-check ip daddr @nodeport-ips meta l4proto . th dport vmap @no-endpoint-nodeports
add rule ip kube-proxy reject-chain reject
add rule ip kube-proxy services ip daddr . meta l4proto . th dport vmap @service-ips
add rule ip kube-proxy services ip daddr @nodeport-ips meta l4proto . th dport vmap @service-nodeports
add rule ip kube-proxy service-endpoints-check ip daddr . meta l4proto . th dport vmap @no-endpoint-services
add element ip kube-proxy nodeport-ips { 192.0.2.10 }
`;

/** The NodePort of Service `i`, if it is one: every `every`-th Service, numbered up from 30000. */
export function nodePortOf(i: number, every: number): number | undefined {
  return every > 0 && i % every === 0 ? 30000 + (Math.floor(i / every) % 2768) : undefined;
}

function serviceLines(i: number, o: Required<KubeProxyNftOptions>, out: string[], full: boolean): void {
  const cip = clusterIp(i);
  const name = `ns${i % 7}/svc${i}`;
  const nodePort = nodePortOf(i, o.nodePortEvery);
  out.push(`add element ip kube-proxy cluster-ips { ${cip} }`);
  if (o.noEndpointsEvery > 0 && i % o.noEndpointsEvery === o.noEndpointsEvery - 1) {
    out.push(`add element ip kube-proxy no-endpoint-services { ${cip} . tcp . 80 comment "${name}:p80" : goto reject-chain }`);
    return;
  }
  const svc = serviceChain(i);
  out.push(`add chain ip kube-proxy ${svc}`);
  if (full) out.push(`flush chain ip kube-proxy ${svc}`);
  out.push(`add rule ip kube-proxy ${svc} ip daddr ${cip} tcp dport 80 ip saddr != 10.0.0.0/8 jump mark-for-masquerade`);
  const vm: string[] = [];
  for (let e = 0; e < o.endpoints; e++) {
    const ep = endpointChain(i, e);
    vm.push(`${e} : goto ${ep}`);
    out.push(`add chain ip kube-proxy ${ep}`);
    if (full) out.push(`flush chain ip kube-proxy ${ep}`);
    out.push(`add rule ip kube-proxy ${ep} ip saddr ${endpointIp(i, e)} jump mark-for-masquerade`);
    out.push(`add rule ip kube-proxy ${ep} meta l4proto tcp dnat to ${endpointIp(i, e)}:8080`);
  }
  out.push(`add rule ip kube-proxy ${svc} numgen random mod ${o.endpoints} vmap { ${vm.join(' , ')} }`);
  out.push(`add element ip kube-proxy service-ips { ${cip} . tcp . 80 : goto ${svc} }`);
  if (nodePort !== undefined) out.push(`add element ip kube-proxy service-nodeports { tcp . ${nodePort} : goto ${svc} }`);
}

function defaults(o: KubeProxyNftOptions): Required<KubeProxyNftOptions> {
  return { services: o.services, endpoints: o.endpoints ?? 2, nodePortEvery: o.nodePortEvery ?? 4, noEndpointsEvery: o.noEndpointsEvery ?? 10 };
}

/** A full sync: every chain created and flushed, every set and map flushed and refilled. */
export function kubeProxyFullSync(opts: KubeProxyNftOptions): string {
  const o = defaults(opts);
  const out: string[] = [HEADER.trimEnd()];
  for (const c of FLUSH_FIXED) out.push(`flush chain ip kube-proxy ${c}`);
  for (const s of ['cluster-ips', 'nodeport-ips']) out.push(`flush set ip kube-proxy ${s}`);
  for (const m of ['firewall-ips', 'no-endpoint-nodeports', 'no-endpoint-services', 'service-ips', 'service-nodeports']) out.push(`flush map ip kube-proxy ${m}`);
  out.push(FIXED_RULES.trimEnd());
  for (let i = 0; i < o.services; i++) serviceLines(i, o, out, true);
  return `${out.join('\n')}\n`;
}

/**
 * A partial sync after Service `changed` lost its last endpoint and Service `added` appeared:
 * the changed Service's chains are flushed and deleted, its map element swapped for a
 * no-endpoints one; the new Service's chains and elements are added.
 */
export function kubeProxyPartialSync(opts: KubeProxyNftOptions & { readonly changed: number; readonly added: number }): string {
  const o = defaults(opts);
  const out: string[] = ['add table ip kube-proxy { comment "rules for kube-proxy" ; }'];
  const cip = clusterIp(opts.changed);
  const name = `ns${opts.changed % 7}/svc${opts.changed}`;
  out.push(`delete element ip kube-proxy service-ips { ${cip} . tcp . 80 }`);
  out.push(`add element ip kube-proxy no-endpoint-services { ${cip} . tcp . 80 comment "${name}:p80" : goto reject-chain }`);
  const nodePort = nodePortOf(opts.changed, o.nodePortEvery);
  if (nodePort !== undefined) out.push(`delete element ip kube-proxy service-nodeports { tcp . ${nodePort} }`);
  const svc = serviceChain(opts.changed);
  out.push(`flush chain ip kube-proxy ${svc}`);
  for (let e = 0; e < o.endpoints; e++) out.push(`flush chain ip kube-proxy ${endpointChain(opts.changed, e)}`);
  out.push(`delete chain ip kube-proxy ${svc}`);
  for (let e = 0; e < o.endpoints; e++) out.push(`delete chain ip kube-proxy ${endpointChain(opts.changed, e)}`);
  serviceLines(opts.added, { ...o, noEndpointsEvery: 0 }, out, false);
  return `${out.join('\n')}\n`;
}
