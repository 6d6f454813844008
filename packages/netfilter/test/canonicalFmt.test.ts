import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { formatCanonical, formatCanonicalBytes, formatSave, freshRuleset, isNetfilterError, restore, writeSave } from '../src/index.ts';
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

/** Rule lines the byte path proved and read, over the whole file. */
const stats = { proved: 0, read: 0 };

/** What the byte path prints (text and runs of bytes in order), or undefined when it declines. */
function leanBytes(text: string, ipsets: readonly string[] = []): string | undefined {
  const out: string[] = [];
  const ok = formatCanonicalBytes(Buffer.from(text, 'utf8'), (s) => void out.push(s), (b) => void out.push(Buffer.from(b).toString('utf8')), { ipsets, stats });
  if (!ok) expect(out).toEqual([]);
  return ok ? out.join('') : undefined;
}

/** What the lean path prints, or undefined when it declines; the text and byte paths agree. */
function lean(text: string, ipsets: readonly string[] = []): string | undefined {
  const out: string[] = [];
  const got = formatCanonical(text, (s) => void out.push(s), { ipsets }) ? out.join('') : undefined;
  expect(leanBytes(text, ipsets)).toBe(got);
  return got;
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
    const before = { ...stats };
    const got = lean(text);
    expect(got).toBeDefined();
    expect(got).toBe(reference(text));
    expect(got).toBe(text);
    // The byte path proves nearly every line itself (the few others: MARK, MASQUERADE, conntrack, mark).
    const proved = stats.proved - before.proved;
    const read = stats.read - before.read;
    expect(read).toBeLessThan(20);
    expect(proved).toBeGreaterThan(300 * 9);
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
      expect(leanBytes(text), text).toBeUndefined();
    }
  });

  it('should take -m set lines only for the sets the host has, as restore does', () => {
    const text = '*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n-A INPUT -m set --match-set allowed src -j ACCEPT\nCOMMIT\n';
    expect(lean(text, [])).toBeUndefined();
    expect(expectSound(text, ['allowed'])).toBe(text);
  });
});

/** `ruleset fmt`'s outcome: the byte path, else restore; printed text or the refusal as worded. */
function fmtOutcome(text: string): string {
  const out: string[] = [];
  if (formatCanonicalBytes(Buffer.from(text, 'utf8'), (s) => void out.push(s), (b) => void out.push(Buffer.from(b).toString('utf8')), { stats })) return out.join('');
  return referenceOutcome(text);
}

/** restore's outcome alone: the text formatSave prints, or the error message and stderr. */
function referenceOutcome(text: string): string {
  try {
    const chunks: string[] = [];
    writeSave(restore(freshRuleset(), text, { file: 'dump' }), (s) => void chunks.push(s), { counters: false });
    return chunks.join('');
  } catch (e) {
    if (isNetfilterError(e)) return `error: ${e.message}\n${e.stderr ?? ''}`;
    throw e;
  }
}

