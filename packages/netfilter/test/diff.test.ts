import { describe, expect, it } from 'vitest';
import { diff, formatDiff, parseSave, type Rule, type RulesetChange } from '../src/index.ts';

const nat = (rules: string): string => `*nat\n${rules}COMMIT\n`;

describe('diff', () => {
  it('should find nothing between a dump and the same dump spelled differently, counters aside', () => {
    const a = parseSave(nat(':X - [0:0]\n[5:6] -A X -p tcp --dport 80 -j ACCEPT\n'));
    const b = parseSave(nat(':X - [0:0]\n-A X -p tcp -m tcp --dport 80 -j ACCEPT\n'));
    expect(diff(a, b)).toEqual([]);
  });

  it('should report tables, chains and policies added, removed and changed', () => {
    const a = parseSave('*filter\n:FORWARD ACCEPT [0:0]\n:OLD - [0:0]\nCOMMIT\n');
    const b = parseSave('*filter\n:FORWARD DROP [0:0]\n:NEW - [0:0]\nCOMMIT\n*nat\nCOMMIT\n*raw\n:R - [0:0]\nCOMMIT\n');
    expect(diff(a, b).map((c) => `${c.kind} ${c.table} ${'chain' in c ? c.chain : ''}`)).toEqual([
      'table-added raw ',
      'chain-added raw R',
      'policy-changed filter FORWARD',
      'chain-added filter NEW',
      'chain-removed filter OLD',
    ]);
  });

  it('should report rules removed, added and moved with their positions', () => {
    const a = parseSave(nat(':S - [0:0]\n-A S -d 198.18.0.1 -j RETURN\n-A S -d 198.18.0.2 -j RETURN\n-A S -d 198.18.0.3 -j RETURN\n-A S -d 198.18.0.4 -j RETURN\n'));
    const b = parseSave(nat(':S - [0:0]\n-A S -d 198.18.0.4 -j RETURN\n-A S -d 198.18.0.1 -j RETURN\n-A S -d 198.18.0.3 -j RETURN\n-A S -d 198.18.0.5 -j RETURN\n'));
    expect(formatDiff(diff(a, b))).toBe(
      [
        '*nat',
        '- [2] -A S -d 198.18.0.2/32 -j RETURN',
        '~ [4 -> 1] -A S -d 198.18.0.4/32 -j RETURN',
        '+ [4] -A S -d 198.18.0.5/32 -j RETURN',
        '',
      ].join('\n'),
    );
  });

  it('should pair duplicate rules by occurrence', () => {
    const a = parseSave(nat(':S - [0:0]\n-A S -j RETURN\n-A S -j RETURN\n'));
    const b = parseSave(nat(':S - [0:0]\n-A S -j RETURN\n'));
    expect(diff(a, b).map((c) => c.kind === 'rule-removed' && c.index)).toEqual([2]);
  });

  it('should describe b exactly: replaying the changes on a rebuilds every chain of b', () => {
    // Generated chains over a small alphabet of rules, so duplicates and moves are common.
    let seed = 12345;
    const next = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    for (let round = 0; round < 200; round++) {
      const chain = (len: number): string => Array.from({ length: len }, () => `-A S -d 198.18.0.${next(6)} -j RETURN\n`).join('');
      const a = parseSave(nat(`:S - [0:0]\n${chain(next(9))}`));
      const b = parseSave(nat(`:S - [0:0]\n${chain(next(9))}`));
      const changes = diff(a, b);
      expect(replay(a.tables.nat.chains['S']?.rules ?? [], changes)).toEqual(b.tables.nat.chains['S']?.rules ?? []);
    }
  });
});

/** Rebuilds b's chain from a's chain and the changes: kept rules keep their order, others go where the changes say. */
function replay(a: readonly Rule[], changes: readonly RulesetChange[]): Rule[] {
  const removed = new Set<number>();
  const moved = new Set<number>();
  const placed = new Map<number, Rule>();
  for (const c of changes) {
    if (c.kind === 'rule-removed') removed.add(c.index);
    if (c.kind === 'rule-moved') {
      moved.add(c.from);
      placed.set(c.to, c.rule);
    }
    if (c.kind === 'rule-added') placed.set(c.index, c.rule);
  }
  const kept = a.filter((_, i) => !removed.has(i + 1) && !moved.has(i + 1));
  const out: Rule[] = [];
  const total = kept.length + placed.size;
  for (let pos = 1; pos <= total; pos++) out.push(placed.get(pos) ?? (kept.shift() as Rule));
  return out;
}
