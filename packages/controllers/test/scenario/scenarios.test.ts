/**
 * Every bundled scenario in `scenarios/` replays to its expectation with the reference
 * controllers: faulty variants break their invariant in the expected window, fixed ones hold.
 */
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CONTROLLERS } from '../../src/index.ts';
import { loadScenarioFile, replay } from '@netsim/scenario';

const dir = fileURLToPath(new URL('../../../../scenarios/', import.meta.url));
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.yaml'))
  .sort();

describe('bundled scenarios', () => {
  it('should include the incident scenarios, each faulty one with a fixed twin', () => {
    expect(files).toEqual(
      expect.arrayContaining([
        'npl-multi-port-cleanup-faulty.yaml',
        'npl-recreate-in-watch-gap-faulty.yaml',
        'npl-restart-heals-stale-rules.yaml',
        'flannel-restart-empties-chain-faulty.yaml',
        'flannel-restart-empties-chain-fixed.yaml',
        'flannel-restart-egress-window.yaml',
        'nodeport-external-policy-cluster.yaml',
        'nodeport-external-policy-local.yaml',
        'nodeport-proxy-defect-faulty.yaml',
        'nodeport-rp-filter-overlay-strict.yaml',
        'nodeport-rp-filter-overlay-loose.yaml',
        'nodeport-multi-homed.yaml',
        'nodeport-multi-homed-stateful-gw.yaml',
        'nodeport-multi-homed-nodeport-addresses.yaml',
        'nodeport-proxy-defect-one-node.yaml',
        'nodeport-external-policy-local-scale-down.yaml',
        'nodeport-nft-failed-sync-faulty.yaml',
        'nodeport-nft-failed-sync-fixed.yaml',
        'flannel-nft-restart-deletes-table-faulty.yaml',
        'flannel-nft-restart-deletes-table-fixed.yaml',
      ]),
    );
    for (const f of files.filter((x) => x.endsWith('-faulty.yaml'))) expect(files, f).toContain(f.replace('-faulty.yaml', '-fixed.yaml'));
  });

  for (const f of files) {
    it(`should replay ${f} to its expectation`, async () => {
      const file = await loadScenarioFile(`${dir}${f}`);
      expect(file.name).toBe(f.replace(/\.yaml$/, ''));
      const r = await replay(file, { controllers: CONTROLLERS });
      expect(r.met, `${r.mismatch ?? ''}\n${r.story.join('\n')}`).toBe(true);
      if (f.endsWith('-faulty.yaml')) expect(file.expect.outcome).toBe('violation');
      if (f.endsWith('-fixed.yaml')) expect(file.expect.outcome).toBe('ok');
    });
  }
});
