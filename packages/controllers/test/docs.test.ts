/**
 * docs/controllers.md cannot rot: its outputs are compared with what the runs produce now, and
 * its plug-in example is the file this test runs.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CONTROLLER_NAMES } from '../src/index.ts';
import { MUTANTS } from '../mutants/index.ts';
import { flannelRestart, kubeProxyUnguardedJump, nplMultiPortCleanup } from './examples/incidents.ts';
import { plugYourOwn } from './examples/plugYourOwn.ts';

const page = readFileSync(fileURLToPath(new URL('../../../docs/controllers.md', import.meta.url)), 'utf8');

/** The fenced block that follows `<!-- name -->` in the page. */
function block(name: string): string {
  const at = page.indexOf(`<!-- ${name} -->`);
  if (at < 0) throw new Error(`docs/controllers.md has no <!-- ${name} --> marker`);
  const open = page.indexOf('```', at);
  const start = page.indexOf('\n', open) + 1;
  const end = page.indexOf('\n```', start);
  return page.slice(start, end);
}

describe('docs/controllers.md', () => {
  it('should list every registered controller in its table', () => {
    for (const name of CONTROLLER_NAMES) expect(page).toContain(`| \`${name}\` |`);
  });

  it('should list every variant of the mutation suite with its bug and tracker issue', () => {
    for (const m of MUTANTS) expect(page).toContain(`| \`${m.name}\` | ${m.bug} | ${m.issue} (`);
  });

  it('should show the real story and chain of the NodePortLocal multi-port incident', async () => {
    const r = await nplMultiPortCleanup();
    expect(block('output:npl-multi-port')).toBe(r.story.join('\n'));
    expect(block('output:npl-multi-port-chain')).toBe(r.chain.join('\n'));
  });

  it('should show the real story of the flannel restart', async () => {
    expect(block('output:flannel-restart')).toBe((await flannelRestart()).join('\n'));
  });

  it('should show the real story of the faulty kube-proxy', async () => {
    expect(block('output:kube-proxy-faulty')).toBe((await kubeProxyUnguardedJump()).join('\n'));
  });

  it('should show the plug-in example exactly as the tested file, with its real output', async () => {
    const src = readFileSync(fileURLToPath(new URL('./examples/plugYourOwn.ts', import.meta.url)), 'utf8');
    const body = src.slice(src.indexOf('// example:start\n') + '// example:start\n'.length, src.indexOf('// example:end'));
    expect(block('example:plug')).toBe(body.trimEnd());
    expect(block('output:plug')).toBe((await plugYourOwn()).join('\n'));
  });
});
