/**
 * @internal
 * `-j MARK` and `-j CONNMARK` (libxt_MARK, libxt_CONNMARK), whole: every operation stored as the
 * `(mark & ~mask) ^ value` pair the kernel keeps and printed as `--set-xmark`, CONNMARK's
 * save/restore with their masks, the `-L` text of each operation, and the walk's opcodes.
 */
import { OptionTable, OptionTracker, excludesIn, type ExtensionInstance } from '../extension.ts';
import { paramProblem } from '../failure.ts';
import { T_CONNMARK_RESTORE, T_CONNMARK_SAVE, T_CONNMARK_SET, T_MARK } from '../targetCode.ts';
import type { TargetModule } from '../targets.ts';
import type { Target } from '../types.ts';
import { xtInt, xtValMask } from './define.ts';
import { hex } from './mark.ts';

type MarkTarget = Extract<Target, { kind: 'MARK' }>;
type ConnmarkTarget = Extract<Target, { kind: 'CONNMARK' }>;

/** The `-L` text of a mark operation, as libxt_MARK/libxt_CONNMARK name it. */
function markText(ext: string, value: number, mask: number): string {
  if (value === 0) return `${ext} and ${hex(~mask >>> 0)}`;
  if (value === mask) return `${ext} or ${hex(value)}`;
  if (mask === 0) return `${ext} xor ${hex(value)}`;
  if (mask === 0xffffffff) return `${ext} set ${hex(value)}`;
  return `${ext} xset ${hex(value)}/${hex(mask)}`;
}

const MARK_OPS = ['set-xmark', 'set-mark', 'and-mark', 'or-mark', 'xor-mark'] as const;
const MARK_OPTIONS = new OptionTable(MARK_OPS.map((name) => ({ name, args: 1 as const })));

/**
 * Every MARK/CONNMARK operation as the `(mark & ~mask) ^ value` pair the kernel stores: the
 * `--set-*` values read as XTTYPE_MARKMASK32, the others as XTTYPE_UINT32.
 */
function markOp(op: string, text: string, ext: string, argIndex: number): { value: number; mask: number } {
  if (op === 'set-xmark' || op === 'set-mark') {
    const vm = xtValMask(ext, op, text, argIndex);
    return op === 'set-xmark' ? vm : { value: vm.value, mask: (vm.mask | vm.value) >>> 0 };
  }
  const n = Number(xtInt(ext, op, text, 0n, 0xffffffffn, argIndex));
  if (op === 'and-mark') return { value: 0, mask: ~n >>> 0 };
  if (op === 'or-mark') return { value: n, mask: n };
  return { value: n, mask: 0 };
}

/**
 * The framework's exclusion message for the operations given: the first in table order against
 * the first other one in option-id order (`ids`).
 */
function opsExcluded(ext: string, given: readonly string[], table: readonly string[], ids: readonly string[]): void {
  if (given.length < 2) return;
  const entry = table.find((n) => given.includes(n)) as string;
  const other = ids.find((n) => n !== entry && given.includes(n)) as string;
  excludesIn(ext, entry, other);
}

export const MARK_TARGET: TargetModule = {
  name: 'MARK',
  kind: 'MARK',
  options: MARK_OPTIONS,
  create(): ExtensionInstance<Target> {
    const t: OptionTracker = new OptionTracker('MARK', MARK_OPTIONS);
    const ops: string[] = [];
    let vm: { value: number; mask: number } | undefined;
    return {
      name: 'MARK',
      spec: MARK_OPTIONS,
      option(use) {
        t.use(use, MARK_OPTIONS.exact(use.name)!);
        ops.push(use.name);
        vm = markOp(use.name, use.values[0] ?? '', 'MARK', use.argIndex + 1);
      },
      finish() {
        if (vm === undefined) throw paramProblem('MARK: One of the --set-xmark, --{and,or,xor,set}-mark options is required');
        opsExcluded('MARK', ops, MARK_OPS, MARK_OPS);
        return { kind: 'MARK', value: vm.value, mask: vm.mask };
      },
    };
  },
  save: (t, out) => out.push('--set-xmark', `${hex((t as MarkTarget).value)}/${hex((t as MarkTarget).mask)}`),
  list: (t) => markText('MARK', (t as MarkTarget).value, (t as MarkTarget).mask),
  code: (t, c) => {
    c.op = T_MARK;
    c.value = (t as MarkTarget).value >>> 0;
    c.mask = (t as MarkTarget).mask >>> 0;
  },
};

