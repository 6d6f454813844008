/**
 * **Agents stay live**: after the last disruption of its node, and a bound derived from what the
 * controller declares (the settle time plus its longest backoff), an agent runs: it is not down.
 * Its process never fails on its own (a controller error under the `crash` policy, which
 * restarts the process rather than stopping the run, is a finding; two make a crash loop). Checked after safety, every
 * step: it only ever speaks about agents whose node has been calm for the bound.
 *
 * Retries back off: while iptables fails (an injected outage), the agents of a node retry no
 * faster than they declare. More than {@link RETRY_BURST} failed commands within the first
 * declared retry delay is a hot loop (a failed work item requeued at once, with no backoff).
 */
import type { AgentView } from '../view.ts';
import type { CountingInvariant } from './counting.ts';

export const AGENTS_LIVE = 'agents stay live';

/** Own failures within one bound that make a crash loop. */
const LOOP = 2;

/**
 * Failed commands within one first retry delay that make a hot loop. Generous: a controller that
 * backs off fails once per work item per delay, and the generated clusters have a few items.
 */
export const RETRY_BURST = 24;

/** A burst of more than {@link RETRY_BURST} failures within the first declared retry delay, if any (the latest). */
function hotLoop(times: readonly number[], agents: readonly AgentView[]): { count: number; fromMs: number; toMs: number; spanMs: number; firstMs: number } | undefined {
  if (times.length <= RETRY_BURST) return undefined;
  let firstMs = 0;
  for (const a of agents) firstMs = Math.max(firstMs, a.declares?.firstBackoffMs ?? a.declares?.maxBackoffMs ?? 0);
  if (firstMs <= 0) return undefined;
  const to = times[times.length - 1] ?? 0;
  const from = times[times.length - 1 - RETRY_BURST] ?? 0;
  if (to - from >= firstMs) return undefined;
  return { count: RETRY_BURST + 1, fromMs: from, toMs: to, spanMs: to - from, firstMs };
}

/** `t=300ms (Error: boom)` for each failure. */
function failuresText(times: readonly number[], reasons: readonly string[], offset: number): string {
  return times.map((t, i) => `t=${t}ms${reasons[offset + i] !== undefined ? ` (${reasons[offset + i] ?? ''})` : ''}`).join(', ');
}

/**
 * @example
 * ```ts
 * const world = new World({ seed: 1, cluster, controller, controllerErrors: 'crash', invariants: [agentsStayLive()] });
 * ```
 */
export function agentsStayLive(opts: { readonly settleMs?: number } = {}): () => CountingInvariant {
  return () => {
    let count = 0;
    return {
      name: AGENTS_LIVE,
      examined: () => count,
      check(view) {
        const settleMs = opts.settleMs ?? view.settleMs;
        for (const node of view.nodes) {
          const hot = hotLoop(view.injectedFailuresMs?.(node.name) ?? [], view.agents?.(node.name) ?? []);
          if (hot !== undefined) return { message: `the agents on ${node.name} retry without backing off: ${hot.count} commands met an injected iptables failure within ${hot.spanMs}ms (t=${hot.fromMs}ms to t=${hot.toMs}ms), though they declare a first retry delay of ${hot.firstMs}ms`, state: { node: node.name, failures: hot.count, fromMs: hot.fromMs, toMs: hot.toMs } };
          const calm = view.calmSince(node.name);
          for (const a of view.agents?.(node.name) ?? []) {
            const bound = settleMs + (a.declares?.maxBackoffMs ?? 0);
            const from = Math.max(calm, 0);
            const failures = a.ownFailuresMs.filter((t) => t >= from);
            count++;
            const offset = a.ownFailuresMs.length - failures.length;
            if (failures.length >= LOOP) {
              return { message: `${a.name} is crash-looping: its process failed on its own ${failures.length} times since its node was last disturbed (t=${from}ms), at ${failuresText(failures, a.ownFailureReasons ?? [], offset)}`, state: { agent: a.name, failuresMs: [...failures] } };
            }
            // Under the crash policy a controller error restarts the process instead of stopping
            // the run; it is a finding all the same (a scenario that expects it says so).
            if (failures.length > 0) {
              return { message: `${a.name}'s process failed on its own at ${failuresText(failures, a.ownFailureReasons ?? [], offset)}: a controller error, not an injected fault`, state: { agent: a.name, failuresMs: [...failures] } };
            }
            if (view.nowMs - from <= bound) {
              view.recheckAt(from + bound + 1);
              continue;
            }
            if (a.state !== 'running') return { message: `${a.name} is ${a.state} ${view.nowMs - from}ms after its node was last disturbed (bound ${bound}ms: settle ${settleMs}ms + longest backoff ${a.declares?.maxBackoffMs ?? 0}ms)`, state: { agent: a.name, state: a.state } };
          }
        }
        return undefined;
      },
    };
  };
}
