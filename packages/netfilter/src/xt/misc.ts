/**
 * @internal Small matches real dumps carry, with their canonical words and `iptables -L` text:
 * socket (TPROXY setups), connmark, tcpmss, esp, ah, realm, cpu.
 */
import { paramProblem } from '../failure.ts';
import { argOf, kernelProto, valMaskText, xtIntOption, xtMint, xtValMask, type XtDefinition } from './define.ts';

/** An XTTYPE_UINT*RC option printed `min` or `min:max`; `invalid` the extension's message for max < min. */
export function rangeOption(ext: string, opt: string, lmax: bigint, invalid?: string) {
  return (v: readonly string[], at: number): readonly string[] => {
    const [a = 0n, b = a] = xtMint(ext, opt, v[0] ?? '', lmax, at);
    if (invalid !== undefined && b < a) throw paramProblem(invalid, at);
    return [a === b ? String(a) : `${a}:${b}`];
  };
}

/** An XTTYPE_MARKMASK32 option (xtables_parse_val_mask), printed `0x%x[/0x%x]`. */
function mark(ext: string, opt: string, names?: ReadonlyMap<string, number>) {
  return (v: readonly string[], at: number): readonly string[] => {
    const mm = xtValMask(ext, opt, v[0] ?? '', at, names);
    return [valMaskText(mm.value, mm.mask, names)];
  };
}

/** A stock /etc/iproute2/rt_realms: realm names the realm match maps. */
const RT_REALMS: ReadonlyMap<string, number> = new Map([['cosmos', 0]]);

/** `-m socket [--transparent] [--nowildcard] [--restore-skmark]`; -L prints the options as given. */
export const SOCKET: XtDefinition = {
  name: 'socket',
  options: [
    { name: 'transparent', args: 0 },
    { name: 'nowildcard', args: 0 },
    { name: 'restore-skmark', args: 0 },
  ],
  hooks: () => ['PREROUTING', 'INPUT'],
  list: (args) => ['socket', ...args].join(' '),
};

export const CONNMARK_MATCH: XtDefinition = {
  name: 'connmark',
  options: [{ name: 'mark', args: 1, invert: true, parse: mark('connmark', 'mark') }],
  finish(s) {
    if (!s.has('mark')) s.missing('mark');
  },
  list: (args) => `connmark match ${args[0] === '!' ? '!' : ''} ${args[args.length - 1] ?? ''}`.replace(/match ! /, 'match ! '),
};

export const TCPMSS_MATCH: XtDefinition = {
  name: 'tcpmss',
  options: [{ name: 'mss', args: 1, invert: true, parse: rangeOption('tcpmss', 'mss', 0xffffn, 'tcpmss: invalid range given') }],
  finish(s, env) {
    if (!s.has('mss')) s.missing('mss');
    if (env.proto !== 6 || env.protoInvert) env.rejectRule('Invalid argument');
  },
  list: (args) => `tcpmss match ${args[0] === '!' ? '!' : ''}${args[args.length - 1] ?? ''}`,
};

function spiList(name: string, opt: string) {
  return (args: readonly string[]): string => {
    const v = argOf(args, opt);
    if (v === undefined) return name;
    return `${name} ${v.value.includes(':') ? 'spis' : 'spi'}:${v.invert ? '!' : ''}${v.value}`;
  };
}

export const ESP: XtDefinition = {
  name: 'esp',
  options: [{ name: 'espspi', args: 1, invert: true, parse: rangeOption('esp', 'espspi', 0xffffffffn) }],
  finish: (_s, env) => kernelProto(env, 50),
  list: spiList('esp', 'espspi'),
};

export const AH: XtDefinition = {
  name: 'ah',
  options: [{ name: 'ahspi', args: 1, invert: true, parse: rangeOption('ah', 'ahspi', 0xffffffffn) }],
  finish: (_s, env) => kernelProto(env, 51),
  list: spiList('ah', 'ahspi'),
};

export const REALM: XtDefinition = {
  name: 'realm',
  options: [{ name: 'realm', args: 1, invert: true, parse: mark('realm', 'realm', RT_REALMS) }],
  finish(s) {
    if (!s.has('realm')) s.missing('realm');
  },
  list: (args) => `realm ${args[0] === '!' ? '! ' : ''}${args[args.length - 1] ?? ''}`,
};

export const CPU: XtDefinition = {
  name: 'cpu',
  options: [
    {
      name: 'cpu',
      args: 1,
      invert: true,
      parse: xtIntOption('cpu', 'cpu', 32),
    },
  ],
  finish(s) {
    if (!s.has('cpu')) s.missing('cpu');
  },
  list: (args) => `cpu ${args[0] === '!' ? '! ' : ''}${args[args.length - 1] ?? ''}`,
};
