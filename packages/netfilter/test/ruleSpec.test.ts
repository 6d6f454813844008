import { describe, expect, it } from 'vitest';
import { formatRuleSpec, isNetfilterError, parseRuleSpec, type NetfilterError, type Rule } from '../src/index.ts';

// Canonical forms and messages below were observed with iptables 1.8.9 (nf_tables): each spec was
// added with `iptables -A` in a namespace and read back with `iptables-save` / `iptables -S`.

const fmt = (spec: string, table: 'filter' | 'nat' | 'mangle' | 'raw' = 'filter', chains: string[] = []): string =>
  formatRuleSpec(parseRuleSpec(spec.split(' '), { table, chains }));

function failure(words: readonly string[], opts: Parameters<typeof parseRuleSpec>[1] = {}): NetfilterError {
  try {
    parseRuleSpec(words, opts);
  } catch (e) {
    if (isNetfilterError(e)) return e;
    throw e;
  }
  throw new Error(`expected ${words.join(' ')} to fail`);
}

describe('formatRuleSpec: the IP header part', () => {
  it('should order -s -d -i -o -p whatever order they were given in', () => {
    expect(fmt('-p tcp --dport 80 -o eth1 -d 192.0.2.7 -s 198.51.100.0/24', 'filter')).toBe(
      '-s 198.51.100.0/24 -d 192.0.2.7/32 -o eth1 -p tcp -m tcp --dport 80',
    );
  });

  it('should print /32 for hosts, mask networks and drop /0', () => {
    expect(fmt('-s 192.0.2.1')).toBe('-s 192.0.2.1/32');
    expect(fmt('-d 192.0.2.77/24')).toBe('-d 192.0.2.0/24');
    expect(fmt('-s 0.0.0.0/0 -d 192.0.2.1/0')).toBe('');
    expect(fmt('-s 192.0.2.0/255.255.255.0')).toBe('-s 192.0.2.0/24');
  });

  it('should put negation before the option', () => {
    expect(fmt('! -s 192.0.2.0/24 ! -i eth+ ! -p udp ! -f')).toBe('! -s 192.0.2.0/24 ! -i eth+ ! -p udp ! -f');
  });

  it('should name protocols as /etc/protocols does and drop "all"', () => {
    expect(fmt('-p 6')).toBe('-p tcp');
    expect(fmt('-p TCP')).toBe('-p tcp');
    expect(fmt('-p 47')).toBe('-p gre');
    expect(fmt('-p icmpv6')).toBe('-p ipv6-icmp');
    expect(fmt('-p 255')).toBe('-p 255');
    expect(fmt('-p all')).toBe('');
  });

  it('should accept long option names and unambiguous prefixes', () => {
    expect(fmt('--source 192.0.2.1 --dst 192.0.2.2 --in-interface lo --protocol tcp --jump ACCEPT')).toBe(
      '-s 192.0.2.1/32 -d 192.0.2.2/32 -i lo -p tcp -j ACCEPT',
    );
    expect(fmt('--so 192.0.2.1 -p tcp --dp 80')).toBe('-s 192.0.2.1/32 -p tcp -m tcp --dport 80');
    expect(fmt('-p tcp --dport=80')).toBe('-p tcp -m tcp --dport 80');
  });
});

