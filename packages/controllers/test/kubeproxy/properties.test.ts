/**
 * kube-proxy against generated histories: the faulty proxy fails the NodePort health checks on
 * the node without a local endpoint of the Local Service; the fixed one keeps them passing.
 */
import { describe, expect, it } from 'vitest';
import { checkProperty } from '@netsim/check';
import { POD_CHURN, RESTARTS, WATCH_FAULTS, fixedRuns, kubeProxyProperty } from '../properties.ts';

describe('kube-proxy properties', () => {
  it('should catch kube-proxy:faulty with no action at all: the initial cluster already has a node without a local endpoint', async () => {
    const r = await checkProperty(kubeProxyProperty('kube-proxy:faulty', POD_CHURN), { seed: 1, numRuns: 100 });
    if (r.ok) throw new Error('kube-proxy:faulty passed 100 generated histories');
    expect(r.deterministic).toBe(true);
    expect(r.outcome).toMatchObject({ status: 'violation', violation: { invariant: 'probes succeed' } });
    expect(r.scenario.timeline).toEqual([]);
    expect(r.story.join('\n')).toMatch(/node-2\/kube-proxy: iptables-restore --noflush --counters --wait \(\d+ lines\) → exit 2: iptables-restore v1\.8\.10 \(nf_tables\): Chain 'KUBE-SVL-[A-Z2-7]{16}' does not exist/);
    expect(r.story.join('\n')).toMatch(/VIOLATION of "probes succeed": probe nodeport-health default\/web via 192\.0\.2\.12:\d+ failed at t=\d+ms: reset \(RST from node-2 \(nothing listens on tcp port \d+\)\)/);
  }, 120_000);

  it('should hold for kube-proxy:fixed under churn, restarts, crashes and watch faults', async () => {
    const numRuns = fixedRuns(30);
    const r = await checkProperty(kubeProxyProperty('kube-proxy:fixed', [...POD_CHURN, ...RESTARTS, ...WATCH_FAULTS]), { seed: 1, numRuns });
    if (!r.ok) throw new Error(r.report);
    expect(r.numRuns).toBe(numRuns);
  }, 600_000);

  it('should hold for kube-proxy:fixed under iptables faults when failed syncs are retried every second', async () => {
    const numRuns = fixedRuns(20);
    const r = await checkProperty(kubeProxyProperty('kube-proxy:fixed', [...POD_CHURN, 'iptables.lock', 'iptables.restore-fail', 'iptables.slow'], { syncPeriodMs: 1000 }), { seed: 1, numRuns });
    if (!r.ok) throw new Error(r.report);
    expect(r.numRuns).toBe(numRuns);
  }, 600_000);
});
