import { produce } from 'immer';
import { describe, expect, it } from 'vitest';
import { Informer, TraceRecorder, deletedObject, isTombstone, type DeleteArg, type InformerOptions, type Pod, type QueueMode } from '../src/index.ts';
import { podInput, recorder, runPod, setup, shortUid } from './helpers.ts';

const MODES: QueueMode[] = ['DeltaFIFO', 'RealFIFO', 'AtomicFIFO'];

function informerSetup(mode: QueueMode, opts: Partial<InformerOptions> = {}, seed = 1) {
  const trace = new TraceRecorder();
  const s = setup(seed, { trace: trace.sink });
  const inf = new Informer(s.api, 'Pod', { queueMode: mode, name: 'pods', watchTimeout: 'none', trace: trace.sink, ...opts });
  const rec = recorder<Pod>();
  const reg = inf.addEventHandler(rec.handler, { name: 'h' });
  return { ...s, inf, rec, reg, trace };
}

describe.each(MODES)('informer (%s)', (mode) => {
  it('should deliver the initial list as adds with isInInitialList, then sync the handler', () => {
    const { api, sched, inf, rec, reg } = informerSetup(mode, { listOrder: 'sorted' });
    api.create('Pod', podInput('a'));
    api.create('Pod', podInput('b'));
    inf.run();
    expect(inf.hasSynced()).toBe(false);
    sched.runUntilIdle();
    expect(rec.log).toEqual(['add default/a u1 rv=1 initial', 'add default/b u2 rv=2 initial']);
    expect(inf.hasSynced()).toBe(true);
    expect(reg.hasSynced()).toBe(true);
    expect(inf.lister.keys()).toEqual(['default/a', 'default/b']);
    expect(inf.lastSyncResourceVersion()).toBe('2');
  });

  it('should deliver later changes as add, update and delete with the real objects', () => {
    const { api, sched, inf, rec } = informerSetup(mode);
    inf.run();
    sched.runUntilIdle();
    const p = api.create('Pod', podInput('a', { nodeName: 'n1' }));
    sched.runUntilIdle();
    runPod(api, p, '198.18.0.4');
    sched.runUntilIdle();
    api.delete('Pod', 'default', 'a', { gracePeriodSeconds: 0 });
    sched.runUntilIdle();
    expect(rec.log).toEqual(['add default/a u1 rv=1', 'update default/a u1 rv=1 -> u1 rv=2 ip=198.18.0.4', 'delete default/a u1 rv=3 ip=198.18.0.4']);
    expect(inf.lister.keys()).toEqual([]);
  });

  it('should turn a same-name delete and recreate inside a watch gap into one onUpdate with different uids and IPs', () => {
    const { api, sched, inf, rec, trace } = informerSetup(mode);
    runPod(api, api.create('Pod', podInput('web-0', { nodeName: 'n1' })), '198.18.0.10');
    inf.run();
    sched.runUntilIdle();
    rec.log.length = 0;
    inf.watchGap(5000);
    api.delete('Pod', 'default', 'web-0', { gracePeriodSeconds: 0 });
    runPod(api, api.create('Pod', podInput('web-0', { nodeName: 'n1' })), '198.18.0.11');
    sched.runUntilIdle();
    expect(rec.log).toEqual(['update default/web-0 u1 rv=2 ip=198.18.0.10 -> u2 rv=5 ip=198.18.0.11']);
    expect(inf.listCount()).toBe(2);
    expect(trace.events.filter((e) => e.type === 'kube.watch.drop')).toHaveLength(3);
  });

  it('should turn a delete inside a watch gap into onDelete with a DeletedFinalStateUnknown tombstone', () => {
    const { api, sched, inf, rec } = informerSetup(mode);
    runPod(api, api.create('Pod', podInput('web-0', { nodeName: 'n1' })), '198.18.0.10');
    inf.run();
    sched.runUntilIdle();
    rec.log.length = 0;
    const seen: DeleteArg<Pod>[] = [];
    inf.addEventHandler({ onDelete: (d) => seen.push(d) });
    inf.watchGap(5000);
    api.delete('Pod', 'default', 'web-0', { gracePeriodSeconds: 0 });
    sched.runUntilIdle();
    expect(rec.log).toEqual(['delete default/web-0 tombstone(u1 rv=2 ip=198.18.0.10)']);
    const t = seen[0] as DeleteArg<Pod>;
    expect(isTombstone(t) && t.key === 'default/web-0').toBe(true);
    expect(deletedObject(t).status.podIP).toBe('198.18.0.10');
  });

  it('should relist after a forced 410 only after the client-go backoff (800 ms plus jitter up to 100%)', () => {
    const { sched, inf, trace } = informerSetup(mode);
    inf.run();
    sched.runUntilIdle();
    sched.advance(10_000);
    inf.forceRelist();
    sched.runUntilIdle();
    const backoff = trace.events.find((e) => e.type === 'kube.reflector.backoff');
    const delay = backoff?.fields['delayMs'] as number;
    expect(delay).toBeGreaterThanOrEqual(800);
    expect(delay).toBeLessThan(1600);
    const lists = trace.events.filter((e) => e.type === 'kube.reflector.list').map((e) => e.at);
    expect(lists).toEqual([0, 10_000 + delay]);
    expect(backoff?.fields['reason']).toBe('watch ended with error: too old resource version: 0 (0)');
  });

  it('should deliver onUpdate(x, x) for unchanged objects on a relist when the informer has no resync period', () => {
    const { api, sched, inf, rec } = informerSetup(mode);
    api.create('Pod', podInput('a'));
    inf.run();
    sched.runUntilIdle();
    rec.log.length = 0;
    inf.forceRelist();
    sched.runUntilIdle();
    expect(rec.log).toEqual(['update default/a u1 rv=1 -> u1 rv=1']);
  });

  it('should resync periodically as onUpdate(x, x), only to handlers whose own period is due', () => {
    const { api, sched, inf, rec } = informerSetup(mode, { resyncPeriodMs: 30_000 });
    const never = recorder<Pod>();
    inf.addEventHandler(never.handler, { resyncPeriodMs: 0 });
    const slow = recorder<Pod>();
    inf.addEventHandler(slow.handler, { resyncPeriodMs: 60_000 });
    api.create('Pod', podInput('a'));
    inf.run();
    sched.advance(100);
    for (const r of [rec, never, slow]) r.log.length = 0;
    sched.advance(29_900);
    expect(rec.log).toEqual(['update default/a u1 rv=1 -> u1 rv=1']);
    expect(slow.log).toEqual([]);
    sched.advance(30_000);
    expect(rec.log).toHaveLength(2);
    expect(slow.log).toEqual(['update default/a u1 rv=1 -> u1 rv=1']);
    expect(never.log).toEqual([]);
    // Once resync checks run, a relist's unchanged objects reach only handlers due at the last check.
    inf.forceRelist();
    sched.advance(5_000);
    expect(never.log).toEqual([]);
  });

  it('should give a handler added after start an add with isInInitialList for each cached object', () => {
    const { api, sched, inf } = informerSetup(mode);
    api.create('Pod', podInput('a'));
    api.create('Pod', podInput('b'));
    inf.run();
    sched.runUntilIdle();
    const late = recorder<Pod>();
    const reg = inf.addEventHandler(late.handler);
    expect(reg.hasSynced()).toBe(false);
    sched.runUntilIdle();
    expect([...late.log].sort()).toEqual(['add default/a u1 rv=1 initial', 'add default/b u2 rv=2 initial']);
    expect(reg.hasSynced()).toBe(true);
  });

  it('should hand handlers frozen objects, so a handler cannot corrupt the cache', () => {
    const { api, sched, inf } = informerSetup(mode);
    const errors: unknown[] = [];
    inf.addEventHandler({
      onAdd: (p) => {
        try {
          (p.metadata.annotations as Record<string, string>)['x'] = 'y';
        } catch (e) {
          errors.push(e);
        }
      },
    });
    api.create('Pod', podInput('a'));
    inf.run();
    sched.runUntilIdle();
    expect(errors[0]).toBeInstanceOf(TypeError);
    expect(inf.lister.get('default', 'a')?.metadata.annotations).toEqual({});
  });

  it('should re-watch from the last resourceVersion after a watch timeout, without relisting or losing events', () => {
    const { api, sched, inf, rec } = informerSetup(mode, { watchTimeout: { minMs: 300_000, maxMs: 600_000 } });
    inf.run();
    sched.advance(1);
    for (let i = 0; i < 5; i++) {
      sched.advance(200_000);
      api.create('Pod', podInput(`p${i}`));
    }
    sched.advance(1000);
    expect(inf.listCount()).toBe(1);
    expect(rec.log.map((l) => l.split(' ')[1])).toEqual(['default/p0', 'default/p1', 'default/p2', 'default/p3', 'default/p4']);
  });

  it('should relist when a re-watch after a timeout finds its resourceVersion compacted away', () => {
    const { api, sched, inf, rec } = informerSetup(mode, { watchTimeout: { minMs: 300_000, maxMs: 300_000 } });
    api.create('Pod', podInput('a'));
    inf.run();
    sched.advance(1000);
    api.watchGap(400_000, { name: 'pods' }); // the informer misses b...
    api.create('Pod', podInput('b'));
    api.compact('Pod'); // ...and the history forgets it
    api.closeWatches(); // ignored while the stream is stalled
    sched.advance(500_000);
    expect(inf.listCount()).toBe(2);
    expect(rec.log).toContain('add default/b u2 rv=2');
  });

  it('should deliver a slow handler its notifications late while the cache is already current', () => {
    const { api, sched, inf, rec, reg } = informerSetup(mode);
    reg.setProcessingDelay(1000);
    inf.run();
    sched.runUntilIdle();
    api.create('Pod', podInput('a'));
    api.create('Pod', podInput('b'));
    api.create('Pod', podInput('c'));
    sched.advance(0);
    expect(inf.lister.keys()).toEqual(['default/a', 'default/b', 'default/c']);
    expect(rec.log).toEqual(['add default/a u1 rv=1']);
    expect(reg.pending()).toBe(2);
    sched.advance(1000);
    expect(rec.log).toHaveLength(2);
    sched.advance(1000);
    expect(rec.log).toHaveLength(3);
  });

  it('should deliver events late by the informer watch delay', () => {
    const { api, sched, inf, trace } = informerSetup(mode, { watchDelayMs: 250 });
    inf.run();
    sched.runUntilIdle();
    api.create('Pod', podInput('a'));
    sched.runUntilIdle();
    expect(trace.events.find((e) => e.type === 'kube.handler')?.at).toBe(250);
  });

  it('should drop undelivered notifications of a removed handler and deliver nothing after stop', () => {
    const { api, sched, inf, rec, reg } = informerSetup(mode);
    inf.run();
    sched.runUntilIdle();
    api.create('Pod', podInput('a'));
    expect(sched.step()?.label).toBe('kube.watch.deliver pods#1');
    expect(sched.step()?.label).toBe('kube.informer.pop pods');
    expect(reg.pending()).toBe(1);
    const other = recorder<Pod>();
    inf.addEventHandler(other.handler);
    reg.remove();
    api.create('Pod', podInput('b'));
    sched.runUntilIdle();
    expect(rec.log).toEqual([]);
    inf.stop();
    api.create('Pod', podInput('c'));
    sched.runUntilIdle();
    expect(other.log.map((l) => l.split(' ')[1])).toEqual(['default/a', 'default/b']);
  });

  it('should watch only the selected Pods (spec.nodeName field selector)', () => {
    const { api, sched, inf, rec } = informerSetup(mode, { selector: { nodeName: 'n1' } });
    api.create('Pod', podInput('on', { nodeName: 'n1' }));
    api.create('Pod', podInput('off', { nodeName: 'n2' }));
    inf.run();
    sched.runUntilIdle();
    expect(rec.log).toEqual(['add default/on u1 rv=1 initial']);
  });
});

