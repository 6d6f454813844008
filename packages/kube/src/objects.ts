/**
 * The objects netsim's API server stores, shaped like their Kubernetes counterparts (`metadata`,
 * `spec`, `status`) with only the fields node-networking controllers read. Every object handed
 * out by kube is deep-frozen: a handler or controller that tries to mutate one gets a TypeError,
 * exactly where a real controller would have corrupted its informer cache.
 *
 * Timestamps are simulated milliseconds (numbers), not RFC 3339 strings.
 */

/** The kinds the API server serves. */
export type Kind = 'Pod' | 'Service' | 'EndpointSlice' | 'Node';

export const KINDS: readonly Kind[] = ['Pod', 'Service', 'EndpointSlice', 'Node'];

export type Protocol = 'TCP' | 'UDP' | 'SCTP';

export interface ObjectMeta {
  readonly name: string;
  /** `''` for cluster-scoped objects (Node). */
  readonly namespace: string;
  readonly uid: string;
  /** The global resourceVersion of the write that produced this state, as a decimal string. */
  readonly resourceVersion: string;
  /** Simulated ms at creation. */
  readonly creationTimestamp: number;
  /** Simulated ms by which a graceful delete must finish; set once deletion started. */
  readonly deletionTimestamp?: number;
  readonly deletionGracePeriodSeconds?: number;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
}

export interface ContainerPort {
  readonly name?: string;
  readonly containerPort: number;
  readonly protocol: Protocol;
}

export interface Container {
  readonly name: string;
  readonly ports: readonly ContainerPort[];
  /** A `preStop` hook that sleeps (the `sleep` action): the container keeps running, and serving, for that long after a delete. */
  readonly lifecycle?: { readonly preStop?: { readonly sleep?: { readonly seconds: number } } };
}

export interface PodSpec {
  /** The node the Pod is bound to; the kubelet of that node runs it. */
  readonly nodeName?: string;
  readonly containers: readonly Container[];
  readonly terminationGracePeriodSeconds: number;
  readonly hostNetwork: boolean;
}

export type PodPhase = 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';
export type ConditionStatus = 'True' | 'False' | 'Unknown';

export interface PodCondition {
  readonly type: 'PodScheduled' | 'Initialized' | 'ContainersReady' | 'Ready';
  readonly status: ConditionStatus;
}

export interface PodStatus {
  readonly phase: PodPhase;
  readonly podIP?: string;
  readonly podIPs: readonly { readonly ip: string }[];
  readonly hostIP?: string;
  readonly conditions: readonly PodCondition[];
}

export interface Pod {
  readonly apiVersion: 'v1';
  readonly kind: 'Pod';
  readonly metadata: ObjectMeta;
  readonly spec: PodSpec;
  readonly status: PodStatus;
}

export type ServiceType = 'ClusterIP' | 'NodePort' | 'LoadBalancer';
export type TrafficPolicy = 'Cluster' | 'Local';

export interface ServicePort {
  readonly name?: string;
  readonly protocol: Protocol;
  readonly port: number;
  /** A container port number, or the name of a container port. */
  readonly targetPort: number | string;
  /** Set for NodePort and LoadBalancer Services (allocated when not given). */
  readonly nodePort?: number;
}

export interface ServiceSpec {
  readonly type: ServiceType;
  /** Allocated from the service CIDR when not given; `'None'` makes a headless Service. */
  readonly clusterIP: string;
  /** Absent: a Service without selector (no managed EndpointSlices). */
  readonly selector?: Readonly<Record<string, string>>;
  readonly ports: readonly ServicePort[];
  /** Only for NodePort and LoadBalancer Services (defaults to `Cluster` there). */
  readonly externalTrafficPolicy?: TrafficPolicy;
  /** `ClientIP`: a client's connections stick to one endpoint. Absent means `None`. */
  readonly sessionAffinity?: SessionAffinity;
  /** With `ClientIP`: how long a client sticks after its last connection (default 10800 s). */
  readonly sessionAffinityConfig?: { readonly clientIP: { readonly timeoutSeconds: number } };
}

/** A Service's `spec.sessionAffinity`. */
export type SessionAffinity = 'None' | 'ClientIP';

/** The API server's default `sessionAffinityConfig.clientIP.timeoutSeconds` (3 hours). */
export const DEFAULT_CLIENT_IP_AFFINITY_SECONDS = 10_800;

export interface Service {
  readonly apiVersion: 'v1';
  readonly kind: 'Service';
  readonly metadata: ObjectMeta;
  readonly spec: ServiceSpec;
  readonly status: { readonly loadBalancer: { readonly ingress: readonly { readonly ip: string }[] } };
}

export interface EndpointConditions {
  readonly ready: boolean;
  readonly serving: boolean;
  readonly terminating: boolean;
}

export interface Endpoint {
  readonly addresses: readonly string[];
  readonly conditions: EndpointConditions;
  readonly nodeName?: string;
  readonly targetRef?: { readonly kind: 'Pod'; readonly namespace: string; readonly name: string; readonly uid: string };
}

export interface EndpointPort {
  readonly name?: string;
  readonly protocol: Protocol;
  readonly port: number;
}

export interface EndpointSlice {
  readonly apiVersion: 'discovery.k8s.io/v1';
  readonly kind: 'EndpointSlice';
  readonly metadata: ObjectMeta;
  readonly addressType: 'IPv4';
  readonly endpoints: readonly Endpoint[];
  readonly ports: readonly EndpointPort[];
}

