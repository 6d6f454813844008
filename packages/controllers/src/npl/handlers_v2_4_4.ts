/**
 * The Pod handlers of Antrea v2.4.4 (and v2.5.0, and the 2.3 branch after v2.3.2): the **fixed**
 * NodePortLocal agent. Against v2.3.2 (see `handlers_v2_3_2.ts`):
 *
 * - {@link cleanupPodRules} walks every entry of the Pod and deletes each one not kept, returning
 *   the first error (so the key is retried) instead of returning after the first entry;
 * - a cached entry whose Pod IP differs from the Pod's current IP is deleted and recreated;
 * - a Pod without an IP gets its rules and its annotation removed.
 */
import type { Pod } from '@netsim/kube';
import { updatePodNplAnnotation } from './handlers_common.ts';
import type { NplController, NplHandlers } from './controller.ts';
import { NPL_ANNOTATION, buildPortProto, parsePortProto, type NplAnnotation } from './types.ts';
import { cleanupNplAnnotationForPod, compareNplAnnotationLists, parseNplAnnotation } from './annotations.ts';

/** Delete every entry of the Pod whose `port:protocol` is not in `keep` (all of them for an empty set). */
export async function cleanupPodRules(c: NplController, key: string, keep: ReadonlySet<string>): Promise<void> {
  for (const data of c.portTable.getDataForPod(key)) {
    if (keep.has(buildPortProto(data.podPort, data.protocol))) continue;
    c.ctx.log.info('Deleting NodePortLocal rule', { pod: key, podIP: data.podIP, port: data.podPort, protocol: data.protocol });
    try {
      await c.portTable.deleteRule(key, data.podPort, data.protocol);
    } catch (e) {
      throw new Error(`failed to delete rule for Pod ${key}, Pod Port ${data.podPort}, Protocol ${data.protocol}: ${(e as Error).message}`, { cause: e });
    }
    // v2.3.2's flaw 1: the loop returns after the first entry it deletes.
    if (c.flaw === 'cleanup-stops-early') return;
  }
}

async function handleRemovePod(c: NplController, key: string): Promise<void> {
  c.ctx.log.debug('Got delete event for Pod', { pod: key });
  await cleanupPodRules(c, key, new Set());
}

async function handleAddUpdatePod(c: NplController, key: string, pod: Pod): Promise<void> {
  let nplAnnotations: NplAnnotation[] = [];
  const podAnnotation = pod.metadata.annotations[NPL_ANNOTATION];
  if (podAnnotation !== undefined) {
    try {
      nplAnnotations = parseNplAnnotation(podAnnotation);
    } catch {
      c.ctx.log.error('Unable to unmarshal NodePortLocal annotation for Pod, skipping', { pod: key });
      return;
    }
  }

  const podIP = pod.status.podIP ?? '';
  if (podIP === '') {
    // A Pod can lose its IP (a sandbox problem): its rules and annotation go.
    await cleanupPodRules(c, key, new Set());
    if (podAnnotation !== undefined) await cleanupNplAnnotationForPod(c.ctx.kube, pod);
    return;
  }

  const { ints: targetPortsInt, strs: targetPortsStr } = c.getTargetPortsForServicesOfPod(pod);
  const nplEnabled = targetPortsInt.size > 0 || targetPortsStr.size > 0;
  if (nplEnabled) {
    for (const container of pod.spec.containers) {
      for (const cport of container.ports) {
        if (cport.name === undefined || cport.name === '') continue;
        if (targetPortsStr.has(buildPortProto(cport.name, cport.protocol))) targetPortsInt.add(buildPortProto(cport.containerPort, cport.protocol));
      }
    }
  }

  const podPorts = new Set<string>();
  const required = new Map<string, NplAnnotation>();
  for (const targetPortProto of [...targetPortsInt].sort()) {
    const { port, protocol } = parsePortProto(targetPortProto);
    podPorts.add(targetPortProto);
    let portData = c.portTable.getEntry(key, port, protocol);
    if (portData?.defunct === true) {
      c.ctx.log.info('Deleting defunct NodePortLocal rule for Pod to prevent re-use', { pod: key, podIP, port, protocol });
      await c.portTable.deleteRule(key, port, protocol);
      portData = undefined;
    }
    // The same name with another IP: a new sandbox, or a delete and create merged by the
    // workqueue into one update. The old rule points at an address that is no longer this Pod's.
    if (portData !== undefined && portData.podIP !== podIP && c.flaw !== 'cached-ip-reused') {
      c.ctx.log.info('Deleting NodePortLocal rule for Pod because of IP change', { pod: key, podIP, prevPodIP: portData.podIP });
      await c.portTable.deleteRule(key, port, protocol);
      portData = undefined;
    }
    let nodePort: number;
    if (portData === undefined) {
      c.ctx.log.info('Adding NodePortLocal rule', { pod: key, podIP, port, protocol });
      nodePort = await c.portTable.addRule(key, port, protocol, podIP);
    } else {
      nodePort = portData.nodePort;
    }
    const k = `${nodePort}:${protocol}`;
    if (!required.has(k)) required.set(k, { podPort: port, nodeIP: pod.status.hostIP ?? '', nodePort, protocol });
  }

  await cleanupPodRules(c, key, podPorts);

  const nplAnnotationsRequired = [...required.values()];
  if (c.flaw === 'annotation-not-removed' && nplAnnotationsRequired.length === 0) return;
  if (c.flaw === 'annotation-not-updated' && podAnnotation !== undefined) return;
  if (!compareNplAnnotationLists(nplAnnotations, nplAnnotationsRequired)) await updatePodNplAnnotation(c, pod, nplAnnotationsRequired);
}

/** Antrea v2.4.4's Pod handlers (fixed). */
export const HANDLERS_V2_4_4: NplHandlers = { release: 'v2.4.4', handleAddUpdatePod, handleRemovePod };
