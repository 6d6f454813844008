import { describe, expect, it } from 'vitest';
import { buildReport, esc, renderHtml, reportHtml } from '../src/index.ts';
import { recordedEvents, recordedTrace } from './recorded.ts';

describe('renderHtml', () => {
  it('should give byte-identical HTML for the same trace, and for a trace recorded again', async () => {
    const text = await recordedTrace('flannel-restart-egress-window');
    const once = reportHtml(text);
    expect(reportHtml(text)).toBe(once);
    expect(renderHtml(buildReport(await recordedEvents('flannel-restart-egress-window')))).toBe(once);
  });

  it('should load nothing from anywhere: no external URL, stylesheet link or script src', async () => {
    const html = reportHtml(await recordedTrace('npl-recreate-in-watch-gap-faulty'));
    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect(html).not.toMatch(/<[a-z]+ [^>]*\b(src|href)="/);
    expect(html).not.toMatch(/https?:\/\//);
    expect(html).not.toMatch(/url\(|@import|<link/);
    expect(html).toContain("default-src 'none'");
  });

  it('should draw the violation, the emptied chain and the story with their events', async () => {
    const html = reportHtml(await recordedTrace('flannel-restart-empties-chain-faulty'));
    expect(html).toContain('data-t="13016"');
    expect(html).toContain('VIOLATION: FLANNEL-POSTRTG never empty once programmed at t=13016ms');
    expect(html).toMatch(/data-chain="nat FLANNEL-POSTRTG" data-min="0" data-last="0"/);
    expect(html).toContain('>EMPTY</div>');
    expect(html).toMatch(/<li id="s-17" class="violation"><button type="button" data-e="\d+">t=13016ms VIOLATION/);
  });

  it('should escape trace text in HTML and keep </script> out of the data block', () => {
    expect(esc(`<a href="x">'&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
    const evil = '</script><script>alert(1)</script>';
    const html = reportHtml([
      JSON.stringify({ step: 0, t: 0, type: 'sim.start', format: 1, seed: 1, nodes: ['n'], controller: null }),
      JSON.stringify({ step: 1, t: 5, type: 'sim.violation', invariant: evil, message: evil }),
    ].join('\n'));
    expect(html.split('<script>').length).toBe(2);
    expect(html).not.toContain(evil);
  });

  it('should name the runs when a trace holds several and none is picked', async () => {
    const a = await recordedTrace('flannel-restart-empties-chain-faulty');
    const mark = (name: string) => `${JSON.stringify({ step: 0, t: 0, type: 'replay.scenario', file: `${name}.yaml`, name, seed: 1 })}\n`;
    const two = mark('first') + a + mark('second') + a;
    expect(() => reportHtml(two)).toThrow('the trace holds 2 runs (first, second): name one');
    expect(() => reportHtml(two, { name: 'third' })).toThrow('no run named "third" in the trace (runs: first, second)');
    expect(reportHtml(two, { name: 'second' })).toContain('<title>second — netsim report</title>');
    expect(() => reportHtml('')).toThrow('the trace holds no events');
  });
});
