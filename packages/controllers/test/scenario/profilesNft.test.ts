/**
 * The fuzz profile of kube-proxy's nftables mode: the faulty proxy (partial syncs after a failed
 * transaction) is caught with a short history, the fixed one stays silent.
 */
import { describe, expect, it } from 'vitest';
import { checkProperty } from '@netsim/check';
import { CONTROLLERS, FUZZ_PROFILES, fuzzProfileFor, fuzzProperty, type FuzzProfile } from '../../src/index.ts';

const profile = FUZZ_PROFILES['kube-proxy-nft'] as FuzzProfile;

describe('fuzz profile: kube-proxy-nft', () => {
  it('should be the profile of both variants, with failed transactions among the generated actions', () => {
    expect(fuzzProfileFor('kube-proxy-nft:faulty')).toBe(profile);
    expect(fuzzProfileFor('kube-proxy-nft:fixed')).toBe(profile);
    expect(profile.scenarios.timeline?.kinds).toContain('iptables.restore-fail');
  });

  it('should catch kube-proxy-nft:faulty within the default 100 runs: one failed transaction, and the change it carried is never written', async () => {
    const r = await checkProperty(fuzzProperty('kube-proxy-nft:faulty', profile, CONTROLLERS), { seed: 1, numRuns: 100 });
    if (r.ok) throw new Error('expected kube-proxy-nft:faulty to be caught');
    expect(r.deterministic).toBe(true);
    expect(r.outcome).toMatchObject({ status: 'violation', violation: { invariant: 'probes succeed' } });
    expect(r.scenario.timeline.map((t) => t.action.kind)).toEqual(['iptables.restore-fail']);
    expect(r.scenario.controller).toEqual({ name: 'kube-proxy-nft:faulty', options: { syncPeriodMs: 3000 } });
    const story = r.story.join('\n');
    expect(story).toMatch(/node-1\/kube-proxy: nft -f - \(\d+ lines\) → exit 1: \/dev\/stdin:1:1-\d+: Error: Could not process rule: Resource temporarily unavailable/);
    expect(story).toMatch(/VIOLATION of "probes succeed": probe nodeport-health default\/web via 192\.0\.2\.11:30080 failed/);
  });

  it('should pass kube-proxy-nft:fixed over the CI-sized campaign (a failed sync makes the next one full)', async () => {
    expect(await checkProperty(fuzzProperty('kube-proxy-nft:fixed', profile, CONTROLLERS), { seed: 1, numRuns: 60 })).toMatchObject({ ok: true, numRuns: 60 });
  }, 120_000);
});