describe('formatRuleSpec: matches', () => {
  it('should insert the implicit -m tcp where the first tcp option appeared', () => {
    expect(fmt('-p tcp --dport 80 -m comment --comment x --sport 1')).toBe('-p tcp -m tcp --sport 1 --dport 80 -m comment --comment x');
    expect(fmt('-m comment --comment x -p tcp --dport 80')).toBe('-p tcp -m comment --comment x -m tcp --dport 80');
  });

  it('should fold repeated tcp matches into the first, later options winning (nf_tables)', () => {
    expect(fmt('-p tcp -m tcp --dport 80 -m comment --comment z -m tcp --sport 2')).toBe('-p tcp -m tcp --sport 2 --dport 80 -m comment --comment z');
    expect(fmt('-p udp -m udp --dport 53 -m udp --dport 54')).toBe('-p udp -m udp --dport 54');
  });

  it('should spell --syn as its flags and keep an empty -m tcp', () => {
    expect(fmt('-p tcp --syn')).toBe('-p tcp -m tcp --tcp-flags FIN,SYN,RST,ACK SYN');
    expect(fmt('-p tcp ! --syn')).toBe('-p tcp -m tcp ! --tcp-flags FIN,SYN,RST,ACK SYN');
    expect(fmt('-p tcp --tcp-flags ALL NONE')).toBe('-p tcp -m tcp --tcp-flags FIN,SYN,RST,PSH,ACK,URG NONE');
    expect(fmt('-p tcp -m tcp')).toBe('-p tcp -m tcp');
    expect(fmt('-p tcp --dport 0:65535')).toBe('-p tcp -m tcp');
    expect(fmt('-p tcp ! --dport 0:65535')).toBe('-p tcp');
  });

  it('should read port ranges and services like the real tcp and udp parsers', () => {
    expect(fmt('-p tcp --sport 1000: --dport :2000')).toBe('-p tcp -m tcp --sport 1000:65535 --dport 0:2000');
    expect(fmt('-p tcp --dport http --sport 0x50')).toBe('-p tcp -m tcp --sport 80 --dport 80');
    expect(fmt('-p tcp --sport 010')).toBe('-p tcp -m tcp --sport 8');
    expect(fmt('-p udp --sport 010')).toBe('-p udp -m udp --sport 10');
    expect(fmt('-p udp --sport 70000')).toBe('-p udp -m udp --sport 4464');
    expect(fmt('-p udp --sport 60:50')).toBe('-p udp -m udp --sport 60:50');
  });

  it('should print icmp types as numbers', () => {
    expect(fmt('-p icmp --icmp-type echo-request')).toBe('-p icmp -m icmp --icmp-type 8');
    expect(fmt('-p icmp ! --icmp-type port-unreachable')).toBe('-p icmp -m icmp ! --icmp-type 3/3');
    expect(fmt('-p icmp --icmp-type any')).toBe('-p icmp -m icmp --icmp-type any');
    expect(fmt('-p icmp --icmp-type ECHO-REQ')).toBe('-p icmp -m icmp --icmp-type 8');
  });

  it('should print multiport lists with services resolved', () => {
    expect(fmt('-p tcp -m multiport --destination-ports ssh,http,8000:8080')).toBe('-p tcp -m multiport --dports 22,80,8000:8080');
    expect(fmt('-p tcp -m multiport ! --sports 80,443')).toBe('-p tcp -m multiport ! --sports 80,443');
  });

  it('should print comments quoted only when needed, truncated to 255 bytes', () => {
    expect(fmt('-m comment --comment hello')).toBe('-m comment --comment hello');
    expect(formatRuleSpec(parseRuleSpec(['-m', 'comment', '--comment', 'a b"c'])).endsWith('"a b\\"c"')).toBe(true);
    const long = parseRuleSpec(['-m', 'comment', '--comment', 'x'.repeat(300)]);
    expect(long.matches[0]).toEqual({ kind: 'comment', comment: 'x'.repeat(255) });
  });

  it('should print marks in hex with the mask only when not all ones', () => {
    expect(fmt('-m mark --mark 5')).toBe('-m mark --mark 0x5');
    expect(fmt('-m mark --mark 010')).toBe('-m mark --mark 0x8');
    expect(fmt('-m mark --mark 0xffffffff/0xffffffff')).toBe('-m mark --mark 0xffffffff');
    expect(fmt('-m mark ! --mark 0x10/0xff')).toBe('-m mark ! --mark 0x10/0xff');
  });

  it('should order conntrack and state states by bit and put --ctstate first', () => {
    expect(fmt('-m conntrack --ctstate established,related')).toBe('-m conntrack --ctstate RELATED,ESTABLISHED');
    expect(fmt('-m conntrack --ctstate DNAT,SNAT,RELATED,UNTRACKED')).toBe('-m conntrack --ctstate RELATED,UNTRACKED,SNAT,DNAT');
    expect(fmt('-m conntrack --ctstatus ASSURED --ctstate NEW')).toBe('-m conntrack --ctstate NEW --ctstatus ASSURED');
    expect(fmt('-m state --state ESTABLISHED,NEW,INVALID')).toBe('-m state --state INVALID,NEW,ESTABLISHED');
  });

  it('should print addrtype types upper case in bit order', () => {
    expect(fmt('-m addrtype ! --src-type local --dst-type BROADCAST,LOCAL --limit-iface-in')).toBe(
      '-m addrtype ! --src-type LOCAL --dst-type LOCAL,BROADCAST --limit-iface-in',
    );
  });

  it('should print statistic probabilities as the kernel threshold reads back (%.11f, ties to even)', () => {
    expect(fmt('-m statistic --mode random --probability 0.3333333333')).toBe('-m statistic --mode random --probability 0.33333333349');
    expect(fmt('-m statistic --mode random --probability 0.1')).toBe('-m statistic --mode random --probability 0.10000000009');
    expect(fmt('-m statistic --mode random --probability 0.000244140625')).toBe('-m statistic --mode random --probability 0.00024414062');
    expect(fmt('-m statistic --mode random --probability 1')).toBe('-m statistic --mode random --probability 1.00000000000');
    expect(fmt('-m statistic --mode nth --every 3 --packet 1')).toBe('-m statistic --mode nth --every 3 --packet 1');
    const m = parseRuleSpec(['-m', 'statistic', '--mode', 'random', '--probability', '0.5']).matches[0];
    expect(m).toEqual({ kind: 'statistic', mode: 'random', probability: { text: '0.50000000000', threshold31: 0x40000000 }, negate: false });
  });

  it('should print set and iprange matches', () => {
    expect(fmt('-m set ! --match-set KUBE-CLUSTER-IP dst,dst')).toBe('-m set ! --match-set KUBE-CLUSTER-IP dst,dst');
    expect(fmt('-m iprange ! --dst-range 192.0.2.1-192.0.2.9 --src-range 198.51.100.1')).toBe(
      '-m iprange --src-range 198.51.100.1-198.51.100.1 ! --dst-range 192.0.2.1-192.0.2.9',
    );
  });

  it('should keep modules it does not model verbatim, options and order included', () => {
    const r = parseRuleSpec(['-m', 'limit', '--limit', '10/day', '-m', 'ttl', '--ttl-eq', '1', '-j', 'ACCEPT']);
    expect(r.matches).toEqual([
      { kind: 'unknown', module: 'limit', args: ['--limit', '10/day'] },
      { kind: 'unknown', module: 'ttl', args: ['--ttl-eq', '1'] },
    ]);
    expect(formatRuleSpec(r)).toBe('-m limit --limit 10/day -m ttl --ttl-eq 1 -j ACCEPT');
    expect(fmt('-m pkttype ! --pkt-type unicast')).toBe('-m pkttype ! --pkt-type unicast');
    expect(fmt('-p sctp --dport 5')).toBe('-p sctp -m sctp --dport 5');
  });
});

