/**
 * @netsim/controllers — Reference controllers (NodePortLocal, masquerade manager, NodePort proxy) in faulty and fixed variants.
 *
 * @packageDocumentation
 */
export {};
