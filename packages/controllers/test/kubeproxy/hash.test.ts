import { describe, expect, it } from 'vitest';
import { base32, isServiceChainName, portProtoHash, servicePortEndpointChain, servicePortPolicyClusterChain } from '../../src/index.ts';

describe('kube-proxy chain names', () => {
  it('should encode base32 with the RFC 4648 alphabet (test vectors, padding dropped)', () => {
    const enc = (s: string): string => base32(new TextEncoder().encode(s));
    expect(['', 'f', 'fo', 'foo', 'foob', 'fooba', 'foobar'].map(enc)).toEqual(['', 'MY', 'MZXQ', 'MZXW6', 'MZXW6YQ', 'MZXW6YTB', 'MZXW6YTBOI']);
  });

  it('should hash service port names as kube-proxy does', () => {
    // The kube-dns chain every cluster has.
    expect(servicePortPolicyClusterChain('kube-system/kube-dns:dns', 'udp')).toBe('KUBE-SVC-TCOU7JCQXEZGVUNU');
    expect(servicePortPolicyClusterChain('kube-system/kube-dns:dns-tcp', 'tcp')).toBe('KUBE-SVC-ERIFXISQEP7F7OF4');
    expect(servicePortPolicyClusterChain('default/kubernetes:https', 'tcp')).toBe('KUBE-SVC-NPX46M4PTMTKRN6Y');
    expect(portProtoHash('default/web:http', 'tcp')).toHaveLength(16);
  });

  it('should hash the endpoint into KUBE-SEP names, and recognise service chains', () => {
    const a = servicePortEndpointChain('default/web:http', 'tcp', '198.18.0.2:8080');
    const b = servicePortEndpointChain('default/web:http', 'tcp', '198.18.0.3:8080');
    expect(a).toMatch(/^KUBE-SEP-[A-Z2-7]{16}$/);
    expect(a).not.toBe(b);
    expect(isServiceChainName(a)).toBe(true);
    expect(isServiceChainName('KUBE-SERVICES')).toBe(false);
    expect(isServiceChainName('KUBE-MARK-MASQ')).toBe(false);
  });
});
