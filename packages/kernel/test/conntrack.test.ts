import { describe, expect, it } from 'vitest';
import {
  ConntrackTable,
  TCP_ACK,
  TCP_FIN,
  TCP_RST,
  TCP_SYN,
  formatCtEntry,
  icmpTypeCode,
  invertTuple,
  tcpTimeoutSec,
  tcpTransition,
  type Tuple,
} from '../src/conntrack.ts';
import { DEFAULT_CT_TIMEOUTS } from '../src/sysctl.ts';
import { ip } from './helpers.ts';

const syn: Tuple = { src: ip('198.51.100.10'), dst: ip('198.51.100.2'), proto: 6, sport: 40000, dport: 30080 };

describe('TCP conntrack state machine', () => {
  it('should walk a normal handshake and close through the kernel table', () => {
    expect(tcpTransition('NONE', 'original', TCP_SYN)).toBe('SYN_SENT');
    expect(tcpTransition('SYN_SENT', 'reply', TCP_SYN | TCP_ACK)).toBe('SYN_RECV');
    expect(tcpTransition('SYN_RECV', 'original', TCP_ACK)).toBe('ESTABLISHED');
    expect(tcpTransition('ESTABLISHED', 'original', TCP_FIN | TCP_ACK)).toBe('FIN_WAIT');
    expect(tcpTransition('FIN_WAIT', 'reply', TCP_ACK)).toBe('CLOSE_WAIT');
    expect(tcpTransition('CLOSE_WAIT', 'reply', TCP_FIN | TCP_ACK)).toBe('LAST_ACK');
    expect(tcpTransition('LAST_ACK', 'original', TCP_ACK)).toBe('TIME_WAIT');
  });

  it('should mark a SYN-ACK, FIN or RST as a first packet invalid, and pick up a bare ACK as established', () => {
    expect(tcpTransition('NONE', 'original', TCP_SYN | TCP_ACK)).toBe('IV');
    expect(tcpTransition('NONE', 'original', TCP_FIN)).toBe('IV');
    expect(tcpTransition('NONE', 'original', TCP_RST)).toBe('IV');
    expect(tcpTransition('NONE', 'original', TCP_ACK)).toBe('ESTABLISHED');
  });

  it('should ignore a retransmitted SYN-ACK and treat RST as closing from any state', () => {
    expect(tcpTransition('SYN_RECV', 'reply', TCP_SYN | TCP_ACK)).toBe('IG');
    expect(tcpTransition('ESTABLISHED', 'reply', TCP_RST)).toBe('CLOSE');
    expect(tcpTransition('SYN_SENT', 'reply', TCP_RST | TCP_ACK)).toBe('CLOSE');
  });

  it('should use the Linux default timeouts per state', () => {
    expect(tcpTimeoutSec('SYN_SENT', DEFAULT_CT_TIMEOUTS)).toBe(120);
    expect(tcpTimeoutSec('ESTABLISHED', DEFAULT_CT_TIMEOUTS)).toBe(432000);
    expect(tcpTimeoutSec('TIME_WAIT', DEFAULT_CT_TIMEOUTS)).toBe(120);
    expect(tcpTimeoutSec('CLOSE', DEFAULT_CT_TIMEOUTS)).toBe(10);
  });
});

