/**
 * @internal
 * `-j MARK` and `-j CONNMARK` (libxt_MARK, libxt_CONNMARK), whole: every operation stored as the
 * `(mark & ~mask) ^ value` pair the kernel keeps and printed as `--set-xmark`, CONNMARK's
 * save/restore with their masks, the `-L` text of each operation, and the walk's opcodes.
 */
import { OptionTable, OptionTracker, badInteger, excludes, type ExtensionInstance } from '../extension.ts';
import { paramProblem } from '../failure.ts';
import { parseUintBase0 } from '../names.ts';
import { T_CONNMARK_RESTORE, T_CONNMARK_SAVE, T_CONNMARK_SET, T_MARK } from '../targetCode.ts';
import type { TargetModule } from '../targets.ts';
import type { Target } from '../types.ts';
import { hex, parseMarkMask } from './mark.ts';

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

/** Every MARK/CONNMARK operation as the `(mark & ~mask) ^ value` pair the kernel stores. */
function markOp(op: string, text: string, ext: string, argIndex: number): { value: number; mask: number } {
  const vm = parseMarkMask(text);
  const slashAllowed = op === 'set-xmark' || op === 'set-mark';
  if (vm === undefined || (!slashAllowed && text.includes('/'))) badInteger(ext, op, argIndex);
  switch (op) {
    case 'set-xmark':
      return vm;
    case 'set-mark':
      return { value: vm.value, mask: (vm.mask | vm.value) >>> 0 };
    case 'and-mark':
      return { value: 0, mask: ~vm.value >>> 0 };
    case 'or-mark':
      return { value: vm.value, mask: vm.value };
    default:
      return { value: vm.value, mask: 0 };
  }
}

export const MARK_TARGET: TargetModule = {
  name: 'MARK',
  kind: 'MARK',
  options: MARK_OPTIONS,
  create(): ExtensionInstance<Target> {
    const t: OptionTracker = new OptionTracker('MARK', MARK_OPTIONS);
    let op: string | undefined;
    let vm: { value: number; mask: number } | undefined;
    return {
      name: 'MARK',
      spec: MARK_OPTIONS,
      option(use) {
        t.use(use, MARK_OPTIONS.exact(use.name)!);
        if (op !== undefined) excludes('MARK', MARK_OPTIONS, op, use.name, use.argIndex);
        op = use.name;
        vm = markOp(use.name, use.values[0] ?? '', 'MARK', use.argIndex + 1);
      },
      finish() {
        if (vm === undefined) throw paramProblem('MARK: One of the --set-xmark, --{and,or,xor,set}-mark options is required');
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
          const n = parseUintBase0(v);
          if (n === undefined || n > 0xffffffff) badInteger('CONNMARK', use.name, use.argIndex + 1);
          if (use.name !== 'ctmask') nfmask = n;
          if (use.name !== 'nfmask') ctmask = n;
          return;
        }
        if (op !== undefined) excludes('CONNMARK', CONNMARK_OPTIONS, op, use.name, use.argIndex);
        op = use.name;
        if (op !== 'save-mark' && op !== 'restore-mark') vm = markOp(op, v, 'CONNMARK', use.argIndex + 1);
      },
      finish() {
        if (op === undefined) throw paramProblem('CONNMARK target: No operation specified');
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

