import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatDuration, parseDuration } from '../src/index.ts';

describe('parseDuration', () => {
  it('should read milliseconds, seconds, minutes and hours, with decimals that come to whole milliseconds', () => {
    expect(parseDuration('40ms')).toBe(40);
    expect(parseDuration('2s')).toBe(2000);
    expect(parseDuration('1.5s')).toBe(1500);
    expect(parseDuration('1.005s')).toBe(1005);
    expect(parseDuration('2m')).toBe(120_000);
    expect(parseDuration('1h')).toBe(3_600_000);
    expect(parseDuration('0s')).toBe(0);
  });

  it('should refuse text that is no duration or not a whole number of milliseconds', () => {
    for (const t of ['soon', '2', '-1s', '1.5ms', '1e3ms', ' 2s', '2 s', '2S', '']) expect(parseDuration(t)).toBeUndefined();
  });
});

describe('formatDuration', () => {
  it('should write the shortest exact unit', () => {
    expect([0, 40, 1500, 2000, 120_000, 7_200_000].map(formatDuration)).toEqual(['0s', '40ms', '1500ms', '2s', '2m', '2h']);
  });

  it('should round-trip every whole number of milliseconds', () => {
    fc.assert(fc.property(fc.nat({ max: 10 ** 12 }), (ms) => parseDuration(formatDuration(ms)) === ms), { seed: 7, numRuns: 500 });
  });

  it('should refuse negative or fractional milliseconds', () => {
    expect(() => formatDuration(-1)).toThrow('formatDuration: -1 is not a non-negative integer of milliseconds');
    expect(() => formatDuration(1.5)).toThrow(RangeError);
  });
});
