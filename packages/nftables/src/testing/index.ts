/**
 * Test helpers for @netsim/nftables users: realistic kube-proxy nftables transactions.
 *
 * @packageDocumentation
 */
export { clusterIp, endpointChain, endpointIp, fakeHash, kubeProxyFullSync, kubeProxyPartialSync, nodePortOf, serviceChain, type KubeProxyNftOptions } from './kubeProxy.ts';
