/**
 * Human renderings of a trace: every event as one line (`renderTrace`), or the numbered story of
 * a run (`story`): only what a person needs to follow a failure, in order, with times.
 */
import { ACTION_STORY } from './actions/index.ts';
import type { JsonValue } from './json.ts';
import type { TraceEvent } from './trace.ts';

/** `story` lines tell what happened; `detail` lines add every step and read-only call. */
export type RenderLevel = 'story' | 'detail';

export interface RenderedLine {
  readonly level: RenderLevel;
  readonly text: string;
}

/** Renders one event type; `undefined` hides the event. */
export type EventRenderer = (e: TraceEvent) => RenderedLine | undefined;

/** Extra renderers by event type, consulted before the built-in ones. */
export type RendererTable = { readonly [type: string]: EventRenderer };

const str = (v: JsonValue | undefined): string => (v === undefined || v === null ? '' : typeof v === 'string' ? v : JSON.stringify(v));

/** The first 4 hex digits of a uid: enough to tell two incarnations of a name apart in a story. */
export function shortUid(uid: JsonValue | undefined): string {
  const s = str(uid);
  return s.length > 4 ? s.slice(0, 4) : s;
}

const storyLine = (text: string): RenderedLine => ({ level: 'story', text });
const detail = (text: string): RenderedLine => ({ level: 'detail', text });

/** iptables commands that change rules (the rest only read). */
const MUTATING = /(^|\s)(-A|--append|-I|--insert|-D|--delete|-R|--replace|-F|--flush|-N|--new-chain|-X|--delete-chain|-E|--rename-chain|-P|--policy|-Z|--zero)(\s|$)/;

function fields(e: TraceEvent, skip: readonly string[]): string {
  const out: string[] = [];
  for (const k of Object.keys(e)) {
    if (k === 'step' || k === 't' || k === 'type' || skip.includes(k)) continue;
    const v = e[k];
    const s = str(v);
    out.push(`${k}=${/[\s"]/.test(s) ? JSON.stringify(s) : s}`);
  }
  return out.join(' ');
}

function builtin(e: TraceEvent): RenderedLine | undefined {
  switch (e.type) {
    case 'sim.start':
      return storyLine(`simulation starts: seed ${str(e['seed'])}`);
    case 'sim.swarm': {
      const f = e['features'];
      const entries = f !== null && typeof f === 'object' && !Array.isArray(f) ? Object.entries(f) : [];
      return storyLine(`swarm: ${entries.map(([k, w]) => `${k}×${str(w)}`).join(', ')}`);
    }
    case 'sim.step': {
      const tie = typeof e['ready'] === 'number' ? ` (picked ${str(e['pick'])} of ${str(e['ready'])} ready)` : '';
      return detail(`step ${e.step}: ${str(e['kind'])} ${str(e['label'])}${tie}`);
    }
    case 'sim.violation':
      return storyLine(`VIOLATION of "${str(e['invariant'])}": ${str(e['message'])}`);
    case 'sim.finding':
      return storyLine(`FINDING (${str(e['kind'])}): ${str(e['message'])}`);
    case 'sim.end':
      return storyLine(`simulation ends: ${str(e['status'])}`);
    case 'agent.start':
      return storyLine(`${str(e['agent'])} starts (process #${str(e['incarnation'])})`);
    case 'agent.sigterm':
      return storyLine(`${str(e['agent'])} gets SIGTERM (grace ${str(e['graceMs'])}ms)`);
    case 'agent.crash':
      return storyLine(`${str(e['agent'])} crashes${e['reason'] !== undefined ? `: ${str(e['reason'])}` : ''}`);
    case 'agent.exit':
      return storyLine(`${str(e['agent'])} process #${str(e['incarnation'])} exits (${str(e['reason'])})`);
    case 'agent.log': {
      const level = str(e['level']);
      const f = e['fields'] !== undefined ? ` ${str(e['fields'])}` : '';
      const text = `${str(e['agent'])} ${level}: ${str(e['msg'])}${f}`;
      return level === 'warn' || level === 'error' ? storyLine(text) : detail(text);
    }
    case 'iptables.exec': {
      const argv = str(e['argv']);
      const exit = e['exit'] === 0 ? '' : ` → exit ${str(e['exit'])}: ${str(e['stderr']).trim()}`;
      const text = `${str(e['agent'])}: ${argv}${exit}`;
      return MUTATING.test(argv) || e['exit'] !== 0 ? storyLine(text) : detail(text);
    }
    case 'iptables.restore': {
      const input = str(e['input']);
      const n = input === '' ? 0 : input.split('\n').filter((l) => l !== '').length;
      const exit = e['exit'] === 0 ? '' : ` → exit ${str(e['exit'])}: ${str(e['stderr']).trim()}`;
      return storyLine(`${str(e['agent'])}: ${str(e['argv'])} (${n} lines)${exit}`);
    }
    case 'nft.exec': {
      const input = str(e['input']);
      const n = input === '' ? 0 : input.split('\n').filter((l) => l !== '').length;
      const exit = e['exit'] === 0 ? '' : ` → exit ${str(e['exit'])}: ${str(e['stderr']).trim()}`;
      return storyLine(`${str(e['agent'])}: ${str(e['argv'])} (${n} lines)${exit}`);
    }
    case 'nft.list':
      return detail(`${str(e['agent'])}: ${str(e['argv'])}${e['exit'] === 0 ? '' : ` → exit ${str(e['exit'])}`}`);
    case 'ruleset.change': {
      const raw = e['chains'];
      const chains: readonly JsonValue[] = Array.isArray(raw) ? (raw as readonly JsonValue[]) : [];
      const counts = chains.map((c) => {
        const o: { readonly [k: string]: JsonValue } = c !== null && typeof c === 'object' && !Array.isArray(c) ? (c as { readonly [k: string]: JsonValue }) : {};
        return `${str(o['table'])}/${str(o['chain'])} ${o['rules'] === null ? 'gone' : `${str(o['rules'])} rules`}`;
      });
      return detail(`${str(e['agent'])}: rules now ${counts.join(', ')}`);
    }
    case 'iptables.save':
      return detail(`${str(e['agent'])}: ${str(e['argv'])}`);
    case 'iptables.lock-wait':
      return storyLine(`${str(e['agent'])}: ${str(e['argv'])} waits for the xtables lock (held until t=${str(e['untilMs'])}ms)`);
    case 'world.action-skipped':
      return storyLine(`(${str(e['action'])} skipped: ${str(e['reason'])})`);
    case 'kube.api.write': {
      const kind = str(e['kind']);
      const what = `${kind.toLowerCase()} ${str(e['key'])}`;
      const ev = str(e['event']);
      if (ev === 'ADDED') return (kind === 'Pod' ? storyLine : detail)(`api: ${what} added (uid ${shortUid(e['uid'])}, rv ${str(e['rv'])})`);
      if (ev === 'DELETED') return (kind === 'Pod' ? storyLine : detail)(`api: ${what} removed (uid ${shortUid(e['uid'])}, rv ${str(e['rv'])})`);
      return detail(`api: ${what} ${str(e['verb'])} (rv ${str(e['rv'])})`);
    }
    case 'kube.kubelet': {
      const t = str(e['transition']);
      const text = `kubelet ${str(e['node'])}: ${str(e['pod'])} (uid ${shortUid(e['uid'])}) ${t}${e['ip'] !== undefined ? ` with IP ${str(e['ip'])}` : ''}`;
      return t === 'running' || t === 'running+ready' || t === 'terminated' || t === 'succeeded' || t === 'failed' ? storyLine(text) : detail(text);
    }
    case 'kube.handler': {
      const call = str(e['call']);
      const who = e['informer'] !== undefined ? str(e['informer']) : str(e['handler']);
      let text = `${who} ${call} ${str(e['key'])}`;
      if (call === 'onUpdate') text += e['oldUid'] === e['uid'] ? ` (uid ${shortUid(e['uid'])})` : ` uid ${shortUid(e['oldUid'])}→${shortUid(e['uid'])}`;
      else text += ` uid ${shortUid(e['uid'])}`;
      if (e['tombstone'] === true) text += ' (DeletedFinalStateUnknown)';
      if (e['isInInitialList'] === true) text += ' (initial list)';
      return storyLine(text);
    }
    case 'probe.result':
      if (e['ok'] === true) return storyLine(e['first'] === true ? `probe ${str(e['probe'])} succeeds: ${str(e['detail'])}` : `probe ${str(e['probe'])} succeeds again`);
      return storyLine(`probe ${str(e['probe'])} fails: ${str(e['outcome'])}${str(e['detail']) !== '' ? ` (${str(e['detail'])})` : ''}`);
    case 'kube.watch.gap':
      return storyLine(`watch ${str(e['watch'])} loses events until t=${str(e['untilMs'])}ms`);
    case 'kube.reflector.list':
      return Number(e['list'] ?? 1) > 1 ? storyLine(`${str(e['informer'])} relists (${str(e['items'])} items at rv ${str(e['rv'])})`) : detail(`${str(e['informer'])} lists (${str(e['items'])} items at rv ${str(e['rv'])})`);
    default:
      return undefined;
  }
}

