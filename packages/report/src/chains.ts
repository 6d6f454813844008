/**
 * Step series of chain rule counts, from the `ruleset.change` events the engine writes after
 * every iptables process that changed a node's rules.
 */
import type { JsonValue, TraceEvent } from '@netsim/sim';
import { str } from './fields.ts';
import type { ChainSeries, Span, StepPoint } from './model.ts';

interface Building {
  readonly node: string;
  readonly table: string;
  readonly chain: string;
  readonly agents: string[];
  readonly points: StepPoint[];
}

/** One series per (node, table, chain) any change touched, in order of first change. */
export function chainSeries(events: readonly TraceEvent[], end: number): ChainSeries[] {
  const byKey = new Map<string, Building>();
  events.forEach((e, i) => {
    if (e.type !== 'ruleset.change') return;
    const node = str(e, 'node');
    const agent = str(e, 'agent');
    const raw = e['chains'];
    if (!Array.isArray(raw)) return;
    for (const item of raw as readonly JsonValue[]) {
      if (item === null || typeof item !== 'object' || Array.isArray(item)) continue;
      const c = item as { readonly [k: string]: JsonValue };
      const table = typeof c['table'] === 'string' ? c['table'] : '';
      const chain = typeof c['chain'] === 'string' ? c['chain'] : '';
      const rules = typeof c['rules'] === 'number' ? c['rules'] : null;
      const key = `${node}\u0000${table}\u0000${chain}`;
      let b = byKey.get(key);
      if (b === undefined) {
        b = { node, table, chain, agents: [], points: [] };
        byKey.set(key, b);
      }
      if (!b.agents.includes(agent)) b.agents.push(agent);
      const prev = b.points[b.points.length - 1];
      // Several processes at one instant: the series keeps each, the chart draws the last.
      if (prev !== undefined && prev.rules === rules && prev.t === e.t) continue;
      b.points.push({ t: e.t, rules, e: i });
    }
  });
  return [...byKey.values()].map((b) => finish(b, end));
}

function finish(b: Building, end: number): ChainSeries {
  let max = 0;
  let filled = false;
  let minAfterFilled: number | null = null;
  const empty: Span<'empty'>[] = [];
  b.points.forEach((p, i) => {
    const rules = p.rules;
    if (rules !== null && rules > max) max = rules;
    if (rules !== null && rules > 0) filled = true;
    if (filled && rules !== null) minAfterFilled = minAfterFilled === null ? rules : Math.min(minAfterFilled, rules);
    if (filled && rules === 0) {
      const next = b.points.slice(i + 1).find((q) => q.rules !== 0);
      empty.push({ kind: 'empty', from: p.t, to: next?.t ?? end, label: `${b.chain} is empty`, e: p.e });
    }
  });
  // Merge runs of consecutive zero points into one stretch.
  const merged: Span<'empty'>[] = [];
  for (const s of empty) {
    const last = merged[merged.length - 1];
    if (last !== undefined && s.from <= last.to && s.to === last.to) continue;
    merged.push(s);
  }
  return { node: b.node, table: b.table, chain: b.chain, agents: b.agents, points: b.points, max, minAfterFilled, empty: merged };
}
