/**
 * @internal
 * `-m mark` (libxt_mark), the whole module in one place: its option, how `iptables-save` and
 * `iptables -L` print it, and its evaluation. `--mark value[/mask]` reads both numbers as
 * `strtoul(…, 0)` does (the mask defaults to all ones) and prints them in hex, the mask only when
 * it is not all ones; it matches when `(skb->mark & mask) == value`, `!` inverting.
 */
import { OptionTable, OptionTracker, type ExtensionInstance } from '../extension.ts';
import { xtValMask } from './define.ts';
import type { MatchModule } from '../matches.ts';
import { MATCH, NOMATCH, type ModTest } from '../matchers.ts';
import { parseUintBase0 } from '../names.ts';
import type { Match } from '../types.ts';

type MarkMatch = Extract<Match, { kind: 'mark' }>;

const MARK_OPTIONS = new OptionTable([{ name: 'mark', args: 1, invert: true }]);

/** `value[/mask]` as uint32s, the mask defaulting to all ones; `undefined` when malformed. */
export function parseMarkMask(text: string): { value: number; mask: number } | undefined {
  const slash = text.indexOf('/');
  const value = parseUintBase0(slash < 0 ? text : text.slice(0, slash));
  if (value === undefined || value > 0xffffffff) return undefined;
  if (slash < 0) return { value, mask: 0xffffffff };
  const mask = parseUintBase0(text.slice(slash + 1));
  if (mask === undefined || mask > 0xffffffff) return undefined;
  return { value, mask };
}

/** `0x%x` of an unsigned 32-bit number. */
export function hex(n: number): string {
  return `0x${(n >>> 0).toString(16)}`;
}

function markText(m: MarkMatch): string {
  return m.mask === 0xffffffff ? hex(m.value) : `${hex(m.value)}/${hex(m.mask)}`;
}

export const MARK_MODULE: MatchModule = {
  name: 'mark',
  kind: 'mark',
  options: MARK_OPTIONS,
  create(): ExtensionInstance<Match> {
    const t: OptionTracker = new OptionTracker('mark', MARK_OPTIONS);
    let m: MarkMatch | undefined;
    return {
      name: 'mark',
      spec: MARK_OPTIONS,
      option(use) {
        t.use(use, MARK_OPTIONS.specs[0]!);
        // XTTYPE_MARKMASK32, with the framework's messages.
        const vm = xtValMask('mark', 'mark', use.values[0] ?? '', use.argIndex + 1);
        m = { kind: 'mark', value: vm.value, mask: vm.mask, negate: use.invert };
      },
      finish() {
        if (m === undefined) t.missing('mark');
        return m;
      },
    };
  },
  save: (match, out) => {
    const m = match as MarkMatch;
    out.push('-m', 'mark');
    if (m.negate) out.push('!');
    out.push('--mark', markText(m));
  },
  list: (match) => `mark match ${(match as MarkMatch).negate ? '! ' : ''}${markText(match as MarkMatch)}`,
  compile: (match): ModTest => {
    const m = match as MarkMatch;
    const value = m.value >>> 0;
    const mask = m.mask >>> 0;
    const negate = m.negate;
    return {
      // The mark as the walk has it: set by MARK targets earlier in this hook.
      test: (w) => (((w.mark & mask) >>> 0 === value) !== negate ? MATCH : NOMATCH),
      sideEffect: false,
      undecidable: false,
    };
  },
};
