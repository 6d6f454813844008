import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { quoteSaveString, splitRestoreLine } from '../src/index.ts';

// Expectations come from iptables-restore 1.8.9: each input was restored in a namespace and
// read back with iptables-save (see fixtures/save/matches-targets.rules, whose comments exercise
// the same cases end to end).

describe('splitRestoreLine', () => {
  it('should split on blanks and tabs and report 1-based columns', () => {
    expect(splitRestoreLine('-A INPUT\t-j   ACCEPT')).toEqual({ words: ['-A', 'INPUT', '-j', 'ACCEPT'], columns: [1, 4, 10, 15] });
  });

  it('should keep blanks inside double quotes and unescape backslashes there', () => {
    expect(splitRestoreLine('--comment "a b\\"c\\\\d\'e"').words).toEqual(['--comment', 'a b"c\\d\'e']);
    expect(splitRestoreLine('--comment "x\\ny"').words).toEqual(['--comment', 'xny']);
  });

  it('should keep a backslash outside quotes and treat single quotes as ordinary characters', () => {
    expect(splitRestoreLine("--comment a\\b 'single'").words).toEqual(['--comment', 'a\\b', "'single'"]);
  });

  it('should end a word at a closing quote, as the real tool does', () => {
    expect(splitRestoreLine('"abc"def').words).toEqual(['abc', 'def']);
    expect(splitRestoreLine('abc"def ghi"').words).toEqual(['abcdef ghi']);
  });

  it('should give an empty word for ""', () => {
    expect(splitRestoreLine('--comment ""').words).toEqual(['--comment', '']);
  });

  it('should take the newline into a word whose quote is never closed', () => {
    expect(splitRestoreLine('--comment "open').words).toEqual(['--comment', 'open\n']);
    expect(splitRestoreLine('--comment "open', false).words).toEqual(['--comment', 'open']);
  });

  it('should refuse a word longer than the real tool\'s 1023-byte buffer', () => {
    expect(() => splitRestoreLine(`-m comment --comment ${'x'.repeat(1024)}`)).toThrow('Parameter too long!');
    expect(splitRestoreLine(`--comment ${'x'.repeat(1023)}`).words[1]).toHaveLength(1023);
  });
});

describe('quoteSaveString', () => {
  it('should leave [A-Za-z0-9_-] words bare and quote everything else', () => {
    expect(quoteSaveString('x--y')).toBe('x--y');
    expect(quoteSaveString('-x')).toBe('-x');
    expect(quoteSaveString('a.b')).toBe('"a.b"');
    expect(quoteSaveString('default/web:http')).toBe('"default/web:http"');
    expect(quoteSaveString('')).toBe('""');
    expect(quoteSaveString('ünï')).toBe('"ünï"');
  });

  it("should escape double quote, backslash and single quote", () => {
    expect(quoteSaveString('a b"c\\d\'e')).toBe('"a b\\"c\\\\d\\\'e"');
  });

  it('should read back as the same single word for any string without newlines', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 40 }).filter((s) => !s.includes('\n') && !s.includes('\r')), (s) => {
        expect(splitRestoreLine(`--comment ${quoteSaveString(s)}`).words).toEqual(['--comment', s]);
      }),
      { seed: 7, numRuns: 500 },
    );
  });
});
