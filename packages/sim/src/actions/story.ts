/** Helpers for action modules' story renderers. */
import type { JsonValue } from '../json.ts';
import type { RenderedLine } from '../render.ts';

export const str = (v: JsonValue | undefined): string => (v === undefined || v === null ? '' : typeof v === 'string' ? v : JSON.stringify(v));

export const storyLine = (text: string): RenderedLine => ({ level: 'story', text });

/** `on node-1 ` when the event names a node, else nothing. */
export const onNode = (v: JsonValue | undefined): string => (v !== undefined ? `on ${str(v)} ` : '');
