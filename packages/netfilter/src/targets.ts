/**
 * @internal
 * The target extension registry (`-j NAME`) and the printers every reader uses: each extension
 * is one module in `xt/` owning its options, parsing, the kernel's table and hook limits, the
 * words `iptables-save` prints, the `iptables -L` text and the walk's opcode; `xt/index.ts` lists
 * them. Checked against iptables 1.8.9 (nf_tables).
 */
import type { FastTargetReader } from './fastCursor.ts';
import type { ExtensionInstance, OptionTable } from './extension.ts';
import type { TargetCode } from './targetCode.ts';
import { quoteVerbatim } from './tokenize.ts';
import { TARGET_MODULES } from './xt/index.ts';
import type { Hook, TableName, Target } from './types.ts';

export { formatNatRange } from './xt/nat.ts';

/**
 * One target extension, whole. A module that parses into its own `kind` is found by kind; one
 * that keeps canonical words (an `unknown` target) by its name.
 */
export interface TargetModule {
  readonly name: string;
  readonly options: OptionTable;
  create(): ExtensionInstance<Target>;
  /** The `Target` kind this module parses into; absent for one that keeps canonical words. */
  readonly kind?: Target['kind'];
  /** Tables the kernel accepts the target in (all when absent). */
  readonly tables?: readonly TableName[];
  /** Hooks the kernel accepts the target from (all when absent or undefined). */
  readonly hooks?: (t: Target) => readonly Hook[] | undefined;
  /** The words `iptables-save` prints after `-j NAME` (default: the canonical words). */
  readonly save?: (t: Target, out: string[]) => void;
  /** The `iptables -L` text after the matches (default: the words without dashes). */
  readonly list?: (t: Target, numeric: boolean) => string;
  /** The target column of `iptables -L` when it is not the name. */
  readonly column?: (t: Target) => string;
  /** The walk's opcode and operands (default: undecided). */
  readonly code?: (t: Target, c: TargetCode) => void;
  /** A new reader of `-j NAME`'s options in canonical form, for the fast reader (src/fastCursor.ts). */
  readonly fast?: () => FastTargetReader;
}

const modules = new Map<string, TargetModule>(); // tidy-allow: the extension registry, filled from xt/index.ts while this module loads
const byKind = new Map<string, TargetModule>(); // tidy-allow: the same registry by the Target kind a module owns
const byWordsName = new Map<string, TargetModule>(); // tidy-allow: modules that keep canonical words, by name

for (const m of TARGET_MODULES) {
  modules.set(m.name, m);
  if (m.kind !== undefined) byKind.set(m.kind, m);
  else byWordsName.set(m.name, m);
}

/** Every modelled target extension (for the tokenizer's table of common words). */
export function targetModules(): IterableIterator<TargetModule> {
  return modules.values();
}

export function targetModule(name: string): TargetModule | undefined {
  return modules.get(name);
}

/** The module a parsed target belongs to (none for verdicts and jumps). */
export function targetModuleOf(t: Target): TargetModule | undefined {
  return t.kind === 'unknown' ? byWordsName.get(t.name) : byKind.get(t.kind);
}

/** The verdicts every iptables knows without an extension. */
export const STANDARD_TARGETS: ReadonlySet<string> = new Set(['ACCEPT', 'DROP', 'RETURN']);

/**
 * Target extensions the real iptables ships. One netsim does not model is kept verbatim as an
 * `unknown` target; any other `-j NAME` must be a user chain.
 */
export const IPTABLES_TARGET_NAMES: ReadonlySet<string> = new Set([
  'AUDIT', 'CHECKSUM', 'CLASSIFY', 'CLUSTERIP', 'CONNMARK', 'CONNSECMARK', 'CT', 'DNAT', 'DNPT', 'DSCP',
  'ECN', 'HL', 'HMARK', 'IDLETIMER', 'LED', 'LOG', 'MARK', 'MASQUERADE', 'NETMAP', 'NFLOG', 'NFQUEUE',
  'NOTRACK', 'RATEEST', 'REDIRECT', 'REJECT', 'SECMARK', 'SET', 'SNAT', 'SNPT', 'SYNPROXY', 'TCPMSS',
  'TCPOPTSTRIP', 'TEE', 'TOS', 'TPROXY', 'TRACE', 'TTL',
]);

// ---------------------------------------------------------------------------------------------
// Printing

/** The name in `-j NAME` (or `-g NAME`), as `iptables-save` prints it. */
export function targetName(t: Target): string {
  if (t.kind === 'jump' || t.kind === 'goto') return t.chain;
  if (t.kind === 'unknown') return t.name;
  return t.kind;
}

/** The words `iptables-save` prints for a target, starting with `-j`/`-g`. */
export function saveTargetWords(t: Target, out: string[]): void {
  out.push(t.kind === 'goto' ? '-g' : '-j', targetName(t));
  if (t.kind === 'jump' || t.kind === 'goto' || t.kind === 'ACCEPT' || t.kind === 'DROP' || t.kind === 'RETURN') return;
  const own = targetModuleOf(t)?.save;
  if (own !== undefined) own(t, out);
  else if (t.kind === 'unknown') for (const w of t.args) out.push(quoteVerbatim(w));
}

/** The target column of `iptables -L`. */
export function listTargetColumn(t: Target | undefined): string {
  if (t === undefined) return '';
  return targetModuleOf(t)?.column?.(t) ?? targetName(t);
}

/** The text `iptables -L` prints after the matches for a target ('' when none). */
export function listTargetText(t: Target | undefined, numeric = true): string {
  if (t === undefined) return '';
  if (t.kind === 'jump' || t.kind === 'goto' || t.kind === 'ACCEPT' || t.kind === 'DROP' || t.kind === 'RETURN') return '';
  const own = targetModuleOf(t)?.list;
  if (own !== undefined) return own(t, numeric);
  // The options without dashes: an approximation for targets netsim keeps as given (docs/fidelity.md).
  return t.kind === 'unknown' ? t.args.map((a) => a.replace(/^--/, '')).join(' ') : '';
}
