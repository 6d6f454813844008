/**
 * `iptables -L` and `iptables -S` output, column for column as the real tool prints it.
 *
 * Recorded from iptables 1.8.9 (nf_tables). One column differs between releases: with `-n`,
 * 1.8.9 prints the protocol as a number (`6`, `0`) where 1.8.10 and later print its name (`tcp`,
 * `all`) as every release before 1.8.9 did. netsim prints the 1.8.10 form by default (deployed
 * nodes run it); pass `version: '1.8.9'` for the other.
 */
import { compareNames } from './draft.ts';
import { DEFAULT_IPTABLES_VERSION, Failure, type IptablesVersion } from './failure.ts';
import { formatIpv4 } from './ip.ts';
import { listMatchPiece } from './matches.ts';
import { protocolName } from './names.ts';
import { ruleSpecWords } from './ruleSpec.ts';
import { listTargetColumn, listTargetText } from './targets.ts';
import { BUILTIN_CHAINS, type Chain, type Cidr, type Counters, type IfaceMatch, type Rule, type Table } from './types.ts';

export interface ListOptions {
  /** List only this chain. */
  readonly chain?: string;
  /** With `chain`: list only this rule (1-based), without headers. */
  readonly ruleNum?: number;
  /** `-n`: addresses, ports and interfaces as numbers and `*`. */
  readonly numeric?: boolean;
  /** `-v`: counters and interfaces. */
  readonly verbose?: boolean;
  /** `-x`: exact counters instead of K/M/G/T. */
  readonly exact?: boolean;
  /** `--line-numbers`. */
  readonly lineNumbers?: boolean;
  readonly version?: IptablesVersion;
}

/** Chains of a table in listing order: built-in chains in hook order, then user chains by name. */
export function chainOrder(table: Table): Chain[] {
  const out: Chain[] = [];
  for (const hook of BUILTIN_CHAINS[table.name]) {
    out.push(table.chains[hook] ?? { name: hook, policy: 'ACCEPT', counters: { packets: 0, bytes: 0 }, rules: [] });
  }
  const users = Object.keys(table.chains).filter((n) => !(BUILTIN_CHAINS[table.name] as readonly string[]).includes(n));
  users.sort(compareNames);
  for (const n of users) out.push(table.chains[n] as Chain);
  return out;
}

function isBuiltin(table: Table, name: string): boolean {
  return (BUILTIN_CHAINS[table.name] as readonly string[]).includes(name);
}

/** The real tool's refusal to list a chain that does not exist (1.8.9 words it oddly). */
function noSuchChain(table: Table, name: string): Failure {
  return new Failure('other', `chain \`${name}' in table \`${table.name}' is incompatible, use 'nft' tool.`, { prefixed: true });
}

function referenceCounts(table: Table): Map<string, number> {
  const refs = new Map<string, number>();
  for (const name of Object.keys(table.chains)) {
    for (const r of (table.chains[name] as Chain).rules) {
      const t = r.target;
      if (t !== undefined && (t.kind === 'jump' || t.kind === 'goto')) refs.set(t.chain, (refs.get(t.chain) ?? 0) + 1);
    }
  }
  return refs;
}

/** xtables_print_num: a counter, abbreviated to K/M/G/T unless exact. */
function printNum(n: number, exact: boolean, table: boolean): string {
  if (exact) return table ? `${String(n).padStart(8)} ` : `${n} `;
  if (n <= 99999) return table ? `${String(n).padStart(5)} ` : `${n} `;
  const units = ['K', 'M', 'G', 'T'];
  let v = n;
  for (let u = 0; u < units.length; u++) {
    v = Math.floor((v + 500) / 1000);
    if (v <= 9999 || u === units.length - 1) return table ? `${String(v).padStart(4)}${units[u]} ` : `${v}${units[u]} `;
  }
  return `${v} `;
}

function pad(s: string, width: number): string {
  return s.length >= width ? s : s + ' '.repeat(width - s.length);
}

