import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { exec, formatSave, freshRuleset, isNetfilterError, parseSave, type NetfilterError, type Ruleset } from '../src/index.ts';
import { FastRuleReader, type JumpResolver } from '../src/fastRule.ts';
import { tryRestoreWith, type RestoreOptions } from '../src/restore.ts';
import { readSave } from '../src/save.ts';
import { kubeProxyDump, rulesetArbitrary } from '../src/testing/index.ts';
import { fixture, saveFixtureNames } from './fixtures.ts';

// The fast reader of canonical rule lines (src/fastRule.ts) and the builder of canonical dumps
// (src/saveBuilder.ts) must be invisible: with them and without them (the general parser alone,
// the reference), parseSave and restore give deep-equal rulesets and identical errors. NETSIM_PROPERTY_RUNS raises the generated cases for a long
// campaign; the default run stays within seconds.
const runs = Number(process.env['NETSIM_PROPERTY_RUNS'] ?? 100);
const timeout = Math.max(60_000, runs * 300);

interface ErrorFacts {
  readonly name: string;
  readonly code: NetfilterError['code'];
  readonly message: string;
  readonly location: NetfilterError['location'] | undefined;
  readonly exitCode: number;
  readonly stderr: string | undefined;
}

interface Outcome {
  readonly ruleset?: Ruleset;
  readonly error?: ErrorFacts;
}

function errorFacts(e: NetfilterError): ErrorFacts {
  return { name: e.name, code: e.code, message: e.message, location: e.location, exitCode: e.exitCode, stderr: e.stderr };
}

/** parseSave's outcome, through its fast paths (the builder, the fast reader) or the general parser alone. */
function parsed(text: string, fast: boolean): Outcome {
  try {
    return { ruleset: readSave(text, { file: 'in.rules' }, fast) };
  } catch (e) {
    if (isNetfilterError(e)) return { error: errorFacts(e) };
    throw e;
  }
}

/** tryRestore's outcome (the ruleset left behind as well on failure). */
function restored(base: Ruleset, text: string, opts: RestoreOptions, fast: boolean): Outcome {
  const r = tryRestoreWith(base, text, opts, fast);
  return 'error' in r ? { ruleset: r.ruleset, error: errorFacts(r.error) } : { ruleset: r.ruleset };
}

/** A ruleset with user chains and rules in every table, for --noflush restores to land on. */
const populated = parseSave(fixture('save/matches-targets.expected'));

/** Every mode gives the same outcome with and without the fast reader. */
function expectSame(text: string): void {
  expect(parsed(text, true)).toStrictEqual(parsed(text, false));
  for (const opts of [{}, { counters: true }, { noflush: true }, { noflush: true, counters: true, version: '1.8.9' as const }]) {
    for (const base of opts.noflush === true ? [freshRuleset(), populated] : [freshRuleset()]) {
      expect(restored(base, text, opts, true)).toStrictEqual(restored(base, text, opts, false));
    }
  }
}

interface RestoreCase {
  readonly name: string;
  readonly args: readonly string[];
  readonly pre: readonly (readonly string[])[];
  readonly input: string;
}

const restoreCases = JSON.parse(fixture('restore-cases.json')) as RestoreCase[];

const corpus: readonly string[] = [
  ...saveFixtureNames().flatMap((n) => [fixture(`save/${n}.rules`), fixture(`save/${n}.expected`)]),
  fixture('eval/output-walk.rules'),
  kubeProxyDump({ services: 40 }),
  kubeProxyDump({ services: 40, format: 'restore', seed: 3 }),
  ...restoreCases.map((c) => c.input),
];

