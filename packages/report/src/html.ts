/**
 * `renderHtml`: one self-contained HTML page from a report model. Lanes are absolutely placed
 * buttons on a shared time axis (percent of the run's length), rule counts are SVG step paths,
 * and the story sits beside the timeline. No script or style is fetched; the same model gives
 * the same bytes.
 */
import type { AgentLane, ApiLane, ChainSeries, Marker, ProbeLane, ReportModel, Span, StoryLine, Tick } from './model.ts';
import { SCRIPT, STYLE } from './page.ts';

const ESC: { readonly [c: string]: string } = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text made safe for HTML content and attribute values. */
export function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ESC[c] ?? c);
}

interface Axis {
  readonly from: number;
  readonly to: number;
}

/** Position on the axis in percent, fixed to 3 decimals so the bytes never depend on float printing. */
function pct(a: Axis, t: number): string {
  const x = ((Math.min(Math.max(t, a.from), a.to) - a.from) / (a.to - a.from)) * 100;
  return x.toFixed(3);
}

function width(a: Axis, from: number, to: number): string {
  return (Number(pct(a, to)) - Number(pct(a, from))).toFixed(3);
}

function fmtTime(ms: number): string {
  return `t=${ms}ms`;
}

function span(a: Axis, s: Span, extra = ''): string {
  const label = `${s.label} (${fmtTime(s.from)} to ${fmtTime(s.to)})`;
  return `<button type="button" class="it sp ${s.kind}${extra}" style="left:${pct(a, s.from)}%;width:${width(a, s.from, s.to)}%" data-e="${s.e}" title="${esc(label)}">${esc(s.label)}</button>`;
}

function tick(a: Axis, t: Tick): string {
  return `<button type="button" class="it tk ${t.kind}" style="left:${pct(a, t.t)}%" data-e="${t.e}" title="${esc(`${fmtTime(t.t)} ${t.kind}: ${t.label}`)}"></button>`;
}

function row(name: string, sub: string, track: string, attrs = '', cls = ''): string {
  return `<div class="row${cls}"${attrs}><div class="name" title="${esc(sub === '' ? name : `${name} — ${sub}`)}">${esc(name)}${sub === '' ? '' : `<small>${esc(sub)}</small>`}</div><div class="track">${track}</div></div>`;
}

/** Round tick spacing (1, 2 or 5 × 10^k ms) giving at most ten labels. */
function axisRow(a: Axis): string {
  const span = a.to - a.from;
  let step = 1;
  for (let k = 1; ; k *= 10) {
    const found = [1, 2, 5].map((m) => m * k).find((s) => span / s <= 10);
    if (found !== undefined) {
      step = found;
      break;
    }
  }
  const labels: string[] = [];
  for (let t = Math.ceil(a.from / step) * step; t <= a.to; t += step) {
    const text = step >= 1000 ? `${t / 1000}s` : `${t}ms`;
    labels.push(`<span class="${t === a.from ? 'first' : ''}" style="left:${pct(a, t)}%">${text}</span>`);
  }
  return `<div class="row axis" aria-hidden="true"><div class="name">time</div><div class="track">${labels.join('')}</div></div>`;
}

function stepPath(a: Axis, s: ChainSeries): string {
  const h = 100;
  const y = (r: number | null): string => (s.max === 0 ? h : h - ((r ?? 0) / s.max) * h).toFixed(2);
  let d = '';
  s.points.forEach((p, i) => {
    const x = (Number(pct(a, p.t)) * 10).toFixed(2);
    d += i === 0 ? `M${x} ${y(p.rules)}` : ` H${x} V${y(p.rules)}`;
  });
  d += ` H1000`;
  return `<svg class="steps" viewBox="0 0 1000 ${h}" preserveAspectRatio="none" aria-hidden="true" focusable="false"><path d="${d}"/></svg>`;
}

