/**
 * **Agents stay live**: after the last disruption of its node, and a bound derived from what the
 * controller declares (the settle time plus its longest backoff), an agent runs: it is not down.
 * Its process never fails on its own (a controller error under the `crash` policy, which
 * restarts the process rather than stopping the run, is a finding; two make a crash loop). Checked after safety, every
 * step: it only ever speaks about agents whose node has been calm for the bound.
 */
import type { CountingInvariant } from './counting.ts';

export const AGENTS_LIVE = 'agents stay live';

/** Own failures within one bound that make a crash loop. */
const LOOP = 2;

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
