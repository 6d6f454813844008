import { describe, expect, it } from 'vitest';
import { renderEvent, renderTrace, shortUid, story, type TraceEvent } from '../src/index.ts';

const ev = (step: number, t: number, type: string, fields: Record<string, string | number> = {}): TraceEvent => ({ step, t, type, ...fields });

describe('render', () => {
  const events: TraceEvent[] = [
    ev(1, 0, 'sim.step', { kind: 'lifecycle', label: 'boot', ready: 2, pick: 1 }),
    ev(1, 0, 'agent.start', { agent: 'node-1/masq', incarnation: 1 }),
    ev(2, 1, 'iptables.exec', { agent: 'node-1/masq', argv: 'iptables -t nat -N FLANNEL-POSTRTG --wait', exit: 0 }),
    ev(3, 2, 'iptables.exec', { agent: 'node-1/masq', argv: 'iptables -t nat -C POSTROUTING -j FLANNEL-POSTRTG --wait', exit: 1, stderr: 'iptables: Bad rule (does a matching rule exist in that chain?).\n' }),
    ev(4, 3, 'iptables.exec', { agent: 'node-1/masq', argv: 'iptables -t nat -S FLANNEL-POSTRTG --wait', exit: 0 }),
    ev(5, 4, 'agent.log', { agent: 'node-1/masq', level: 'info', msg: 'synced' }),
    ev(5, 4, 'agent.log', { agent: 'node-1/masq', level: 'warn', msg: 'rule missing' }),
    ev(6, 9, 'fault.crash', { agent: 'node-1/masq' }),
    ev(6, 9, 'fault.crash', { agent: 'node-1/masq' }),
    ev(7, 12, 'sim.violation', { invariant: 'masquerade chain never empty', message: 'FLANNEL-POSTRTG on node-1 is empty' }),
  ];

  it('should tell only the story-level events, numbered, folding repeats', () => {
    expect(story(events)).toEqual([
      '1. t=0ms node-1/masq starts (process #1)',
      '2. t=1ms node-1/masq: iptables -t nat -N FLANNEL-POSTRTG --wait',
      '3. t=2ms node-1/masq: iptables -t nat -C POSTROUTING -j FLANNEL-POSTRTG --wait → exit 1: iptables: Bad rule (does a matching rule exist in that chain?).',
      '4. t=4ms node-1/masq warn: rule missing',
      '5. t=9ms fault.crash agent=node-1/masq',
      '6. t=12ms VIOLATION of "masquerade chain never empty": FLANNEL-POSTRTG on node-1 is empty',
    ]);
  });

  it('should render every event with step and time in the detailed trace', () => {
    const lines = renderTrace(events).split('\n');
    expect(lines[0]).toBe('#1     t=0ms       step 1: lifecycle boot (picked 1 of 2 ready)');
    expect(lines[4]).toBe('#4     t=3ms       node-1/masq: iptables -t nat -S FLANNEL-POSTRTG --wait');
    expect(renderTrace(events, { level: 'story' }).split('\n').filter((l) => l !== '')).toHaveLength(7);
  });

  it('should let users render their own event types', () => {
    const r = renderEvent(ev(1, 5, 'probe.result', { probe: 'lb→node-1:61001', outcome: 'timeout' }), {
      'probe.result': (e) => ({ level: 'story', text: `probe ${JSON.stringify(e['probe'])}: ${JSON.stringify(e['outcome'])}` }),
    });
    expect(r).toEqual({ level: 'story', text: 'probe "lb→node-1:61001": "timeout"' });
  });

  it('should shorten uids to four hex digits', () => {
    expect(shortUid('3f0c9a12-77b1-4c0e-9d21-5a8e0b7c6d44')).toBe('3f0c');
  });
});
