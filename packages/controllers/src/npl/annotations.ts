/**
 * The `nodeportlocal.antrea.io` Pod annotation: written with a JSON merge patch (removed with
 * `null`), compared as a set.
 */
import { isKubeError, type Pod } from '@netsim/kube';
import type { KubeClient } from '@netsim/sim';
import { NPL_ANNOTATION, type NplAnnotation } from './types.ts';

/** Parse the annotation; throws on anything but a JSON array. */
export function parseNplAnnotation(text: string): NplAnnotation[] {
  const v: unknown = JSON.parse(text);
  if (!Array.isArray(v)) throw new Error(`json: cannot unmarshal ${typeof v} into Go value of type []types.NPLAnnotation`);
  return (v as unknown[]).map((e) => {
    const o = (e ?? {}) as Record<string, unknown>;
    // Go's json.Unmarshal leaves missing fields at their zero values.
    return {
      podPort: typeof o['podPort'] === 'number' ? o['podPort'] : 0,
      nodeIP: typeof o['nodeIP'] === 'string' ? o['nodeIP'] : '',
      nodePort: typeof o['nodePort'] === 'number' ? o['nodePort'] : 0,
      protocol: typeof o['protocol'] === 'string' ? o['protocol'] : '',
    };
  });
}

/** The annotation's text, fields in Antrea's order. */
export function formatNplAnnotation(list: readonly NplAnnotation[]): string {
  return JSON.stringify(list.map((a) => ({ podPort: a.podPort, nodeIP: a.nodeIP, nodePort: a.nodePort, protocol: a.protocol })));
}

/** True when both lists hold the same annotations, whatever their order. */
export function compareNplAnnotationLists(a: readonly NplAnnotation[], b: readonly NplAnnotation[]): boolean {
  if (a.length !== b.length) return false;
  const byPort = (x: NplAnnotation, y: NplAnnotation): number => x.nodePort - y.nodePort;
  const sa = [...a].sort(byPort);
  const sb = [...b].sort(byPort);
  return sa.every((x, i) => {
    const y = sb[i];
    return y !== undefined && x.podPort === y.podPort && x.nodeIP === y.nodeIP && x.nodePort === y.nodePort && x.protocol === y.protocol;
  });
}

/**
 * Set (or, for an empty list, remove) the annotation on the Pod by name. A Pod that no longer
 * exists is not an error. The patch has no uid precondition, as in Antrea: a Pod recreated under
 * the same name meanwhile gets it.
 */
export async function patchPod(kube: KubeClient, pod: Pod, value: readonly NplAnnotation[]): Promise<void> {
  try {
    await kube.patch('Pod', pod.metadata.namespace, pod.metadata.name, { metadata: { annotations: { [NPL_ANNOTATION]: value.length > 0 ? formatNplAnnotation(value) : null } } });
  } catch (e) {
    if (isKubeError(e) && e.code === 'NotFound') return;
    throw new Error(`unable to update NodePortLocal annotation for Pod ${pod.metadata.namespace}/${pod.metadata.name}: ${(e as Error).message}`, { cause: e });
  }
}

/** Remove the annotation if the Pod has one. */
export async function cleanupNplAnnotationForPod(kube: KubeClient, pod: Pod): Promise<void> {
  if (pod.metadata.annotations[NPL_ANNOTATION] === undefined) return;
  await patchPod(kube, pod, []);
}
