/**
 * `@netsim/netfilter/testing`: helpers for users' tests and benchmarks — fast-check arbitraries
 * for canonical rules and rulesets, and a generator of kube-proxy-shaped `iptables-save` dumps.
 *
 * @packageDocumentation
 */
export { ipv4Arbitrary, ruleArbitrary, rulesetArbitrary, tableArbitrary, type RuleContext, type TableArbitraryOptions } from './arbitraries.ts';
export { kubeProxyDump, type KubeProxyDumpOptions } from './kubeProxyDump.ts';
export { extensionTables, type ExtensionInfo, type ExtensionOption } from './extensions.ts';
