/**
 * The published JSON Schema accepts every bundled scenario and rejects what the loader rejects
 * for shape (an unknown key, a bad duration), so editors agree with `netsim replay`.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const schema = JSON.parse(readFileSync(`${root}packages/scenario/schema/scenario.schema.json`, 'utf8')) as Record<string, unknown>;
const validate = new Ajv({ allErrors: true, strict: false }).compile(schema);
const bundled = readdirSync(`${root}scenarios`).filter((f) => f.endsWith('.yaml'));

describe('scenario.schema.json', () => {
  it('should accept every bundled scenario', () => {
    expect(bundled.length).toBeGreaterThan(0);
    for (const f of bundled) {
      const ok = validate(parse(readFileSync(`${root}scenarios/${f}`, 'utf8')));
      expect(ok, `${f}: ${JSON.stringify(validate.errors)}`).toBe(true);
    }
  });

  it('should reject an unknown key and a duration without a unit', () => {
    const doc = parse(readFileSync(`${root}scenarios/${bundled[0] ?? ''}`, 'utf8')) as Record<string, unknown>;
    expect(validate({ ...doc, horizn: '5s' })).toBe(false);
    expect(validate.errors?.[0]).toMatchObject({ keyword: 'additionalProperties', params: { additionalProperty: 'horizn' } });
    expect(validate({ ...doc, horizon: '20' })).toBe(false);
    expect(validate.errors?.[0]).toMatchObject({ instancePath: '/horizon', keyword: 'pattern' });
  });
});
