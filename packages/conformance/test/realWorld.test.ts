import { describe, expect, inject, it } from 'vitest';
import { kernelOutputs, loadRealWorld, netsimListing, netsimSave, recordedOutputs } from '../src/realWorld.ts';
import { lineDiff } from '../src/formatCheck.ts';

const env = inject('conformanceEnv');

const SHAPES = ['antrea', 'calico', 'chains-named-like-targets', 'cilium', 'docker', 'firewalld', 'flannel', 'kube-proxy', 'kube-router'];

describe('real-world-shaped dumps against what the real tools printed (recorded)', () => {
  it('should hold a dump of every shape', () => {
    expect(loadRealWorld().map((d) => d.name)).toEqual(SHAPES);
  });

  for (const d of loadRealWorld()) {
    it(`should print ${d.name} as iptables-save printed it`, () => {
      expect(lineDiff(recordedOutputs(d).save, netsimSave(d))).toEqual([]);
    });
    it(`should list ${d.name} as iptables -L -n -v printed it, table by table`, () => {
      expect(lineDiff(recordedOutputs(d).listing, netsimListing(d))).toEqual([]);
    });
  }
});

describe.skipIf(!env.ok)('real-world-shaped dumps on the kernel', () => {
  for (const d of loadRealWorld()) {
    it(`should load ${d.name} on the kernel and read it back exactly as netsim prints it`, () => {
      const k = kernelOutputs(d);
      expect(k.error).toBeNull();
      expect(lineDiff(k.save ?? '', netsimSave(d))).toEqual([]);
      expect(lineDiff(k.listing ?? '', netsimListing(d))).toEqual([]);
    });
  }
});
