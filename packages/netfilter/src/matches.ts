/**
 * @internal
 * The match extension registry (`-m name`) and the three readers every printer and the compiler
 * use: {@link saveMatchWords} (`iptables-save`), {@link listMatchText} (`iptables -L`) and
 * {@link compileMatch} (evaluation). Each extension is one module in `xt/` owning its options,
 * parsing, canonical words, `-L` text, evaluation and fast-path hints; `xt/index.ts` lists them.
 * Behaviour was checked option by option against iptables 1.8.9 (nf_tables); the normalisations
 * the real tool applies (state order, `/32`, dropped full port ranges, …) happen in the modules,
 * so a parsed {@link Match} is already in the form `iptables-save` prints.
 */
import type { ExtensionInstance, OptionTable } from './extension.ts';
import { undecided, type ModTest } from './matchers.ts';
import { quoteVerbatim } from './tokenize.ts';
import type { FastMatchReader } from './fastCursor.ts';
import { MATCH_MODULES } from './xt/index.ts';
import type { Hook, Match, MatchKind, Rule, TableName } from './types.ts';

export { hex, parseMarkMask } from './xt/mark.ts';
export { truncateUtf8 } from './xt/comment.ts';
export { probabilityText, probabilityThreshold } from './xt/statistic.ts';
export { CT_STATE_ORDER } from './xt/conntrack.ts';
export { quoteVerbatim };

/**
 * A port match the compiler inlines as numbers, so the common check costs no closure call:
 * the protocol it requires, its port ranges and TCP flags, each with its `!`.
 */
export interface L4Hint {
  readonly proto: number;
  readonly spFrom: number;
  readonly spTo: number;
  readonly spNeg: boolean;
  readonly dpFrom: number;
  readonly dpTo: number;
  readonly dpNeg: boolean;
  readonly flMask: number;
  readonly flComp: number;
  readonly flNeg: boolean;
}

/**
 * One match extension (`-m name`), whole: the option table (abbreviations resolve within it, as
 * getopt does once the module is loaded), a parser instance per occurrence, the words
 * `iptables-save` prints, the `iptables -L` text, the evaluation closure, the kernel's table and
 * hook limits, and the compiler's fast-path hints. A module that parses into its own `kind` is
 * found by kind; one that parses into an `unknown` match (its canonical words) by its name.
 */
export interface MatchModule {
  readonly name: string;
  readonly options: OptionTable;
  /** A fresh instance collecting one `-m name` occurrence. `finish` returns null to drop it. */
  create(): ExtensionInstance<Match | null>;
  /** The `Match` kind this module parses into; absent for one that keeps canonical words. */
  readonly kind?: MatchKind;
  /** The words `iptables-save` prints, from `-m name` on (default: the canonical words). */
  readonly save?: (m: Match, out: string[]) => void;
  /** The `iptables -L` text (`proto` is the rule's `-p`; default: the words without dashes). */
  readonly list?: (m: Match, numeric: boolean, proto: number) => string;
  /** Its `-L` text follows the previous column without the usual blank (libxt_bpf's). */
  readonly listGlued?: boolean;
  /** The evaluation closure, or null for a module that always matches (default: undecided). */
  readonly compile?: (m: Match, rule: Rule) => ModTest | null;
  /** Tables the kernel accepts the match in (all when absent). */
  readonly tables?: readonly TableName[];
  /** Hooks the kernel accepts the match from (all when absent or undefined). */
  readonly hooks?: (m: Match) => readonly Hook[] | undefined;
  /** Port checks the compiler inlines instead of calling {@link compile}. */
  readonly inline?: (m: Match) => L4Hint | undefined;
  /** Its evaluation draws or counts: the dispatch index looks no further along the rule. */
  readonly barrier?: boolean;
  /** nf_tables folds a repeated match into the first: the merged match (later options win). */
  readonly merge?: (first: Match, again: Match) => Match;
  /** A new reader of `-m name`'s options in canonical form, for the fast reader (src/fastCursor.ts). */
  readonly fast?: () => FastMatchReader;
}

