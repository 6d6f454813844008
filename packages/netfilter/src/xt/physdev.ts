/** @internal `-m physdev` (libxt_physdev): bridge ports; printed is-in, in, is-out, out, is-bridged. */
import { paramProblem } from '../failure.ts';
import type { XtDefinition } from './define.ts';

export const PHYSDEV: XtDefinition = {
  name: 'physdev',
  options: [
    { name: 'physdev-in', args: 1, invert: true },
    { name: 'physdev-out', args: 1, invert: true },
    { name: 'physdev-is-in', args: 0, invert: true },
    { name: 'physdev-is-out', args: 0, invert: true },
    { name: 'physdev-is-bridged', args: 0, invert: true },
  ],
  finish(s) {
    if (s.given.size === 0) throw paramProblem('PHYSDEV: no physdev option specified');
  },
  order: ['physdev-is-in', 'physdev-in', 'physdev-is-out', 'physdev-out', 'physdev-is-bridged'],
  list: (args) => `PHYSDEV match ${args.join(' ')}`,
};