describe('informer: where DeltaFIFO and RealFIFO differ', () => {
  function churn(mode: QueueMode): string[] {
    const { api, sched, inf, rec } = informerSetup(mode, { processDelayMs: 10 });
    const a = api.create('Pod', podInput('a'));
    api.create('Pod', podInput('b'));
    inf.run();
    sched.runUntilIdle();
    rec.log.length = 0;
    api.update(produce(a, (d) => void (d.metadata.labels['v'] = '1')));
    const b = api.get('Pod', 'default', 'b');
    api.update(produce(b, (d) => void (d.metadata.labels['v'] = '1')));
    api.delete('Pod', 'default', 'a');
    api.create('Pod', podInput('a'));
    sched.runUntilIdle();
    return rec.log;
  }

  it('DeltaFIFO should deliver all pending deltas of a key together, keys in first-queued order', () => {
    expect(churn('DeltaFIFO')).toEqual(['update default/a u1 rv=1 -> u1 rv=3', 'delete default/a u1 rv=5', 'add default/a u3 rv=6', 'update default/b u2 rv=2 -> u2 rv=4']);
  });

  it('RealFIFO should deliver every delta in arrival order', () => {
    expect(churn('RealFIFO')).toEqual(['update default/a u1 rv=1 -> u1 rv=3', 'update default/b u2 rv=2 -> u2 rv=4', 'delete default/a u1 rv=5', 'add default/a u3 rv=6']);
  });

  function gapWithOthers(mode: QueueMode): string[] {
    const { api, sched, inf, rec } = informerSetup(mode, { listOrder: 'sorted' });
    for (const n of ['a', 'b', 'c']) api.create('Pod', podInput(n));
    inf.run();
    sched.runUntilIdle();
    rec.log.length = 0;
    inf.watchGap(1000);
    api.delete('Pod', 'default', 'b');
    sched.runUntilIdle();
    return rec.log;
  }

  it('DeltaFIFO should queue relist tombstones after the Replaced items', () => {
    expect(gapWithOthers('DeltaFIFO')).toEqual(['update default/a u1 rv=1 -> u1 rv=1', 'update default/c u3 rv=3 -> u3 rv=3', 'delete default/b tombstone(u2 rv=2)']);
  });

  it('RealFIFO should queue relist tombstones before the Replaced items', () => {
    expect(gapWithOthers('RealFIFO')).toEqual(['delete default/b tombstone(u2 rv=2)', 'update default/a u1 rv=1 -> u1 rv=1', 'update default/c u3 rv=3 -> u3 rv=3']);
  });

  it('AtomicFIFO should deliver in arrival order and put relist tombstones first, like RealFIFO', () => {
    expect(churn('AtomicFIFO')).toEqual(churn('RealFIFO'));
    expect(gapWithOthers('AtomicFIFO')).toEqual(gapWithOthers('RealFIFO'));
  });

  function cacheSeenByFirstRelistCall(mode: QueueMode): string[] {
    const { api, sched, inf } = informerSetup(mode, { processDelayMs: 10, listOrder: 'sorted' });
    for (const n of ['a', 'b', 'c']) api.create('Pod', podInput(n));
    let seen: string[] = [];
    let relisted = false;
    inf.addEventHandler({
      onUpdate: () => {
        if (relisted && seen.length === 0) seen = inf.lister.keys();
      },
    });
    inf.run();
    sched.runUntilIdle();
    inf.watchGap(1000);
    api.delete('Pod', 'default', 'b');
    relisted = true;
    sched.runUntilIdle();
    return seen;
  }

  it('AtomicFIFO should replace the cache at once on a relist, where DeltaFIFO updates it one key per pop', () => {
    expect(cacheSeenByFirstRelistCall('AtomicFIFO')).toEqual(['default/a', 'default/c']);
    expect(cacheSeenByFirstRelistCall('DeltaFIFO')).toEqual(['default/a', 'default/b', 'default/c']);
  });

  it('AtomicFIFO should resync with one SyncAll: onUpdate(x, x) for every cached object, even those with events queued', () => {
    const { api, sched, inf, rec, trace } = informerSetup('AtomicFIFO', { resyncPeriodMs: 30_000 });
    api.create('Pod', podInput('a'));
    api.create('Pod', podInput('b'));
    inf.run();
    sched.advance(100);
    rec.log.length = 0;
    sched.advance(29_900);
    expect([...rec.log].sort()).toEqual(['update default/a u1 rv=1 -> u1 rv=1', 'update default/b u2 rv=2 -> u2 rv=2']);
    expect(trace.events.filter((e) => e.type === 'kube.informer.pop').map((e) => e.fields['deltas'])).toEqual(['ReplacedAll(2)', 'SyncAll']);
  });

  it('should deliver the same history the same way for the same seed (determinism)', () => {
    const run = (seed: number): string[] => {
      const { api, sched, inf, trace } = informerSetup('DeltaFIFO', {}, seed);
      for (const n of ['a', 'b', 'c', 'd', 'e']) api.create('Pod', podInput(n));
      inf.run();
      sched.runUntilIdle();
      inf.watchGap(100);
      api.delete('Pod', 'default', 'c');
      sched.runUntilIdle();
      return trace.lines();
    };
    expect(run(11)).toEqual(run(11));
    expect(run(11)).not.toEqual(run(12));
  });

  it('should keep uids distinct across the recreated Pod (uid comes from the id source)', () => {
    const { api } = informerSetup('DeltaFIFO');
    const a = api.create('Pod', podInput('a'));
    api.delete('Pod', 'default', 'a');
    const b = api.create('Pod', podInput('a'));
    expect([shortUid(a.metadata.uid), shortUid(b.metadata.uid)]).toEqual(['u1', 'u2']);
  });
});
