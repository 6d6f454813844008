import { describe, expect, it } from 'vitest';
import { formatSave, parseSave, writeSave } from '../src/index.ts';
import { kubeProxyDump } from '../src/testing/index.ts';

describe('writeSave', () => {
  it('should hand out the formatSave text in pieces of about 64k characters', () => {
    const text = kubeProxyDump({ services: 300, endpoints: 3, nodePortEvery: 1 });
    const ruleset = parseSave(text);
    const chunks: string[] = [];
    writeSave(ruleset, (c) => void chunks.push(c), { counters: false });
    expect(chunks.join('')).toBe(formatSave(ruleset, { counters: false }));
    expect(chunks.join('')).toBe(text);
    expect(chunks.length).toBeGreaterThan(1);
    for (const c of chunks.slice(0, -1)) expect(c.length).toBeGreaterThanOrEqual(1 << 16);
  });

  it('should write nothing for a ruleset with no table', () => {
    const chunks: string[] = [];
    writeSave(parseSave(''), (c) => void chunks.push(c));
    expect(chunks).toEqual([]);
  });
});