describe('formatRuleSpec: targets', () => {
  it('should print REJECT with its default and canonical reject types', () => {
    expect(fmt('-j REJECT')).toBe('-j REJECT --reject-with icmp-port-unreachable');
    expect(fmt('-j REJECT --reject-with host-prohib')).toBe('-j REJECT --reject-with icmp-host-prohibited');
  });

  it('should print NAT targets', () => {
    expect(fmt('-p tcp -j DNAT --to 192.0.2.1:80 --persistent --random', 'nat')).toBe('-p tcp -j DNAT --to-destination 192.0.2.1:80 --random --persistent');
    expect(fmt('-p tcp -j DNAT --to-destination 192.0.2.1-192.0.2.5:80-90', 'nat')).toBe('-p tcp -j DNAT --to-destination 192.0.2.1-192.0.2.5:80-90');
    expect(fmt('-p udp -j SNAT --to-source 192.0.2.1:1000-2000 --random-fully --random', 'nat')).toBe(
      '-p udp -j SNAT --to-source 192.0.2.1:1000-2000 --random --random-fully',
    );
    expect(fmt('-p tcp -j MASQUERADE --random --to-ports 1000-2000', 'nat')).toBe('-p tcp -j MASQUERADE --to-ports 1000-2000 --random');
  });

  it('should normalise every MARK option to --set-xmark value/mask', () => {
    const cases: [string, string][] = [
      ['--set-mark 0x4000', '0x4000/0xffffffff'],
      ['--set-mark 0x1/0xf0', '0x1/0xf1'],
      ['--or-mark 0x4000', '0x4000/0x4000'],
      ['--and-mark 0x4000', '0x0/0xffffbfff'],
      ['--xor-mark 0x4000', '0x4000/0x0'],
      ['--set-xmark 0x4000', '0x4000/0xffffffff'],
    ];
    for (const [opt, out] of cases) expect(fmt(`-j MARK ${opt}`, 'mangle')).toBe(`-j MARK --set-xmark ${out}`);
  });

  it('should print CONNMARK save and restore with both masks', () => {
    expect(fmt('-j CONNMARK --save-mark', 'mangle')).toBe('-j CONNMARK --save-mark --nfmask 0xffffffff --ctmask 0xffffffff');
    expect(fmt('-j CONNMARK --restore-mark --mask 0xff', 'mangle')).toBe('-j CONNMARK --restore-mark --nfmask 0xff --ctmask 0xff');
  });

  it('should print LOG without the default level and NFLOG options in their order', () => {
    expect(fmt('-j LOG --log-level warning')).toBe('-j LOG');
    expect(fmt('-j LOG --log-uid --log-level debug --log-tcp-sequence')).toBe('-j LOG --log-level 7 --log-tcp-sequence --log-uid');
    expect(fmt('-j NFLOG --nflog-threshold 2 --nflog-group 3 --nflog-prefix x')).toBe('-j NFLOG --nflog-prefix x --nflog-group 3 --nflog-threshold 2');
  });

  it('should print NOTRACK, CT, TRACE, jumps and gotos', () => {
    expect(fmt('-j NOTRACK', 'raw')).toBe('-j NOTRACK');
    expect(fmt('-j CT --zone 1 --notrack', 'raw')).toBe('-j CT --notrack --zone 1');
    expect(fmt('-j TRACE', 'raw')).toBe('-j TRACE');
    expect(fmt('-g KUBE-X', 'filter', ['KUBE-X'])).toBe('-g KUBE-X');
    expect(fmt('-j KUBE-X', 'filter', ['KUBE-X'])).toBe('-j KUBE-X');
  });

  it('should keep targets it does not model verbatim and allow rules without a target', () => {
    expect(fmt('-p tcp -j REDIRECT --to-ports 8080', 'nat')).toBe('-p tcp -j REDIRECT --to-ports 8080');
    const r: Rule = parseRuleSpec(['-s', '192.0.2.1']);
    expect(r.target).toBeUndefined();
  });
});

