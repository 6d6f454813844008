/**
 * `ipset save` files given to `--ipset FILE` (`netsim trace`, `netsim ruleset fmt|diff`,
 * `netsim list`): `create NAME TYPE …` and `add NAME ELEMENT …` lines, `#` comments ignored.
 */
import type { IpSet } from '@netsim/netfilter';

/** A line of an ipset file netsim cannot use; the message names file and line. */
export class IpsetFileError extends Error {
  override readonly name = 'IpsetFileError';
}

const MODELLED = new Set<string>(['hash:ip', 'hash:net', 'hash:ip,port', 'hash:net,port', 'hash:ip,port,ip']);

interface Parsed {
  readonly name: string;
  readonly type: string;
  readonly members: string[];
}

function parse(text: string, file: string): Parsed[] {
  const sets = new Map<string, Parsed>();
  text.split('\n').forEach((line, i) => {
    const words = line.trim().split(/\s+/);
    if (words[0] === undefined || words[0] === '' || words[0].startsWith('#')) return;
    const where = `${file}:${i + 1}`;
    const name = words[1];
    if (name === undefined) throw new IpsetFileError(`${where}: "${words[0]}" needs a set name`);
    if (words[0] === 'create') {
      const type = words[2];
      if (type === undefined) throw new IpsetFileError(`${where}: "create ${name}" needs a set type`);
      if (sets.has(name)) throw new IpsetFileError(`${where}: set "${name}" is created twice`);
      sets.set(name, { name, type, members: [] });
    } else if (words[0] === 'add') {
      const set = sets.get(name);
      if (set === undefined) throw new IpsetFileError(`${where}: add to set "${name}" before its create line`);
      set.members.push(words.slice(2).join(' '));
    } else throw new IpsetFileError(`${where}: expected "create" or "add", got "${words[0]}"`);
  });
  return [...sets.values()];
}

/**
 * The sets of an `ipset save` file with their members, for evaluating `-m set`. Only the hash
 * types netsim evaluates are accepted; another type is refused naming the line.
 */
export function parseIpsetSave(text: string, file: string): IpSet[] {
  const sets = parse(text, file);
  for (const s of sets) {
    if (!MODELLED.has(s.type)) {
      const line = text.split('\n').findIndex((l) => /^\s*create\s/.test(l) && l.trim().split(/\s+/)[1] === s.name) + 1;
      throw new IpsetFileError(`${file}:${line}: set type "${s.type}" is not modelled (${[...MODELLED].join(', ')})`);
    }
  }
  return sets.map((s) => ({ name: s.name, type: s.type as IpSet['type'], members: s.members }));
}

/**
 * The names of the sets an `ipset save` file creates, whatever their type: what
 * `iptables-restore` needs to accept `-m set --match-set NAME` and `-j SET --add-set NAME`.
 */
export function ipsetNames(text: string, file: string): string[] {
  return parse(text, file).map((s) => s.name);
}
