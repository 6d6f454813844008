/**
 * NodePortLocal's names and data shapes, as Antrea's agent defines them (`pkg/agent/nodeportlocal/types`).
 */

/** The nat chain holding one DNAT rule per (node port, Pod IP:port) mapping. */
export const NPL_CHAIN = 'ANTREA-NODE-PORT-LOCAL';

/** The Pod annotation the agent publishes: a JSON array of {@link NplAnnotation}. */
export const NPL_ANNOTATION = 'nodeportlocal.antrea.io';

/** A Service annotated with this key set to `"true"` turns NodePortLocal on for the Pods it selects. */
export const NPL_ENABLED_ANNOTATION = 'nodeportlocal.antrea.io/enabled';

/** The default node port range (Antrea's `nodePortLocal.portRange`). */
export const DEFAULT_PORT_RANGE = { start: 61000, end: 62000 } as const;

/** One entry of the Pod annotation (no Pod IP: consumers reach the Pod through the node). */
export interface NplAnnotation {
  readonly podPort: number;
  readonly nodeIP: string;
  readonly nodePort: number;
  /** Lower case: `tcp` or `udp`. */
  readonly protocol: string;
}

/** One mapping as the rules layer sees it (Antrea's `rules.PodNodePort`). */
export interface PodNodePort {
  readonly podKey: string;
  readonly nodePort: number;
  readonly podPort: number;
  readonly podIP: string;
  readonly protocol: string;
}

/** `8080:tcp`, the agent's port/protocol key (Antrea's `util.BuildPortProto`): the protocol is lower-cased. */
export function buildPortProto(port: number | string, protocol: string): string {
  return `${String(port)}:${protocol.toLowerCase()}`;
}

/** The inverse of {@link buildPortProto}. */
export function parsePortProto(portProto: string): { readonly port: number; readonly protocol: string } {
  const parts = portProto.split(':');
  const [port, protocol] = parts;
  if (parts.length !== 2 || port === undefined || protocol === undefined || !/^\d+$/.test(port)) {
    throw new Error(`invalid format for PortProto string '${portProto}'`);
  }
  return { port: Number(port), protocol };
}
