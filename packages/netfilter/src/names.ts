/**
 * Name tables the real tools read from the system: `/etc/protocols` and the tcp/udp part of
 * `/etc/services` as shipped by Debian 12's netbase (the host the expected outputs were recorded on),
 * plus the ICMP type names and syslog levels iptables' extensions know. Data, not behaviour.
 */
/** `number:name,alias…` per protocol, in file order. */
const PROTOCOLS_TEXT = [
  '0:ip,IP 0:hopopt,HOPOPT 1:icmp,ICMP 2:igmp,IGMP 3:ggp,GGP 4:ipencap,IP-ENCAP 5:st,ST 6:tcp,TCP',
  '8:egp,EGP 9:igp,IGP 12:pup,PUP 17:udp,UDP 20:hmp,HMP 22:xns-idp,XNS-IDP 27:rdp,RDP',
  '29:iso-tp4,ISO-TP4 33:dccp,DCCP 36:xtp,XTP 37:ddp,DDP 38:idpr-cmtp,IDPR-CMTP 41:ipv6,IPv6',
  '43:ipv6-route,IPv6-Route 44:ipv6-frag,IPv6-Frag 45:idrp,IDRP 46:rsvp,RSVP 47:gre,GRE',
  '50:esp,IPSEC-ESP 51:ah,IPSEC-AH 57:skip,SKIP 58:ipv6-icmp,IPv6-ICMP 59:ipv6-nonxt,IPv6-NoNxt',
  '60:ipv6-opts,IPv6-Opts 73:rspf,RSPF,CPHB 81:vmtp,VMTP 88:eigrp,EIGRP 89:ospf,OSPFIGP 93:ax.25,AX.25',
  '94:ipip,IPIP 97:etherip,ETHERIP 98:encap,ENCAP 103:pim,PIM 108:ipcomp,IPCOMP 112:vrrp,VRRP',
  '115:l2tp,L2TP 124:isis,ISIS 132:sctp,SCTP 133:fc,FC 135:mobility-header,Mobility-Header',
  '136:udplite,UDPLite 137:mpls-in-ip,MPLS-in-IP 138:manet 139:hip,HIP 140:shim6,Shim6 141:wesp,WESP',
  '142:rohc,ROHC 143:ethernet,Ethernet 262:mptcp,MPTCP',
].join(' ');
/** `port:name,alias…` per tcp service. */
const TCP_SERVICES_TEXT = [
  '1:tcpmux 7:echo 9:discard,sink,null 11:systat,users 13:daytime 15:netstat 17:qotd,quote',
  '19:chargen,ttytst,source 20:ftp-data 21:ftp 22:ssh 23:telnet 25:smtp,mail 37:time,timserver',
  '43:whois,nicname 49:tacacs 53:domain 70:gopher 79:finger 80:http,www',
  '88:kerberos,kerberos5,krb5,kerberos-sec 102:iso-tsap,tsap 104:acr-nema,dicom 110:pop3,pop-3',
  '111:sunrpc,portmapper 113:auth,authentication,tap,ident 119:nntp,readnews,untp 135:epmap,loc-srv',
  '139:netbios-ssn 143:imap2,imap 161:snmp 162:snmp-trap,snmptrap 163:cmip-man 164:cmip-agent 174:mailq',
  '179:bgp 199:smux 209:qmtp 210:z3950,wais 345:pawserv 346:zserv 369:rpc2portmap 370:codaauth2',
  '389:ldap 427:svrloc 443:https 444:snpp 445:microsoft-ds 464:kpasswd 465:submissions,ssmtp,smtps,urd',
  '487:saft 554:rtsp 607:nqs 628:qmqp 631:ipp 646:ldp 512:exec 513:login 514:shell,cmd,syslog',
  '515:printer,spooler 538:gdomap 540:uucp,uucpd 543:klogin 544:kshell,krcmd 548:afpovertcp',
  '563:nntps,snntp 587:submission 636:ldaps 655:tinc 706:silc 749:kerberos-adm 853:domain-s 873:rsync',
  '989:ftps-data 990:ftps 992:telnets 993:imaps 995:pop3s 1080:socks 1093:proofd 1094:rootd',
  '1194:openvpn 1099:rmiregistry 1352:lotusnote,lotusnotes 1433:ms-sql-s 1524:ingreslock',
  '1645:datametrics,old-radius 1646:sa-msg-port,old-radacct 1649:kermit 1677:groupwise 1812:radius',
  '1813:radius-acct,radacct 2000:cisco-sccp 2049:nfs 2086:gnunet 2101:rtcm-sc104 2119:gsigatekeeper',
  '2135:gris 2401:cvspserver 2430:venus 2431:venus-se 2432:codasrv 2433:codasrv-se 2583:mon 2628:dict',
  '2792:f5-globalsite 2811:gsiftp 2947:gpsd 3050:gds-db,gds_db 3205:isns 3260:iscsi-target 3306:mysql',
  '3389:ms-wbt-server 3493:nut 3632:distcc 3689:daap 3690:svn,subversion 4031:suucp 4094:sysrqd',
  '4190:sieve 4369:epmd 4373:remctl 4353:f5-iquery 4460:ntske 4691:mtn 4899:radmin-port 5060:sip',
  '5061:sip-tls 5222:xmpp-client,jabber-client 5269:xmpp-server,jabber-server 5308:cfengine',
  '5432:postgresql,postgres 5556:freeciv,rptp 5671:amqps 5672:amqp 6000:x11,x11-0 6001:x11-1 6002:x11-2',
  '6003:x11-3 6004:x11-4 6005:x11-5 6006:x11-6 6007:x11-7 6346:gnutella-svc 6347:gnutella-rtr',
  '6379:redis 6444:sge-qmaster,sge_qmaster 6445:sge-execd,sge_execd 6446:mysql-proxy 6697:ircs-u',
  '7000:bbs 7100:font-service,xfs 8080:http-alt,webcache 8140:puppet 9101:bacula-dir 9102:bacula-fd',
  '9103:bacula-sd 9667:xmms2 10809:nbd 10050:zabbix-agent 10051:zabbix-trapper 10080:amanda 11112:dicom',
  '11371:hkp 17500:db-lsp 22125:dcap 22128:gsidcap 22273:wnn6 750:kerberos4,kerberos-iv,kdc',
  '751:kerberos-master 754:krb-prop,krb_prop,krb5_prop,hprop 2121:iprop 871:supfilesrv 1127:supfiledbg',
  '106:poppassd 775:moira-db,moira_db 777:moira-update,moira_update 783:spamd 1178:skkserv 1236:rmtcfg',
  '1313:xtel 1314:xtelw 2600:zebrasrv 2601:zebra 2602:ripd 2603:ripngd 2604:ospfd 2605:bgpd 2606:ospf6d',
  '2607:ospfapi 2608:isisd 4557:fax 4559:hylafax 4949:munin,lrrd 5666:nrpe 5667:nsca 5680:canna',
  '6514:syslog-tls 6566:sane-port,sane,saned 6667:ircd 8021:zope-ftp 8081:tproxy 8088:omniorb',
  '8990:clc-build-daemon 9098:xinetd 9418:git 9673:zope 10000:webmin 10081:kamanda 10082:amandaidx',
  '10083:amidxtape 17004:sgi-cad 24554:binkp 27374:asp 30865:csync2 57000:dircproxy 60177:tfido',
  '60179:fido',
].join(' ');
/** `port:name,alias…` per udp service. */
const UDP_SERVICES_TEXT = [
  '7:echo 9:discard,sink,null 13:daytime 19:chargen,ttytst,source 21:fsp,fspd 37:time,timserver',
  '49:tacacs 53:domain 67:bootps 68:bootpc 69:tftp 88:kerberos,kerberos5,krb5,kerberos-sec',
  '111:sunrpc,portmapper 123:ntp 137:netbios-ns 138:netbios-dgm 161:snmp 162:snmp-trap,snmptrap',
  '163:cmip-man 164:cmip-agent 177:xdmcp 213:ipx 319:ptp-event 320:ptp-general 369:rpc2portmap',
  '370:codaauth2 371:clearcase,Clearcase 389:ldap 427:svrloc 443:https 464:kpasswd 500:isakmp 554:rtsp',
  '623:asf-rmcp 646:ldp 512:biff,comsat 513:who,whod 514:syslog 517:talk 518:ntalk',
  '520:route,router,routed 538:gdomap 546:dhcpv6-client 547:dhcpv6-server 636:ldaps 655:tinc',
  '853:domain-s 1194:openvpn 1434:ms-sql-m 1645:datametrics,old-radius 1646:sa-msg-port,old-radacct',
  '1701:l2f,l2tp 1812:radius 1813:radius-acct,radacct 2049:nfs 2086:gnunet 2101:rtcm-sc104 2430:venus',
  '2431:venus-se 2432:codasrv 2433:codasrv-se 2583:mon 3130:icpv2,icp 3205:isns 3493:nut',
  '4500:ipsec-nat-t 4569:iax 5060:sip 5061:sip-tls 5353:mdns 6346:gnutella-svc 6347:gnutella-rtr',
  '6696:babel 7000:afs3-fileserver 7001:afs3-callback 7002:afs3-prserver 7003:afs3-vlserver',
  '7004:afs3-kaserver 7005:afs3-volser 7007:afs3-bos 7008:afs3-update 7009:afs3-rmtsys',
  '750:kerberos4,kerberos-iv,kdc 751:kerberos-master,kerberos_master 752:passwd-server,passwd_server',
  '2102:zephyr-srv 2103:zephyr-clt 2104:zephyr-hm 779:moira-ureg,moira_ureg 1210:predict 5555:rplay',
  '17001:sgi-cmsd 17002:sgi-crsd 17003:sgi-gcd 27374:asp',
].join(' ');

