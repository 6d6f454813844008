/**
 * @netsim/conformance — differential tests of netsim against the real Linux kernel: a host built
 * from network namespaces, rulesets loaded with `iptables-restore`, packets injected raw, and the
 * kernel's counters, conntrack table and egress frames compared with netsim's prediction.
 *
 * @packageDocumentation
 */
export { checkEnvironment, type EnvironmentCheck } from './environment.ts';
export { LabCommandError } from './exec.ts';
export { Lab, UDP_LISTEN_PORTS, withEveryTable, type Backend, type CapturedFrame, type Injection, type LabNames, type StepObservation, type Sysctls } from './lab.ts';
export { NETNS_PREFIX, removeStaleNetns } from './netns.ts';
export { BROADCAST, injectionArb, LOCAL, nfCaseArb, PROFILES, REMOTE, rulesetArb, type NfCase, type Profile } from './generate.ts';
export { diffOutcomes, fromKernel, type Outcome } from './outcome.ts';
export { campaignCases, checkCase, runCampaign, shrinkCase, type CampaignOptions, type CampaignResult, type Checked, type Disagreement, type Verdict } from './campaign.ts';
export { KNOWN_DISAGREEMENTS, knownCandidates, type KnownDisagreement } from './known.ts';
export {
  classifiedFormatCheck,
  formatCheck,
  KNOWN_FORMAT_ISSUES,
  roundTripThroughKernel,
  runFormatCampaign,
  type ClassifiedFormatCheck,
  type FormatCampaignResult,
  type FormatCheckResult,
  type KnownFormatIssue,
  type Refusal,
} from './formatCheck.ts';
export { fixtureBehaviour, fixtureFormatCheck, loadFixtures, type Fixture } from './fixtures.ts';
export {
  buildNetsimHost,
  classifyHostCase,
  formatHostDisagreement,
  hostCaseArb,
  KNOWN_HOST_ISSUES,
  runHostCampaign,
  runHostCase,
  type HostCase,
  type HostCaseResult,
  type HostVerdict,
  type KnownHostIssue,
  type RpFilter,
} from './wholeHost.ts';
export { buildIpv4, describePacket, parseFrame, PROTO_ICMP, PROTO_TCP, PROTO_UDP, TCP, type PacketSpec, type ParsedIpv4 } from './packet.ts';
export { addrTypeOf, firstPacketConntrack, predict, type PathStep, type Prediction } from './pathModel.ts';
export { parseConntrack, parseSaveCounters, type ConntrackEntry, type SavedCounters } from './readback.ts';
export { renderRestore, renderRule } from './render.ts';
export { describeInjection, formatDisagreement, runNfCase, type CaseResult } from './runner.ts';
export { lookupRoute, TOPOLOGY, type NodeIface, type Peer, type PeerName, type Route, type Topology } from './topology.ts';
