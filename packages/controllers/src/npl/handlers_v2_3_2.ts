/**
 * The Pod handlers of Antrea v2.3.2 (and 2.4.0–2.4.3): the **faulty** NodePortLocal agent.
 *
 * Two flaws, both exactly where the real code had them:
 *
 * 1. {@link deleteRulesForPod} (the port table's `DeleteRulesForPod`) loops over the Pod's
 *    entries but *returns* from inside the loop body, after deleting the first one, and reports
 *    success. The worker then forgets the key: the other rules, their cache entries and their
 *    reserved ports stay. Each further delete event for the key removes one more.
 * 2. {@link handleAddUpdatePod} looks up the cache by (Pod key, port, protocol) and reuses what
 *    it finds without comparing the cached Pod IP with the Pod's current one. A Pod deleted and
 *    recreated under the same name, seen as one update, keeps its DNAT rules pointing at the old
 *    IP (and a Pod without an IP yet keeps its rules and annotation untouched).
 */
import type { Pod } from '@netsim/kube';
import { updatePodNplAnnotation } from './handlers_common.ts';
import type { NplController, NplHandlers } from './controller.ts';
import type { PortTable } from './portTable.ts';
import { NPL_ANNOTATION, buildPortProto, parsePortProto, type NplAnnotation } from './types.ts';
import { cleanupNplAnnotationForPod, compareNplAnnotationLists, parseNplAnnotation } from './annotations.ts';

/**
 * `PortTable.DeleteRulesForPod` as v2.3.2 has it. The `return` inside the loop is the flaw: only
 * the first entry is ever deleted per call, and the caller cannot tell.
 */
export async function deleteRulesForPod(pt: PortTable, podKey: string): Promise<void> {
  const podEntries = pt.getDataForPod(podKey);
  for (const podEntry of podEntries) {
    return pt.deleteEntry(podEntry);
  }
}

async function deleteAllPortRulesIfAny(c: NplController, podKey: string): Promise<void> {
  await deleteRulesForPod(c.portTable, podKey);
}

async function handleRemovePod(c: NplController, key: string): Promise<void> {
  c.ctx.log.debug('Got delete event for Pod', { pod: key });
  await deleteAllPortRulesIfAny(c, key);
}

async function handleAddUpdatePod(c: NplController, key: string, pod: Pod): Promise<void> {
  const podIP = pod.status.podIP ?? '';
  if (podIP === '') {
    c.ctx.log.info('IP address not set for Pod', { pod: key });
    return;
  }

  const { ints: targetPortsInt, strs: targetPortsStr } = c.getTargetPortsForServicesOfPod(pod);
  let nplAnnotations: NplAnnotation[] = [];
  const podAnnotation = pod.metadata.annotations[NPL_ANNOTATION];
  if (podAnnotation !== undefined) {
    try {
      nplAnnotations = parseNplAnnotation(podAnnotation);
    } catch {
      c.ctx.log.warn('Unable to unmarshal NodePortLocal annotation for Pod', { pod: key });
      return;
    }
  }

  for (const container of pod.spec.containers) {
    for (const cport of container.ports) {
      if (cport.name === undefined || cport.name === '') continue;
      if (targetPortsStr.has(buildPortProto(cport.name, cport.protocol))) targetPortsInt.add(buildPortProto(cport.containerPort, cport.protocol));
    }
  }

  if (targetPortsInt.size === 0) {
    await deleteAllPortRulesIfAny(c, key);
    await cleanupNplAnnotationForPod(c.ctx.kube, pod);
    return;
  }

  const podPorts = new Set<string>();
  const required = new Map<string, NplAnnotation>();
  for (const targetPortProto of [...targetPortsInt].sort()) {
    const { port, protocol } = parsePortProto(targetPortProto);
    podPorts.add(targetPortProto);
    let portData = c.portTable.getEntry(key, port, protocol);
    if (portData?.defunct === true) {
      c.ctx.log.info('Deleting defunct rule for Pod to prevent re-use', { pod: key, podIP, port, protocol });
      await c.portTable.deleteRule(key, port, protocol);
      portData = undefined;
    }
    // The cached entry is reused as it is: its Pod IP is never compared with `podIP`.
    const nodePort = portData === undefined ? await c.portTable.addRule(key, port, protocol, podIP) : portData.nodePort;
    const k = `${nodePort}:${protocol}`;
    if (!required.has(k)) required.set(k, { podPort: port, nodeIP: pod.status.hostIP ?? '', nodePort, protocol });
  }

  for (const data of c.portTable.getDataForPod(key)) {
    if (!podPorts.has(buildPortProto(data.podPort, data.protocol))) await c.portTable.deleteRule(key, data.podPort, data.protocol);
  }

  const nplAnnotationsRequired = [...required.values()];
  if (!compareNplAnnotationLists(nplAnnotations, nplAnnotationsRequired)) await updatePodNplAnnotation(c, pod, nplAnnotationsRequired);
}

/** Antrea v2.3.2's Pod handlers (faulty). */
export const HANDLERS_V2_3_2: NplHandlers = { release: 'v2.3.2', handleAddUpdatePod, handleRemovePod };