describe('fast reader of canonical rule lines', () => {
  it('should give parseSave and restore the same results and errors as the general parser on every fixture', () => {
    for (const text of corpus) expectSame(text);
  }, timeout);

  it('should leave each recorded iptables-restore case exactly as the general parser leaves it', () => {
    for (const c of restoreCases) {
      let base = freshRuleset();
      for (const argv of c.pre) base = exec(base, argv).ruleset;
      const opts: RestoreOptions = { noflush: c.args.includes('--noflush'), counters: c.args.includes('--counters'), version: '1.8.9', ipsets: [] };
      expect(restored(base, c.input, opts, true), c.name).toStrictEqual(restored(base, c.input, opts, false));
    }
  });

  it('should agree with the general parser on generated rulesets, printed with and without counters', () => {
    fc.assert(
      fc.property(rulesetArbitrary(), fc.boolean(), (r, allCounters) => {
        const text = formatSave(r, { counters: allCounters ? true : 'present' });
        const fast = parsed(text, true);
        expect(fast).toStrictEqual(parsed(text, false));
        // (printed with every rule's counters, rules without any read back with [0:0])
        if (!allCounters) expect(fast.ruleset).toEqual(r);
        expect(restored(populated, text, { noflush: true }, true)).toStrictEqual(restored(populated, text, { noflush: true }, false));
      }),
      { seed: 20261129, numRuns: runs },
    );
  }, timeout);

  it('should agree with the general parser on mutated lines, errors included', () => {
    const dumps = corpus.filter((t) => t.includes('\n-A '));
    const palette = [' ', '  ', '\t', '"', '\\', '!', '! ', '-', ':', '/', ',', '.', '0', '9', '65535', 'x', '+', '\r', '-m', '-j', '--', 'DROP', 'tcp'];
    const mutation = fc.record({
      dump: fc.nat({ max: dumps.length - 1 }),
      line: fc.nat(),
      op: fc.constantFrom('delete', 'insert', 'replace', 'dropWord', 'dupWord', 'swapWords', 'truncate'),
      at: fc.nat(),
      other: fc.nat(),
      piece: fc.constantFrom(...palette),
    });
    fc.assert(
      fc.property(mutation, ({ dump, line, op, at, other, piece }) => {
        const lines = (dumps[dump] as string).split('\n');
        const ruleLines = lines.flatMap((l, k) => (/^(\[\d+:\d+\] )?-A /.test(l) ? [k] : []));
        const k = ruleLines[line % ruleLines.length] as number;
        const l = lines[k] as string;
        const words = l.split(' ');
        const w = at % words.length;
        const v = other % words.length;
        const i = at % (l.length + 1);
        let mutated: string;
        switch (op) {
          case 'delete':
            mutated = l.slice(0, i) + l.slice(i + 1);
            break;
          case 'insert':
            mutated = l.slice(0, i) + piece + l.slice(i);
            break;
          case 'replace':
            mutated = l.slice(0, i) + piece + l.slice(i + piece.length);
            break;
          case 'dropWord':
            mutated = words.filter((_, j) => j !== w).join(' ');
            break;
          case 'dupWord':
            mutated = [...words.slice(0, w + 1), ...words.slice(w)].join(' ');
            break;
          case 'swapWords': {
            const out = [...words];
            [out[w], out[v]] = [out[v] as string, out[w] as string];
            mutated = out.join(' ');
            break;
          }
          case 'truncate':
            mutated = l.slice(0, i);
        }
        lines[k] = mutated;
        expectSame(lines.join('\n'));
      }),
      { seed: 7, numRuns: runs * 3 },
    );
  }, timeout);

  it('should read every rule line of a kube-proxy dump itself (so the properties above test it)', () => {
    const text = kubeProxyDump({ services: 200 });
    const chains = new Map<string, { kind: 'jump'; chain: string }>();
    for (const l of text.split('\n')) if (l.startsWith(':') && !l.includes(' ACCEPT ')) chains.set(l.slice(1, l.indexOf(' ')), { kind: 'jump', chain: l.slice(1, l.indexOf(' ')) });
    const resolver: JumpResolver = { jumpTo: (name) => chains.get(name) };
    const reader = new FastRuleReader();
    const general: string[] = [];
    let rules = 0;
    let start = 0;
    for (const l of text.split('\n')) {
      if (l.startsWith('-A ')) {
        rules++;
        if (reader.rule(text, start, start + l.length, 'nat', resolver, true) === undefined) general.push(l);
      }
      start += l.length + 1;
    }
    // Only the few rules with modules and targets the reader leaves to the general parser.
    expect(rules).toBeGreaterThan(2000);
    expect(general.length).toBeLessThan(15);
    for (const l of general) expect(l).toMatch(/-m (conntrack|mark|addrtype)|-j (MARK|MASQUERADE|DROP)/);
  });

  it('should read the canonical shapes and decline anything else without deciding it', () => {
    const resolver: JumpResolver = { jumpTo: (name, isGoto) => (name === 'KUBE-SVC-X' ? { kind: isGoto ? 'goto' : 'jump', chain: name } : undefined) };
    const read = (line: string, table: 'nat' | 'filter' = 'nat') => new FastRuleReader().rule(line, 0, line.length, table, resolver, true);
    const accepted = [
      '-A KUBE-SERVICES -d 198.18.0.10/32 -p tcp -m comment --comment "ns/svc:p cluster IP" -m tcp --dport 80 -j KUBE-SVC-X',
      '-A KUBE-SVC-X ! -s 198.19.0.0/16 -d 198.18.0.10/32 -p tcp -m comment --comment "a b" -m tcp --dport 80 -j KUBE-SVC-X',
      '-A KUBE-SVC-X -m comment --comment "ns/svc:p -> 198.19.0.2:8080" -m statistic --mode random --probability 0.33333333349 -j KUBE-SVC-X',
      '-A KUBE-SEP-X -p tcp -m comment --comment ns/svc:p -m tcp -j DNAT --to-destination 198.19.0.2:8080',
      '[5:300] -A KUBE-SEP-X -s 198.19.0.2/32 -j KUBE-SVC-X',
      '-A FORWARD -i eth0 -o cni+ -p udp -m udp --sport 53 --dport 1024:65535 -j ACCEPT',
      '-A X -p tcp -m tcp ! --dport 22 -g KUBE-SVC-X',
      '-A X -j RETURN',
      '-A X',
    ];
    for (const l of accepted) expect(read(l), l).toBeDefined();
    expect(read('-A INPUT -p tcp -j REJECT --reject-with tcp-reset', 'filter')).toStrictEqual({ matches: [], proto: { proto: 6, negate: false }, target: { kind: 'REJECT', with: 'tcp-reset' } });
    const declined = [
      '-A X  -j ACCEPT', // doubled space
      '-A X\t-j ACCEPT',
      '-A X -m comment --comment "a \\" b" -j ACCEPT', // an escape
      '-A X -m comment --comment "open -j ACCEPT', // unterminated quote
      '-A X -m comment --comment "a"b -j ACCEPT',
      '-A X -p 6 -j ACCEPT',
      '-A X -p tcp --dport 80 -j ACCEPT', // implicit -m tcp
      '-A X -p tcp -m tcp --dport 0:65535 -j ACCEPT', // a full range is dropped
      '-A X -p tcp -m tcp --dport 090 -j ACCEPT', // octal
      '-A X -m tcp --dport 80 -j ACCEPT', // tcp without -p tcp
      '-A X ! -s 0.0.0.0/0 -j ACCEPT', // refused by the kernel
      '-A X -s 10.0.0.1,10.0.0.2 -j ACCEPT', // two rules
      '-A X -s 10.0.0.0/255.0.0.0 -j ACCEPT',
      '-A X -d 10.0.0.1 -s 10.0.0.2 -j ACCEPT', // not in canonical order
      '-A X -j DROP', // in the nat table
      '-A PREROUTING -o eth0 -j ACCEPT',
      '-A X -p icmp -j DNAT --to-destination 10.0.0.1:80',
      '-A X -p tcp -m tcp -j DNAT --to-destination 10.0.0.1:80 --random',
      '-A X -j MARK --set-xmark 0x4000/0x4000',
      '-A X -j KUBE-MISSING',
      '-A X -m comment --comment a -m comment --comment b',
      `-A X -m comment --comment ${'x'.repeat(300)}`,
      '-A X -j ACCEPT ! ',
      '-A X -j ACCEPT\r',
      '-I X -j ACCEPT',
      '[1:2]-A X -j ACCEPT',
    ];
    for (const l of declined) expect(read(l), l).toBeUndefined();
  });

  it('should share the comment and match arrays of consecutive rules without changing what they read back as', () => {
    const text = '*nat\n:A - [0:0]\n-A A -s 10.0.0.1/32 -m comment --comment svc -j RETURN\n-A A -s 10.0.0.2/32 -m comment --comment svc -j RETURN\nCOMMIT\n';
    const [r1, r2] = parseSave(text).tables.nat.chains['A']?.rules ?? [];
    expect(r1?.matches).toBe(r2?.matches);
    expect(r1?.matches).toStrictEqual([{ kind: 'comment', comment: 'svc' }]);
    expect(formatSave(parseSave(text))).toBe('*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n:A - [0:0]\n-A A -s 10.0.0.1/32 -m comment --comment svc -j RETURN\n-A A -s 10.0.0.2/32 -m comment --comment svc -j RETURN\nCOMMIT\n');
  });
});
