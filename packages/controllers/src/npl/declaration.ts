/**
 * What the NodePortLocal agent declares about itself for the controller-agnostic invariants: the
 * chain it owns (with its two jumps), the annotation it publishes and how to read it, and the
 * longest retry delay of its workqueue.
 */
import type { ControllerDeclaration, PublishedMapping } from '@netsim/sim';
import { parseNplAnnotation } from './annotations.ts';
import { NPL_MAX_RETRY_DELAY_MS } from './controller.ts';
import { NPL_ANNOTATION, NPL_CHAIN } from './types.ts';

/**
 * Reads a `nodeportlocal.antrea.io` value as published mappings. The annotation carries no Pod
 * IP (consumers reach the Pod through the node), so `podIP` is absent. A value that is not a JSON
 * array, or an entry without a node port, Pod port or known protocol, cannot be read: `undefined`.
 *
 * @example
 * ```ts
 * parseNplMappings('[{"podPort":8080,"nodeIP":"198.51.100.1","nodePort":61000,"protocol":"tcp"}]');
 * // [{ protocol: 'TCP', nodePort: 61000, podPort: 8080 }]
 * ```
 */
export function parseNplMappings(value: string): readonly PublishedMapping[] | undefined {
  let entries;
  try {
    entries = parseNplAnnotation(value);
  } catch {
    return undefined;
  }
  const out: PublishedMapping[] = [];
  for (const e of entries) {
    const protocol = e.protocol === 'tcp' ? 'TCP' : e.protocol === 'udp' ? 'UDP' : undefined;
    if (protocol === undefined || !Number.isInteger(e.nodePort) || !Number.isInteger(e.podPort) || e.nodePort < 1 || e.podPort < 1) return undefined;
    out.push({ protocol, nodePort: e.nodePort, podPort: e.podPort });
  }
  return out;
}

/**
 * The NodePortLocal agent's declaration: `ANTREA-NODE-PORT-LOCAL` in nat, jumped to from
 * PREROUTING and OUTPUT (the chain itself is empty while no Pod has a mapping, so no target is
 * required in it); the Pod annotation; the workqueue's 120 s longest backoff.
 */
export const NPL_DECLARATION: ControllerDeclaration = {
  ownedChains: [{ table: 'nat', chain: NPL_CHAIN, hookedFrom: ['PREROUTING', 'OUTPUT'] }],
  annotations: [{ key: NPL_ANNOTATION, parse: parseNplMappings }],
  maxBackoffMs: NPL_MAX_RETRY_DELAY_MS,
};
