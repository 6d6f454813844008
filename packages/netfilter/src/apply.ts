/**
 * @internal
 * Carrying out a parsed `iptables` command on table drafts: shared by `exec` (one command) and
 * `iptables-restore` (one line). Returns what the command prints on stdout (`-L`, `-S`).
 */
import type { ParsedCommand } from './command.ts';
import { TableDraft } from './draft.ts';
import { kernelRefused, type IptablesVersion } from './failure.ts';
import { listRules, listTable } from './listing.ts';
import { formatRuleSpec, ruleKey } from './ruleSpec.ts';
import { BUILTIN_CHAINS, type Ruleset, type TableName } from './types.ts';

/** Drafts of the tables a batch touches, made on first use from a committed ruleset. */
export class DraftSet {
  private readonly drafts = new Map<TableName, TableDraft>();
  constructor(private base: Ruleset) {}

  get(name: TableName): TableDraft {
    let d = this.drafts.get(name);
    if (d === undefined) {
      d = TableDraft.of(this.base.tables[name]);
      this.drafts.set(name, d);
    }
    return d;
  }

  /** Starts a table again from the committed state, dropping its uncommitted changes. */
  reset(name: TableName): TableDraft {
    this.drafts.delete(name);
    return this.get(name);
  }

  /** The committed ruleset with one table's draft applied; the draft is dropped. */
  commit(name: TableName): Ruleset {
    const d = this.drafts.get(name);
    if (d === undefined) return this.base;
    this.base = { tables: { ...this.base.tables, [name]: d.toTable() } };
    this.drafts.delete(name);
    return this.base;
  }

  get committed(): Ruleset {
    return this.base;
  }
}

export function applyCommand(d: TableDraft, cmd: ParsedCommand, version: IptablesVersion): string {
  const chain = cmd.chain;
  switch (cmd.command) {
    case 'A':
    case 'I':
    case 'R': {
      const c = d.need(chain as string);
      if (cmd.kernelRejects !== undefined) {
        const op = cmd.command === 'A' ? 'RULE_APPEND' : cmd.command === 'I' ? 'RULE_INSERT' : 'RULE_REPLACE';
        throw kernelRefused(op, cmd.kernelRejects, `rule in chain ${c.name}`);
      }
      if (cmd.command === 'A') for (const r of cmd.rules) d.append(c.name, r);
      else if (cmd.command === 'I') {
        // Several rules (from several addresses) keep their order at the insertion point.
        let at = cmd.ruleNum ?? 1;
        for (const r of cmd.rules) d.insert(c.name, at++, r);
      } else {
        const [first, ...more] = cmd.rules;
        if (first === undefined || more.length > 0) throw kernelRefused('RULE_REPLACE', 'Invalid argument', `rule in chain ${c.name}`);
        d.replace(c.name, cmd.ruleNum as number, first);
      }
      return '';
    }
    case 'D':
      if (cmd.ruleNum !== undefined) d.deleteNum(chain as string, cmd.ruleNum);
      // The command's rule is new each time: its key is made, not remembered (see ruleKey).
      else for (const r of cmd.rules) d.deleteSpec(chain as string, formatRuleSpec(r), ruleKey);
      return '';
    case 'C':
      for (const r of cmd.rules) d.check(chain as string, formatRuleSpec(r), ruleKey);
      return '';
    case 'N':
      d.newChain(chain as string);
      return '';
    case 'X':
      if (chain === undefined) d.deleteAllUserChains();
      else d.deleteChain(chain);
      return '';
    case 'F':
      d.flush(chain);
      return '';
    case 'Z':
      d.zero(chain, cmd.ruleNum);
      return cmd.verbose ? zeroingLines(d, chain) : '';
    case 'E':
      d.rename(chain as string, cmd.newName as string);
      return '';
    case 'P':
      d.setPolicy(chain as string, cmd.policy as string);
      return '';
    case 'L': {
      const out = listTable(d.toTable(), {
        ...(chain !== undefined && { chain }),
        ...(cmd.ruleNum !== undefined && { ruleNum: cmd.ruleNum }),
        numeric: cmd.numeric,
        verbose: cmd.verbose,
        exact: cmd.exact,
        lineNumbers: cmd.lineNumbers,
        version,
      });
      if (!cmd.zero) return out;
      d.zero(chain, undefined);
      return cmd.verbose ? out + zeroingLines(d, chain) : out;
    }
    case 'S':
      return listRules(d.toTable(), {
        ...(chain !== undefined && { chain }),
        ...(cmd.ruleNum !== undefined && { ruleNum: cmd.ruleNum }),
        verbose: cmd.verbose,
      });
  }
}

/** With -v, -Z names each chain it zeroes, in listing order. */
function zeroingLines(d: TableDraft, chain: string | undefined): string {
  const names = chain !== undefined ? [chain] : [...BUILTIN_CHAINS[d.name], ...d.userChainNames()];
  return names.map((n) => `Zeroing chain \`${n}'\n`).join('');
}