/**
 * Names `iptables -L` (without `-n`) prints for addresses: the host's `/etc/hosts`, then
 * `/etc/networks`, as on a stock Debian 12 host; netsim does no DNS, so other addresses stay numeric.
 */
const HOST_NAMES: ReadonlyMap<string, string> = new Map([['127.0.0.1', 'localhost']]);
const NETWORK_NAMES: ReadonlyMap<string, string> = new Map([
  ['0.0.0.0', 'default'],
  ['127.0.0.0', 'loopback'],
  ['169.254.0.0', 'link-local'],
]);

function addrText(c: Cidr | undefined, numeric: boolean): string {
  if (c === undefined || c.prefix === 0) return numeric ? '0.0.0.0/0' : 'anywhere';
  const addr = formatIpv4(c.addr);
  const name = numeric ? addr : (HOST_NAMES.get(addr) ?? NETWORK_NAMES.get(addr) ?? addr);
  return c.prefix === 32 ? name : `${name}/${c.prefix}`;
}

function ifaceText(i: IfaceMatch | undefined, numeric: boolean): string {
  if (i === undefined) return numeric ? '*' : 'any';
  const name = i.wildcard ? `${i.name}+` : i.name;
  return `${i.negate ? '!' : ''}${name === '' ? (numeric ? '*' : 'any') : name}`;
}

function protoColumn(rule: Rule, numeric: boolean, version: IptablesVersion): string {
  const proto = rule.proto?.proto ?? 0;
  if (numeric && version === '1.8.9') return String(proto);
  return proto === 0 ? 'all' : protocolName(proto);
}

interface Fmt {
  readonly numeric: boolean;
  readonly verbose: boolean;
  readonly exact: boolean;
  readonly lineNumbers: boolean;
  readonly version: IptablesVersion;
}

function headerLines(chain: Chain, builtin: boolean, refs: number, f: Fmt): string {
  let first = `Chain ${chain.name}`;
  if (builtin) {
    first += ` (policy ${chain.policy ?? 'ACCEPT'}`;
    if (f.verbose) {
      const c = chain.counters ?? { packets: 0, bytes: 0 };
      first += ` ${printNum(c.packets, f.exact, false)}packets, ${printNum(c.bytes, f.exact, false)}bytes`;
    }
    first += ')';
  } else {
    first += ` (${refs} references)`;
  }
  let cols = '';
  if (f.lineNumbers) cols += 'num  ';
  if (f.verbose) cols += f.exact ? `${'pkts'.padStart(8)} ${'bytes'.padStart(10)} ` : ' pkts bytes ';
  cols += 'target     prot opt';
  if (f.verbose) cols += ' in     out    ';
  cols += ` ${pad('source', 19)}  ${pad('destination', 19)} `;
  return `${first}\n${cols}\n`;
}

function ruleLine(rule: Rule, num: number, f: Fmt): string {
  let s = '';
  if (f.lineNumbers) s += `${pad(String(num), 4)} `;
  if (f.verbose) {
    const c: Counters = rule.counters ?? { packets: 0, bytes: 0 };
    s += printNum(c.packets, f.exact, true) + printNum(c.bytes, f.exact, true);
  }
  s += `${pad(listTargetColumn(rule.target), 9)} `;
  s += rule.proto?.negate === true ? '!' : ' ';
  s += `${pad(protoColumn(rule, f.numeric, f.version), 4)} `;
  s += `${rule.fragment?.negate === true ? '!' : '-'}${rule.fragment !== undefined ? 'f' : '-'} `;
  if (f.verbose) {
    s += ` ${pad(ifaceText(rule.inIface, f.numeric), 6)} `;
    s += `${pad(ifaceText(rule.outIface, f.numeric), 6)} `;
  }
  s += rule.src?.negate === true ? '!' : ' ';
  s += `${pad(addrText(rule.src?.cidr, f.numeric), 19)} `;
  s += rule.dst?.negate === true ? '!' : ' ';
  s += `${pad(addrText(rule.dst?.cidr, f.numeric), 19)} `;
  if (rule.target?.kind === 'goto') s += '[goto] ';
  for (const m of rule.matches) s += listMatchPiece(m, f.numeric, rule.proto?.proto ?? 0);
  const t = listTargetText(rule.target, f.numeric);
  if (t !== '') s += ` ${t}`;
  return `${s}\n`;
}

