/**
 * @internal `-m ttl` and `-j TTL` (libipt_ttl, libipt_TTL): `--ttl` is the old spelling of
 * `--ttl-eq`; only `--ttl-eq` takes `!`.
 */
import { paramProblem } from '../failure.ts';
import { xtIntOption, type XtDefinition } from './define.ts';

const byte = (ext: string, opt: string): ((v: readonly string[], at: number) => readonly string[]) => xtIntOption(ext, opt, 8);

export const TTL_MATCH: XtDefinition = {
  name: 'ttl',
  options: [
    { name: 'ttl-lt', args: 1, excl: ['ttl-gt', 'ttl-eq'], parse: byte('ttl', 'ttl-lt') },
    { name: 'ttl-gt', args: 1, excl: ['ttl-lt', 'ttl-eq'], parse: byte('ttl', 'ttl-gt') },
    { name: 'ttl-eq', args: 1, invert: true, excl: ['ttl-lt', 'ttl-gt'], parse: byte('ttl', 'ttl-eq') },
    // Same id as --ttl-eq: the framework finds (and names) the --ttl-eq entry for it.
    { name: 'ttl', args: 1, invert: true, as: 'ttl-eq', parse: byte('ttl', 'ttl-eq') },
  ],
  order: ['ttl-eq', 'ttl-lt', 'ttl-gt'],
  finish(s) {
    if (!['ttl-eq', 'ttl-lt', 'ttl-gt'].some((o) => s.has(o))) throw paramProblem("TTL match: You must specify one of `--ttl-eq', `--ttl-lt', `--ttl-gt");
  },
  list(args) {
    const neg = args[0] === '!';
    const opt = args[neg ? 1 : 0] ?? '';
    const v = args[neg ? 2 : 1] ?? '';
    const sym = opt === '--ttl-eq' ? (neg ? '!=' : '==') : opt === '--ttl-lt' ? '<' : '>';
    return `TTL match TTL ${sym} ${v}`;
  },
};

export const TTL_TARGET: XtDefinition = {
  name: 'TTL',
  options: [
    { name: 'ttl-set', args: 1, parse: byte('TTL', 'ttl-set') },
    { name: 'ttl-dec', args: 1, parse: xtIntOption('TTL', 'ttl-dec', 8, 1n) },
    { name: 'ttl-inc', args: 1, parse: xtIntOption('TTL', 'ttl-inc', 8, 1n) },
  ],
  tables: ['mangle'],
  finish(s) {
    if (!s.has('ttl-set') && !s.has('ttl-dec') && !s.has('ttl-inc')) throw paramProblem('TTL: You must specify an action');
  },
  list(args) {
    const words: Readonly<Record<string, string>> = { '--ttl-set': 'set to', '--ttl-dec': 'decrement by', '--ttl-inc': 'increment by' };
    return `TTL ${words[args[0] ?? ''] ?? ''} ${args[1] ?? ''}`;
  },
};
