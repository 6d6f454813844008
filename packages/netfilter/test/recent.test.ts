import { describe, expect, it } from 'vitest';
import {
  compile,
  createEvalState,
  evaluateTable,
  formatRecentProc,
  jiffiesAt,
  makePacket,
  parseIpv4,
  parseSave,
  seededRandom31,
  writeRecentProc,
  type EvalContext,
  type EvalState,
  type Packet,
} from '../src/index.ts';
import { NEW } from './evalHelpers.ts';

function ctxAt(state: EvalState, nowMs: number): EvalContext {
  return { addrType: () => 'UNICAST', conntrack: NEW, random31: seededRandom31(1), state, nowMs };
}

function rules(lines: readonly string[]): ReturnType<typeof compile> {
  return compile(parseSave(`*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n${lines.map((l) => `-A OUTPUT ${l}\n`).join('')}COMMIT\n`));
}

/** Per rule of OUTPUT, how many of the packets matched it (what `iptables -L -v -x` counts). */
function counts(compiled: ReturnType<typeof compile>, n: number, sends: readonly { dport: number; atMs: number; src?: string }[], state: EvalState): number[] {
  const out = new Array<number>(n).fill(0);
  for (const s of sends) {
    const p: Packet = makePacket({ src: parseIpv4(s.src ?? '127.0.0.1'), dst: parseIpv4('127.0.0.1'), proto: 17, sport: 5000, dport: s.dport, outIface: 'lo', tcpFlags: 0 });
    const r = evaluateTable(compiled, 'filter', 'OUTPUT', p, ctxAt(state, s.atMs));
    for (const e of r.trace) if (e.kind === 'rule' && e.outcome === 'match') out[e.index - 1]! += 1;
  }
  return out;
}

