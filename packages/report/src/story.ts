/**
 * The numbered story of a run with the event each line tells, so the page can link a story line
 * to its place on the timeline and back. Numbering and text are exactly `story()`'s.
 */
import { renderEvent, type TraceEvent } from '@netsim/sim';
import type { StoryLine } from './model.ts';

export function storyLines(events: readonly TraceEvent[]): StoryLine[] {
  const out: StoryLine[] = [];
  let last = '';
  events.forEach((e, i) => {
    const r = renderEvent(e);
    if (r === undefined || r.level !== 'story') return;
    const line = `t=${e.t}ms ${r.text}`;
    if (line === last) return;
    last = line;
    out.push({ n: out.length + 1, t: e.t, text: r.text, e: i });
  });
  return out;
}

/** The story line telling event `e`, or the last one before it; `null` before the first. */
export function storyAt(lines: readonly StoryLine[], e: number): number | null {
  let lo = 0;
  let hi = lines.length - 1;
  let found: number | null = null;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const l = lines[mid] as StoryLine;
    if (l.e <= e) {
      found = l.n;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}
