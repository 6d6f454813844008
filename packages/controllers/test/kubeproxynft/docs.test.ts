/**
 * docs/nftables.md shows real runs of the nftables controllers: its outputs are compared with
 * what the runs produce now.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { flannelNftTable, kubeProxyNftFailedSync, kubeProxyNftTable } from './examples.ts';

const page = readFileSync(fileURLToPath(new URL('../../../../docs/nftables.md', import.meta.url)), 'utf8');

/** The fenced block that follows `<!-- name -->` in the page. */
function block(name: string): string {
  const at = page.indexOf(`<!-- ${name} -->`);
  if (at < 0) throw new Error(`docs/nftables.md has no <!-- ${name} --> marker`);
  const start = page.indexOf('\n', page.indexOf('```', at)) + 1;
  return page.slice(start, page.indexOf('\n```', start));
}

describe('docs/nftables.md: the nftables controllers', () => {
  it("should show kube-proxy's real dispatch maps and Service chains", async () => {
    expect(block('output:kube-proxy-nft-table')).toBe((await kubeProxyNftTable()).join('\n'));
  });

  it('should show the real story of the faulty and the fixed proxy after a failed transaction', async () => {
    expect(block('output:kube-proxy-nft-faulty')).toBe((await kubeProxyNftFailedSync('faulty')).join('\n'));
    expect(block('output:kube-proxy-nft-fixed')).toBe((await kubeProxyNftFailedSync('fixed')).join('\n'));
  });

  it("should show flannel's real table", async () => {
    expect(block('output:flannel-nft')).toBe((await flannelNftTable()).join('\n'));
  });
});
