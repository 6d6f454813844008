/**
 * **A resync changes nothing** (liveness, after safety): once a node has been calm for the settle
 * time (every fault over, every injected failure's declared retry delay run out), its agents have
 * reached their fixpoint, and an informer resync (`informer.resync`: every object delivered again,
 * unchanged) must leave the node's rules as they are. A controller that changes them then had
 * work it had not done: a failed sync never retried, a change it lost, a cache that disagrees
 * with the API server. Judged from the resync until the settle time after it; a disruption of
 * the node in between leaves that resync unjudged.
 */
import { diff, formatDiff, type Ruleset } from '@netsim/netfilter';
import type { CountingInvariant } from './counting.ts';

export const RESYNC_FIXPOINT = 'a resync changes nothing';

/** A resync being judged. */
interface Pending {
  readonly node: string;
  readonly atMs: number;
  readonly before: Ruleset;
  readonly boots: number;
}

/**
 * @example
 * ```ts
 * const world = new World({ seed: 1, cluster, controller, invariants: [resyncChangesNothing()] });
 * world.at(15_000, { kind: 'informer.resync' });
 * ```
 */
export function resyncChangesNothing(opts: { readonly settleMs?: number } = {}): () => CountingInvariant {
  return () => {
    let seen = 0;
    let count = 0;
    let pending: Pending[] = [];
    return {
      name: RESYNC_FIXPOINT,
      examined: () => count,
      check(view) {
        const settleMs = opts.settleMs ?? view.settleMs;
        const resyncs = view.resyncs?.() ?? [];
        for (; seen < resyncs.length; seen++) {
          const r = resyncs[seen];
          if (r === undefined) continue;
          // Only a node calm for the settle time before the resync has had the time to reach its fixpoint.
          const calm = view.calmSince(r.node);
          if (calm >= 0 && r.atMs - calm <= settleMs) continue;
          if ((view.agents?.(r.node) ?? []).some((a) => a.state !== 'running')) continue;
          pending.push({ node: r.node, atMs: r.atMs, before: view.ruleset(r.node), boots: view.boots?.(r.node) ?? 0 });
          view.recheckAt(r.atMs + settleMs + 1);
        }
        if (pending.length === 0) return undefined;
        const keep: Pending[] = [];
        for (const p of pending) {
          // Disturbed since: this resync cannot be told apart from the disruption.
          if (view.calmSince(p.node) > p.atMs || (view.boots?.(p.node) ?? 0) !== p.boots) continue;
          const now = view.ruleset(p.node);
          if (now !== p.before) {
            const changes = diff(p.before, now);
            if (changes.length > 0) {
              count++;
              pending = [];
              const text = formatDiff(changes).trimEnd().split('\n');
              const shown = text.slice(0, 8).join('\n');
              return {
                message: `a resync of the agents on ${p.node} at t=${p.atMs}ms changed its rules by t=${view.nowMs}ms, though the node had been calm for more than the settle time (${settleMs}ms): the controller was not at its fixpoint\n${shown}${text.length > 8 ? `\n… ${text.length - 8} more lines` : ''}`,
                state: { node: p.node, resyncAtMs: p.atMs, changes: changes.length },
              };
            }
          }
          if (view.nowMs - p.atMs > settleMs) count++;
          else keep.push(p);
        }
        pending = keep;
        return undefined;
      },
    };
  };
}
