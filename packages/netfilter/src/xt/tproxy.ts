/**
 * @internal `-j TPROXY` (libxt_TPROXY revision 1): printed `--on-port P --on-ip A --tproxy-mark
 * V/M` whatever the order given, with the defaults (`0.0.0.0`, `0x0/0x0`; a mark without a mask
 * has mask 0xffffffff). Ports are numbers or service names (no hex). The kernel takes it in the
 * mangle table, from PREROUTING, on `-p tcp` or `-p udp` rules only.
 */
import { paramProblem } from '../failure.ts';
import { formatIpv4 } from '../ip.ts';
import { lookupService } from '../names.ts';
import { hexOf, xtHost, xtValMask, type XtDefinition } from './define.ts';

export const TPROXY: XtDefinition = {
  name: 'TPROXY',
  options: [
    {
      name: 'on-port',
      args: 1,
      parse: (v, at) => {
        const p = /^[0-9]+$/.test(v[0] ?? '') ? Number(v[0]) : lookupService(v[0] ?? '', 6);
        if (p === undefined || p > 65535) throw paramProblem(`Port "${v[0] ?? ''}" does not resolve to anything.\n`, at);
        return [String(p)];
      },
    },
    {
      name: 'on-ip',
      args: 1,
      parse: (v, at) => [formatIpv4(xtHost(v[0] ?? '', at))],
    },
    {
      name: 'tproxy-mark',
      args: 1,
      parse: (v, at) => {
        const mm = xtValMask('TPROXY', 'tproxy-mark', v[0] ?? '', at);
        return [`${hexOf(mm.value)}/${hexOf(mm.mask)}`];
      },
    },
  ],
  tables: ['mangle'],
  hooks: () => ['PREROUTING'],
  finish(s, env) {
    if (!s.has('on-port')) s.missing('on-port');
    if (!s.has('on-ip')) s.set('on-ip', ['0.0.0.0']);
    if (!s.has('tproxy-mark')) s.set('tproxy-mark', ['0x0/0x0']);
    if ((env.proto !== 6 && env.proto !== 17) || env.protoInvert) env.rejectRule('Invalid argument');
  },
  list(args) {
    const v = (o: string): string => args[args.indexOf(o) + 1] ?? '';
    return `TPROXY redirect ${v('--on-ip')}:${v('--on-port')} mark ${v('--tproxy-mark')}`;
  },
};
