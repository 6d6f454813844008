/**
 * flannel against generated histories: the v0.26 lifecycle is caught at the first restart; the
 * v0.27 one keeps FLANNEL-POSTRTG programmed and Pods' egress working.
 */
import { describe, expect, it } from 'vitest';
import { checkProperty } from '@netsim/check';
import { MASQ_CHAIN } from '../../src/index.ts';
import { IPTABLES_FAULTS, POD_CHURN, RESTARTS, WATCH_FAULTS, fixedRuns, flannelProperty } from '../properties.ts';

describe('flannel properties', () => {
  it('should catch flannel:faulty, shrunk to a single graceful restart', async () => {
    const r = await checkProperty(flannelProperty('flannel:faulty', [...POD_CHURN, ...RESTARTS]), { seed: 1, numRuns: 100 });
    if (r.ok) throw new Error('flannel:faulty passed 100 generated histories');
    expect(r.deterministic).toBe(true);
    expect(r.outcome).toMatchObject({ status: 'violation', violation: { invariant: `${MASQ_CHAIN} never empty once programmed` } });
    expect(r.scenario.timeline.map((t) => t.action.kind)).toEqual(['agent.restart']);
    expect(r.story.join('\n')).toMatch(/gets SIGTERM[\s\S]*iptables-restore --noflush --wait \(9 lines\)\n.*VIOLATION/);
  }, 120_000);

  it('should hold for flannel:fixed under churn, restarts, crashes, watch and iptables faults', async () => {
    const numRuns = fixedRuns(40);
    const r = await checkProperty(flannelProperty('flannel:fixed', [...POD_CHURN, ...RESTARTS, ...WATCH_FAULTS, ...IPTABLES_FAULTS]), { seed: 1, numRuns });
    if (!r.ok) throw new Error(r.report);
    expect(r.numRuns).toBe(numRuns);
  }, 600_000);
});
