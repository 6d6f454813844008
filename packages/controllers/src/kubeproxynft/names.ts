/**
 * kube-proxy's nftables names. Every object lives in table `ip kube-proxy`, so no name carries a
 * `KUBE-` prefix; the per-Service and per-endpoint chains are `PREFIX-HASH-namespace/name/proto/port`
 * (endpoints add `__IP/port`), where HASH is the first 8 characters of base32(sha256(the rest)),
 * so they stay readable and distinct. A `/` never appears in the fixed chains' names: that is how
 * kube-proxy tells its per-Service chains from the rest.
 */
import { createHash } from 'node:crypto';
import { base32 } from '../kubeproxy/hash.ts';

export const KUBE_PROXY_TABLE = 'kube-proxy';
export const SERVICES_CHAIN = 'services';
export const SERVICE_IPS_MAP = 'service-ips';
export const SERVICE_NODEPORTS_MAP = 'service-nodeports';
export const NODEPORT_IPS_SET = 'nodeport-ips';
export const CLUSTER_IPS_SET = 'cluster-ips';
export const SERVICE_ENDPOINTS_CHECK_CHAIN = 'service-endpoints-check';
export const NODEPORT_ENDPOINTS_CHECK_CHAIN = 'nodeport-endpoints-check';
export const NO_ENDPOINT_SERVICES_MAP = 'no-endpoint-services';
export const NO_ENDPOINT_NODEPORTS_MAP = 'no-endpoint-nodeports';
export const REJECT_CHAIN = 'reject-chain';
export const CLUSTER_IPS_CHECK_CHAIN = 'cluster-ips-check';
export const FIREWALL_IPS_MAP = 'firewall-ips';
export const FIREWALL_CHECK_CHAIN = 'firewall-check';
export const MARK_MASQ_CHAIN = 'mark-for-masquerade';
export const MASQUERADING_CHAIN = 'masquerading';

/** The 8-character hash, `-`, then the name (truncated with `...` past nft's 256-byte limit less the prefix). */
export function hashAndTruncate(name: string): string {
  const hashed = `${base32(createHash('sha256').update(name, 'utf8').digest()).slice(0, 8)}-${name}`;
  const max = 256 - 16;
  return hashed.length > max ? `${hashed.slice(0, max - 3)}...` : hashed;
}

/**
 * `HASH-namespace/name/protocol/portName` (an unnamed port leaves the last part empty).
 *
 * @example
 * ```ts
 * servicePortChainNameBase('ns1/svc1', 'p80', 'tcp'); // 'ULMVA6XW-ns1/svc1/tcp/p80'
 * ```
 */
export function servicePortChainNameBase(namespacedName: string, portName: string, protocol: string): string {
  return hashAndTruncate(`${namespacedName}/${protocol}/${portName}`);
}

/** `HASH-namespace/name/protocol/portName__IP/port`. */
export function servicePortEndpointChainNameBase(namespacedName: string, portName: string, protocol: string, endpoint: string): string {
  const colon = endpoint.lastIndexOf(':');
  return hashAndTruncate(`${namespacedName}/${protocol}/${portName}__${endpoint.slice(0, colon)}/${endpoint.slice(colon + 1)}`);
}

/** kube-proxy's per-Service and per-endpoint chains are the only ones with a `/` in their name. */
export function isServiceChainName(chain: string): boolean {
  return chain.includes('/');
}
