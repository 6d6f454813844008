import { describe, expect, it } from 'vitest';
import { formatSave, freshRuleset, parseSave, restore } from '../../src/index.ts';
import { kubeProxyDump } from '../../src/testing/index.ts';

const ruleCount = (text: string): number => text.split('\n').filter((l) => l.startsWith('-A ')).length;

describe('kubeProxyDump', () => {
  it('should print a dump that iptables-save would print back unchanged', () => {
    const text = kubeProxyDump({ services: 150, seed: 3 });
    expect(formatSave(parseSave(text))).toBe(text);
  });

  it('should write kube-proxy restore input that restores to the same ruleset as the dump', () => {
    const save = kubeProxyDump({ services: 120, seed: 9 });
    const input = kubeProxyDump({ services: 120, seed: 9, format: 'restore' });
    expect(input).not.toBe(save);
    expect(input).toContain('--probability 0.3333333333 ');
    expect(formatSave(restore(freshRuleset(), input))).toBe(save);
  });

  it('should be deterministic and vary with the seed', () => {
    expect(kubeProxyDump({ services: 50, seed: 1 })).toBe(kubeProxyDump({ services: 50, seed: 1 }));
    expect(kubeProxyDump({ services: 50, seed: 1 })).not.toBe(kubeProxyDump({ services: 50, seed: 2 }));
  });

  it('should grow to about nine rules per service with kube-proxy\'s chain layout', () => {
    const text = kubeProxyDump({ services: 1000 });
    const rules = ruleCount(text);
    expect(rules).toBeGreaterThan(8000);
    expect(rules).toBeLessThan(11000);
    const r = parseSave(text);
    const svc = Object.keys(r.tables.nat.chains).filter((c) => c.startsWith('KUBE-SVC-'));
    expect(svc).toHaveLength(1000);
    expect(r.tables.nat.chains['KUBE-SERVICES']?.rules).toHaveLength(1001);
    expect(r.tables.nat.chains['KUBE-SERVICES']?.rules.at(-1)?.target).toEqual({ kind: 'jump', chain: 'KUBE-NODEPORTS' });
  });
});
