/**
 * Property tests: for any sequence of API operations and faults, the informer converges to the
 * API server's state, and what handlers see is consistent on the way there.
 *
 * The default run uses fixed seeds and a few hundred cases so the suite stays fast. A longer
 * campaign: `NETSIM_KUBE_RUNS=5000 pnpm vitest run --project @netsim/kube property`.
 */
import fc from 'fast-check';
import { produce } from 'immer';
import { describe, expect, it } from 'vitest';
import {
  ApiServer,
  Informer,
  ManualScheduler,
  SeededRandom,
  TraceRecorder,
  WorkQueue,
  CounterIdSource,
  deletedObject,
  isKubeError,
  isTombstone,
  objectKey,
  type Pod,
  type QueueMode,
} from '../src/index.ts';
import { podInput } from './helpers.ts';

const RUNS = Number(process.env['NETSIM_KUBE_RUNS'] ?? '200');
const NAMES = ['a', 'b', 'c', 'd'];

type Op =
  | { op: 'create'; name: string; label: string }
  | { op: 'update'; name: string }
  | { op: 'delete'; name: string }
  | { op: 'recreate'; name: string }
  | { op: 'advance'; ms: number }
  | { op: 'gap'; ms: number }
  | { op: 'forceRelist' }
  | { op: 'watchDelay'; ms: number }
  | { op: 'handlerDelay'; ms: number }
  | { op: 'compact' }
  | { op: 'closeWatches' };

const name = fc.constantFrom(...NAMES);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant('create' as const), name, label: fc.constantFrom('x', 'y') }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant('update' as const), name }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('delete' as const), name }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('recreate' as const), name }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 3000 }) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('gap' as const), ms: fc.integer({ min: 1, max: 5000 }) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('forceRelist' as const) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('watchDelay' as const), ms: fc.integer({ min: 0, max: 800 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('handlerDelay' as const), ms: fc.integer({ min: 0, max: 300 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('compact' as const) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('closeWatches' as const) }) },
);

interface Config {
  mode: QueueMode;
  seed: number;
  resyncMs: number;
  timeouts: boolean;
  processDelayMs: number;
}

const configArb: fc.Arbitrary<Config> = fc.record({
  mode: fc.constantFrom<QueueMode>('DeltaFIFO', 'RealFIFO', 'AtomicFIFO'),
  seed: fc.integer({ min: 0, max: 1_000_000 }),
  resyncMs: fc.constantFrom(0, 5000),
  timeouts: fc.boolean(),
  processDelayMs: fc.constantFrom(0, 0, 20),
});

function ignoreApiErrors(f: () => unknown): void {
  try {
    f();
  } catch (e) {
    if (!isKubeError(e)) throw e;
  }
}

interface Outcome {
  problems: string[];
  serverState: string[];
  cacheState: string[];
  viewState: string[];
  deletedUids: string[];
  viewUidsSeen: Set<string>;
  trace: string[];
}