describe('formatCanonicalBytes on awkward rule lines', () => {
  // Rule lines built from pieces, mostly in the canonical spelling, sometimes in another the real
  // tool reads (abbreviations, long options, other number forms, negations in the old place) or
  // refuses: each dump is then accepted whole or not, and either way must come out as restore's.
  // A line is made of canonical pieces but at most one, the `oddPiece`-th made (counting in
  // `piece`), which is mostly spelt otherwise; -1: every piece sometimes (the chain names).
  let oddPiece = -1;
  let piece = 0;
  const pick = (canonical: readonly string[], other: readonly string[]): fc.Arbitrary<string> => {
    const k = piece++;
    if (oddPiece === -1) return fc.oneof({ weight: 12, arbitrary: fc.constantFrom(...canonical) }, { weight: 1, arbitrary: fc.constantFrom(...other) });
    return k !== oddPiece ? fc.constantFrom(...canonical) : fc.oneof({ weight: 1, arbitrary: fc.constantFrom(...canonical) }, { weight: 4, arbitrary: fc.constantFrom(...other) });
  };
  const addr = pick(
    ['192.0.2.1/32', '192.0.2.0/24', '10.0.0.0/8', '198.51.100.7/32', '203.0.113.128/25'],
    ['192.0.2.1', '192.0.2.1/24', '192.0.2.01/32', '192.0.2.1/0', '0.0.0.0/0', '192.0.2.256/32', '192.0.2.1/33', '192.0.2.1/255.255.255.0', '192.0.2.1/032', '192.0.2.1,198.51.100.1'],
  );
  const opt = (canonical: string, other: readonly string[]): fc.Arbitrary<string> => pick([canonical], other);
  const neg = fc.oneof({ weight: 4, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) });
  const part = (name: fc.Arbitrary<string>, value: fc.Arbitrary<string>): fc.Arbitrary<string | undefined> =>
    fc.option(fc.tuple(name, neg, value).map(([o, n, v]) => (o === '-s !' ? `-s ! ${v}` : `${n ? '! ' : ''}${o} ${v}`)), { freq: 2 });
  const protoName = (proto: string): fc.Arbitrary<string> =>
    pick([proto], proto === 'tcp' ? ['TCP', '6', 'tcpx'] : proto === 'udp' ? ['17', 'UDP'] : ['all', 'sctp']);
  const ports = (proto: 'tcp' | 'udp'): fc.Arbitrary<string> =>
    pick(
      [`-m ${proto} --dport 80`, `-m ${proto} ! --dport 80`, `-m ${proto} --sport 1:2 --dport 3`, `-m ${proto}`, `-m ${proto} ! --sport 5 ! --dport 6`, `-m ${proto} --dport 1024:65535`, `-m ${proto} --sport 0`],
      [`-m ${proto} --destination-port 80`, `-m ${proto} --dport 080`, `-m ${proto} --dport http`, `-m ${proto} --dport 80:80`, `-m ${proto} --dport 0:65535`, `-m ${proto} --dport :80`, `-m ${proto} --dport 90:80`, `-m ${proto} --dport 3 --sport 1`, `-m ${proto} --dport 65536`, `-m ${proto} --dport 8O`, `-m ${proto} --dport 80 --dport 81`, `-m ${proto === 'tcp' ? 'udp' : 'tcp'} --dport 80`],
    );
  const comment = pick(
    ['-m comment --comment x', '-m comment --comment "a b"', '-m comment --comment a/b', '-m comment --comment "ns/svc:p0 cluster IP"', '-m comment --comment a_b-C9'],
    ['-m comment --comment "ab"', '-m comment --comment "a\\"b"', "-m comment --comment 'a b'", '-m comment --comment ""', '-m comment --comment "a', '--match comment --comment x', '-m comment --comm x'],
  );
  const statistic = pick(
    ['-m statistic --mode random --probability 0.50000000000', '-m statistic --mode random --probability 0.33333333349', '-m statistic --mode random --probability 1.00000000000', '-m statistic --mode random --probability 0.00000000000'],
    ['-m statistic --mode random --probability 0.5', '-m statistic --mode random --probability .5', '-m statistic --mode random --probability 1.5', '-m statistic --mode random --probability 0.33333333333', '-m statistic --mode nth --every 2 --packet 0', '-m statistic ! --mode random --probability 0.50000000000'],
  );
  const others = fc.constantFrom('-m mark --mark 0x1', '-m conntrack --ctstate NEW', '-m addrtype --dst-type LOCAL', '-m nosuchmodule');
  const targetFor = (table: string, chain: string, proto: string): fc.Arbitrary<string> => {
    const common = ['', '-j ACCEPT', '-j RETURN', '-j X', '-g X'];
    const own =
      table === 'filter'
        ? ['-j DROP', '-j REJECT --reject-with icmp-port-unreachable', '-j REJECT --reject-with icmp-host-prohibited', ...(proto === 'tcp' ? ['-j REJECT --reject-with tcp-reset'] : [])]
        : table === 'nat'
          ? chain === 'INPUT' || chain === 'POSTROUTING'
            ? ['-j ACCEPT']
            : ['-j DNAT --to-destination 192.0.2.1', ...(proto === 'tcp' || proto === 'udp' ? ['-j DNAT --to-destination 192.0.2.1:80'] : [])]
          : ['-j DROP'];
    return pick(
      [...common, ...own],
      ['-j Y', '-j NOPE', '-j INPUT', '--jump ACCEPT', '-j REJECT', '-j REJECT --reject-with host-prohib', '-j REJECT --reject-with tcp-reset', '-j DNAT --to 192.0.2.1:80', '-j DNAT --to-destination 192.0.2.1:0', '-j DNAT --to-destination 192.0.2.1:80-81', '-j DNAT --to-destination 192.0.2.1:080', '-j DNAT --to-destination 192.0.2.1:80', '-j DROP', '-j MASQUERADE', '-j MARK --set-xmark 0x4000/0x4000', '-j ACCEPT extra', '-j acCEPT'],
    );
  };
  const line = (table: string, chain: string, odd: number): fc.Arbitrary<string> =>
    fc.constantFrom('tcp', 'udp', 'icmp', '', '').chain((proto) => {
      // The pieces of this line are made now.
      oddPiece = odd;
      piece = 0;
      return fc
        .record({
          src: part(opt('-s', ['--source', '--src', '-s !']), addr),
          dst: part(opt('-d', ['--destination', '--dst']), addr),
          inIface: chain === 'OUTPUT' || chain === 'POSTROUTING' ? fc.constant(undefined) : part(opt('-i', ['--in-interface']), pick(['eth0', 'eth+', 'veth.1', 'lo'], ['+', 'a-very-long-interface-name', 'et"h0'])),
          outIface: chain === 'INPUT' || chain === 'PREROUTING' ? fc.constant(undefined) : part(opt('-o', ['--out-interface']), pick(['eth0', 'cni+'], ['+'])),
          proto: proto === '' ? fc.constant(undefined) : fc.tuple(opt('-p', ['--protocol', '--proto']), fc.oneof({ weight: 6, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }), protoName(proto)).map(([o, n, v]) => `${n ? '! ' : ''}${o} ${v}`),
          reversed: fc.oneof({ weight: 6, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
          matches: fc.shuffledSubarray([comment, statistic, ...(proto === 'tcp' || proto === 'udp' ? [ports(proto)] : [])]).chain((arbs): fc.Arbitrary<string[]> => (arbs.length === 0 ? fc.constant<string[]>([]) : fc.tuple(...arbs).map((ws): string[] => [...ws]))),
          extra: oddPiece !== piece++ ? fc.constant(null) : fc.option(others, { freq: 2 }),
          target: targetFor(table, chain, proto),
          space: pick([' '], ['  ', '\t', ' \r']),
        })
        .map((r) => {
          const head = [r.src, r.dst, r.inIface, r.outIface, r.proto].filter((w): w is string => typeof w === 'string');
          if (r.reversed) head.reverse();
          const words = ['-A', chain, ...head, ...r.matches, ...(r.extra === null ? [] : [r.extra]), r.target].filter((w) => w !== '');
          return r.space === ' \r' ? `${words.join(' ')}\r` : words.join(r.space);
        });
    });
  const tableAndChains = fc.constantFrom('filter', 'nat', 'mangle', 'raw').chain((table) => {
    const builtins: Record<string, string[]> = { filter: ['INPUT', 'FORWARD', 'OUTPUT'], nat: ['PREROUTING', 'INPUT', 'OUTPUT', 'POSTROUTING'], mangle: ['PREROUTING', 'INPUT', 'FORWARD', 'OUTPUT', 'POSTROUTING'], raw: ['PREROUTING', 'OUTPUT'] };
    const builtin = builtins[table] ?? [];
    oddPiece = -1;
    const chain = pick([...builtin, 'Y'], ['X', 'FORWARD', 'NOPE', 'POSTROUTING']);
    // Half the lines only canonical pieces (-1 picks none), the others one piece spelt otherwise.
    const odd = fc.oneof({ weight: 1, arbitrary: fc.constant(-2) }, { weight: 1, arbitrary: fc.nat({ max: 14 }) });
    return fc.tuple(fc.constant(table), fc.array(fc.tuple(chain, odd), { minLength: 1, maxLength: 3 }));
  });
  const dump = tableAndChains.chain(([table, chains]) =>
    fc.tuple(...chains.map(([chain, odd]) => line(table, chain, odd))).map((lines) => [`*${table}`, ':X - [0:0]', ':Y - [0:0]', '-A X -j RETURN', ...lines, 'COMMIT', ''].join('\n')),
  );

  it('should print exactly what restore prints, or fail with its message and line, on every dump', () => {
    const before = { ...stats };
    let accepted = 0;
    fc.assert(
      fc.property(dump, (text) => {
        const want = referenceOutcome(text);
        expect(fmtOutcome(text)).toBe(want);
        if (!want.startsWith('error: ')) accepted++;
      }),
      { seed: 20261202, numRuns: runs * 20 },
    );
    // Both outcomes were common, and the prover took part: many lines were proved, not read.
    expect(accepted).toBeGreaterThan(runs * 2);
    expect(accepted).toBeLessThan(runs * 18);
    expect(stats.proved - before.proved).toBeGreaterThan(runs * 5);
  }, timeout);

  it('should take what restore prints for the generated dumps, proving the lines the readers read', () => {
    let accepted = 0;
    fc.assert(
      fc.property(dump, (text) => {
        // Whatever restore prints is canonical: both paths take it (or both leave it) and agree.
        const printed = reference(text);
        if (printed !== undefined && expectSound(printed) !== undefined) accepted++;
      }),
      { seed: 7, numRuns: runs * 10 },
    );
    expect(accepted).toBeGreaterThan(runs * 2);
  }, timeout);
});
