import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { scenarioJsonSchema } from '../src/index.ts';

const committed = fileURLToPath(new URL('../schema/scenario.schema.json', import.meta.url));

describe('scenarioJsonSchema', () => {
  it('should match the committed schema/scenario.schema.json (regenerate with UPDATE_SCHEMA=1 pnpm vitest run --project @netsim/scenario jsonSchema)', () => {
    const text = `${JSON.stringify(scenarioJsonSchema(), null, 2)}\n`;
    if (process.env['UPDATE_SCHEMA'] === '1') writeFileSync(committed, text);
    expect(readFileSync(committed, 'utf8')).toBe(text);
  });

  it('should forbid unknown keys and require the format tag, so editors flag typos', () => {
    const s = scenarioJsonSchema() as { additionalProperties?: unknown; required?: string[]; properties: Record<string, { const?: unknown }> };
    expect(s.additionalProperties).toBe(false);
    expect(s.required).toEqual(expect.arrayContaining(['format', 'name', 'seed', 'horizon', 'settle', 'cluster', 'controller', 'invariants', 'expect']));
    expect(s.properties['format']?.const).toBe('netsim.scenario/v1');
  });
});