function parseTable(text: string): { byName: Map<string, number>; byNumber: Map<number, string> } {
  const byName = new Map<string, number>();
  const byNumber = new Map<number, string>();
  for (const entry of text.split(' ')) {
    const colon = entry.indexOf(':');
    const n = Number(entry.slice(0, colon));
    const names = entry.slice(colon + 1).split(',');
    // The first entry for a number wins, as getprotobynumber/getservbyport return the first match.
    if (!byNumber.has(n) && names[0] !== undefined) byNumber.set(n, names[0]);
    for (const name of names) if (!byName.has(name)) byName.set(name, n);
  }
  return { byName, byNumber };
}

const PROTOCOLS = parseTable(PROTOCOLS_TEXT);
const TCP_SERVICES = parseTable(TCP_SERVICES_TEXT);
const UDP_SERVICES = parseTable(UDP_SERVICES_TEXT);

/** Protocol names iptables knows even without `/etc/protocols` (its `xtables_chain_protos`). */
const CHAIN_PROTOS: ReadonlyMap<string, number> = new Map([
  ['tcp', 6],
  ['sctp', 132],
  ['udp', 17],
  ['udplite', 136],
  ['icmp', 1],
  ['icmpv6', 58],
  ['esp', 50],
  ['ah', 51],
  ['ipv6-mh', 135],
  ['mh', 135],
  ['all', 0],
]);

