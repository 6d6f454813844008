/**
 * @internal
 * The one table of extensions: one file per libxt_*.c in this directory. Adding an extension is
 * one new file here and one entry below; `matches.ts` and `targets.ts` serve this table to every
 * reader (restore, the canonical builder, the fast reader, `iptables` argv, listing, evaluation).
 */
import type { MatchModule } from '../matches.ts';
import { ADDRTYPE_MODULE } from './addrtype.ts';
import { COMMENT_MODULE } from './comment.ts';
import { CONNTRACK_MODULE, STATE_MODULE } from './conntrack.ts';
import { ICMP_MODULE } from './icmp.ts';
import { IPRANGE_MODULE } from './iprange.ts';
import { LIMIT_MODULE } from './limit.ts';
import { MARK_MODULE } from './mark.ts';
import { MULTIPORT_MODULE } from './multiport.ts';
import { RECENT_MODULE } from './recent.ts';
import { RPFILTER_MODULE } from './rpfilter.ts';
import { SET_MODULE } from './set.ts';
import { STATISTIC_MODULE } from './statistic.ts';
import { TCP_MODULE, UDP_MODULE } from './tcp.ts';
import { BPF } from './bpf.ts';
import { CONNBYTES } from './connbytes.ts';
import { CONNLIMIT } from './connlimit.ts';
import { DCCP } from './dccp.ts';
import type { TargetModule } from '../targets.ts';
import { CT_TARGET, NOTRACK_TARGET, TRACE_TARGET } from './ct.ts';
import { xtMatchModule, xtTargetModule, type XtDefinition } from './define.ts';
import { LOG_TARGET, NFLOG_TARGET } from './log.ts';
import { CONNMARK_TARGET, MARK_TARGET } from './markTargets.ts';
import { DNAT_MODULE, MASQUERADE_MODULE, SNAT_MODULE } from './nat.ts';
import { REJECT_MODULE } from './reject.ts';
import { DSCP_MATCH, DSCP_TARGET } from './dscp.ts';
import { ECN } from './ecn.ts';
import { HASHLIMIT } from './hashlimit.ts';
import { HMARK } from './hmark.ts';
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
  AH, BPF, CGROUP, DCCP, CONNMARK_MATCH, CPU, ESP, REALM, SOCKET, TCPMSS_MATCH, CLUSTER, CONNBYTES, CONNLABEL, CONNLIMIT, DEVGROUP, DSCP_MATCH, ECN, HASHLIMIT, HELPER,
  LENGTH, MAC, NFACCT, OWNER, PHYSDEV, PKTTYPE, QUOTA, SCTP, STRING, TIME, TOS_MATCH, TTL_MATCH, U32,
];

const TARGETS: readonly XtDefinition[] = [
  AUDIT, CHECKSUM, CLASSIFY, CONNSECMARK, DSCP_TARGET, HMARK, IDLETIMER, NFQUEUE, REDIRECT, SET_TARGET,
  SYNPROXY, TCPMSS, TCPOPTSTRIP, TEE, TOS_TARGET, TPROXY, TTL_TARGET,
];

/** Match modules, each whole in its file. */
export const MATCH_MODULES: readonly MatchModule[] = [
  TCP_MODULE, UDP_MODULE, ICMP_MODULE, MULTIPORT_MODULE, COMMENT_MODULE, MARK_MODULE, CONNTRACK_MODULE, STATE_MODULE,
  ADDRTYPE_MODULE, STATISTIC_MODULE, SET_MODULE, IPRANGE_MODULE, RECENT_MODULE, LIMIT_MODULE, RPFILTER_MODULE,
  ...MATCHES.map(xtMatchModule), POLICY_MODULE,
];

/** Target modules, each whole in its file. */
export const TARGET_MODULES: readonly TargetModule[] = [
  REJECT_MODULE, DNAT_MODULE, SNAT_MODULE, MASQUERADE_MODULE, MARK_TARGET, CONNMARK_TARGET, LOG_TARGET, NFLOG_TARGET,
  NOTRACK_TARGET, TRACE_TARGET, CT_TARGET, ...TARGETS.map(xtTargetModule),
];
