import { describe, expect, it } from 'vitest';
import { cidr, emptyRuleset, parseIpv4 as ip, type Rule, type Ruleset } from '@netsim/netfilter';
import { renderRestore, renderRule } from '../src/render.ts';

describe('render', () => {
  it('should write every module and target of the generated subset as iptables-restore arguments', () => {
    const rule: Rule = {
      src: { cidr: cidr(ip('192.0.2.0'), 24), negate: true },
      dst: { cidr: cidr(ip('198.18.0.5'), 32), negate: false },
      inIface: { name: 'eth', wildcard: true, negate: false },
      proto: { proto: 6, negate: false },
      matches: [
        { kind: 'tcp', sport: { range: { from: 1024, to: 65535 }, negate: false }, dport: { range: { from: 80, to: 80 }, negate: true }, flags: { mask: 0x17, comp: 0x02, negate: false } },
        { kind: 'multiport', which: 'dports', ports: [{ from: 80, to: 80 }, { from: 443, to: 445 }], negate: true },
        { kind: 'mark', value: 0x4000, mask: 0x4000, negate: true },
        { kind: 'conntrack', ctstate: { states: ['NEW', 'DNAT'], negate: false } },
        { kind: 'state', states: ['ESTABLISHED'], negate: true },
        { kind: 'addrtype', dst: { types: ['LOCAL'], negate: false }, limitIfaceIn: true, limitIfaceOut: false },
        { kind: 'comment', comment: 'k8s svc' },
      ],
      target: { kind: 'DNAT', to: { minIp: ip('203.0.113.2'), maxIp: ip('203.0.113.2'), minPort: 8080, maxPort: 8080 }, random: false, persistent: false },
    };
    expect(renderRule(rule)).toBe(
      '! -s 192.0.2.0/24 -d 198.18.0.5/32 -i eth+ -p tcp -m tcp --sport 1024:65535 ! --dport 80 --tcp-flags FIN,SYN,RST,ACK SYN' +
        ' -m multiport ! --dports 80,443:445 -m mark ! --mark 0x4000/0x4000 -m conntrack --ctstate NEW,DNAT -m state ! --state ESTABLISHED' +
        ' -m addrtype --dst-type LOCAL --limit-iface-in -m comment --comment "k8s svc" -j DNAT --to-destination 203.0.113.2:8080',
    );
    expect(renderRule({ matches: [], target: { kind: 'MARK', value: 0x1, mask: 0xffffffff } })).toBe('-j MARK --set-xmark 0x1/0xffffffff');
    expect(renderRule({ matches: [], target: { kind: 'goto', chain: 'NCF-B' } })).toBe('-g NCF-B');
    expect(renderRule({ matches: [], target: { kind: 'NOTRACK' } })).toBe('-j CT --notrack');
  });

  it('should list all four tables with built-in chains first and user chains by name', () => {
    const base = emptyRuleset();
    const rs: Ruleset = {
      tables: {
        ...base.tables,
        filter: {
          name: 'filter',
          chains: {
            ...base.tables.filter.chains,
            'NCF-B': { name: 'NCF-B', rules: [] },
            'NCF-A': { name: 'NCF-A', rules: [{ matches: [], target: { kind: 'RETURN' } }] },
            FORWARD: { name: 'FORWARD', policy: 'DROP', rules: [{ matches: [], target: { kind: 'jump', chain: 'NCF-A' } }] },
          },
        },
      },
    };
    const text = renderRestore(rs);
    expect(text.split('COMMIT')).toHaveLength(5);
    expect(text).toContain('*filter\n:INPUT ACCEPT [0:0]\n:FORWARD DROP [0:0]\n:OUTPUT ACCEPT [0:0]\n:NCF-A - [0:0]\n:NCF-B - [0:0]\n-A FORWARD -j NCF-A\n-A NCF-A -j RETURN\nCOMMIT\n');
  });

  it('should refuse what it cannot write rather than guess', () => {
    expect(() => renderRule({ matches: [{ kind: 'unknown', module: 'recent', args: ['--rcheck'] }] })).toThrow(/match unknown is outside the generated subset/);
    expect(() => renderRule({ matches: [], target: { kind: 'LOG', prefix: 'x' } })).toThrow(/target LOG/);
  });
});
