/**
 * kube-proxy's chain names: `KUBE-SVC-`, `KUBE-SVL-`, `KUBE-EXT-`, `KUBE-FW-` + the first 16
 * characters of base32(sha256(servicePortName + protocol)) with the standard RFC 4648 alphabet;
 * `KUBE-SEP-` hashes the endpoint (`IP:port`) too. Protocols are lower case, names are
 * `namespace/name:portName` (`namespace/name` for an unnamed port).
 */
import { createHash } from 'node:crypto';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** RFC 4648 base32 (Go's `base32.StdEncoding`), without padding. */
export function base32(bytes: Uint8Array): string {
  let out = '';
  let buffer = 0;
  let bits = 0;
  for (const b of bytes) {
    buffer = (buffer << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(buffer >>> (bits - 5)) & 31] ?? '';
      bits -= 5;
    }
    buffer &= (1 << bits) - 1;
  }
  if (bits > 0) out += ALPHABET[(buffer << (5 - bits)) & 31] ?? '';
  return out;
}

function hash16(text: string): string {
  return base32(createHash('sha256').update(text, 'utf8').digest()).slice(0, 16);
}

/**
 * `portProtoHash`.
 *
 * @example
 * ```ts
 * portProtoHash('kube-system/kube-dns:dns', 'udp'); // 'TCOU7JCQXEZGVUNU'
 * ```
 */
export function portProtoHash(servicePortName: string, protocol: string): string {
  return hash16(servicePortName + protocol);
}

/** `KUBE-SVC-<hash>`: the Cluster-policy chain of a service port. */
export const servicePortPolicyClusterChain = (name: string, protocol: string): string => `KUBE-SVC-${portProtoHash(name, protocol)}`;
/** `KUBE-SVL-<hash>`: the Local-policy chain (node-local endpoints only). */
export const servicePortPolicyLocalChain = (name: string, protocol: string): string => `KUBE-SVL-${portProtoHash(name, protocol)}`;
/** `KUBE-EXT-<hash>`: where external traffic (NodePort) enters. */
export const serviceExternalChain = (name: string, protocol: string): string => `KUBE-EXT-${portProtoHash(name, protocol)}`;
/** `KUBE-FW-<hash>`: the load balancer source-range firewall (not written by netsim). */
export const serviceFirewallChain = (name: string, protocol: string): string => `KUBE-FW-${portProtoHash(name, protocol)}`;
/** `KUBE-SEP-<hash>`: one endpoint (`IP:port`) of a service port. */
export const servicePortEndpointChain = (name: string, protocol: string, endpoint: string): string => `KUBE-SEP-${hash16(name + protocol + endpoint)}`;

/** Chains kube-proxy owns per service (and may delete when stale). */
export function isServiceChainName(chain: string): boolean {
  return ['KUBE-SVC-', 'KUBE-SVL-', 'KUBE-SEP-', 'KUBE-FW-', 'KUBE-EXT-'].some((p) => chain.startsWith(p));
}
