/**
 * Pieces both releases' Pod handlers share unchanged.
 */
import type { Pod } from '@netsim/kube';
import { patchPod } from './annotations.ts';
import type { NplController } from './controller.ts';
import type { NplAnnotation } from './types.ts';

/** Publish the mappings on the Pod (remove the annotation for an empty list). */
export async function updatePodNplAnnotation(c: NplController, pod: Pod, annotations: readonly NplAnnotation[]): Promise<void> {
  await patchPod(c.ctx.kube, pod, annotations);
  c.ctx.log.debug('Successfully updated NodePortLocal annotation', { pod: `${pod.metadata.namespace}/${pod.metadata.name}` });
}
