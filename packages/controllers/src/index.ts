/**
 * @netsim/controllers — Reference controllers (NodePortLocal, masquerade manager, NodePort proxy) in faulty and fixed variants.
 *
 * @packageDocumentation
 */
export { CONTROLLERS, CONTROLLER_NAMES, isControllerName, type ControllerName } from './registry.ts';
export { ControllerOptionsError, isControllerOptionsError } from './errors.ts';
export { nodePortLocal, type NodePortLocalOptions, type NplVariant } from './npl/index.ts';
export { NPL_MAX_RETRY_DELAY_MS, NPL_MIN_RETRY_DELAY_MS, NPL_WORKERS } from './npl/controller.ts';
export { IptablesPodPortRules, NPL_JUMP_SPEC, buildRuleForPod, type PodPortRules } from './npl/rules.ts';
export { PortTable, ProcessPortOpener, type Closer, type LocalPortOpener, type NodePortData, type PortRange } from './npl/portTable.ts';
export { cleanupNplAnnotationForPod, compareNplAnnotationLists, formatNplAnnotation, parseNplAnnotation, patchPod } from './npl/annotations.ts';
export { NPL_DECLARATION, nplEligiblePorts, parseNplMappings, type NplEligiblePort } from './npl/declaration.ts';
export { DEFAULT_PORT_RANGE, NPL_ANNOTATION, NPL_CHAIN, NPL_ENABLED_ANNOTATION, buildPortProto, parsePortProto, type NplAnnotation, type PodNodePort } from './npl/types.ts';
export { flannel, type FlannelOptions, type FlannelVariant } from './flannel/index.ts';
export { KUBE_PROXY_MARK, MASQ_CHAIN, MASQ_COMMENT, masqRules, type IptablesRule } from './flannel/rules.ts';
export { ensureIPTables, ipTablesBootstrap, ipTablesRulesExist, teardownIPTables } from './flannel/iptables.ts';
export { applyWithoutFlush, buildRestorePayload, type RestoreRules } from './flannel/iptablesRestore.ts';
export { DEFAULT_RESYNC_MS, ensureLoop } from './flannel/manager.ts';
export { flannelDeclaration } from './flannel/declaration.ts';
export { kubeProxyDeclaration } from './kubeproxy/declaration.ts';
export { kubeProxy, type KubeProxyOptions, type KubeProxyVariant } from './kubeproxy/index.ts';
export {
  JUMP_CHAINS,
  KUBE_EXTERNAL_SERVICES,
  KUBE_FIREWALL,
  KUBE_FORWARD,
  KUBE_MARK_MASQ,
  KUBE_NODEPORTS,
  KUBE_POSTROUTING,
  KUBE_PROXY_FIREWALL,
  KUBE_SERVICES,
  MASQUERADE_MARK,
  probability,
  type JumpChain,
} from './kubeproxy/proxier.ts';
export { buildEndpointsMap, buildServicePortMap, categorizeEndpoints, type CategorizedEndpoints, type EndpointInfo, type ServicePortInfo } from './kubeproxy/servicePorts.ts';
export { writeExternalChain, type ExternalChainContext, type ExternalChainWriter } from './kubeproxy/externalChain.ts';
export { base32, isServiceChainName, portProtoHash, serviceExternalChain, servicePortEndpointChain, servicePortPolicyClusterChain, servicePortPolicyLocalChain } from './kubeproxy/hash.ts';
export { kubeProxyNft, KUBE_PROXY_NFT_FAULTY_FLAW, type KubeProxyNftOptions, type KubeProxyNftVariant } from './kubeproxynft/index.ts';
export { KUBE_PROXY_NFT_OWNED_CHAINS, kubeProxyNftDeclaration } from './kubeproxynft/declaration.ts';
export { NFT_BASE_CHAINS, NFT_JUMP_CHAINS, NFT_MASQUERADE_MARK, NftProxier, listedChains, type KubeProxyNftFlaw } from './kubeproxynft/proxier.ts';
export { KUBE_PROXY_TABLE, hashAndTruncate, isServiceChainName as isNftServiceChainName, servicePortChainNameBase, servicePortEndpointChainNameBase } from './kubeproxynft/names.ts';
export { flannelNft, flannelNftDeclaration, type FlannelNftVariant } from './flannelnft/index.ts';
export { FLANNEL_NFT_FORWARD, FLANNEL_NFT_POSTRTG, FLANNEL_NFT_TABLE, NftablesManager, nftMasqRules } from './flannelnft/manager.ts';
export { FUZZ_PROFILES, GENERIC_PROFILE, SWARM_KINDS, fuzzInvariants, fuzzProfileFor, fuzzProperty, type FuzzProfile, type FuzzPropertyOptions } from './profiles.ts';
