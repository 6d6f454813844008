/**
 * `@netsim/report`: a picture of a run. `buildReport` turns one run's trace (the JSON lines of
 * `--trace`) into lanes, spans, step series and markers; `renderHtml` lays them out as one
 * self-contained HTML page; `reportHtml` does both from JSON-lines text.
 *
 * @example
 * ```ts
 * import { reportHtml } from '@netsim/report';
 * const html = reportHtml(traceText); // same trace → same bytes
 * ```
 */
import { parseJsonLines, type TraceEvent } from '@netsim/sim';
import { buildReport, splitRuns } from './build.ts';
import { renderHtml } from './html.ts';

export { buildReport, splitRuns, type BuildOptions } from './build.ts';
export { renderHtml, esc } from './html.ts';
export { renderIndex, type IndexRow } from './indexPage.ts';
export { storyLines, storyAt } from './story.ts';
export type * from './model.ts';

/** The HTML report of the single run in `jsonLines`; throws naming the runs when there are several and `name` picks none. */
export function reportHtml(jsonLines: string, opts: { readonly name?: string; readonly title?: string } = {}): string {
  const runs = splitRuns(parseJsonLines(jsonLines));
  const picked = opts.name === undefined ? runs : runs.filter((r) => r.name === opts.name);
  if (picked.length !== 1) {
    const names = runs.map((r, i) => r.name ?? `run ${i + 1}`).join(', ');
    throw new Error(
      picked.length === 0
        ? runs.length === 0
          ? 'the trace holds no events'
          : `no run named "${opts.name ?? ''}" in the trace (runs: ${names})`
        : `the trace holds ${runs.length} runs (${names}): name one`,
    );
  }
  const run = picked[0] as { readonly name: string | undefined; readonly events: readonly TraceEvent[] };
  // The `replay.scenario` line only names the run: without it the page is the one `replay --report` writes.
  const events = run.events[0]?.type === 'replay.scenario' ? run.events.slice(1) : run.events;
  const title = opts.title ?? run.name;
  return renderHtml(buildReport(events, title !== undefined ? { title } : {}));
}