/** CONNMARK's operations in its option table's order, and in the order of their ids. */
const CONNMARK_OPS: readonly string[] = ['set-xmark', 'set-mark', 'and-mark', 'or-mark', 'xor-mark', 'save-mark', 'restore-mark'];
const CONNMARK_OP_IDS: readonly string[] = ['set-mark', 'save-mark', 'restore-mark', 'and-mark', 'or-mark', 'xor-mark', 'set-xmark'];

const CONNMARK_OPTIONS = new OptionTable([
  { name: 'set-xmark', args: 1 },
  { name: 'save-mark', args: 0 },
  { name: 'restore-mark', args: 0 },
  { name: 'set-mark', args: 1 },
  { name: 'and-mark', args: 1 },
  { name: 'or-mark', args: 1 },
  { name: 'xor-mark', args: 1 },
  { name: 'mask', args: 1 },
  { name: 'nfmask', args: 1 },
  { name: 'ctmask', args: 1 },
]);

export const CONNMARK_TARGET: TargetModule = {
  name: 'CONNMARK',
  kind: 'CONNMARK',
  options: CONNMARK_OPTIONS,
  create(): ExtensionInstance<Target> {
    const t: OptionTracker = new OptionTracker('CONNMARK', CONNMARK_OPTIONS);
    let op: string | undefined;
    const ops: string[] = [];
    const masks: string[] = [];
    let vm = { value: 0, mask: 0 };
    let nfmask = 0xffffffff;
    let ctmask = 0xffffffff;
    return {
      name: 'CONNMARK',
      spec: CONNMARK_OPTIONS,
      option(use) {
        t.use(use, CONNMARK_OPTIONS.exact(use.name)!);
        const v = use.values[0] ?? '';
        if (use.name === 'mask' || use.name === 'nfmask' || use.name === 'ctmask') {
          const n = Number(xtInt('CONNMARK', use.name, v, 0n, 0xffffffffn, use.argIndex + 1));
          masks.push(use.name);
          if (use.name !== 'ctmask') nfmask = n;
          if (use.name !== 'nfmask') ctmask = n;
          return;
        }
        ops.push(use.name);
        op = use.name;
        if (op !== 'save-mark' && op !== 'restore-mark') vm = markOp(op, v, 'CONNMARK', use.argIndex + 1);
      },
      finish() {
        if (op === undefined) throw paramProblem('CONNMARK target: No operation specified');
        opsExcluded('CONNMARK', ops, CONNMARK_OPS, CONNMARK_OP_IDS);
        if (masks.includes('mask') && masks.length > 1) excludesIn('CONNMARK', masks.includes('ctmask') ? 'ctmask' : 'nfmask', 'mask');
        if (op === 'save-mark' || op === 'restore-mark') {
          return { kind: 'CONNMARK', mode: op === 'save-mark' ? 'save' : 'restore', value: 0, mask: 0, nfmask, ctmask };
        }
        return { kind: 'CONNMARK', mode: 'set-xmark', value: vm.value, mask: vm.mask };
      },
    };
  },
  save: (target, out) => {
    const t = target as ConnmarkTarget;
    if (t.mode === 'set-xmark') out.push('--set-xmark', `${hex(t.value)}/${hex(t.mask)}`);
    else out.push(t.mode === 'save' ? '--save-mark' : '--restore-mark', '--nfmask', hex(t.nfmask ?? 0xffffffff), '--ctmask', hex(t.ctmask ?? 0xffffffff));
  },
  list: (target) => {
    const t = target as ConnmarkTarget;
    if (t.mode === 'set-xmark') return markText('CONNMARK', t.value, t.mask);
    const nf = t.nfmask ?? 0xffffffff;
    const ct = t.ctmask ?? 0xffffffff;
    if (t.mode === 'save') {
      if (nf === 0xffffffff && ct === 0xffffffff) return 'CONNMARK save';
      if (nf === ct) return `CONNMARK save mask ${hex(nf)}`;
      return `CONNMARK save nfmask ${hex(nf)} ctmask ~${hex(ct)}`;
    }
    if (nf === 0xffffffff && ct === 0xffffffff) return 'CONNMARK restore';
    if (nf === ct) return `CONNMARK restore mask ${hex(ct)}`;
    return `CONNMARK restore ctmask ${hex(ct)} nfmask ~${hex(nf)}`;
  },
  code: (target, c) => {
    const t = target as ConnmarkTarget;
    if (t.mode === 'set-xmark') {
      c.op = T_CONNMARK_SET;
      c.value = t.value >>> 0;
      c.mask = t.mask >>> 0;
    } else {
      c.op = t.mode === 'save' ? T_CONNMARK_SAVE : T_CONNMARK_RESTORE;
      c.nfmask = (t.nfmask ?? 0xffffffff) >>> 0;
      c.ctmask = (t.ctmask ?? 0xffffffff) >>> 0;
    }
  },
};

