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
  type SessionAffinity,
  type TrafficPolicy,
  DEFAULT_CLIENT_IP_AFFINITY_SECONDS,
} from './objects.ts';
export { deepEqual, applyMergePatch, type MergePatch } from './json.ts';
export {
  ApiServer,
  alreadyExistsMessage,
  matches,
  notFoundMessage,
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
export { TraceRecorder, formatTraceEvent, wantsTrace, type KubeTraceEvent, type KubeTraceSink, type KubeTraceType, type TraceValue } from './trace.ts';
export {
  deletedObject,
  describeDelta,
  isTombstone,
  tombstone,
  type DeleteArg,
  type DeletedFinalStateUnknown,
  type Delta,
  type DeltaType,
  type InformerQueue,
  type KnownObjects,
  type PopResult,
  type QueueMode,
} from './fifo.ts';
export { DeltaFifo } from './deltaFifo.ts';
export { RealFifo } from './realFifo.ts';
export { BackoffManager, type BackoffOptions } from './backoff.ts';
export type { WatchTimeoutOptions } from './reflector.ts';
export {
  Informer,
  type HandlerOptions,
  type HandlerRegistration,
  type InformerOptions,
  type Lister,
  type ResourceEventHandler,
} from './informer.ts';
export {
  BucketRateLimiter,
  ItemExponentialFailureRateLimiter,
  ItemFastSlowRateLimiter,
  MaxOfRateLimiter,
  defaultControllerRateLimiter,
  type RateLimiter,
} from './rateLimiter.ts';
export { WorkQueue, type WorkQueueOptions, type WorkQueueSignal } from './workqueue.ts';
export { NodeIpam, type IpamPolicy } from './ipam.ts';
export { Kubelet, type KubeletOptions } from './kubelet.ts';
export {
  EndpointSliceController,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  SERVICE_NAME_LABEL,
  type EndpointSliceControllerOptions,
} from './endpointSlices.ts';
export { AtomicFifo } from './atomicFifo.ts';
export type { AtomicBatch } from './fifo.ts';
