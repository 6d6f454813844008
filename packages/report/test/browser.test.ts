/**
 * The report in a real browser: Debian's chromium driven by playwright-core (no browser
 * download). Outside CI a machine without chromium skips this file with one line; in CI
 * (CI=true) a missing chromium fails it.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reportHtml } from '../src/index.ts';
import { recordedTrace } from './recorded.ts';

const CHROMIUM = '/usr/bin/chromium';
const available = existsSync(CHROMIUM);
const root = fileURLToPath(new URL('../../../', import.meta.url));

if (!available && process.env['CI'] !== 'true') console.log(`report browser test skipped: no ${CHROMIUM} (CI installs Debian's chromium)`);

describe('report in a browser: CI has chromium', () => {
  it('should find chromium when CI=true', () => {
    expect(process.env['CI'] !== 'true' || available).toBe(true);
  });
});

describe.skipIf(!available)('report in headless chromium', () => {
  let dir: string;
  let ctx: BrowserContext;
  /** Every request the pages made, and those that were not the report file itself. */
  const requests: string[] = [];
  const foreign: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'netsim-report-browser-'));
    for (const name of ['flannel-restart-empties-chain-faulty', 'flannel-restart-egress-window']) writeFileSync(join(dir, `${name}.html`), reportHtml(await recordedTrace(name)));
    ctx = await chromium.launchPersistentContext(join(dir, 'profile'), {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      viewport: { width: 1280, height: 900 },
    });
    await ctx.route('**/*', async (route) => {
      const url = route.request().url();
      requests.push(url);
      if (url.startsWith(pathToFileURL(dir).href) && url.endsWith('.html')) return route.continue();
      foreign.push(url);
      return route.abort();
    });
  }, 60_000);

  afterAll(async () => {
    await ctx?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  async function open(name: string): Promise<Page> {
    const page = await ctx.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(pathToFileURL(join(dir, `${name}.html`)).href);
    expect(errors).toEqual([]);
    return page;
  }

  it('should mark the violation at its time, step the emptied chain to zero and open a diff on click', async () => {
    const page = await open('flannel-restart-empties-chain-faulty');
    const marker = page.locator('#marker-0');
    expect(await marker.getAttribute('data-t')).toBe('13016');
    expect(await marker.innerText()).toBe('VIOLATION: FLANNEL-POSTRTG never empty once programmed at t=13016ms');
    // On the shared axis: the run ends at the violation, so the marker sits at the right end of the tracks.
    const track = await page.locator('.row.axis .track').boundingBox();
    const at = await marker.boundingBox();
    expect(track).not.toBeNull();
    expect(Math.abs((at?.x ?? 0) - ((track?.x ?? 0) + (track?.width ?? 0)))).toBeLessThan(3);
    await expect.poll(() => page.locator('#violation').innerText()).toContain('FLANNEL-POSTRTG on node-1 is empty (it had 6 rules)');

    const chain = page.locator('[data-chain="nat FLANNEL-POSTRTG"]');
    expect(await chain.getAttribute('data-min')).toBe('0');
    const points = chain.locator('.pt');
    const rules: (string | null)[] = [];
    for (let i = 0; i < (await points.count()); i++) rules.push(await points.nth(i).getAttribute('data-rules'));
    expect(rules).toEqual(['0', '6', '0']);
    expect(await chain.locator('.empty').innerText()).toBe('EMPTY');

    // The restore that emptied it: a click opens its story line and the diff it made.
    const writes = page.locator('[data-agent="node-1/flanneld"] + .row .tk.write');
    await writes.last().click();
    const details = page.locator('#details');
    expect(await details.innerText()).toContain('node-1: changed at this step by node-1/flanneld');
    expect(await details.locator('pre.diff').innerText()).toContain('- [6] -A FLANNEL-POSTRTG ! -s 198.18.0.0/15 -d 198.18.0.0/15 -m comment --comment "flanneld masq" -j MASQUERADE --random-fully');
    expect(await page.locator('#story li.cur').getAttribute('id')).toBe('s-16');
    expect(await page.locator('#story li.cur').getAttribute('aria-current')).toBe('true');

    // And back: a story line selects its item on the timeline.
    await page.locator('#s-17 button').click();
    expect(await page.locator('.chart .sel').first().getAttribute('title')).toContain('VIOLATION at t=13016ms');

    mkdirSync(join(root, '.reports'), { recursive: true });
    await page.screenshot({ path: join(root, '.reports/report-flannel-restart-empties-chain-faulty.png'), fullPage: true });
    await page.close();
  }, 60_000);

  it('should show a failed probe with its reason in words and its packets hop by hop', async () => {
    const page = await open('flannel-restart-egress-window');
    const failed = page.locator('[data-probe] .sp.failed');
    expect(await failed.count()).toBe(1);
    expect(await failed.innerText()).toMatch(/^FAILED: timed-out/);
    expect(await failed.getAttribute('title')).toContain('dropped at gw: no route to 198.18.0.2');
    await failed.click();
    const details = page.locator('#details');
    expect(await details.innerText()).toContain('Packet trace, hop by hop');
    expect(await details.locator('pre.hops').innerText()).toContain('[gw] DROP tcp 203.0.113.10:443 > 198.18.0.2:');
    // At this instant the chain is empty: the diff shown is the last change, the restore that emptied it.
    expect(await details.innerText()).toContain('node-1: unchanged at this step; last change at t=13016ms');
    await page.close();
  }, 60_000);

  it('should fit a phone: the page never scrolls sideways, the timeline scrolls inside its frame', async () => {
    const page = await open('flannel-restart-empties-chain-faulty');
    await page.setViewportSize({ width: 390, height: 800 });
    // Strings, not functions: this test is type-checked without the DOM library.
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    expect(await page.evaluate<boolean>("(() => { const e = document.querySelector('.scroll'); return e.scrollWidth > e.clientWidth; })()")).toBe(true);
    await page.close();
  }, 60_000);

  it('should have loaded nothing but the report files', () => {
    expect(requests.length).toBeGreaterThan(0);
    expect(foreign).toEqual([]);
  });
});
