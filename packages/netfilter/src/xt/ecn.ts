/**
 * @internal `-m ecn` (libxt_ecn): printed --ecn-tcp-ece, --ecn-tcp-cwr, --ecn-ip-ect; the TCP
 * bits need `-p tcp` (the kernel refuses them otherwise).
 */
import { paramProblem } from '../failure.ts';
import { argOf, type XtDefinition } from './define.ts';

export const ECN: XtDefinition = {
  name: 'ecn',
  options: [
    { name: 'ecn-tcp-cwr', args: 0, invert: true },
    { name: 'ecn-tcp-ece', args: 0, invert: true },
    {
      name: 'ecn-ip-ect',
      args: 1,
      invert: true,
      parse: (v, at) => {
        const w = v[0] ?? '';
        if (!/^[0-3]$/.test(w)) throw paramProblem('ecn: bad value for option "--ecn-ip-ect", or out of range (0-3).\n', at);
        return [w];
      },
    },
  ],
  order: ['ecn-tcp-ece', 'ecn-tcp-cwr', 'ecn-ip-ect'],
  finish(s, env) {
    if (s.given.size === 0) throw paramProblem('ECN match: some option required');
    if ((s.has('ecn-tcp-cwr') || s.has('ecn-tcp-ece')) && (env.proto !== 6 || env.protoInvert)) env.rejectRule('Invalid argument');
  },
  list(args) {
    const parts = ['ECN match'];
    const neg = (n: string): string => (argOf(args, n)?.invert === true ? '!' : '');
    if (args.includes('--ecn-tcp-ece')) parts.push(`${neg('ecn-tcp-ece')}ECE`);
    if (args.includes('--ecn-tcp-cwr')) parts.push(`${neg('ecn-tcp-cwr')}CWR`);
    const ect = argOf(args, 'ecn-ip-ect');
    if (ect !== undefined) parts.push(`${ect.invert ? '!' : ''}ECT=${ect.value}`);
    return parts.join(' ');
  },
};
