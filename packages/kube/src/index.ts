/**
 * @netsim/kube — Kube-style event stream: API server, watches, informers with client-go semantics, workqueue.
 *
 * @packageDocumentation
 */
export {};
