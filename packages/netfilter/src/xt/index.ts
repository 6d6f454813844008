/**
 * @internal
 * The registry of extensions defined in this directory: one file per libxt_*.c. Adding an
 * extension is one new file here and one entry below; `matches.ts` and `targets.ts` register
 * these next to the modules netsim evaluates, and every reader (restore, the canonical builder,
 * the fast reader's fallback, `iptables` argv, listing) finds them there.
 */
import { BPF } from './bpf.ts';
import { CONNBYTES } from './connbytes.ts';
import { CONNLIMIT } from './connlimit.ts';
import { xtMatchModule, xtTargetModule, type XtDefinition, type XtMatchModule, type XtTargetModule } from './define.ts';
import { DSCP_MATCH, DSCP_TARGET } from './dscp.ts';
import { ECN } from './ecn.ts';
import { HASHLIMIT } from './hashlimit.ts';
import { AH, CONNMARK_MATCH, CPU, ESP, REALM, SOCKET, TCPMSS_MATCH } from './misc.ts';
import { OWNER } from './owner.ts';
import { PHYSDEV } from './physdev.ts';
import { POLICY_MODULE } from './policy.ts';
import { SCTP } from './sctp.ts';
import { CGROUP, CLUSTER, CONNLABEL, DEVGROUP, HELPER, LENGTH, MAC, NFACCT, PKTTYPE, QUOTA } from './simple.ts';
import { STRING } from './string.ts';
import { AUDIT, CHECKSUM, CLASSIFY, CONNSECMARK, IDLETIMER, NFQUEUE, REDIRECT, SET_TARGET, SYNPROXY, TCPMSS, TCPOPTSTRIP, TEE } from './targets.ts';
import { TIME } from './time.ts';
import { TOS_MATCH, TOS_TARGET } from './tos.ts';
import { TPROXY } from './tproxy.ts';
import { TTL_MATCH, TTL_TARGET } from './ttl.ts';
import { U32 } from './u32.ts';

const MATCHES: readonly XtDefinition[] = [
  AH, BPF, CGROUP, CONNMARK_MATCH, CPU, ESP, REALM, SOCKET, TCPMSS_MATCH, CLUSTER, CONNBYTES, CONNLABEL, CONNLIMIT, DEVGROUP, DSCP_MATCH, ECN, HASHLIMIT, HELPER,
  LENGTH, MAC, NFACCT, OWNER, PHYSDEV, PKTTYPE, QUOTA, SCTP, STRING, TIME, TOS_MATCH, TTL_MATCH, U32,
];

const TARGETS: readonly XtDefinition[] = [
  AUDIT, CHECKSUM, CLASSIFY, CONNSECMARK, DSCP_TARGET, IDLETIMER, NFQUEUE, REDIRECT, SET_TARGET,
  SYNPROXY, TCPMSS, TCPOPTSTRIP, TEE, TOS_TARGET, TPROXY, TTL_TARGET,
];

/** Match modules defined here, by `-m` name. */
export const XT_MATCHES: ReadonlyMap<string, XtMatchModule> = new Map([
  ...MATCHES.map((d) => [d.name, xtMatchModule(d)] as const),
  ['policy', POLICY_MODULE],
]);

/** Target modules defined here, by `-j` name. */
export const XT_TARGETS: ReadonlyMap<string, XtTargetModule> = new Map(TARGETS.map((d) => [d.name, xtTargetModule(d)] as const));
