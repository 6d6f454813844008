import { freeze } from 'immer';
import { describeDelta, type KnownObjects, type Pod, type PopResult } from '../src/index.ts';

/** A bare Pod value for queue tests (the queue only reads metadata). */
export function pod(name: string, uid: string, rv: number): Pod {
  return freeze(
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'ns', uid, resourceVersion: String(rv), creationTimestamp: 0, labels: {}, annotations: {} },
      spec: { containers: [{ name: 'c', ports: [] }], terminationGracePeriodSeconds: 30, hostNetwork: false },
      status: { phase: 'Pending', podIPs: [], conditions: [] },
    },
    true,
  );
}

export class Known implements KnownObjects<Pod> {
  readonly map = new Map<string, Pod>();
  set(...pods: Pod[]): this {
    for (const p of pods) this.map.set(`${p.metadata.namespace}/${p.metadata.name}`, p);
    return this;
  }
  listKeys(): string[] {
    return [...this.map.keys()];
  }
  getByKey(k: string): Pod | undefined {
    return this.map.get(k);
  }
}

export function popAll(q: { pop(): PopResult<Pod> | undefined }): string[] {
  const out: string[] = [];
  for (let r = q.pop(); r !== undefined; r = q.pop()) out.push(`${r.key}${r.isInInitialList ? ' (initial)' : ''}: ${r.deltas.map(describeDelta).join(', ')}`);
  return out;
}
