/**
 * @internal `-m sctp` (libxt_sctp): printed --sport, --dport, then --chunk-types; the kernel
 * takes it only on `-p sctp` rules.
 */
import { paramProblem } from '../failure.ts';
import { parsePortRange } from '../ports.ts';
import type { XtDefinition } from './define.ts';

const port = (v: readonly string[], at: number): readonly string[] => {
  const r = parsePortRange(v[0] ?? '', 132, at);
  return [r.from === r.to ? String(r.from) : `${r.from}:${r.to}`];
};

export const SCTP: XtDefinition = {
  name: 'sctp',
  options: [
    { name: 'source-port', aliases: ['sport'], args: 1, invert: true, as: 'sport', parse: port },
    { name: 'destination-port', aliases: ['dport'], args: 1, invert: true, as: 'dport', parse: port },
    {
      name: 'chunk-types',
      args: 2,
      invert: true,
      parse: (v, at) => {
        const how = v[0] ?? '';
        if (how !== 'all' && how !== 'any' && how !== 'only') throw paramProblem('--chunk-types requires `all\', `any\' or `only\'', at);
        return [how, v[1] ?? ''];
      },
    },
  ],
  order: ['sport', 'dport', 'chunk-types'],
};