/** One event as one line of text with its level (unknown types print their fields). */
export function renderEvent(e: TraceEvent, renderers: RendererTable = {}): RenderedLine | undefined {
  const custom = renderers[e.type];
  if (custom !== undefined) return custom(e);
  const b = builtin(e);
  if (b !== undefined) return b;
  const fromAction = ACTION_STORY[e.type];
  if (fromAction !== undefined) return fromAction(e);
  const level: RenderLevel = e.type.startsWith('fault.') || e.type.startsWith('world.') ? 'story' : 'detail';
  return { level, text: `${e.type} ${fields(e, [])}`.trimEnd() };
}

/** The trace as text, one line per event: `#12   t=40ms  …`. */
export function renderTrace(events: readonly TraceEvent[], opts: { readonly level?: RenderLevel; readonly renderers?: RendererTable } = {}): string {
  const level = opts.level ?? 'detail';
  let out = '';
  for (const e of events) {
    const r = renderEvent(e, opts.renderers);
    if (r === undefined || (level === 'story' && r.level !== 'story')) continue;
    out += `#${String(e.step).padEnd(5)} t=${`${e.t}ms`.padEnd(9)} ${r.text}\n`;
  }
  return out;
}

/**
 * The numbered story of a run: story-level events only, consecutive duplicates folded.
 *
 * @example
 * ```text
 * 1. t=40ms pod default/web-0 deleted (uid 3f0c)
 * 2. t=52ms node-1/npl handler onUpdate default/web-0 uid 3f0c→9a1d
 * 3. t=53ms VIOLATION of "no stale DNAT": …
 * ```
 */
export function story(events: readonly TraceEvent[], opts: { readonly renderers?: RendererTable } = {}): string[] {
  const out: string[] = [];
  let last = '';
  for (const e of events) {
    const r = renderEvent(e, opts.renderers);
    if (r === undefined || r.level !== 'story') continue;
    const line = `t=${e.t}ms ${r.text}`;
    if (line === last) continue;
    last = line;
    out.push(`${out.length + 1}. ${line}`);
  }
  return out;
}
