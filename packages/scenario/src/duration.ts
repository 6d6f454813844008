/**
 * Durations as scenario files write them: `40ms`, `2s`, `1.5s`, `2m`. The engine counts whole
 * milliseconds, so a duration must come to an integer number of them.
 */

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;

/** The shape of a duration: a decimal number and a unit. */
export const DURATION_PATTERN = '^[0-9]+(\\.[0-9]+)?(ms|s|m|h)$';
const DURATION_RE = new RegExp(DURATION_PATTERN);

/** What error messages say a duration looks like. */
export const DURATION_EXPECTED = 'expected a duration like "40ms" or "2s"';

/**
 * Milliseconds of a duration text, or `undefined` when the text is no duration or not a whole
 * number of milliseconds.
 *
 * @example
 * ```ts
 * parseDuration('1.5s'); // 1500
 * parseDuration('soon'); // undefined
 * ```
 */
export function parseDuration(text: string): number | undefined {
  if (!DURATION_RE.test(text)) return undefined;
  const m = /^([0-9]+)(?:\.([0-9]+))?(ms|s|m|h)$/.exec(text);
  if (m === null) return undefined;
  const unit = UNIT_MS[m[3] as keyof typeof UNIT_MS];
  const frac = m[2] ?? '';
  // Exact decimal arithmetic: 1.005s must not become 1004.9999 ms.
  const scaled = BigInt(`${m[1] ?? '0'}${frac}`) * BigInt(unit);
  const div = 10n ** BigInt(frac.length);
  if (scaled % div !== 0n) return undefined;
  const ms = Number(scaled / div);
  return Number.isSafeInteger(ms) ? ms : undefined;
}

/**
 * The shortest exact text of a number of milliseconds: `2s`, `1500ms`, `2m`.
 *
 * @example
 * ```ts
 * formatDuration(40); // '40ms'
 * formatDuration(120000); // '2m'
 * ```
 */
export function formatDuration(ms: number): string {
  if (!Number.isSafeInteger(ms) || ms < 0) throw new RangeError(`formatDuration: ${ms} is not a non-negative integer of milliseconds`);
  if (ms === 0) return '0s';
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}
