import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { exec, freshRuleset, isNetfilterError, parseSave, restore, tryRestore, type Ruleset } from '../src/index.ts';
import { kubeProxyDump } from '../src/testing/index.ts';
import { fixture, saveFixtureNames } from './fixtures.ts';

// Robustness: whatever the input, the text tools either succeed or fail with a typed
// NetfilterError that names a line and column; they never throw anything else or hang.
// The default run is CI-sized; `pnpm fuzz:long` (NETSIM_FUZZ_RUNS=200000) is the long campaign.
const runs = Number(process.env['NETSIM_FUZZ_RUNS'] ?? 150);
const timeout = Math.max(60_000, runs * 50);

const corpus = [...saveFixtureNames().flatMap((n) => [fixture(`save/${n}.rules`), fixture(`save/${n}.expected`)]), kubeProxyDump({ services: 20 })];
const corpusLines = corpus.flatMap((t) => t.split('\n'));

/** parseSave must return or throw a located NetfilterError. */
function checkParse(text: string): void {
  try {
    parseSave(text, { file: 'fuzz' });
  } catch (e) {
    if (!isNetfilterError(e)) throw e;
    expect(e.code).toBe('parse');
    expect(e.location?.line).toBeGreaterThanOrEqual(1);
    expect(e.location?.column).toBeGreaterThanOrEqual(1);
    expect(e.location?.file).toBe('fuzz');
    expect(e.stderr).toBeDefined();
  }
}

/** restore must return, or fail with a located error, leaving its input untouched. */
function checkRestore(base: Ruleset, text: string, noflush: boolean): void {
  const before = JSON.stringify(base);
  const r = tryRestore(base, text, { noflush, counters: noflush });
  if ('error' in r) {
    expect(isNetfilterError(r.error)).toBe(true);
    expect(r.error.location?.line).toBeGreaterThanOrEqual(1);
    expect(r.error.location?.column).toBeGreaterThanOrEqual(1);
    expect(r.error.exitCode).toBeGreaterThan(0);
  }
  expect(JSON.stringify(base)).toBe(before);
}

const anyText = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 400 }),
  fc.string({ unit: fc.constantFrom('*', ':', '-', '!', '"', '\\', ' ', '\t', '\n', 'A', 'j', 'm', '[', ']', '0', '1', '/', ',', '.'), maxLength: 300 }),
);

const mutatedDump = fc
  .record({
    text: fc.constantFrom(...corpus),
    op: fc.constantFrom('truncate', 'splice', 'shuffle', 'flip', 'dropLine', 'dupLine'),
    a: fc.nat(),
    b: fc.nat(),
    c: fc.nat(),
    other: fc.constantFrom(...corpus),
  })
  .map(({ text, op, a, b, c, other }) => {
    const lines = text.split('\n');
    switch (op) {
      case 'truncate':
        return text.slice(0, a % (text.length + 1));
      case 'splice':
        return text.slice(0, a % (text.length + 1)) + other.slice(b % (other.length + 1));
      case 'shuffle': {
        const out = [...lines];
        for (let k = out.length - 1; k > 0; k--) {
          const j = (a + k * (b + 1)) % (k + 1);
          [out[k], out[j]] = [out[j] as string, out[k] as string];
        }
        return out.join('\n');
      }
      case 'flip': {
        const at = a % Math.max(1, text.length);
        return text.slice(0, at) + String.fromCharCode(c % 256) + text.slice(at + 1);
      }
      case 'dropLine':
        return lines.filter((_, k) => k !== a % lines.length).join('\n');
      case 'dupLine': {
        const k = a % lines.length;
        return [...lines.slice(0, k), corpusLines[b % corpusLines.length] as string, ...lines.slice(k)].join('\n');
      }
    }
    return text;
  });

describe('fuzz: parseSave and restore never crash', () => {
  it('should fail only with located NetfilterErrors on random text', () => {
    fc.assert(fc.property(anyText, checkParse), { seed: 1, numRuns: runs });
  }, timeout);

  it('should fail only with located NetfilterErrors on truncated, spliced, shuffled and mutated real dumps', () => {
    fc.assert(fc.property(mutatedDump, checkParse), { seed: 2, numRuns: runs });
  }, timeout);

  it('should never modify the ruleset it restores into, in either mode', () => {
    const base = parseSave(fixture('save/matches-targets.expected'));
    fc.assert(
      fc.property(mutatedDump, fc.boolean(), (text, noflush) => checkRestore(base, text, noflush)),
      { seed: 3, numRuns: runs },
    );
  }, timeout);
});

