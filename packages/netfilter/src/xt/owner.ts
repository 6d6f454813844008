/**
 * @internal `-m owner` (libxt_owner): the local socket's owner. Printed --socket-exists,
 * --uid-owner, --gid-owner, --suppl-groups; names resolve to ids (root only, in netsim); the
 * kernel takes the match from OUTPUT and POSTROUTING only.
 */
import { paramProblem } from '../failure.ts';
import { argOf, uintBase0, type XtDefinition } from './define.ts';

/** `id` or `id-id`, a name resolving through the host's passwd/group files (only `root` here). */
function ids(kind: 'uid' | 'gid'): (v: readonly string[], at: number) => readonly string[] {
  return (v, at) => {
    const text = v[0] ?? '';
    const one = (t: string): number | undefined => (t === 'root' ? 0 : uintBase0(t));
    const dash = text.indexOf('-', 1);
    const from = one(dash < 0 ? text : text.slice(0, dash));
    const to = dash < 0 ? from : one(text.slice(dash + 1));
    if (from === undefined || to === undefined || from > 0xfffffffe || to > 0xfffffffe) {
      throw paramProblem(`owner: Bad value for "--${kind}-owner" option: "${text}"`, at);
    }
    return [from === to ? String(from) : `${from}-${to}`];
  };
}

export const OWNER: XtDefinition = {
  name: 'owner',
  options: [
    { name: 'uid-owner', args: 1, invert: true, parse: ids('uid') },
    { name: 'gid-owner', args: 1, invert: true, parse: ids('gid') },
    {
      name: 'suppl-groups',
      args: 0,
      parse: (_v, at, s) => {
        if (!s.has('gid-owner')) throw paramProblem('owner: Bad value for "--suppl-groups" option: "you need to use --gid-owner first"', at - 1);
        return [];
      },
    },
    { name: 'socket-exists', args: 0, invert: true },
  ],
  order: ['socket-exists', 'uid-owner', 'gid-owner', 'suppl-groups'],
  finish(s) {
    if (s.given.size === 0) throw paramProblem('owner: At least one of --uid-owner, --gid-owner or --socket-exists is required');
  },
  hooks: () => ['OUTPUT', 'POSTROUTING'],
  list(args) {
    const parts: string[] = [];
    const neg = (name: string): string => (argOf(args, name)?.invert === true ? '! ' : '');
    if (args.includes('--socket-exists')) parts.push(`${neg('socket-exists')}owner socket exists`);
    const uid = argOf(args, 'uid-owner');
    if (uid !== undefined) parts.push(`${neg('uid-owner')}owner UID match ${uid.value}`);
    const gid = argOf(args, 'gid-owner');
    if (gid !== undefined) parts.push(`${neg('gid-owner')}owner GID match ${gid.value}${args.includes('--suppl-groups') ? ' incl. suppl. groups' : ''}`);
    return parts.join(' ');
  },
};
