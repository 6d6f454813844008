/**
 * Paths and readers for the recorded fixtures (see fixtures/record.ts for how they were made).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));

export function fixture(path: string): string {
  return readFileSync(`${FIXTURES}${path}`, 'utf8');
}

/** Names (without `.rules`) of the save fixtures, each with its recorded `.expected`. */
export function saveFixtureNames(): string[] {
  return readdirSync(`${FIXTURES}save`)
    .filter((f) => f.endsWith('.rules'))
    .map((f) => f.slice(0, -'.rules'.length))
    .sort();
}