describe('fuzz: exec never crashes', () => {
  const word = fc.oneof(
    fc.constantFrom(
      ...['-A', '-I', '-D', '-R', '-C', '-N', '-X', '-F', '-Z', '-E', '-P', '-S', '-L', '-t', 'nat', 'filter', 'raw', 'mangle', 'INPUT', 'FORWARD', 'OUTPUT', 'PREROUTING', 'POSTROUTING', 'X', 'Y'],
      ...['-s', '-d', '-i', '-o', '-p', 'tcp', 'udp', 'icmp', '-m', 'comment', '--comment', 'multiport', '--dports', 'mark', '--mark', 'conntrack', '--ctstate', 'NEW'],
      ...['--dport', '80', '1:2', '-j', 'ACCEPT', 'DROP', 'DNAT', '--to-destination', '192.0.2.1:80', 'MASQUERADE', 'MARK', '--or-mark', '0x4000', '!', '-n', '-v', '-x', '--line-numbers', '-c', '1', '2', '-g', 'REJECT', '--reject-with', 'tcp-reset', 'statistic', '--mode', 'random', '--probability', '0.5', 'addrtype', '--dst-type', 'LOCAL', 'set', '--match-set', 'LOG', '--log-prefix', '', '-f', '--syn', '192.0.2.0/24', 'eth0+', '--to', '--so', '=', '--dport=22'],
    ),
    fc.string({ maxLength: 8 }),
  );
  it('should parse random rule lines from iptables words into rules or located errors', () => {
    fc.assert(
      fc.property(fc.array(fc.array(word, { maxLength: 12 }), { minLength: 1, maxLength: 5 }), (lines) => {
        const quoted = lines.map((ws) => ws.map((w) => (w === '' || /[\s"]/.test(w) ? `"${w.replace(/["\\]/g, '\\$&')}"` : w)).join(' '));
        checkParse(`*filter\n:X - [0:0]\n:Y - [0:0]\n${quoted.join('\n')}\nCOMMIT\n`);
      }),
      { seed: 5, numRuns: runs * 2 },
    );
  }, timeout);

  it('should return an exit status and, on failure, a message for random argv', () => {
    let state = freshRuleset();
    fc.assert(
      fc.property(fc.array(word, { maxLength: 14 }), (argv) => {
        const r = exec(state, argv);
        expect([0, 1, 2, 3, 4]).toContain(r.exitCode);
        if (r.exitCode !== 0) {
          expect(r.stderr.length).toBeGreaterThan(0);
          expect(r.ruleset).toBe(state);
        }
        state = r.ruleset;
      }),
      { seed: 4, numRuns: runs * 4 },
    );
  }, timeout);
});

describe('restore atomicity under injected errors', () => {
  const base = parseSave(kubeProxyDump({ services: 15, seed: 5 }));
  const good = kubeProxyDump({ services: 15, seed: 6, format: 'restore' });
  const goodLines = good.split('\n');
  const natStart = goodLines.indexOf('*nat');
  const bad = ['-A KUBE-SERVICES --bogus', '-A NO-SUCH-CHAIN -j ACCEPT', '-X KUBE-MARK-MASQ', '-A POSTROUTING -j DNAT --to-destination 192.0.2.1', ':INPUT', '-A KUBE-SERVICES -s 1.2.3.400', '-D KUBE-SERVICES 100000'];

  it('should leave a table unchanged when a bad line lands anywhere in its block, and keep earlier tables', () => {
    fc.assert(
      fc.property(fc.integer({ min: natStart + 1, max: goodLines.length - 3 }), fc.constantFrom(...bad), fc.boolean(), (at, line, noflush) => {
        const text = [...goodLines.slice(0, at), line, ...goodLines.slice(at)].join('\n');
        const r = tryRestore(base, text, { noflush });
        expect('error' in r).toBe(true);
        if (!('error' in r)) return;
        expect(r.error.location?.line).toBeGreaterThan(natStart);
        // The failing nat block changed nothing; the filter block before it committed.
        expect(r.ruleset.tables.nat).toBe(base.tables.nat);
        expect(r.ruleset.tables.filter).toEqual(restore(base, goodLines.slice(0, natStart).join('\n') + '\n', { noflush }).tables.filter);
      }),
      { seed: 6, numRuns: Math.min(runs, 200) },
    );
  }, timeout);
});
