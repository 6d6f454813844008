/**
 * docs/datapath.md carries a worked example: its code is test/examples/nodeportTrace.ts verbatim
 * and its output block is what that code prints. This test fails when either drifts.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { nodeportTrace } from './examples/nodeportTrace.ts';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const doc = readFileSync(`${root}docs/datapath.md`, 'utf8');

function block(after: string): string {
  const at = doc.indexOf(after);
  if (at < 0) throw new Error(`docs/datapath.md has no "${after}" marker`);
  const open = doc.indexOf('```', at);
  const start = doc.indexOf('\n', open) + 1;
  const end = doc.indexOf('\n```', start);
  return doc.slice(start, end + 1);
}

describe('docs/datapath.md', () => {
  it('should show the worked example code exactly as it is run', () => {
    const source = readFileSync(fileURLToPath(new URL('./examples/nodeportTrace.ts', import.meta.url)), 'utf8');
    expect(block('<!-- example: nodeportTrace -->')).toBe(source);
  });

  it('should show the output the worked example really prints', () => {
    expect(block('<!-- output: nodeportTrace -->')).toBe(nodeportTrace());
  });
});