/** Runs one history against one informer and reports what it saw. */
function play(cfg: Config, ops: readonly Op[]): Outcome {
  const sched = new ManualScheduler();
  const trace = new TraceRecorder();
  const api = new ApiServer({ runtime: { scheduler: sched, random: new SeededRandom(cfg.seed), ids: new CounterIdSource() }, history: { minEvents: 3, maxAgeMs: 2000 } });
  const inf = new Informer(api, 'Pod', {
    queueMode: cfg.mode,
    name: 'pods',
    resyncPeriodMs: cfg.resyncMs,
    processDelayMs: cfg.processDelayMs,
    watchTimeout: cfg.timeouts ? { minMs: 2000, maxMs: 8000 } : 'none',
    trace: trace.sink,
  });
  const problems: string[] = [];
  // The handler's view: what it last saw per key, built only from notifications.
  const view = new Map<string, Pod>();
  const viewUidsSeen = new Set<string>();
  const deletedUids: string[] = [];
  const reg = inf.addEventHandler({
    onAdd: (p) => {
      if (view.has(objectKey(p))) problems.push(`onAdd for ${objectKey(p)} already in the handler's view`);
      view.set(objectKey(p), p);
      viewUidsSeen.add(p.metadata.uid);
    },
    onUpdate: (o, n) => {
      const k = objectKey(n);
      if (Number(n.metadata.resourceVersion) < Number(o.metadata.resourceVersion)) problems.push(`onUpdate went back in time for ${k}: ${o.metadata.resourceVersion} -> ${n.metadata.resourceVersion}`);
      if (view.get(k) !== o) problems.push(`onUpdate old for ${k} is not what the handler last saw`);
      view.set(k, n);
      viewUidsSeen.add(n.metadata.uid);
    },
    onDelete: (d) => {
      const obj = deletedObject(d);
      const k = isTombstone(d) ? d.key : objectKey(obj);
      const had = view.get(k);
      if (had === undefined) problems.push(`onDelete for ${k} that the handler never saw`);
      else if (isTombstone(d) ? had !== d.obj : had.metadata.uid !== obj.metadata.uid) problems.push(`onDelete for ${k} does not match the handler's last view`);
      view.delete(k);
    },
  });
  api.onChange((c) => {
    if (c.type === 'DELETED') deletedUids.push(c.object.metadata.uid);
  });
  inf.run();
  sched.advance(10);
  for (const o of ops) {
    switch (o.op) {
      case 'create':
        ignoreApiErrors(() => api.create('Pod', podInput(o.name, { labels: { l: o.label } })));
        break;
      case 'update':
        ignoreApiErrors(() => {
          const p = api.get('Pod', 'default', o.name);
          api.update(produce(p, (d) => void (d.metadata.annotations['n'] = String(Number(d.metadata.annotations['n'] ?? '0') + 1))));
        });
        break;
      case 'delete':
        ignoreApiErrors(() => api.delete('Pod', 'default', o.name));
        break;
      case 'recreate':
        ignoreApiErrors(() => api.delete('Pod', 'default', o.name));
        ignoreApiErrors(() => api.create('Pod', podInput(o.name)));
        break;
      case 'advance':
        sched.advance(o.ms);
        break;
      case 'gap':
        inf.watchGap(o.ms);
        break;
      case 'forceRelist':
        inf.forceRelist();
        break;
      case 'watchDelay':
        inf.setWatchDelay(o.ms);
        break;
      case 'handlerDelay':
        reg.setProcessingDelay(o.ms);
        break;
      case 'compact':
        api.compact('Pod');
        break;
      case 'closeWatches':
        api.closeWatches();
        break;
    }
  }
  // Settle: long enough for any gap, backoff (at most 60 s with jitter) and slow handler to finish.
  reg.setProcessingDelay(0);
  sched.advance(200_000);
  if (reg.pending() !== 0) problems.push(`handler still has ${reg.pending()} notifications pending`);
  const show = (p: Pod): string => `${objectKey(p)} ${p.metadata.uid} ${p.metadata.resourceVersion}`;
  return {
    problems,
    serverState: api.list('Pod').items.map(show),
    cacheState: inf.lister.keys().map((k) => show(inf.lister.getByKey(k) as Pod)),
    viewState: [...view.values()].map(show).sort(),
    deletedUids,
    viewUidsSeen,
    trace: trace.lines(),
  };
}

