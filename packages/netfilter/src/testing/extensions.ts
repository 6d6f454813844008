/**
 * The extensions netsim reads, as their option tables: what a generator needs to write rules for
 * every match and target module (long names, aliases, value counts, `!`), without reaching into
 * the registries themselves.
 */
import { MATCH_MODULES, TARGET_MODULES } from '../xt/index.ts';

/** One option of an extension, as `iptables` reads it. */
export interface ExtensionOption {
  /** Long name without `--`. */
  readonly name: string;
  /** Other spellings of the same option. */
  readonly aliases: readonly string[];
  /** Value words after the option. */
  readonly args: 0 | 1 | 2;
  /** May be preceded by `!`. */
  readonly invert: boolean;
}

/** A match (`-m name`) or target (`-j NAME`) extension and its options. */
export interface ExtensionInfo {
  readonly kind: 'match' | 'target';
  readonly name: string;
  readonly options: readonly ExtensionOption[];
  /** Tables the kernel accepts the target in (every table when absent). */
  readonly tables?: readonly string[];
}

/** Every match and target extension netsim reads, matches first, each list in registry order. */
export function extensionTables(): ExtensionInfo[] {
  const opts = (specs: readonly { name: string; aliases?: readonly string[]; args: 0 | 1 | 2; invert?: boolean }[]): ExtensionOption[] =>
    specs.map((s) => ({ name: s.name, aliases: [...(s.aliases ?? [])], args: s.args, invert: s.invert === true }));
  return [
    ...MATCH_MODULES.map((m): ExtensionInfo => ({ kind: 'match', name: m.name, options: opts(m.options.specs) })),
    ...TARGET_MODULES.map((t): ExtensionInfo => ({ kind: 'target', name: t.name, options: opts(t.options.specs), ...(t.tables !== undefined && { tables: [...t.tables] }) })),
  ];
}
