/**
 * @netsim/check — Property testing of controllers on top of @netsim/sim.
 *
 * @packageDocumentation
 */
export {};
