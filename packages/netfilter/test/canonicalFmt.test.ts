import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { formatCanonical, formatSave, freshRuleset, isNetfilterError, restore } from '../src/index.ts';
import { kubeProxyDump, rulesetArbitrary } from '../src/testing/index.ts';
import { fixture, saveFixtureNames } from './fixtures.ts';

// `formatCanonical` answers `ruleset fmt` for input already in iptables-save's form without
// building a ruleset. It may decline anything (the caller then runs restore), but what it
// accepts must be accepted by restore and print exactly as restore + formatSave print it.
const runs = Number(process.env['NETSIM_PROPERTY_RUNS'] ?? 100);
const timeout = Math.max(60_000, runs * 300);

/** What `ruleset fmt` prints through restore, or undefined when restore refuses the input. */
function reference(text: string, ipsets: readonly string[] = []): string | undefined {
  try {
    return formatSave(restore(freshRuleset(), text, { ipsets }), { counters: false });
  } catch (e) {
    if (isNetfilterError(e)) return undefined;
    throw e;
  }
}

/** What the lean path prints, or undefined when it declines. */
function lean(text: string, ipsets: readonly string[] = []): string | undefined {
  const out: string[] = [];
  return formatCanonical(text, (s) => void out.push(s), { ipsets }) ? out.join('') : undefined;
}

/** Whatever the lean path accepts, restore accepts and prints the same. */
function expectSound(text: string, ipsets: readonly string[] = []): string | undefined {
  const got = lean(text, ipsets);
  if (got !== undefined) expect(got).toBe(reference(text, ipsets));
  return got;
}

const realWorld = fileURLToPath(new URL('../../conformance/fixtures/real-world/', import.meta.url));
const realWorldDumps = readdirSync(realWorld)
  .filter((f) => f.endsWith('.rules'))
  .sort()
  .map((f) => readFileSync(`${realWorld}${f}`, 'utf8'));

const corpus: readonly string[] = [
  ...saveFixtureNames().flatMap((n) => [fixture(`save/${n}.rules`), fixture(`save/${n}.expected`)]),
  ...realWorldDumps,
  kubeProxyDump({ services: 40 }),
  kubeProxyDump({ services: 40, endpoints: 3, nodePortEvery: 1 }),
];

