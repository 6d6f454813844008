/**
 * docs/kube.md cannot rot: its timelines are compared with what the scenarios produce now, and
 * its quick-start code is the file that this test runs.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { quickstart } from './examples/quickstart.ts';
import { SCENARIOS } from './scenarios.ts';

const page = readFileSync(fileURLToPath(new URL('../../../docs/kube.md', import.meta.url)), 'utf8');

/** The fenced block that follows `<!-- name -->` in the page. */
function block(name: string): string {
  const at = page.indexOf(`<!-- ${name} -->`);
  if (at < 0) throw new Error(`docs/kube.md has no <!-- ${name} --> marker`);
  const open = page.indexOf('```', at);
  const start = page.indexOf('\n', open) + 1;
  const end = page.indexOf('```', start);
  return page.slice(start, end).replace(/\n$/, '');
}

describe('docs/kube.md', () => {
  it.each(Object.keys(SCENARIOS))('should show the real timeline of %s', (name) => {
    const run = SCENARIOS[name] as () => { lines: string[] };
    expect(block(`timeline:${name}`)).toBe(run().lines.join('\n'));
  });

  it('should show the quick start exactly as the tested example, with its real output', () => {
    const src = readFileSync(fileURLToPath(new URL('./examples/quickstart.ts', import.meta.url)), 'utf8');
    const body = src.slice(src.indexOf('  const out'), src.lastIndexOf('  return out;'));
    // The guide's block is a complete program: the example's imports, spelled as a user's
    // package import, then the example's body.
    const imports = src.slice(0, src.indexOf('\nexport function')).trim().replace("'../../src/index.ts'", "'@netsim/kube'");
    expect(block('example:quickstart').trim()).toBe(`${imports}\n\n${body.replace(/^ {2}/gm, '').trim()}`);
    expect(block('output:quickstart')).toBe(quickstart().join('\n'));
  });
});

describe('docs/fidelity.md kube conformance table', () => {
  const fidelity = readFileSync(fileURLToPath(new URL('../../../docs/fidelity.md', import.meta.url)), 'utf8');
  const section = fidelity.slice(fidelity.indexOf('## kube event stream'), fidelity.indexOf('\n## ', fidelity.indexOf('## kube event stream') + 5));
  const refs = [...section.matchAll(/`([A-Za-z]+\.test\.ts)` › "([^"]+)"/g)].map((m) => [m[1] as string, m[2] as string] as const);

  it('should reference only tests that exist', () => {
    expect(refs.length).toBeGreaterThan(40);
    const missing = refs.filter(([file, name]) => {
      const src = readFileSync(fileURLToPath(new URL(`./${file}`, import.meta.url)), 'utf8');
      return !src.includes(`'${name}'`) && !src.includes(`"${name}"`);
    });
    expect(missing).toEqual([]);
  });
});
