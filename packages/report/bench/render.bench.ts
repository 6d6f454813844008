/**
 * Report rendering of a big run: a bundled scenario (flannel restarts beside kube-proxy) run for
 * long enough to trace well over 10,000 events, built and rendered in Node, then opened in
 * headless chromium (Debian's, driven by playwright-core) until its load event.
 * `pnpm bench report`. Numbers go to docs/reports.md.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import { CONTROLLERS } from '@netsim/controllers';
import { loadScenarioFile, replay } from '@netsim/scenario';
import { buildReport, renderHtml } from '../src/index.ts';

const file = await loadScenarioFile(fileURLToPath(new URL('../../../scenarios/kube-proxy-beside-flannel.yaml', import.meta.url)));
const long = { ...file, scenario: { ...file.scenario, horizonMs: 700_000 } };
const r = await replay(long, { controllers: CONTROLLERS, trace: true });
const t0 = process.hrtime.bigint();
const html = renderHtml(buildReport(r.events, { title: file.name }));
const nodeMs = Number(process.hrtime.bigint() - t0) / 1e6;
const dir = mkdtempSync(join(tmpdir(), 'netsim-report-bench-'));
const path = join(dir, 'big.html');
writeFileSync(path, html);
console.log(`trace: ${r.events.length} events; HTML ${(html.length / 1e6).toFixed(2)} MB, built and rendered in ${nodeMs.toFixed(0)} ms (Node)`);
const ctx = await chromium.launchPersistentContext(join(dir, 'profile'), {
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  viewport: { width: 1280, height: 900 },
});
for (let i = 0; i < 3; i++) {
  const page = await ctx.newPage();
  await page.goto(pathToFileURL(path).href, { waitUntil: 'load' });
  // Navigation start to the load event, plus one frame: the page laid out and painted.
  // A string, not a function: benches are type-checked without the DOM library.
  const ms = await page.evaluate<number>("new Promise((resolve) => requestAnimationFrame(() => resolve(performance.now() - performance.getEntriesByType('navigation')[0].startTime)))");
  console.log(`chromium run ${i + 1}: load and first frame after ${ms.toFixed(0)} ms`);
  await page.close();
}
await ctx.close();
rmSync(dir, { recursive: true, force: true });
