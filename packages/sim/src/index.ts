/**
 * @netsim/sim — Deterministic simulation engine: seeded scheduler, virtual clock, controllers, invariants, trace.
 *
 * @packageDocumentation
 */
export { SimError, isSimError, ToolExecError, type SimErrorCode } from './errors.ts';
export type { JsonObject, JsonValue } from './json.ts';
export { Prng, deriveStreams, STREAM_NAMES, type RandomSource, type StreamName } from './prng.ts';
export { SeededIds, type IdSource } from './ids.ts';
export {
  DEFAULT_BOUNDS,
  Engine,
  describeThrown,
  Task,
  type BoundName,
  type Bounds,
  type EngineOptions,
  type Finding,
  type FindingKind,
  type InvariantResult,
  type RunOutcome,
  type ScheduleOptions,
  type StepHandle,
  type StepSpec,
  type Violation,
} from './engine.ts';
export { TRACE_FORMAT_VERSION, TraceRecorder, parseJsonLines, toJsonLines, type TraceEvent } from './trace.ts';
export {
  Agent,
  type AgentOptions,
  type AgentState,
  type ContextFactory,
  type Controller,
  type ControllerDeclaration,
  type ControllerInstance,
  type DatapathRole,
  type DeclaredTable,
  type EligiblePort,
  type OwnedChain,
  type OwnedNftChain,
  type PublishedAnnotation,
  type PublishedMapping,
  type ExitReason,
  type LogLevel,
  type Logger,
  type ProcessContext,
  type ProcessHandle,
  type Ticker,
} from './agent.ts';
export {
  renderEvent,
  renderTrace,
  shortUid,
  story,
  type EventRenderer,
  type RenderLevel,
  type RenderedLine,
  type RendererTable,
} from './render.ts';
export {
  IptablesError,
  createIptablesHandle,
  isIptablesError,
  noIptablesFaults,
  type ExecResult,
  type IptablesBackend,
  type IptablesFaultState,
  type IptablesHandle,
  type IptablesHandleOptions,
  type LockWait,
  type RawResult,
  type RestoreFlags,
  type RulesetStore,
} from './iptables.ts';
export { NftExecError, createNftHandle, isNftExecError, type NftHandle, type NftHandleOptions, type NftStore } from './nft.ts';
export {
  annotationsAgreeWithRules,
  chainNeverEmpty,
  hasTarget,
  instantiate,
  noDuplicateRules,
  noStaleDnat,
  probesSucceed,
  settled,
  type AnnotationsAgreeOptions,
  type ChainNeverEmptyOptions,
  type Invariant,
  type InvariantSource,
  type NoDuplicateRulesOptions,
  type NoStaleDnatOptions,
  type Problem,
} from './invariants.ts';
export { DisruptionTracker, EVERY_NODE, type Disruption, type DisruptionScope } from './disruption.ts';
export { describeDnat, dnatRules, isPodLive, podKey, ruleIdentity, type DnatRule, type AgentView, type IpOwner, type NodeInfo, type ProbeRecord, type WorldView } from './view.ts';
export {
  SIM_SCENARIO_FORMAT,
  isHostAction,
  validateScenario,
  type Action,
  type ActionKind,
  type HostAction,
  type ClusterSpec,
  type HostSpec,
  type LinkSpec,
  type NetworkSpec,
  type NodeSpec,
  type ProbeSource,
  type PodSpec,
  type PortSpec,
  type ProbeSpec,
  type Protocol,
  type ServicePortSpec,
  type ServiceSpec,
  type SimScenario,
  type SwarmConfig,
  type TimedAction,
} from './scenario.ts';
export {
  buildControllerContext,
  createConntrackHandle,
  type AsyncWorkQueue,
  type ConntrackHandle,
  type ContextDeps,
  type ControllerContext,
  type InformerHandle,
  type InformerRequest,
  type Informers,
  type KubeClient,
} from './context.ts';
export { World, type KubeletTimings, type WorldOptions } from './world.ts';
export { hostCommandOf } from './actions/hostCommand.ts';
export { ACTIONS, ACTION_KINDS, ACTION_STORY, actionModule, checkAction, type ActionModule, type ActionWorld, type CheckPlace } from './actions/index.ts';
export { BUILTIN_HOSTS, OVERLAY_DEVICE, formatScenarioPath } from './datapath.ts';
export { checkScenarioNetwork, runScenario, type ControllerRegistry, type RunScenarioOptions, type ScenarioReport } from './run.ts';
export { netfilterBackend, type NetfilterBackend } from './netfilterBackend.ts';
export {
  AGENTS_LIVE,
  BUILTIN_INVARIANT_NAMES,
  DATAPATH_PROBES,
  MAPPINGS_SERVED,
  NO_DUPLICATE_RULES,
  NO_STALE_DNAT,
  OWNED_CHAINS,
  RESYNC_FIXPOINT,
  agentsStayLive,
  builtinInvariants,
  datapathProbes,
  isCounting,
  isProbing,
  noDuplicateRulesAnywhere,
  ownedChainsStayProgrammed,
  publishedMappingsServed,
  reachableChains,
  resyncChangesNothing,
  staleDnatAnywhere,
  type CountingInvariant,
  type ProbeWorld,
  type ProbingInvariant,
} from './oracles/index.ts';