describe('informer properties', () => {
  it('should converge the cache and the handler view to the server state, whatever the operations and faults', () => {
    fc.assert(
      fc.property(configArb, fc.array(opArb, { maxLength: 40 }), (cfg, ops) => {
        const out = play(cfg, ops);
        expect(out.problems).toEqual([]);
        expect(out.cacheState).toEqual(out.serverState);
        expect(out.viewState).toEqual(out.serverState);
      }),
      { seed: 20240611, numRuns: RUNS },
    );
  });

  it('should remove from the handler view every object deleted at the server (by delete, tombstone or replacement)', () => {
    fc.assert(
      fc.property(configArb, fc.array(opArb, { maxLength: 40 }), (cfg, ops) => {
        const out = play(cfg, ops);
        const live = new Set(out.viewState.map((l) => l.split(' ')[1]));
        for (const uid of out.deletedUids) expect(live.has(uid)).toBe(false);
      }),
      { seed: 777, numRuns: RUNS },
    );
  });

  it('should produce the same trace for the same seed and history', () => {
    fc.assert(
      fc.property(configArb, fc.array(opArb, { maxLength: 25 }), (cfg, ops) => {
        expect(play(cfg, ops).trace).toEqual(play(cfg, ops).trace);
      }),
      { seed: 31337, numRuns: Math.max(20, Math.floor(RUNS / 5)) },
    );
  });

  it('should show the canonical gap case in every queue mode: a recreate inside a gap is one onUpdate, never a delete', () => {
    fc.assert(
      fc.property(fc.constantFrom<QueueMode>('DeltaFIFO', 'RealFIFO', 'AtomicFIFO'), fc.integer({ min: 0, max: 1000 }), fc.integer({ min: 1, max: 4000 }), (mode, seed, gapMs) => {
        const sched = new ManualScheduler();
        const api = new ApiServer({ runtime: { scheduler: sched, random: new SeededRandom(seed), ids: new CounterIdSource() } });
        const inf = new Informer(api, 'Pod', { queueMode: mode, watchTimeout: 'none' });
        const calls: string[] = [];
        inf.addEventHandler({ onAdd: () => calls.push('add'), onUpdate: (o, n) => calls.push(o.metadata.uid === n.metadata.uid ? 'sync' : 'update-new-uid'), onDelete: () => calls.push('delete') });
        api.create('Pod', podInput('web-0'));
        inf.run();
        sched.advance(10);
        calls.length = 0;
        inf.watchGap(gapMs);
        api.delete('Pod', 'default', 'web-0');
        api.create('Pod', podInput('web-0'));
        sched.advance(100_000);
        expect(calls).toEqual(['update-new-uid']);
      }),
      { seed: 4242, numRuns: Math.max(30, Math.floor(RUNS / 3)) },
    );
  });
});

type QOp = { op: 'add'; k: string } | { op: 'get' } | { op: 'done' } | { op: 'addAfter'; k: string; ms: number } | { op: 'advance'; ms: number } | { op: 'rateLimited'; k: string };

describe('workqueue properties', () => {
  it('should never hand a key to two workers at once, never queue a key twice, and process every added key after its last add', () => {
    const key = fc.constantFrom('a', 'b', 'c');
    const qop: fc.Arbitrary<QOp> = fc.oneof(
      fc.record({ op: fc.constant('add' as const), k: key }),
      fc.record({ op: fc.constant('get' as const) }),
      fc.record({ op: fc.constant('done' as const) }),
      fc.record({ op: fc.constant('addAfter' as const), k: key, ms: fc.integer({ min: 0, max: 100 }) }),
      fc.record({ op: fc.constant('rateLimited' as const), k: key }),
      fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 200 }) }),
    );
    fc.assert(
      fc.property(fc.array(qop, { maxLength: 60 }), (ops) => {
        const sched = new ManualScheduler();
        const q = new WorkQueue<string>({ scheduler: sched });
        const held: string[] = [];
        // Keys added (directly or by a delay that fired) and not yet handed out after that add.
        const owed = new Set<string>();
        const ready: string[] = [];
        q.onReady((s) => ready.push(s));
        const handOut = (): void => {
          const k = q.get();
          if (k === undefined) return;
          expect(held).not.toContain(k);
          held.push(k);
          owed.delete(k);
        };
        const realAdd = q.add.bind(q);
        q.add = (k: string) => {
          owed.add(k);
          realAdd(k);
        };
        for (const o of ops) {
          switch (o.op) {
            case 'add':
              q.add(o.k);
              break;
            case 'get':
              handOut();
              break;
            case 'done': {
              const k = held.shift();
              if (k !== undefined) q.done(k);
              break;
            }
            case 'addAfter':
              q.addAfter(o.k, o.ms);
              break;
            case 'rateLimited':
              q.addRateLimited(o.k);
              break;
            case 'advance':
              sched.advance(o.ms);
              break;
          }
          expect(q.len()).toBeLessThanOrEqual(3);
        }
        // Drain: finish held work, let delays fire, and hand everything out.
        for (let i = 0; i < 1000 && (held.length > 0 || q.len() > 0 || q.waitingCount() > 0); i++) {
          const k = held.shift();
          if (k !== undefined) q.done(k);
          sched.advance(2000);
          handOut();
        }
        while (held.length > 0) q.done(held.shift() as string);
        expect([...owed]).toEqual([]);
      }),
      { seed: 99, numRuns: RUNS },
    );
  });
});
