/**
 * @netsim/kube — Kube-style event stream: API server, watches, informers with client-go semantics, workqueue.
 *
 * @packageDocumentation
 */
export {
  CounterIdSource,
  ManualScheduler,
  SeededRandom,
  manualRuntime,
  shuffleInPlace,
  type IdSource,
  type KubeRuntime,
  type RandomSource,
  type Scheduler,
  type StepInfo,
} from './runtime.ts';
export { KubeError, isExpired, isKubeError, type KubeErrorCode, type Status } from './errors.ts';
export {
  KINDS,
  KIND_INFO,
  isPodReady,
  isPodTerminal,
  keyOf,
  objectKey,
  resourceVersionOf,
  splitKey,
  type ConditionStatus,
  type Container,
  type ContainerPort,
  type Endpoint,
  type EndpointConditions,
  type EndpointPort,
  type EndpointSlice,
  type EndpointSliceInput,
  type InputByKind,
  type InputOf,
  type Kind,
  type KubeObject,
  type Node,
  type NodeAddressType,
  type NodeInput,
  type ObjectMeta,
  type ObjectMetaInput,
  type ObjectOf,
  type Pod,
  type PodCondition,
  type PodInput,
  type PodPhase,
  type PodSpec,
  type PodStatus,
  type Protocol,
  type Service,
  type ServiceInput,
  type ServicePort,
  type ServiceSpec,
  type ServiceType,
  type TrafficPolicy,
} from './objects.ts';
export { deepEqual, applyMergePatch, type MergePatch } from './json.ts';
export {
  ApiServer,
  matches,
  type ApiServerOptions,
  type Change,
  type DeleteOptions,
  type HistoryOptions,
  type ListResult,
  type Selector,
  type WatchFilter,
  type WatchRequest,
} from './apiServer.ts';
export type { WatchEvent, WatchEventType, WatchHandle } from './watch.ts';
export { TraceRecorder, formatTraceEvent, type KubeTraceEvent, type KubeTraceSink, type KubeTraceType, type TraceValue } from './trace.ts';
