/**
 * @netsim/controllers — Reference controllers (NodePortLocal, masquerade manager, NodePort proxy) in faulty and fixed variants.
 *
 * @packageDocumentation
 */
export { CONTROLLERS, CONTROLLER_NAMES, isControllerName, type ControllerName } from './registry.ts';
export { ControllerOptionsError, isControllerOptionsError } from './errors.ts';
export { nodePortLocal, type NodePortLocalOptions, type NplVariant } from './npl/index.ts';
export { NPL_DECLARATION, parseNplMappings } from './npl/declaration.ts';
export { NPL_ANNOTATION, NPL_CHAIN, NPL_ENABLED_ANNOTATION, type NplAnnotation } from './npl/types.ts';
export { flannel, type FlannelOptions, type FlannelVariant } from './flannel/index.ts';
export { MASQ_CHAIN, MASQ_COMMENT, masqRules, type IptablesRule } from './flannel/rules.ts';
export { flannelDeclaration } from './flannel/declaration.ts';
export { kubeProxyDeclaration } from './kubeproxy/declaration.ts';
export { kubeProxy, type KubeProxyOptions, type KubeProxyVariant } from './kubeproxy/index.ts';
export { MASQUERADE_MARK, probability } from './kubeproxy/proxier.ts';
export { base32, isServiceChainName, portProtoHash, serviceExternalChain, servicePortEndpointChain, servicePortPolicyClusterChain, servicePortPolicyLocalChain } from './kubeproxy/hash.ts';
