/**
 * flannel's nftables masquerade manager: table `ip flannel-ipv4` as flannel writes it, and what
 * each variant leaves behind across a restart.
 */
import { describe, expect, it } from 'vitest';
import { formatRuleset } from '@netsim/nftables';
import { World, story } from '@netsim/sim';
import { CONTROLLERS, flannelNft, nftMasqRules, type FlannelNftVariant } from '../../src/index.ts';

function world(variant: FlannelNftVariant): World {
  const w = new World({
    seed: 1,
    cluster: { nodes: [{ name: 'node-1' }], pods: [{ name: 'web-0', node: 'node-1', labels: { app: 'web' }, ports: [{ port: 8080, protocol: 'TCP' }] }] },
    controller: flannelNft(variant),
    probes: [{ kind: 'pod-egress', everyMs: 250 }],
  });
  w.at(12_000, { kind: 'agent.restart', node: 'node-1', downMs: 2000 });
  return w;
}

describe('flannel-nft', () => {
  it('should write the forward and postrtg base chains of table ip flannel-ipv4 as flannel does', async () => {
    const w = world('fixed');
    expect((await w.run(5000)).status).toBe('ok');
    const text = formatRuleset(w.nftRuleset('node-1'));
    expect(text).toContain('table ip flannel-ipv4 {\n\tcomment "rules for flannel-ipv4"\n');
    expect(text).toContain('\tchain forward {\n\t\tcomment "chain to accept flannel traffic"\n\t\ttype filter hook forward priority filter; policy accept;\n\t\tip saddr 198.18.0.0/15 accept\n\t\tip daddr 198.18.0.0/15 accept\n\t}');
    expect(text).toContain(
      [
        '\tchain postrtg {',
        '\t\tcomment "chain to manage traffic masquerading by flannel"',
        '\t\ttype nat hook postrouting priority srcnat; policy accept;',
        '\t\tmeta mark 0x00004000 return',
        '\t\tip saddr 198.18.0.0/24 ip daddr 198.18.0.0/15 return',
        '\t\tip saddr 198.18.0.0/15 ip daddr 198.18.0.0/24 return',
        '\t\tip saddr != 198.18.0.0/24 ip daddr 198.18.0.0/15 return',
        '\t\tip saddr 198.18.0.0/15 ip daddr != 224.0.0.0/4 masquerade fully-random',
        '\t\tip saddr != 198.18.0.0/15 ip daddr 198.18.0.0/15 masquerade fully-random',
        '\t}',
      ].join('\n'),
    );
    expect(nftMasqRules('198.18.0.0/15', '198.18.0.0/24')).toHaveLength(6);
  });

  it('should keep its table across a restart (fixed): egress never fails', async () => {
    const w = world('fixed');
    expect((await w.run(20_000)).status).toBe('ok');
    const lines = story(w.events).join('\n');
    expect(lines).not.toContain('delete table');
    expect(lines).not.toMatch(/probe pod-egress .* fails/);
  });

  it('should delete its table on SIGTERM (faulty): Pods egress un-masqueraded until the next flanneld starts', async () => {
    const w = world('faulty');
    expect((await w.run(20_000)).status).toBe('ok');
    const deletes = w.events.filter((e) => e.type === 'nft.exec' && e['input'] === 'delete table ip flannel-ipv4\n');
    expect(deletes).toHaveLength(1);
    expect(story(w.events).join('\n')).toMatch(/t=12250ms probe pod-egress default\/web-0 → 203\.0\.113\.10:443 fails/);
    expect(formatRuleset(w.nftRuleset('node-1'))).toContain('chain postrtg');
    expect(CONTROLLERS['flannel-nft:fixed']({}).name).toBe('flanneld');
  });
});