describe('parseRuleSpec errors', () => {
  // [spec, exit status, message after "iptables v1.8.10 (nf_tables): " (or the bare message)]
  const cases: [string, number, string][] = [
    ['-m multiport --dports 80 -p tcp', 2, "multiport needs `-p tcp', `-p udp', `-p udplite', `-p sctp' or `-p dccp'"],
    ['--dport 80', 2, 'unknown option "--dport"'],
    ['-p tcp --d 80', 2, 'unknown option "--d"'],
    ['-s 1.2.3.400', 2, "host/network `1.2.3.400' not found"],
    ['-s 192.0.2.0/33', 2, "invalid mask `33' specified"],
    ['-p tcp --dport 99999', 2, "invalid port/service `99999' specified"],
    ['-p tcp --dport 90:80', 2, 'invalid portrange (min > max)'],
    ['-p udp --sport x', 2, 'Port "x" does not resolve to anything.\n'],
    ['-p bogus', 2, 'unknown protocol "bogus" specified'],
    ['-s 192.0.2.1 -s 192.0.2.2', 2, 'multiple -s flags not allowed'],
    ['-j ACCEPT -j DROP', 2, 'multiple -j flags not allowed'],
    ['! ! -s 192.0.2.1', 2, 'multiple consecutive ! not allowed'],
    ['-m bogusmod', 2, "Couldn't load match `bogusmod':No such file or directory\n"],
    ['-i abcdefghijklmnopq', 2, "interface name `abcdefghijklmnopq' must be shorter than IFNAMSIZ (15)"],
    ['-p tcp --tcp-flags SYN', 2, '--tcp-flags requires two args.'],
    ['-p tcp --tcp-flags BOGUS SYN', 2, "Unknown TCP flag `BOGUS'"],
    ['-p icmp --icmp-type echo', 2, "Ambiguous ICMP type `echo': `echo-reply' or `echo-request'?"],
    ['-p icmp --icmp-type 3/300', 2, "Unknown ICMP code `3/300'"],
    ['-p tcp -m multiport --dports 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16', 2, 'too many ports specified'],
    ['-p tcp -m multiport --dports 80:80', 2, 'invalid portrange specified'],
    ['-m comment', 2, 'comment: option "--comment" must be specified\n'],
    ['-m comment ! --comment x', 2, 'comment: option "--comment" cannot be inverted.\n'],
    ['-m comment --comment a --comment b', 2, 'comment: option "--comment" can only be used once.\n'],
    ['! -m comment --comment x', 2, 'unexpected ! flag before --match'],
    ['! -j ACCEPT', 2, 'cannot have ! before -j'],
    ['-m mark --mark bogus', 2, 'mark: bad integer value for option "--mark", or out of range.\n'],
    ['-m conntrack --ctstate BOGUS', 2, 'Bad ctstate "BOGUS"'],
    ['-m conntrack', 2, 'conntrack: At least one option is required'],
    ['-m state --state SNAT', 2, 'Bad state "SNAT"'],
    ['-m addrtype', 2, 'addrtype: you must specify --src-type or --dst-type'],
    ['-m addrtype --dst-type ! UNICAST', 2, 'addrtype: bad type "!"'],
    ['-m addrtype --dst-type LOCAL --limit-iface-in --limit-iface-out', 2, 'addrtype: option "--limit-iface-in" cannot be used together with "--limit-iface-out".\n'],
    ['-m statistic --mode random', 2, '--probability must be specified when using random mode'],
    ['-m statistic --mode random --probability 2', 2, 'statistic: bad value for option "--probability", or out of range (0-1).\n'],
    ['-m statistic --mode bogus', 2, 'Bad mode "bogus"'],
    ['-m statistic --mode nth --every 3', 2, 'statistic: option "--every" also requires "--packet".\n'],
    ['-m statistic --mode nth --every 3 --packet 5', 2, 'the --packet p must be 0 <= p <= n-1'],
    ['-m iprange --src-range 192.0.2.x', 2, 'iprange: Bad value for "--src-range" option: "192.0.2.x"'],
    ['-m iprange', 2, "iprange match: You must specify `--src-range' or `--dst-range'"],
    ['-m set', 2, "You must specify `--match-set' with proper arguments"],
    ['-m tcp --dport 80', 2, "TCP match requires '-p tcp'"],
    ['-p udp -m tcp --dport 80', 2, "TCP match requires '-p tcp'"],
    ['-j REJECT --reject-with bogus', 2, 'unknown reject type "bogus"'],
    ['-j MARK', 2, 'MARK: One of the --set-xmark, --{and,or,xor,set}-mark options is required'],
    ['-j MARK --set-mark 1 --or-mark 2', 2, 'MARK: option "--set-mark" cannot be used together with "--or-mark".\n'],
    ['-j CONNMARK', 2, 'CONNMARK target: No operation specified'],
    ['-j LOG --log-level 8', 2, 'log level "8" unknown\n'],
    ['-j LOG --log-prefix ', 2, 'Argument must have a minimum length of 1 characters\n'],
    ['-j NFLOG --nflog-group 70000', 2, 'NFLOG: bad value for option "--nflog-group", or out of range (0-65535).\n'],
    ['-j NOSUCH', 2, "Chain 'NOSUCH' does not exist"],
    ['-j ACCEPT extra', 2, "Bad argument `extra'"],
  ];
  for (const [spec, status, message] of cases) {
    it(`should reject "${spec}" like the real tool`, () => {
      const e = failure(spec === '-j LOG --log-prefix ' ? ['-j', 'LOG', '--log-prefix', ''] : spec.split(' '), { chains: [] });
      expect(e.exitCode).toBe(status);
      const prefix = message.startsWith('Bad argument') ? '' : 'iptables v1.8.10 (nf_tables): ';
      expect(e.stderr).toBe(`${prefix}${message}\nTry \`iptables -h' or 'iptables --help' for more information.\n`);
    });
  }

  it('should reject NAT targets needing a port protocol, and bad NAT ranges', () => {
    expect(failure(['-j', 'DNAT', '--to-destination', '192.0.2.1:80'], { table: 'nat' }).stderr).toContain('Need TCP, UDP, SCTP or DCCP with port specification');
    expect(failure(['-p', 'tcp', '-j', 'DNAT', '--to-destination', '192.0.2.300'], { table: 'nat' }).stderr).toContain('Bad IP address "192.0.2.300"');
    expect(failure(['-p', 'tcp', '-j', 'DNAT', '--to-destination', '192.0.2.1:99999'], { table: 'nat' }).stderr).toContain("Port `99999' not valid");
    expect(failure(['-p', 'tcp', '-j', 'DNAT', '--to-destination', '192.0.2.1:90-80'], { table: 'nat' }).stderr).toContain("Port range `80' funky");
    expect(failure(['-j', 'DNAT'], { table: 'nat' }).stderr).toContain('DNAT: option "--to-destination" must be specified\n');
  });

  it('should name the offending word in the message', () => {
    expect(failure(['-p', 'tcp', '--dport', '80', '--bogus']).message).toBe('parseRuleSpec at word 5 "--bogus": unknown option "--bogus"');
  });
});