export type NodeAddressType = 'InternalIP' | 'ExternalIP' | 'Hostname';

export interface Node {
  readonly apiVersion: 'v1';
  readonly kind: 'Node';
  readonly metadata: ObjectMeta;
  readonly spec: { readonly podCIDR?: string; readonly podCIDRs: readonly string[]; readonly unschedulable: boolean };
  readonly status: { readonly addresses: readonly { readonly type: NodeAddressType; readonly address: string }[] };
}

export type KubeObject = Pod | Service | EndpointSlice | Node;
export type ObjectOf<K extends Kind> = Extract<KubeObject, { kind: K }>;

/** Fields a caller may give in `metadata` when creating. */
export interface ObjectMetaInput {
  readonly name: string;
  /** Defaults to `default` for namespaced kinds; must be absent or `''` for Node. */
  readonly namespace?: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
  /** Must be absent on create (the server assigns it). */
  readonly resourceVersion?: string;
  /** Ignored on create (the server assigns it). */
  readonly uid?: string;
}

export interface PodInput {
  readonly metadata: ObjectMetaInput;
  readonly spec: {
    readonly nodeName?: string;
    readonly containers: readonly {
      readonly name: string;
      readonly ports?: readonly { readonly name?: string; readonly containerPort: number; readonly protocol?: Protocol }[];
      readonly lifecycle?: { readonly preStop?: { readonly sleep?: { readonly seconds: number } } };
    }[];
    readonly terminationGracePeriodSeconds?: number;
    readonly hostNetwork?: boolean;
  };
  readonly status?: Partial<PodStatus>;
}

export interface ServiceInput {
  readonly metadata: ObjectMetaInput;
  readonly spec: {
    readonly type?: ServiceType;
    readonly clusterIP?: string;
    readonly selector?: Readonly<Record<string, string>>;
    readonly ports: readonly { readonly name?: string; readonly protocol?: Protocol; readonly port: number; readonly targetPort?: number | string; readonly nodePort?: number }[];
    readonly externalTrafficPolicy?: TrafficPolicy;
    readonly sessionAffinity?: SessionAffinity;
    readonly sessionAffinityConfig?: { readonly clientIP?: { readonly timeoutSeconds?: number } };
  };
}

export interface EndpointSliceInput {
  readonly metadata: ObjectMetaInput;
  readonly addressType?: 'IPv4';
  readonly endpoints: readonly Endpoint[];
  readonly ports: readonly EndpointPort[];
}

export interface NodeInput {
  readonly metadata: ObjectMetaInput;
  readonly spec?: { readonly podCIDR?: string; readonly podCIDRs?: readonly string[]; readonly unschedulable?: boolean };
  readonly status?: { readonly addresses?: readonly { readonly type: NodeAddressType; readonly address: string }[] };
}

export interface InputByKind {
  Pod: PodInput;
  Service: ServiceInput;
  EndpointSlice: EndpointSliceInput;
  Node: NodeInput;
}
export type InputOf<K extends Kind> = InputByKind[K];

interface KindInfo {
  /** The plural resource name used in API messages (`pods "x" not found`). */
  readonly resource: string;
  readonly namespaced: boolean;
  /** Kinds with a status subresource: `update` keeps the stored status, `updateStatus` only writes it. */
  readonly hasStatus: boolean;
  readonly apiVersion: string;
}

export const KIND_INFO: Readonly<Record<Kind, KindInfo>> = {
  Pod: { resource: 'pods', namespaced: true, hasStatus: true, apiVersion: 'v1' },
  Service: { resource: 'services', namespaced: true, hasStatus: true, apiVersion: 'v1' },
  EndpointSlice: { resource: 'endpointslices.discovery.k8s.io', namespaced: true, hasStatus: false, apiVersion: 'discovery.k8s.io/v1' },
  Node: { resource: 'nodes', namespaced: false, hasStatus: true, apiVersion: 'v1' },
};

/**
 * client-go's `MetaNamespaceKeyFunc`: `namespace/name`, or `name` for cluster-scoped objects.
 *
 * @example
 * ```ts
 * objectKey(pod); // 'default/web-0'
 * ```
 */
export function objectKey(obj: { readonly metadata: { readonly namespace: string; readonly name: string } }): string {
  return keyOf(obj.metadata.namespace, obj.metadata.name);
}

export function keyOf(namespace: string, name: string): string {
  return namespace === '' ? name : `${namespace}/${name}`;
}

/** client-go's `SplitMetaNamespaceKey`. */
export function splitKey(key: string): { namespace: string; name: string } {
  const i = key.indexOf('/');
  return i < 0 ? { namespace: '', name: key } : { namespace: key.slice(0, i), name: key.slice(i + 1) };
}

/** The resourceVersion as a number, for ordering (the API treats it as opaque; netsim issues integers). */
export function resourceVersionOf(obj: { readonly metadata: { readonly resourceVersion: string } }): number {
  return Number(obj.metadata.resourceVersion);
}

/** True when a Pod's Ready condition is True. */
export function isPodReady(pod: Pod): boolean {
  return pod.status.conditions.some((c) => c.type === 'Ready' && c.status === 'True');
}

/** True when a Pod reached a terminal phase. */
export function isPodTerminal(pod: Pod): boolean {
  return pod.status.phase === 'Succeeded' || pod.status.phase === 'Failed';
}