function chainRow(a: Axis, s: ChainSeries): string {
  const last = s.points[s.points.length - 1];
  const lastText = last === undefined ? '?' : last.rules === null ? 'gone' : String(last.rules);
  const changes = s.points.map((p) => `${p.rules === null ? 'gone' : `${p.rules} rules`} at ${fmtTime(p.t)}`).join(', ');
  const track =
    stepPath(a, s) +
    s.empty
      .map((x) => {
        // An emptying at the very end (the run stops at the violation) still shows its label, right-aligned.
        const at = Number(pct(a, x.from));
        const place = at > 92 ? `right:0;min-width:${(100 - at).toFixed(3)}%;text-align:right;padding-right:.2rem` : `left:${at.toFixed(3)}%;width:${width(a, x.from, x.to)}%`;
        return `<div class="empty" style="${place}">EMPTY</div>`;
      })
      .join('') +
    s.points
      .map((p) => {
        const y = s.max === 0 ? 100 : 100 - ((p.rules ?? 0) / s.max) * 100;
        return `<button type="button" class="it pt" style="left:${pct(a, p.t)}%;top:calc(.3rem + (100% - .6rem) * ${(y / 100).toFixed(3)})" data-e="${p.e}" data-rules="${p.rules === null ? 'gone' : p.rules}" title="${esc(`${s.table} ${s.chain}: ${p.rules === null ? 'chain deleted' : `${p.rules} rules`} from ${fmtTime(p.t)}`)}"></button>`;
      })
      .join('');
  const sub = `${s.table} · max ${s.max} · now ${lastText}${s.empty.length > 0 ? ' · EMPTIED' : ''}`;
  const attrs = ` data-node="${esc(s.node)}" data-chain="${esc(`${s.table} ${s.chain}`)}" data-min="${s.minAfterFilled ?? ''}" data-last="${lastText}" aria-label="${esc(`rule count of ${s.chain} (${s.table}) on ${s.node}: ${changes}`)}" role="group"`;
  return row(s.chain, sub, track, attrs, ' chain');
}

function agentRows(a: Axis, lane: AgentLane): string {
  const states = lane.states.map((s) => span(a, s)).join('');
  const commands = lane.commands.map((c) => tick(a, c)).join('');
  const writes = lane.commands.filter((c) => c.kind === 'write').length;
  const failed = lane.commands.filter((c) => c.kind === 'failed').length;
  return (
    row(lane.agent, 'process', states, ` data-agent="${esc(lane.agent)}" role="group" aria-label="${esc(`${lane.agent} process states`)}"`) +
    row('iptables', `${lane.commands.length} commands · ${writes} changed rules · ${failed} failed`, commands, ` role="group" aria-label="${esc(`${lane.agent} iptables commands`)}"`) +
    lane.chains.map((c) => chainRow(a, c)).join('')
  );
}

function apiRows(a: Axis, api: ApiLane): string {
  const faults = api.faults.map((f) => ('from' in f ? span(a, f) : tick(a, f))).join('');
  return (
    row('Pods & Services', 'create · update · delete', api.objects.map((t) => tick(a, t)).join(''), ' role="group" aria-label="API object events"') +
    row('informers', 'handler calls · tombstones', api.handlers.map((t) => tick(a, t)).join(''), ' role="group" aria-label="informer handler calls"') +
    row('watches', 'gaps · relists', api.watches.map((s) => span(a, s)).join(''), ' role="group" aria-label="watch gaps and relists"') +
    row('faults', 'injected', faults, ' role="group" aria-label="injected faults"')
  );
}

function probeRows(a: Axis, probes: readonly ProbeLane[]): string {
  return probes
    .map((p) =>
      row(
        p.probe,
        p.bands.some((b) => b.kind === 'failed') ? 'FAILED at times' : 'ok',
        p.bands.map((b) => span(a, { ...b, label: b.kind === 'ok' ? `ok: ${b.label}` : b.label })).join(''),
        ` data-probe="${esc(p.probe)}" role="group" aria-label="${esc(`probe ${p.probe}`)}"`,
      ),
    )
    .join('');
}

