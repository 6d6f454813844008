/**
 * What the parser hands the transaction: `nft -f` commands with the source ranges their errors
 * name. A `table … { … }` block is expanded the way nft expands it: the table, then its chains,
 * then its sets, then every chain's rules.
 */
import type { Span } from './errors.ts';
import type { Token } from './lexer.ts';
import type { BaseChainSpec, ChainType, DataType, Family, Hook, NftObject, SetFlag, Stmt } from './types.ts';

export interface Named {
  readonly name: string;
  readonly span: Span;
}

/** A constant as written, typed once the set or expression it belongs to is known. */
export type RawAtom =
  | { readonly kind: 'atom'; readonly tok: Token }
  | { readonly kind: 'range'; readonly lo: Token; readonly hi: Token; readonly span: Span }
  | { readonly kind: 'prefix'; readonly addr: Token; readonly len: number; readonly span: Span }
  | { readonly kind: 'list'; readonly toks: readonly Token[]; readonly span: Span };

export type RawData =
  | { readonly kind: 'values'; readonly parts: readonly RawAtom[] }
  | { readonly kind: 'verdict'; readonly verdict: 'accept' | 'drop' | 'continue' | 'return' | 'jump' | 'goto'; readonly chain?: Named };

export interface RawElement {
  readonly key: readonly RawAtom[];
  /** The key's range: the kernel names it when an element already exists with other data. */
  readonly keySpan?: Span;
  readonly data?: RawData;
  readonly timeoutMs?: number;
  readonly comment?: string;
  readonly counter?: { readonly packets: number; readonly bytes: number };
  readonly span: Span;
}

export interface SetDecl {
  readonly isMap: boolean;
  readonly keyType?: readonly DataType[];
  readonly keyTypeof?: string;
  readonly dataType?: readonly DataType[];
  readonly dataTypeof?: string;
  readonly typeSpan?: Span;
  readonly flags: readonly SetFlag[];
  readonly timeoutMs?: number;
  readonly gcIntervalMs?: number;
  readonly size?: number;
  readonly counter: boolean;
  readonly comment?: string;
  readonly policy?: 'performance' | 'memory';
  readonly autoMerge?: boolean;
  readonly elements?: readonly RawElement[];
}

/** A rule's statements before its set references and jump targets are checked against the ruleset. */
export interface RuleBody {
  readonly stmts: readonly Stmt[];
  readonly comment?: string;
  /** `@name` references, for the userspace existence check. */
  readonly setRefs: readonly Named[];
  /** `EXPR @name` matches: the expression's type and range and the reference's (with its `@`), for nft's type check. */
  readonly setMatches?: readonly { readonly name: string; readonly type: DataType; readonly left: Span; readonly ref: Span }[];
  /** Named objects the rule uses (`counter name "x"`…), for the kernel's check. */
  readonly objRefs?: readonly (Named & { readonly type: NftObject['kind'] })[];
  /** The anonymous sets' and maps' ranges: the kernel names the first when it refuses the rule's set. */
  readonly anonSpans?: readonly Span[];
  /** The statements' range without a trailing comment (a rule in a block is located there). */
  readonly stmtSpan?: Span;
  /** `add @set`/`update @set` statements' ranges, for the kernel's errors on them. */
  readonly updateSpans?: readonly Span[];
  /** jump/goto targets (in statements and anonymous vmaps), for the kernel's check. */
  readonly targets: readonly Named[];
  /** The `jump X`/`goto X` statements' ranges: the kernel names them when a jump closes a loop. */
  readonly jumps: readonly { readonly chain: string; readonly span: Span }[];
  /** An error nft raises when it evaluates the rule (after parsing the whole input). */
  readonly evalError?: { readonly message: string; readonly span: Span; readonly related?: Span };
  readonly span: Span;
}

export interface BaseSpecParsed {
  readonly type: ChainType;
  readonly typeSpan: Span;
  readonly hook: Hook;
  readonly hookSpan: Span;
  readonly priority: number;
  readonly prioSpan: Span;
  readonly policy?: BaseChainSpec['policy'];
}

export type Command =
  | { readonly kind: 'table'; readonly op: 'add' | 'create'; readonly family: Family; readonly name: Named; readonly comment?: string; readonly dormant?: boolean; readonly span: Span }
  | {
      readonly kind: 'chain';
      readonly op: 'add' | 'create';
      readonly family: Family;
      readonly table: Named;
      readonly name: Named;
      readonly base?: BaseSpecParsed;
      readonly policy?: BaseChainSpec['policy'];
      /** `policy …` in a block (where the kernel's refusal of a policy on a regular chain is reported). */
      readonly policySpan?: Span;
      readonly comment?: string;
      readonly span: Span;
      /** Where the kernel's refusal of the chain is reported: the whole command (`add chain …`), or the name in a block. */
      readonly errSpan?: Span;
    }
  | {
      readonly kind: 'rule';
      readonly op: 'add' | 'insert' | 'replace';
      readonly family: Family;
      readonly table: Named;
      readonly chain: Named;
      readonly position?: { readonly kind: 'handle' | 'position' | 'index'; readonly n: number; readonly span: Span };
      readonly body: RuleBody;
      readonly span: Span;
    }
  | {
      readonly kind: 'object';
      readonly op: 'add' | 'create';
      readonly family: Family;
      readonly table: Named;
      readonly name: Named;
      /** The object without its handle. */
      readonly obj: DistributiveOmit<NftObject, 'handle'>;
      readonly span: Span;
    }
  | { readonly kind: 'set'; readonly op: 'add' | 'create'; readonly family: Family; readonly table: Named; readonly name: Named; readonly decl: SetDecl; readonly span: Span }
  | {
      readonly kind: 'element';
      readonly op: 'add' | 'create' | 'delete' | 'destroy';
      readonly family: Family;
      readonly table: Named;
      readonly set: Named;
      readonly elements: readonly RawElement[];
      readonly span: Span;
    }
  | {
      readonly kind: 'delete';
      readonly op: 'delete' | 'destroy';
      readonly what: 'table' | 'chain' | 'set' | 'map' | 'rule' | NftObject['kind'];
      readonly family: Family;
      readonly table: Named;
      readonly name?: Named;
      readonly handle?: { readonly n: number; readonly span: Span };
      readonly span: Span;
    }
  | { readonly kind: 'flush'; readonly what: 'ruleset'; readonly span: Span }
  | { readonly kind: 'flush'; readonly what: 'table'; readonly family: Family; readonly table: Named; readonly span: Span }
  | { readonly kind: 'flush'; readonly what: 'chain' | 'set' | 'map'; readonly family: Family; readonly table: Named; readonly name: Named; readonly span: Span };

/** Omit over each member of a union. */
export type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