describe('formatCanonical (ruleset fmt of a canonical dump)', () => {
  it('should print a canonical kube-proxy dump as itself, exactly as restore and formatSave print it', () => {
    const text = kubeProxyDump({ services: 300, endpoints: 3, nodePortEvery: 1 });
    const got = lean(text);
    expect(got).toBeDefined();
    expect(got).toBe(reference(text));
    expect(got).toBe(text);
  });

  it('should accept the canonical form of every fixture and real-world dump, and agree on the dumps as written', () => {
    let accepted = 0;
    for (const text of corpus) {
      expectSound(text);
      const canonical = reference(text);
      if (canonical === undefined) continue;
      // Printed by formatSave, each is canonical: the lean path must take it (or the speed-up
      // would silently never apply) unless it holds a line it leaves to restore.
      if (expectSound(canonical) !== undefined) accepted++;
    }
    expect(accepted).toBeGreaterThanOrEqual(corpus.length - 4);
  });

  it('should agree with restore on generated rulesets', () => {
    let accepted = 0;
    fc.assert(
      fc.property(rulesetArbitrary(), (r) => {
        const written = formatSave(r, { counters: false });
        expectSound(written);
        // What fmt prints is canonical: the lean path takes it.
        const text = reference(written);
        if (text !== undefined && expectSound(text) !== undefined) accepted++;
      }),
      { seed: 20261202, numRuns: runs },
    );
    expect(accepted).toBeGreaterThan(runs / 2);
  }, timeout);

  it('should never accept a mutated dump that restore refuses or prints otherwise', () => {
    const dumps = corpus.map((t) => reference(t)).filter((t): t is string => t !== undefined && t.includes('\n-A '));
    const palette = [' ', '  ', '\t', '"', '\\', '!', '! ', '-', ':', '/', ',', '.', '0', '9', '65535', 'x', '+', '\r', '-m', '-j', '--', 'DROP', 'tcp', 'COMMIT', '*nat', '[1:2] '];
    const mutation = fc.record({
      dump: fc.nat({ max: dumps.length - 1 }),
      line: fc.nat(),
      op: fc.constantFrom('delete', 'insert', 'replace', 'dropWord', 'dupWord', 'swapWords', 'truncate', 'dupLine', 'dropLine', 'swapLines'),
      at: fc.nat(),
      other: fc.nat(),
      piece: fc.constantFrom(...palette),
    });
    fc.assert(
      fc.property(mutation, ({ dump, line, op, at, other, piece }) => {
        const lines = (dumps[dump] as string).split('\n');
        const k = line % lines.length;
        const k2 = other % lines.length;
        const l = lines[k] as string;
        const words = l.split(' ');
        const w = at % words.length;
        const v = other % words.length;
        const i = at % (l.length + 1);
        switch (op) {
          case 'delete':
            lines[k] = l.slice(0, i) + l.slice(i + 1);
            break;
          case 'insert':
            lines[k] = l.slice(0, i) + piece + l.slice(i);
            break;
          case 'replace':
            lines[k] = l.slice(0, i) + piece + l.slice(i + piece.length);
            break;
          case 'dropWord':
            lines[k] = words.filter((_, j) => j !== w).join(' ');
            break;
          case 'dupWord':
            lines[k] = [...words.slice(0, w + 1), ...words.slice(w)].join(' ');
            break;
          case 'swapWords': {
            const out = [...words];
            [out[w], out[v]] = [out[v] as string, out[w] as string];
            lines[k] = out.join(' ');
            break;
          }
          case 'truncate':
            lines[k] = l.slice(0, i);
            break;
          case 'dupLine':
            lines.splice(k, 0, l);
            break;
          case 'dropLine':
            lines.splice(k, 1);
            break;
          case 'swapLines':
            [lines[k], lines[k2]] = [lines[k2] as string, l];
        }
        expectSound(lines.join('\n'));
      }),
      { seed: 11, numRuns: runs * 5 },
    );
  }, timeout);

  it('should decline what restore refuses or changes, writing nothing', () => {
    const declined = [
      // A jump loop, refused at COMMIT.
      '*filter\n:A - [0:0]\n:B - [0:0]\n-A INPUT -j A\n-A A -j B\n-A B -j A\nCOMMIT\n',
      // DNAT in a user chain reached from POSTROUTING: the kernel refuses the hook.
      '*nat\n:X - [0:0]\n-A POSTROUTING -j X\n-A X -p tcp -j DNAT --to-destination 192.0.2.1:80\nCOMMIT\n',
      // A jump to a chain not declared, a rule in a chain not declared, no COMMIT.
      '*filter\n-A INPUT -j NOPE\nCOMMIT\n',
      '*filter\n-A NOPE -j ACCEPT\nCOMMIT\n',
      '*filter\n:INPUT ACCEPT [0:0]\n',
      // Not as iptables-save prints it: a host address without /32, a doubled space, counters.
      '*filter\n-A INPUT -s 192.0.2.1 -j ACCEPT\nCOMMIT\n',
      '*filter\n-A INPUT  -j ACCEPT\nCOMMIT\n',
      '*filter\n:INPUT ACCEPT [3:4]\nCOMMIT\n',
      '*filter\n[1:2] -A INPUT -j ACCEPT\nCOMMIT\n',
      // A chain named like a target, a table given twice.
      '*filter\n:LOG - [0:0]\n-A INPUT -j LOG\nCOMMIT\n',
      '*filter\nCOMMIT\n*filter\nCOMMIT\n',
    ];
    for (const text of declined) {
      const out: string[] = [];
      expect(formatCanonical(text, (s) => void out.push(s)), text).toBe(false);
      expect(out).toEqual([]);
    }
  });

  it('should take -m set lines only for the sets the host has, as restore does', () => {
    const text = '*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n-A INPUT -m set --match-set allowed src -j ACCEPT\nCOMMIT\n';
    expect(lean(text, [])).toBeUndefined();
    expect(expectSound(text, ['allowed'])).toBe(text);
  });
});