function markerEl(a: Axis, m: Marker, i: number): string {
  const x = Number(pct(a, m.t));
  const word = m.kind === 'violation' ? 'VIOLATION' : 'FINDING';
  return `<div class="marker ${m.kind}${x > 70 ? ' near-end' : ''}" id="marker-${i}" data-t="${m.t}" style="left:calc(var(--label) + (100% - var(--label)) * ${(x / 100).toFixed(5)})"><button type="button" data-e="${m.e}" title="${esc(`${word} at ${fmtTime(m.t)}: ${m.name}: ${m.message}`)}">${word}: ${esc(m.name)} at ${fmtTime(m.t)}</button></div>`;
}

function storyList(lines: readonly StoryLine[]): string {
  return lines
    .map((l) => `<li id="s-${l.n}"${l.text.startsWith('VIOLATION') ? ' class="violation"' : ''}><button type="button" data-e="${l.e}">t=${l.t}ms ${esc(l.text)}</button></li>`)
    .join('');
}

function group(title: string, body: string): string {
  return `<section class="group" aria-label="${esc(title)}"><h3>${esc(title)}</h3>${body}</section>`;
}

/** The report as one HTML document (UTF-8, no external resources). */
export function renderHtml(m: ReportModel): string {
  const a: Axis = { from: m.from, to: m.to };
  const nodes = m.nodes.map((n) => group(`node ${n.node}`, n.agents.length === 0 ? row('no agents', '', '') : n.agents.map((l) => agentRows(a, l)).join(''))).join('');
  const probes = m.probes.length === 0 ? '' : group('probes', probeRows(a, m.probes));
  const markers = m.markers.map((x, i) => markerEl(a, x, i)).join('');
  const data = { details: m.details, changes: m.changes.map((c) => ({ step: c.step, t: c.t, node: c.node, agent: c.agent, diff: c.diff })), nodes: m.nodes.map((n) => n.node) };
  const violation = m.markers.find((x) => x.kind === 'violation');
  return [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    // Nothing may load from anywhere: the page is its own world.
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">`,
    `<title>${esc(m.title)} — netsim report</title>`,
    `<style>${STYLE}</style></head><body>`,
    `<header><h1>${esc(m.title)}</h1><p>${esc(m.summary)}</p>`,
    violation !== undefined ? `<p role="alert" id="violation"><strong>VIOLATION of "${esc(violation.name)}"</strong> at ${fmtTime(violation.t)}: ${esc(violation.message)}</p>` : '',
    '<p class="legend">Process: running · terminating · crashed (hatched) · restarting · stopped. iptables ticks: grey read, blue changed rules, red failed, amber waited for the lock. Chains: rule count over time, EMPTY where an emptied chain held no rules. Probes: ok / FAILED (hatched). Click anything for its story line, the ruleset diff at that instant and, for a failed probe, its packets hop by hop.</p>',
    '</header>',
    '<main class="layout">',
    `<section aria-label="timeline"><div class="scroll"><div class="chart">${axisRow(a)}${row('invariants', m.markers.length === 0 ? 'held' : `${m.markers.length} marked`, '', ' aria-hidden="true"')}${nodes}${group('API server', apiRows(a, m.api))}${probes}${markers}</div></div></section>`,
    '<aside>',
    '<section id="details" aria-live="polite" aria-label="details"><p>Click an item on the timeline or a story line.</p></section>',
    `<section id="story" aria-label="story"><h2 class="vh">Story</h2><ol>${storyList(m.story)}</ol></section>`,
    '</aside></main>',
    `<script type="application/json" id="report-data">${JSON.stringify(data).replace(/</g, '\\u003c')}</script>`,
    `<script>${SCRIPT}</script>`,
    '</body></html>',
    '',
  ].join('\n');
}
