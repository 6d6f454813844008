/**
 * @netsim/scenario — YAML scenario format, validation and replay.
 *
 * @packageDocumentation
 */
export {};