/**
 * `-p` argument to protocol number as iptables resolves it (after lower-casing): a number 0..255,
 * `all`, an `/etc/protocols` name or alias, or one of iptables' built-in names. `undefined` if none.
 */
export function lookupProtocol(text: string): number | undefined {
  const n = parseUintBase0(text);
  if (n !== undefined) return n <= 255 ? n : undefined;
  if (text === 'all') return 0;
  return PROTOCOLS.byName.get(text) ?? CHAIN_PROTOS.get(text);
}

/** The name `iptables-save` prints for a protocol number (getprotobynumber), or the number. */
export function protocolName(proto: number): string {
  return PROTOCOLS.byNumber.get(proto) ?? String(proto);
}

/** Service name to port for tcp (`proto` 6) or udp (17) and the protocols sharing their tables. */
export function lookupService(name: string, proto: number): number | undefined {
  const table = proto === 17 || proto === 136 ? UDP_SERVICES : TCP_SERVICES;
  return table.byName.get(name);
}

/** Port to service name, as `iptables -L` without `-n` prints ports. */
export function serviceName(port: number, proto: number): string | undefined {
  const table = proto === 17 || proto === 136 ? UDP_SERVICES : TCP_SERVICES;
  return table.byNumber.get(port);
}

/**
 * An unsigned integer as C's `strtoul(s, &end, 0)` reads a whole string: decimal, `0x` hex or
 * leading-`0` octal. `undefined` when the text is not entirely such a number.
 */
