/**
 * @netsim/check — Property testing of controllers on top of @netsim/sim.
 *
 * @packageDocumentation
 */
export {
  checkProperty,
  describeOutcome,
  failureSignature,
  replayScenario,
  type CheckFailure,
  type CheckOptions,
  type CheckResult,
  type CheckSuccess,
  type SimReport,
  type SimulationProperty,
} from './runner.ts';
export {
  IPTABLES_FAULTS,
  NETWORK_CHANGES,
  POD_CHURN,
  RESTARTS,
  WATCH_FAULTS,
  actionArbitrary,
  clusterArbitrary,
  generatorContext,
  podArbitrary,
  scenarioArbitrary,
  scheduleArbitrary,
  swarmArbitrary,
  timelineArbitrary,
  type ActionArbitraryOptions,
  type ClusterArbitraryOptions,
  type PodArbitraryOptions,
  type ScenarioArbitraryOptions,
  type TimelineArbitraryOptions,
} from './arbitraries.ts';
export {
  ACTION_GENERATORS,
  CLOSING_QUIET_MS,
  CLOSING_SHAPES,
  HISTORY_SHAPES,
  POD_NAME_LABEL,
  blindChurnArbitrary,
  closeTimeline,
  drainArbitrary,
  generatableFeatures,
  historyShapeArbitrary,
  isHistoryShape,
  podSpecArbitrary,
  serviceChangeArbitrary,
  serviceRetargetArbitrary,
  shapeApplies,
  type GeneratorContext,
  type HistoryShape,
  type SwarmFeature,
} from './generators.ts';
export {
  COUNTEREXAMPLE_FORMAT,
  controllerProperty,
  counterexampleJson,
  exportCounterexample,
  type ControllerPropertyOptions,
  type Counterexample,
} from './property.ts';
export { assertBreaksInvariant, assertHoldsInvariants, assertHoldsProperty, type RunReceived } from './assert.ts';