/**
 * `iptables [-t table] -L [chain [num]] [-n] [-v] [-x] [--line-numbers]` for one table.
 * Throws the real tool's failure when the chain does not exist.
 *
 * @example
 * listTable(ruleset.tables.nat, { chain: 'FLANNEL-POSTRTG', numeric: true, verbose: true })
 */
export function listTable(table: Table, opts: ListOptions = {}): string {
  const f: Fmt = {
    numeric: opts.numeric ?? false,
    verbose: opts.verbose ?? false,
    exact: opts.exact ?? false,
    lineNumbers: opts.lineNumbers ?? false,
    version: opts.version ?? DEFAULT_IPTABLES_VERSION,
  };
  const refs = referenceCounts(table);
  let chains = chainOrder(table);
  if (opts.chain !== undefined) {
    const only = chains.find((c) => c.name === opts.chain);
    if (only === undefined) throw noSuchChain(table, opts.chain);
    if (opts.ruleNum !== undefined) {
      const rule = only.rules[opts.ruleNum - 1];
      // A number past the end lists nothing and succeeds (go-iptables' ChainExists relies on it).
      if (rule === undefined) return '';
      return ruleLine(rule, opts.ruleNum, f);
    }
    chains = [only];
  }
  let out = '';
  chains.forEach((c, k) => {
    if (k > 0) out += '\n';
    out += headerLines(c, isBuiltin(table, c.name), refs.get(c.name) ?? 0, f);
    c.rules.forEach((r, i) => {
      out += ruleLine(r, i + 1, f);
    });
  });
  return out;
}

export interface ListRulesOptions {
  readonly chain?: string;
  readonly ruleNum?: number;
  /** `-v`: counters as `-c packets bytes`. */
  readonly verbose?: boolean;
}

/**
 * `iptables [-t table] -S [chain [num]] [-v]` for one table.
 *
 * @example
 * listRules(ruleset.tables.filter) // "-P INPUT ACCEPT\n-P FORWARD ACCEPT\n…"
 */
export function listRules(table: Table, opts: ListRulesOptions = {}): string {
  const verbose = opts.verbose ?? false;
  let chains = chainOrder(table);
  if (opts.chain !== undefined) {
    const only = chains.find((c) => c.name === opts.chain);
    if (only === undefined) throw noSuchChain(table, opts.chain);
    if (opts.ruleNum !== undefined) {
      const rule = only.rules[opts.ruleNum - 1];
      // A number past the end lists nothing and succeeds (go-iptables' ChainExists relies on it).
      if (rule === undefined) return '';
      return `-A ${only.name} ${ruleSpecWords(rule, { counters: verbose }).join(' ')}\n`;
    }
    chains = [only];
  }
  let out = '';
  for (const c of chains) {
    if (isBuiltin(table, c.name)) {
      const cnt = c.counters ?? { packets: 0, bytes: 0 };
      out += `-P ${c.name} ${c.policy ?? 'ACCEPT'}${verbose ? ` -c ${cnt.packets} ${cnt.bytes}` : ''}\n`;
    } else {
      out += `-N ${c.name}\n`;
    }
  }
  for (const c of chains) {
    for (const r of c.rules) {
      const words = ruleSpecWords(r, { counters: verbose });
      out += words.length > 0 ? `-A ${c.name} ${words.join(' ')}\n` : `-A ${c.name}\n`;
    }
  }
  return out;
}
