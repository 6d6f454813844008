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
