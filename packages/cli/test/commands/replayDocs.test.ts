/**
 * The `netsim replay` output pasted in README.md and docs/scenarios.md is what the command prints
 * today: the README's table and the first example of the scenarios page are rerun and compared.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runReplay } from '../../src/commands/replay.ts';

const root = fileURLToPath(new URL('../../../../', import.meta.url));

/** The first ```text block after `marker` in `doc`. */
function textBlockAfter(doc: string, marker: string): string {
  const at = doc.indexOf(marker);
  if (at < 0) throw new Error(`no "${marker}" in the document`);
  const start = doc.indexOf('```text\n', at) + '```text\n'.length;
  return doc.slice(start, doc.indexOf('\n```', start));
}

async function replayText(paths: readonly string[]): Promise<string> {
  let out = '';
  // Paths are absolute so the test does not depend on the working directory; the report names
  // scenarios, not paths, when every expectation is met.
  expect(await runReplay(paths.map((p) => `${root}${p}`), {}, { stdout: (s) => void (out += s), stderr: (s) => void (out += s) })).toBe(0);
  return out;
}

describe('documented replay output', () => {
  it('should match the table on the README first screen', async () => {
    const readme = readFileSync(`${root}README.md`, 'utf8');
    const shown = textBlockAfter(readme, 'pnpm netsim replay\n```');
    const table = shown.slice(0, shown.indexOf('\n\n', shown.indexOf('\n\n') + 2));
    const actual = await replayText(['scenarios']);
    expect(actual.startsWith(`${table}\n`)).toBe(true);
    expect(shown.trimEnd().split('\n').at(-1)).toBe(actual.trimEnd().split('\n').at(-1));
  });

  it('should match the first example of docs/scenarios.md, file and output', async () => {
    const doc = readFileSync(`${root}docs/scenarios.md`, 'utf8');
    const yamlAt = doc.indexOf('```yaml\n', doc.indexOf('## A first scenario')) + '```yaml\n'.length;
    expect(`${doc.slice(yamlAt, doc.indexOf('\n```', yamlAt))}\n`).toBe(readFileSync(`${root}scenarios/npl-recreate-in-watch-gap-faulty.yaml`, 'utf8'));
    const shown = textBlockAfter(doc, 'Run it (the path');
    expect(shown).toBe(`$ pnpm netsim replay scenarios/npl-recreate-in-watch-gap-faulty.yaml\n${(await replayText(['scenarios/npl-recreate-in-watch-gap-faulty.yaml'])).trimEnd()}`);
  });
});
