import { produce } from 'immer';
import { describe, expect, it } from 'vitest';
import { TraceRecorder, isKubeError, type WatchEvent } from '../src/index.ts';
import { podInput, setup } from './helpers.ts';

function describeEvent(e: WatchEvent): string {
  if (e.type === 'CLOSED') return 'CLOSED';
  if (e.type === 'ERROR') return `ERROR ${e.object.code} ${e.object.reason}: ${e.object.message}`;
  return `${e.type} ${e.object.metadata.name} rv=${e.object.metadata.resourceVersion}`;
}

describe('watch', () => {
  it('should deliver every later change in order, each as its own scheduled step', () => {
    const { api, sched } = setup();
    api.create('Pod', podInput('a'));
    const got: string[] = [];
    const rv = api.list('Pod').resourceVersion;
    api.watch('Pod', { resourceVersion: rv }, (e) => got.push(`${describeEvent(e)}@${sched.now()}`));
    const b = api.create('Pod', podInput('b'));
    api.update(produce(b, (d) => void (d.metadata.labels['x'] = '1')));
    api.delete('Pod', 'default', 'b');
    expect(got).toEqual([]); // nothing is delivered synchronously
    expect(sched.pending()).toBe(1); // one delivery outstanding at a time keeps the order
    expect(sched.runUntilIdle()).toBe(3);
    expect(got).toEqual(['ADDED b rv=2@0', 'MODIFIED b rv=3@0', 'DELETED b rv=4@0']);
  });

  it('should replay history after the requested resourceVersion', () => {
    const { api, sched } = setup();
    api.create('Pod', podInput('a'));
    api.create('Pod', podInput('b'));
    api.create('Node', { metadata: { name: 'n' } });
    api.delete('Pod', 'default', 'a');
    const got: string[] = [];
    api.watch('Pod', { resourceVersion: '1' }, (e) => got.push(describeEvent(e)));
    sched.runUntilIdle();
    expect(got).toEqual(['ADDED b rv=2', 'DELETED a rv=4']);
  });

  it('should start a watch from resourceVersion 0 with a synthetic ADDED per current object', () => {
    const { api, sched } = setup();
    api.create('Pod', podInput('b'));
    api.create('Pod', podInput('a'));
    const got: string[] = [];
    api.watch('Pod', { resourceVersion: '0' }, (e) => got.push(describeEvent(e)));
    api.create('Pod', podInput('c'));
    sched.runUntilIdle();
    expect(got).toEqual(['ADDED a rv=2', 'ADDED b rv=1', 'ADDED c rv=3']);
  });

  it('should answer 410 Expired as the only event once the history no longer reaches back', () => {
    const { api, sched } = setup(1, { history: { minEvents: 2, maxAgeMs: 1000 } });
    for (const n of ['a', 'b', 'c', 'd']) api.create('Pod', podInput(n));
    sched.advance(2000);
    api.create('Pod', podInput('e')); // trims a, b and c: older than 1 s beyond the 2 kept
    api.create('Pod', podInput('f')); // trims d
    const got: string[] = [];
    const w = api.watch('Pod', { resourceVersion: '3' }, (e) => got.push(describeEvent(e)));
    api.create('Pod', podInput('g'));
    sched.runUntilIdle();
    expect(got).toEqual(['ERROR 410 Expired: too old resource version: 3 (4)']);
    expect(w.isOpen()).toBe(false);
    const ok: string[] = [];
    api.watch('Pod', { resourceVersion: '4' }, (e) => ok.push(describeEvent(e)));
    sched.runUntilIdle();
    expect(ok).toEqual(['ADDED e rv=5', 'ADDED f rv=6', 'ADDED g rv=7']);
  });

  it('should expire every older watch start after compact()', () => {
    const { api, sched } = setup();
    api.create('Pod', podInput('a'));
    api.create('Pod', podInput('b'));
    api.compact('Pod');
    const got: string[] = [];
    api.watch('Pod', { resourceVersion: '1' }, (e) => got.push(describeEvent(e)));
    api.watch('Pod', { resourceVersion: '2' }, (e) => got.push(describeEvent(e)));
    api.create('Pod', podInput('c'));
    sched.runUntilIdle();
    expect(got).toEqual(['ERROR 410 Expired: too old resource version: 1 (2)', 'ADDED c rv=3']);
  });

  it('should refuse a watch from a resourceVersion the server has not reached', () => {
    const { api } = setup();
    api.create('Pod', podInput('a'));
    try {
      api.watch('Pod', { resourceVersion: '9' }, () => undefined);
      expect.unreachable();
    } catch (e) {
      expect(isKubeError(e) && e.code === 'Timeout' && e.message === 'Too large resource version: 9, current: 1').toBe(true);
    }
  });

  it('should delay delivery by the watch delay and never reorder when the delay shrinks', () => {
    const { api, sched } = setup();
    const got: string[] = [];
    const w = api.watch('Pod', { resourceVersion: '0', delayMs: 500 }, (e) => got.push(`${describeEvent(e)}@${sched.now()}`));
    api.create('Pod', podInput('a'));
    w.setDelay(0);
    api.create('Pod', podInput('b'));
    sched.runUntilIdle();
    expect(got).toEqual(['ADDED a rv=1@500', 'ADDED b rv=2@500']);
  });

  it('should lose the events of a gap, then break the stream with 410', () => {
    const trace = new TraceRecorder();
    const { api, sched } = setup(1, { trace: trace.sink });
    const got: string[] = [];
    const w = api.watch('Pod', { resourceVersion: '0', name: 'inf' }, (e) => got.push(`${describeEvent(e)}@${sched.now()}`));
    api.create('Pod', podInput('a'));
    api.watchGap(1000, { name: 'inf' });
    api.create('Pod', podInput('b'));
    sched.advance(500);
    api.delete('Pod', 'default', 'a');
    sched.runUntilIdle();
    expect(got).toEqual(['ADDED a rv=1@0', 'ERROR 410 Expired: too old resource version: 1 (3)@1000']);
    expect(w.isOpen()).toBe(false);
    expect(trace.events.filter((e) => e.type === 'kube.watch.drop').map((e) => `${e.fields['event']} ${e.fields['key']}`)).toEqual(['ADDED default/b', 'DELETED default/a']);
  });

  it('should break a reset watch after the events already sent, and close a timed-out watch cleanly', () => {
    const { api, sched } = setup();
    const got: string[] = [];
    api.watch('Pod', { resourceVersion: '0', name: 'x' }, (e) => got.push(describeEvent(e)));
    api.create('Pod', podInput('a'));
    api.resetWatches({ kind: 'Pod' });
    api.create('Pod', podInput('b'));
    const closed: string[] = [];
    api.watch('Pod', { resourceVersion: '2', timeoutMs: 60_000 }, (e) => closed.push(`${describeEvent(e)}@${sched.now()}`));
    sched.runUntilIdle();
    expect(got).toEqual(['ADDED a rv=1', 'ERROR 410 Expired: too old resource version: 1 (1)']);
    expect(closed).toEqual(['CLOSED@60000']);
  });

  it('should deliver nothing more after the client stops the watch', () => {
    const { api, sched } = setup();
    const got: string[] = [];
    const w = api.watch('Pod', { resourceVersion: '0' }, (e) => got.push(describeEvent(e)));
    api.create('Pod', podInput('a'));
    w.stop();
    api.create('Pod', podInput('b'));
    sched.runUntilIdle();
    expect(got).toEqual([]);
    expect(api.watches()).toEqual([]);
  });

  it('should turn selector transitions into ADDED and DELETED, as the watch cache does', () => {
    const { api, sched } = setup();
    const got: string[] = [];
    api.watch('Pod', { resourceVersion: '0', labels: { app: 'web' } }, (e) => got.push(describeEvent(e)));
    const p = api.create('Pod', podInput('a'));
    const q = api.update(produce(p, (d) => void (d.metadata.labels['app'] = 'web')));
    const r = api.update(produce(q, (d) => void (d.metadata.annotations['n'] = '1')));
    api.update(produce(r, (d) => void (d.metadata.labels['app'] = 'db')));
    sched.runUntilIdle();
    expect(got).toEqual(['ADDED a rv=2', 'MODIFIED a rv=3', 'DELETED a rv=4']);
  });

  it('should send a Pod bound later to a nodeName-selected watch as ADDED', () => {
    const { api, sched } = setup();
    const got: string[] = [];
    api.watch('Pod', { resourceVersion: '0', nodeName: 'n1' }, (e) => got.push(describeEvent(e)));
    api.create('Pod', podInput('a'));
    api.bind('default', 'a', 'n1');
    sched.runUntilIdle();
    expect(got).toEqual(['ADDED a rv=2']);
  });
});
