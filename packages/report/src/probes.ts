/**
 * Probe bands. The engine writes a `probe.result` only when a target's result changes (and for
 * the first failure or a `connect` probe's first answer), so each result holds until the next.
 */
import type { TraceEvent } from '@netsim/sim';
import { str } from './fields.ts';
import type { ProbeLane, Span } from './model.ts';

export function probeLanes(events: readonly TraceEvent[], end: number): ProbeLane[] {
  const results = new Map<string, { readonly t: number; readonly ok: boolean; readonly first: boolean; readonly label: string; readonly e: number }[]>();
  let probingFrom: number | undefined;
  events.forEach((e, i) => {
    if (e.type === 'sim.step' && e['kind'] === 'probe' && probingFrom === undefined) probingFrom = e.t;
    if (e.type !== 'probe.result') return;
    const id = str(e, 'probe');
    const ok = e['ok'] === true;
    const detail = str(e, 'detail');
    const label = ok ? `succeeded${detail !== '' ? `: ${detail}` : ''}` : `FAILED: ${str(e, 'outcome')}${detail !== '' ? ` (${detail})` : ''}`;
    let list = results.get(id);
    if (list === undefined) {
      list = [];
      results.set(id, list);
    }
    list.push({ t: e.t, ok, first: e['first'] === true, label, e: i });
  });
  const out: ProbeLane[] = [];
  for (const [probe, list] of results) {
    const bands: Span<'ok' | 'failed'>[] = [];
    const head = list[0];
    // A first reported result that is not the target's first means it had the other one before.
    if (head !== undefined && !head.first && probingFrom !== undefined && probingFrom < head.t) {
      bands.push({ kind: head.ok ? 'failed' : 'ok', from: probingFrom, to: head.t, label: head.ok ? 'FAILED (before the first reported change)' : 'succeeded (no failure reported before)', e: head.e });
    }
    list.forEach((r, k) => {
      const next = list[k + 1];
      bands.push({ kind: r.ok ? 'ok' : 'failed', from: r.t, to: next?.t ?? end, label: r.label, e: r.e });
    });
    out.push({ probe, bands });
  }
  return out;
}
