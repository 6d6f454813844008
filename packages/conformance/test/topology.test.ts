import { describe, expect, it } from 'vitest';
import { formatIpv4, parseIpv4 as ip } from '@netsim/netfilter';
import { broadcastOf, ifaceOfPeer, lookupRoute, mainRoutes, TOPOLOGY } from '../src/topology.ts';

describe('topology', () => {
  it('should route by longest prefix: peers on their link, 198.18.0.0/16 via uplink2, the rest via the client', () => {
    const via = (a: string): string => {
      const r = lookupRoute(TOPOLOGY, ip(a));
      return `${r.dev}${r.via === undefined ? '' : ` via ${formatIpv4(r.via)}`}`;
    };
    expect(via('192.0.2.2')).toBe('eth0');
    expect(via('203.0.113.2')).toBe('vethpod');
    expect(via('198.18.3.3')).toBe('eth1 via 198.51.100.2');
    expect(via('198.19.0.7')).toBe('eth0 via 192.0.2.2');
    expect(via('203.0.113.100')).toBe('eth0 via 192.0.2.2');
  });

  it('should give every link a /30 whose only neighbour is the peer', () => {
    expect(mainRoutes(TOPOLOGY).filter((r) => r.via === undefined).map((r) => `${formatIpv4(r.dst.addr)}/${r.dst.prefix}`)).toEqual(['192.0.2.0/30', '198.51.100.0/30', '203.0.113.0/30']);
    expect(formatIpv4(broadcastOf(ifaceOfPeer(TOPOLOGY, 'pod')))).toBe('203.0.113.3');
  });
});
