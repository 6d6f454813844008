import { describe, expect, it } from 'vitest';
import { story } from '@netsim/sim';
import { buildReport, splitRuns, storyAt } from '../src/index.ts';
import { recordedEvents } from './recorded.ts';

const states = (m: ReturnType<typeof buildReport>, agent: string): string[] =>
  m.nodes.flatMap((n) => n.agents).find((a) => a.agent === agent)?.states.map((s) => `${s.kind} ${s.from}-${s.to}`) ?? [];

describe('report model: flannel-restart-empties-chain-faulty', () => {
  it('should give node-1 one agent lane, running until SIGTERM and terminating until the violation', async () => {
    const m = buildReport(await recordedEvents('flannel-restart-empties-chain-faulty'));
    expect(m.nodes.map((n) => [n.node, n.agents.map((a) => a.agent)])).toEqual([['node-1', ['node-1/flanneld']]]);
    expect(states(m, 'node-1/flanneld')).toEqual(['running 0-12000', 'terminating 12000-13016']);
    expect(m.to).toBe(13016);
  });

  it('should step FLANNEL-POSTRTG from created (0) to 6 rules to emptied (0) at the violation', async () => {
    const m = buildReport(await recordedEvents('flannel-restart-empties-chain-faulty'));
    const lane = m.nodes[0]?.agents[0];
    const chain = lane?.chains.find((c) => c.chain === 'FLANNEL-POSTRTG');
    expect(chain?.points.map((p) => [p.t, p.rules])).toEqual([
      [2, 0],
      [18, 6],
      [13016, 0],
    ]);
    expect(chain?.max).toBe(6);
    expect(chain?.minAfterFilled).toBe(0);
    expect(chain?.empty.map((s) => [s.from, s.to])).toEqual([[13016, 13016]]);
    // The iptables-restore that emptied it is a write tick at the same instant.
    const writes = lane?.commands.filter((c) => c.kind === 'write').map((c) => c.t);
    expect(writes).toEqual([2, 18, 13016]);
  });

  it('should mark the violation with the invariant name and message, and keep the diff that emptied the chain', async () => {
    const m = buildReport(await recordedEvents('flannel-restart-empties-chain-faulty'));
    expect(m.markers).toHaveLength(1);
    expect(m.markers[0]).toMatchObject({ kind: 'violation', t: 13016, name: 'FLANNEL-POSTRTG never empty once programmed', message: 'FLANNEL-POSTRTG on node-1 is empty (it had 6 rules)' });
    const last = m.changes[m.changes.length - 1];
    expect(last?.t).toBe(13016);
    expect(last?.diff.split('\n').filter((l) => l.startsWith('- [')).length).toBe(7);
    expect(m.api.faults.map((f) => ('from' in f ? `${f.from}-${f.to}` : `${f.t}`))).toEqual(['12000']);
  });

  it('should number the story exactly as story() does, each line pointing at its event', async () => {
    const events = await recordedEvents('flannel-restart-empties-chain-faulty');
    const m = buildReport(events);
    expect(m.story.map((l) => `${l.n}. t=${l.t}ms ${l.text}`)).toEqual(story(events));
    for (const l of m.story) expect(events[l.e]?.t).toBe(l.t);
    const violation = m.markers[0];
    const detail = m.details.find((d) => d.e === violation?.e);
    expect(detail?.story).toBe(m.story.find((l) => l.text.startsWith('VIOLATION'))?.n);
    expect(storyAt(m.story, -1)).toBe(null);
  });
});

describe('report model: flannel-restart-egress-window', () => {
  it('should show the restart as terminating, restarting and a second process', async () => {
    const m = buildReport(await recordedEvents('flannel-restart-egress-window'));
    expect(states(m, 'node-1/flanneld')).toEqual(['running 0-12000', 'terminating 12000-13016', 'restarting 13016-15016', 'running 15016-20000']);
    const chain = m.nodes[0]?.agents[0]?.chains.find((c) => c.chain === 'FLANNEL-POSTRTG');
    expect(chain?.empty.map((s) => [s.from, s.to])).toEqual([[13016, 15035]]);
  });

  it('should band the egress probe ok, failed with its reason and its hops, then ok again', async () => {
    const m = buildReport(await recordedEvents('flannel-restart-egress-window'));
    expect(m.probes).toHaveLength(1);
    const bands = m.probes[0]?.bands ?? [];
    expect(bands.map((b) => `${b.kind} ${b.from}-${b.to}`)).toEqual(['ok 250-13250', 'failed 13250-15250', 'ok 15250-20000']);
    expect(bands[1]?.label).toContain('FAILED: timed-out');
    expect(bands[1]?.label).toContain('dropped at gw: no route to 198.18.0.2');
    const hops = m.details.find((d) => d.e === bands[1]?.e)?.hops ?? '';
    expect(hops).toContain('[node-1] out eth0: tcp 198.18.0.2:');
    expect(hops).toContain('[gw] DROP tcp 203.0.113.10:443 > 198.18.0.2:');
  });
});

describe('report model: npl-recreate-in-watch-gap-faulty', () => {
  it('should shade the watch gaps and the relists, and tell the recreated Pod\'s IP as old → new', async () => {
    const m = buildReport(await recordedEvents('npl-recreate-in-watch-gap-faulty'));
    expect(m.api.watches.map((w) => `${w.kind} ${w.from}-${w.to}`)).toEqual(['gap 5000-9000', 'gap 5000-9000', 'relist 9000-10462', 'relist 9000-10494']);
    expect(m.api.objects.filter((o) => o.kind === 'delete').map((o) => o.t)).toEqual([5100]);
    expect(m.api.objects.find((o) => o.t === 5700)?.label).toBe('pod default/web-0 updated: IP 198.18.0.2 → 198.18.0.3 (uid 3592, running)');
    expect(m.api.handlers.find((h) => h.t === 10462)?.label).toContain('uid 6de5→3592: IP 198.18.0.2 → 198.18.0.3');
    expect(m.api.faults.map((f) => ('from' in f ? `${f.from}-${f.to}` : `${f.t}`))).toEqual(['5000-9000']);
    expect(m.markers.map((x) => [x.name, x.t])).toEqual([['no stale DNAT', 13495]]);
  });
});

describe('splitRuns', () => {
  it('should split a trace of several replays at each replay.scenario event', async () => {
    const a = await recordedEvents('flannel-restart-empties-chain-faulty');
    const b = await recordedEvents('npl-recreate-in-watch-gap-faulty');
    const mark = (name: string) => ({ step: 0, t: 0, type: 'replay.scenario', file: `${name}.yaml`, name, seed: 1 });
    const runs = splitRuns([mark('a'), ...a, mark('b'), ...b]);
    expect(runs.map((r) => [r.name, r.events.length])).toEqual([
      ['a', a.length + 1],
      ['b', b.length + 1],
    ]);
    expect(splitRuns([...a, ...b]).map((r) => r.events.length)).toEqual([a.length, b.length]);
  });
});
