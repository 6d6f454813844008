/**
 * @netsim/kernel — One Linux host datapath and the links between hosts: interfaces, routes, rp_filter, conntrack, NAT.
 *
 * @packageDocumentation
 */
export {};