const modules = new Map<string, MatchModule>(); // tidy-allow: the extension registry, filled from xt/index.ts while this module loads
const byKind = new Map<string, MatchModule>(); // tidy-allow: the same registry by the Match kind a module owns
const byWordsName = new Map<string, MatchModule>(); // tidy-allow: modules that keep canonical words, by name

for (const m of MATCH_MODULES) {
  modules.set(m.name, m);
  if (m.kind !== undefined) byKind.set(m.kind, m);
  else byWordsName.set(m.name, m);
}

/** The module that owns matches of `kind`, when one does. */
export function matchModuleOfKind(kind: MatchKind): MatchModule | undefined {
  return byKind.get(kind);
}

/**
 * The module a parsed match belongs to: by kind, or by name for a module that keeps canonical
 * words (an `unknown` match named like a typed module was not made by it, and has none).
 */
export function moduleOf(m: Match): MatchModule | undefined {
  return m.kind === 'unknown' ? byWordsName.get(m.module) : byKind.get(m.kind);
}

/** Every modelled match module (for the tokenizer's table of common words). */
export function matchModules(): IterableIterator<MatchModule> {
  return modules.values();
}

/** The modules netsim parses, by `-m` name. */
export function matchModule(name: string): MatchModule | undefined {
  return modules.get(name);
}

/**
 * Match extensions the real iptables ships (`libxt_*`, `libipt_*`). A `-m` naming one netsim does
 * not model is kept verbatim as an `unknown` match; any other name fails as the real tool fails.
 */
export const IPTABLES_MATCH_NAMES: ReadonlySet<string> = new Set([
  'addrtype', 'ah', 'bpf', 'cgroup', 'cluster', 'comment', 'connbytes', 'connlabel', 'connlimit',
  'connmark', 'conntrack', 'cpu', 'dccp', 'devgroup', 'dscp', 'ecn', 'esp', 'hashlimit', 'helper',
  'icmp', 'iprange', 'ipvs', 'length', 'limit', 'mac', 'mark', 'multiport', 'nfacct', 'osf', 'owner',
  'physdev', 'pkttype', 'policy', 'quota', 'rateest', 'realm', 'recent', 'rpfilter', 'sctp', 'set',
  'socket', 'state', 'statistic', 'string', 'tcp', 'tcpmss', 'time', 'tos', 'ttl', 'u32', 'udp',
]);

/**
 * The words `iptables-save` prints for a match, starting with `-m name`. Strings are already
 * quoted, so the words are joined with single spaces.
 */
export function saveMatchWords(m: Match, out: string[]): void {
  const own = moduleOf(m)?.save;
  if (own !== undefined) {
    own(m, out);
    return;
  }
  if (m.kind !== 'unknown') throw new Error(`no module prints ${m.kind}`);
  // An extension the real tool ships that netsim keeps as given.
  out.push('-m', m.module);
  for (const w of m.args) out.push(quoteVerbatim(w));
}

/**
 * The text `iptables -L` prints for a match (without the leading space). `proto` is the rule's
 * `-p`, which decides service names.
 */
export function listMatchText(m: Match, numeric: boolean, proto = 0): string {
  const own = moduleOf(m)?.list;
  if (own !== undefined) return own(m, numeric, proto);
  if (m.kind !== 'unknown') throw new Error(`no module lists ${m.kind}`);
  // The options without dashes: an approximation for extensions netsim keeps as given (docs/fidelity.md).
  return [m.module, ...m.args.map((a) => a.replace(/^--/, ''))].join(' ');
}

/** {@link listMatchText} with the blank `iptables -L` puts before it (none for some modules). */
export function listMatchPiece(m: Match, numeric: boolean, proto = 0): string {
  const text = listMatchText(m, numeric, proto);
  return moduleOf(m)?.listGlued === true ? text : ` ${text}`;
}

/** The closure for one module of `rule`, or `null` for modules that always match (`comment`). */
export function compileMatch(m: Match, rule: Rule): ModTest | null {
  const mod = moduleOf(m);
  if (mod?.compile !== undefined) return mod.compile(m, rule);
  return undecided(m.kind === 'unknown' ? m.module : m.kind);
}
