/**
 * @netsim/scenario — YAML scenario format, validation and replay.
 *
 * @packageDocumentation
 */
export { ScenarioError, formatIssue, isScenarioError, type ScenarioErrorCode, type ScenarioIssue } from './errors.ts';
export { DURATION_EXPECTED, formatDuration, parseDuration } from './duration.ts';
export { BUILTIN_CHECKS, SCENARIO_FORMAT, ScenarioSchema, type RawScenario } from './schema.ts';
export type { BuiltinCheck, Expectation, InvariantKind, InvariantSpec, ScenarioFile, TargetKindName } from './model.ts';
export { fromRaw, toRaw } from './convert.ts';
export { BUILTIN_SPECS, buildInvariant, invariantName, type InvariantRegistry } from './invariants.ts';
export { formatPath, loadScenario, loadScenarioFile, type LoadOptions } from './load.ts';
export { scenarioFromCounterexample, serializeScenario, type CounterexampleLike, type CounterexampleScenarioOptions, type SerializeOptions } from './serialize.ts';
export { checkExpectation, describeExpectation, describeObserved, replay, type ReplayOptions, type ReplayResult } from './replay.ts';
export { scenarioJsonSchema } from './jsonSchema.ts';
