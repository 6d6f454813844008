/**
 * @netsim/controllers — Reference controllers (NodePortLocal, masquerade manager, NodePort proxy) in faulty and fixed variants.
 *
 * @packageDocumentation
 */
export { CONTROLLERS, CONTROLLER_NAMES, isControllerName, type ControllerName } from './registry.ts';
export { ControllerOptionsError, isControllerOptionsError } from './errors.ts';
export { nodePortLocal, type NodePortLocalOptions, type NplVariant } from './npl/index.ts';
export { NPL_ANNOTATION, NPL_CHAIN, NPL_ENABLED_ANNOTATION, type NplAnnotation } from './npl/types.ts';