describe('-m recent evaluation', () => {
  it('should count as the kernel did for set, rcheck, hitcount, update, remove and reap', () => {
    // Recorded on Linux 6.18 in a network namespace: these rules in OUTPUT, UDP datagrams to
    // 127.0.0.1 ports 1, 1, 1, 2, then 1.5 s later 2, 4, 3, 1. `iptables -L OUTPUT -v -x`
    // counted 2 4 1 1 0 4 0, and /proc/net/xt_recent/A then held one address with one stamp:
    // the reap (port 4) had dropped the entry the update refreshed 1.5 s earlier, so the remove
    // (port 3) found nothing and the last datagram to port 1 made the entry anew.
    const compiled = rules([
      '-o lo -p udp -m udp --dport 1 -m recent --rcheck --name A',
      '-o lo -p udp -m udp --dport 1 -m recent --set --name A',
      '-o lo -p udp -m udp --dport 1 -m recent --rcheck --hitcount 3 --name A',
      '-o lo -p udp -m udp --dport 2 -m recent --update --seconds 1 --name A',
      '-o lo -p udp -m udp --dport 3 -m recent --remove --name A',
      '-o lo -p udp -m udp --dport 1 -m recent ! --rcheck --name B --rdest',
      '-o lo -p udp -m udp --dport 4 -m recent --rcheck --seconds 1 --reap --name A',
    ]);
    const state = createEvalState();
    const sends = [
      { dport: 1, atMs: 0 },
      { dport: 1, atMs: 10 },
      { dport: 1, atMs: 20 },
      { dport: 2, atMs: 30 },
      { dport: 2, atMs: 1530 },
      { dport: 4, atMs: 1540 },
      { dport: 3, atMs: 1550 },
      { dport: 1, atMs: 1560 },
    ];
    expect(counts(compiled, 7, sends, state)).toEqual([2, 4, 1, 1, 0, 4, 0]);
    const j = jiffiesAt(1560);
    expect(formatRecentProc(state.recent, 'A')).toBe(`src=127.0.0.1 ttl: 64 last_seen: ${j} oldest_pkt: 1 ${j}\n`);
  });

  it('should keep ClientIP affinity for the timeout and drop it after', () => {
    // kube-proxy's sessionAffinity shape: the Service chain checks the list the endpoint sets.
    const compiled = rules([
      '-m recent --rcheck --seconds 10800 --reap --name KUBE-SEP-X --mask 255.255.255.255 --rsource',
      '-m recent --set --name KUBE-SEP-X --mask 255.255.255.255 --rsource',
    ]);
    const state = createEvalState();
    const at = (atMs: number, src = '192.0.2.10'): number[] => counts(compiled, 2, [{ dport: 80, atMs, src }], state);
    expect(at(0)).toEqual([0, 1]);
    expect(at(60_000)).toEqual([1, 1]);
    expect(at(60_000, '192.0.2.11')).toEqual([0, 1]);
    // Each --set refreshed the stamp: 10800 s after the last one it no longer counts.
    expect(at(60_000 + 10_800_000 + 4)).toEqual([0, 1]);
  });

  it('should apply --mask, --rdest and --rttl to the lookup', () => {
    const compiled = rules([
      '-m recent --set --name N --mask 255.255.255.0 --rdest',
      '-m recent --rcheck --name N --mask 255.255.255.0 --rdest',
      '-m recent --rcheck --rttl --name N --mask 255.255.255.0 --rdest',
    ]);
    const state = createEvalState();
    const p = (dst: string, ttl: number): Packet =>
      makePacket({ src: parseIpv4('192.0.2.1'), dst: parseIpv4(dst), proto: 17, dport: 53, outIface: 'eth0', ttl });
    const matched = (pk: Packet): number[] =>
      evaluateTable(compiled, 'filter', 'OUTPUT', pk, ctxAt(state, 0)).trace.flatMap((e) => (e.kind === 'rule' && e.outcome === 'match' ? [e.index] : []));
    expect(matched(p('198.51.100.7', 64))).toEqual([1, 2, 3]);
    // Same /24, another TTL: the set refreshes the entry's TTL, so check with the old one.
    expect(matched(p('198.51.100.200', 32))).toEqual([1, 2, 3]);
    expect(formatRecentProc(state.recent, 'N')).toMatch(/^src=198\.51\.100\.0 ttl: 32 last_seen: \d+ oldest_pkt: 2 \d+, \d+\n$/);
  });

  it('should keep at most 100 addresses per list, dropping the least recently seen', () => {
    const compiled = rules(['-m recent --set --name L']);
    const state = createEvalState();
    const sends = Array.from({ length: 101 }, (_, k) => ({ dport: 1, atMs: k, src: `198.18.0.${k}` }));
    counts(compiled, 1, sends, state);
    const lines = (formatRecentProc(state.recent, 'L') ?? '').trimEnd().split('\n');
    expect(lines).toHaveLength(100);
    expect(lines[0]).toMatch(/^src=198\.18\.0\.1 /);
    expect(lines[99]).toMatch(/^src=198\.18\.0\.100 /);
  });

  it('should take writes to /proc/net/xt_recent/NAME as the kernel does', () => {
    // Recorded: `echo +192.0.2.9 > /proc/net/xt_recent/T` twice gave
    // `src=192.0.2.9 ttl: 0 last_seen: J2 oldest_pkt: 2 J1, J2`.
    const state = createEvalState();
    counts(rules(['-m recent --rcheck --name T']), 1, [{ dport: 1, atMs: 0 }], state);
    expect(writeRecentProc(state.recent, 'T', '+192.0.2.9\n', 100)).toBe('ok');
    expect(writeRecentProc(state.recent, 'T', '+192.0.2.9\n', 200)).toBe('ok');
    expect(formatRecentProc(state.recent, 'T')).toBe(`src=192.0.2.9 ttl: 0 last_seen: ${jiffiesAt(200)} oldest_pkt: 2 ${jiffiesAt(100)}, ${jiffiesAt(200)}\n`);
    expect(writeRecentProc(state.recent, 'T', 'x', 0)).toBe('Invalid argument');
    expect(writeRecentProc(state.recent, 'T', '/', 0)).toBe('ok');
    expect(formatRecentProc(state.recent, 'T')).toBe('');
    expect(formatRecentProc(state.recent, 'missing')).toBeUndefined();
  });
});

describe('-m nfacct evaluation', () => {
  it('should always match: without a quota the accounting object only counts', () => {
    const compiled = rules(['-m nfacct --nfacct-name acct0 -j DROP']);
    const p = makePacket({ src: parseIpv4('192.0.2.1'), dst: parseIpv4('198.51.100.1'), outIface: 'eth0' });
    expect(evaluateTable(compiled, 'filter', 'OUTPUT', p, ctxAt(createEvalState(), 0)).verdict).toEqual({ kind: 'DROP', byPolicy: false });
  });
});
