/**
 * The JSON Schema of scenario files, generated from the valibot schema, for editors (with the
 * YAML language server: `# yaml-language-server: $schema=…/scenario.schema.json`). The committed
 * copy in `schema/scenario.schema.json` is checked against this by a test.
 */
import { toJsonSchema } from '@valibot/to-json-schema';
import { ScenarioSchema, SCENARIO_FORMAT } from './schema.ts';

/** The JSON Schema (draft-07) of a scenario file. */
export function scenarioJsonSchema(): Record<string, unknown> {
  // Checks that JSON Schema cannot say (a duration must be whole milliseconds, a window must be
  // ordered) are left to the loader; the editor still gets every key, type and pattern.
  const schema = toJsonSchema(ScenarioSchema, { errorMode: 'ignore' }) as Record<string, unknown>;
  return {
    $schema: schema['$schema'],
    $id: 'https://netsim.invalid/schema/scenario.schema.json',
    title: `netsim scenario (${SCENARIO_FORMAT})`,
    description: 'A netsim scenario: a cluster, the controller under test, a timeline of actions and faults, probes, invariants and the expected outcome. See docs/scenarios.md.',
    ...Object.fromEntries(Object.entries(schema).filter(([k]) => k !== '$schema')),
  };
}
