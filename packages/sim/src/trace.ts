/**
 * The trace recorder: every step and everything that happened in it, as structured events that
 * serialise to JSON lines. The schema is documented in docs/trace-format.md; the same seed and
 * inputs give the same bytes.
 *
 * Field order is fixed by construction (`step`, `t`, `type`, then the event's own fields in the
 * order the emitter wrote them), because `JSON.stringify` keeps insertion order.
 */
import type { JsonObject, JsonValue } from './json.ts';

/** The schema version written in the `sim.start` event; bumped on any incompatible change. */
export const TRACE_FORMAT_VERSION = 1;

/** One trace event. `type` is namespaced (`sim.step`, `kube.pod.deleted`, `iptables.exec`, …). */
export interface TraceEvent {
  /** The step during which it happened; 0 for set-up before the first step. */
  readonly step: number;
  /** Simulated time in milliseconds. */
  readonly t: number;
  readonly type: string;
  readonly [field: string]: JsonValue;
}

/**
 * Collects trace events for one run, up to a bound. When the bound is hit the recorder stops
 * recording and raises {@link TraceRecorder.overflowed}; the engine ends the run with a
 * `bound` outcome naming it, so a full trace never silently loses its tail.
 */
export class TraceRecorder {
  readonly #events: TraceEvent[] = [];
  readonly #max: number;
  readonly #enabled: boolean;
  #overflowed = false;

  constructor(opts: { readonly enabled: boolean; readonly maxEvents: number }) {
    this.#enabled = opts.enabled;
    this.#max = opts.maxEvents;
  }

  /** Whether events are kept (property runs turn tracing off and replay the failure with it on). */
  get enabled(): boolean {
    return this.#enabled;
  }

  get overflowed(): boolean {
    return this.#overflowed;
  }

  get length(): number {
    return this.#events.length;
  }

  /** The events so far (read-only view). */
  get events(): readonly TraceEvent[] {
    return this.#events;
  }

  record(step: number, t: number, type: string, fields?: JsonObject): void {
    if (!this.#enabled || this.#overflowed) return;
    if (this.#events.length >= this.#max) {
      this.#overflowed = true;
      return;
    }
    const e: Record<string, JsonValue> = { step, t, type };
    if (fields !== undefined) {
      for (const k of Object.keys(fields)) {
        if (k === 'step' || k === 't' || k === 'type') continue;
        const v = fields[k];
        if (v !== undefined) e[k] = v;
      }
    }
    this.#events.push(e as TraceEvent);
  }
}

/** The trace as JSON lines (one event per line, `\n` after each). */
export function toJsonLines(events: readonly TraceEvent[]): string {
  let out = '';
  for (const e of events) out += JSON.stringify(e) + '\n';
  return out;
}

/** Parse JSON lines back into events; throws with the line number on malformed input. */
export function parseJsonLines(text: string): TraceEvent[] {
  const out: TraceEvent[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (line.trim() === '') continue;
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch (e) {
      throw new Error(`trace line ${i + 1}: not JSON (${(e as Error).message})`, { cause: e });
    }
    if (
      typeof v !== 'object' ||
      v === null ||
      typeof (v as { step?: unknown }).step !== 'number' ||
      typeof (v as { t?: unknown }).t !== 'number' ||
      typeof (v as { type?: unknown }).type !== 'string'
    ) {
      throw new Error(`trace line ${i + 1}: an event needs numeric "step" and "t" and a string "type"`);
    }
    out.push(v as TraceEvent);
  }
  return out;
}