describe('conntrack table', () => {
  it('should find a confirmed entry by either tuple and say which direction', () => {
    const t = new ConntrackTable();
    const e = t.create(syn, 0, 120);
    expect(t.find(syn, 0)).toBeUndefined();
    expect(t.confirm(e, 0)).toBe(true);
    expect(t.find(syn, 0)).toEqual({ entry: e, dir: 'original' });
    expect(t.find(invertTuple(syn), 0)).toEqual({ entry: e, dir: 'reply' });
  });

  it('should refuse to confirm an entry whose tuple another live entry holds', () => {
    const t = new ConntrackTable();
    expect(t.confirm(t.create(syn, 0, 120), 0)).toBe(true);
    expect(t.confirm(t.create(syn, 0, 120), 0)).toBe(false);
    expect(t.count(0)).toBe(1);
  });

  it('should expire an entry exactly at its deadline on the simulated clock', () => {
    const t = new ConntrackTable();
    t.confirm(t.create(syn, 1000, 30), 1000);
    expect(t.find(syn, 30999)).toBeDefined();
    expect(t.find(syn, 31000)).toBeUndefined();
    expect(t.list(31000)).toEqual([]);
  });

  it('should list in creation order', () => {
    const t = new ConntrackTable();
    const a = t.create(syn, 0, 120);
    const b = t.create({ ...syn, sport: 40001 }, 0, 120);
    t.confirm(b, 0);
    t.confirm(a, 0);
    expect(t.list(0).map((e) => e.id)).toEqual([a.id, b.id]);
  });

  it('should render entries exactly as conntrack -L 1.4.7 prints them', () => {
    const t = new ConntrackTable();
    const e = t.create(syn, 0, 432000);
    e.reply = { src: ip('203.0.113.9'), dst: ip('203.0.113.1'), proto: 6, sport: 8080, dport: 40000 };
    e.tcpState = 'ESTABLISHED';
    e.seenReply = true;
    e.assured = true;
    // Pasted from a real run (the real one was 1 ms older, hence 431999 there).
    expect(formatCtEntry(e, 1)).toBe(
      'tcp      6 431999 ESTABLISHED src=198.51.100.10 dst=198.51.100.2 sport=40000 dport=30080 src=203.0.113.9 dst=203.0.113.1 sport=8080 dport=40000 [ASSURED] mark=0 use=1',
    );
    const u = t.create({ src: ip('198.51.100.10'), dst: ip('198.51.100.2'), proto: 17, sport: 41001, dport: 30054 }, 0, 30);
    expect(formatCtEntry(u, 4000)).toBe(
      'udp      17 26 src=198.51.100.10 dst=198.51.100.2 sport=41001 dport=30054 [UNREPLIED] src=198.51.100.2 dst=198.51.100.10 sport=30054 dport=41001 mark=0 use=1',
    );
  });

  it('should key an ICMP echo by its id and print it as conntrack -L 1.4.7 does', () => {
    const t = new ConntrackTable();
    const echo: Tuple = { src: ip('192.0.2.2'), dst: ip('198.18.0.5'), proto: 1, sport: 7, dport: icmpTypeCode(8, 0) };
    // The reply tuple keeps the id and says echo reply.
    expect(invertTuple(echo)).toEqual({ src: ip('198.18.0.5'), dst: ip('192.0.2.2'), proto: 1, sport: 7, dport: icmpTypeCode(0, 0) });
    expect(invertTuple(invertTuple(echo))).toEqual(echo);
    const e = t.create(echo, 0, 30);
    t.confirm(e, 0);
    // Pasted from a real run (6.18, a ping from 192.0.2.2 with id 7 forwarded by the node).
    expect(formatCtEntry(e, 1)).toBe('icmp     1 29 src=192.0.2.2 dst=198.18.0.5 type=8 code=0 id=7 [UNREPLIED] src=198.18.0.5 dst=192.0.2.2 type=0 code=0 id=7 mark=0 use=1');
    // Another id is another flow; the echo reply with the same id is this one's reply.
    expect(t.find({ ...echo, sport: 9 }, 1)).toBeUndefined();
    expect(t.find({ src: ip('198.18.0.5'), dst: ip('192.0.2.2'), proto: 1, sport: 7, dport: icmpTypeCode(0, 0) }, 1)?.dir).toBe('reply');
    expect(t.find({ src: ip('198.18.0.5'), dst: ip('192.0.2.2'), proto: 1, sport: 9, dport: icmpTypeCode(0, 0) }, 1)).toBeUndefined();
  });

  it('should index source-NATed entries by original source and forget them on removal', () => {
    const t = new ConntrackTable();
    const e = t.create(syn, 0, 120);
    e.srcNat = true;
    e.reply = { ...invertTuple(syn), dst: ip('203.0.113.1') };
    t.confirm(e, 0);
    expect(t.findBySource(6, syn.src, syn.sport, 0)).toEqual([e]);
    t.remove(e);
    expect(t.findBySource(6, syn.src, syn.sport, 0)).toEqual([]);
    expect(e.dying).toBe(true);
  });

  it('should copy entries in a clone so the copies evolve independently', () => {
    const t = new ConntrackTable();
    const e = t.create(syn, 0, 120);
    t.confirm(e, 0);
    const c = t.clone();
    const ce = c.find(syn, 0)?.entry;
    expect(ce).toBeDefined();
    expect(ce).not.toBe(e);
    if (ce !== undefined) ce.tcpState = 'ESTABLISHED';
    expect(e.tcpState).toBe('NONE');
  });
});