export function parseUintBase0(text: string): number | undefined {
  const len = text.length;
  if (len === 0) return undefined;
  let i = 0;
  let base = 10;
  if (text.charCodeAt(0) === 48 /* 0 */ && len > 1) {
    const c1 = text.charCodeAt(1);
    if (c1 === 120 /* x */ || c1 === 88 /* X */) {
      base = 16;
      i = 2;
      if (len === 2) return undefined;
    } else {
      base = 8;
      i = 1;
    }
  }
  let n = 0;
  for (; i < len; i++) {
    const c = text.charCodeAt(i);
    let d: number;
    if (c >= 48 && c <= 57) d = c - 48;
    else if (c >= 97 && c <= 102) d = c - 87;
    else if (c >= 65 && c <= 70) d = c - 55;
    else return undefined;
    if (d >= base) return undefined;
    n = n * base + d;
    if (n > Number.MAX_SAFE_INTEGER / 16) return undefined;
  }
  return n;
}

/** An ICMP type name as iptables' icmp match knows it: type and code range. */
export interface IcmpName {
  readonly name: string;
  readonly type: number;
  readonly codeMin: number;
  readonly codeMax: number;
}

function icmp(name: string, type: number, codeMin: number, codeMax: number): IcmpName {
  return { name, type, codeMin, codeMax };
}

/** In the order the icmp match searches them (prefix matches are ambiguous across entries). */
export const ICMP_NAMES: readonly IcmpName[] = [
  icmp('any', 0xff, 0, 0xff),
  icmp('echo-reply', 0, 0, 0xff),
  icmp('destination-unreachable', 3, 0, 0xff),
  icmp('network-unreachable', 3, 0, 0),
  icmp('host-unreachable', 3, 1, 1),
  icmp('protocol-unreachable', 3, 2, 2),
  icmp('port-unreachable', 3, 3, 3),
  icmp('fragmentation-needed', 3, 4, 4),
  icmp('source-route-failed', 3, 5, 5),
  icmp('network-unknown', 3, 6, 6),
  icmp('host-unknown', 3, 7, 7),
  icmp('network-prohibited', 3, 9, 9),
  icmp('host-prohibited', 3, 10, 10),
  icmp('TOS-network-unreachable', 3, 11, 11),
  icmp('TOS-host-unreachable', 3, 12, 12),
  icmp('communication-prohibited', 3, 13, 13),
  icmp('host-precedence-violation', 3, 14, 14),
  icmp('precedence-cutoff', 3, 15, 15),
  icmp('source-quench', 4, 0, 0xff),
  icmp('redirect', 5, 0, 0xff),
  icmp('network-redirect', 5, 0, 0),
  icmp('host-redirect', 5, 1, 1),
  icmp('TOS-network-redirect', 5, 2, 2),
  icmp('TOS-host-redirect', 5, 3, 3),
  icmp('echo-request', 8, 0, 0xff),
  icmp('router-advertisement', 9, 0, 0xff),
  icmp('router-solicitation', 10, 0, 0xff),
  icmp('time-exceeded', 11, 0, 0xff),
  icmp('ttl-zero-during-transit', 11, 0, 0),
  icmp('ttl-zero-during-reassembly', 11, 1, 1),
  icmp('parameter-problem', 12, 0, 0xff),
  icmp('ip-header-bad', 12, 0, 0),
  icmp('required-option-missing', 12, 1, 1),
  icmp('timestamp-request', 13, 0, 0xff),
  icmp('timestamp-reply', 14, 0, 0xff),
  icmp('address-mask-request', 17, 0, 0xff),
  icmp('address-mask-reply', 18, 0, 0xff),
];

/** Syslog level names the LOG target accepts for `--log-level`. */
export const LOG_LEVELS: ReadonlyMap<string, number> = new Map([
  ['alert', 1],
  ['crit', 2],
  ['debug', 7],
  ['emerg', 0],
  ['err', 3],
  ['error', 3],
  ['info', 6],
  ['notice', 5],
  ['panic', 0],
  ['warning', 4],
  ['warn', 4],
]);
