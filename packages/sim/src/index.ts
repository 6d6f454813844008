/**
 * @netsim/sim — Deterministic simulation engine: seeded scheduler, virtual clock, controllers, invariants, trace.
 *
 * @packageDocumentation
 */
export {};
