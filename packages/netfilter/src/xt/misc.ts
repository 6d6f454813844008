/**
 * @internal Small matches real dumps carry, with their canonical words and `iptables -L` text:
 * socket (TPROXY setups), connmark, tcpmss, esp, ah, realm, cpu.
 */
import { paramProblem } from '../failure.ts';
import { argOf, hexOf, markMask, uintBase0, type XtDefinition } from './define.ts';

function range(ext: string, opt: string, max: number) {
  return (v: readonly string[], at: number): readonly string[] => {
    const text = v[0] ?? '';
    const colon = text.indexOf(':');
    const a = colon === 0 ? 0 : uintBase0(colon < 0 ? text : text.slice(0, colon));
    const b = colon < 0 ? a : colon === text.length - 1 ? max : uintBase0(text.slice(colon + 1));
    if (a === undefined || b === undefined || a > max || b > max) throw paramProblem(`${ext}: bad value for option "--${opt}", or out of range (0-${max}).\n`, at);
    return [a === b ? String(a) : `${a}:${b}`];
  };
}

function mark(ext: string, opt: string) {
  return (v: readonly string[], at: number): readonly string[] => {
    const mm = markMask(v[0] ?? '');
    if (mm === undefined) throw paramProblem(`${ext}: bad value for option "--${opt}", or out of range (0-4294967295).\n`, at);
    return [mm.mask === 0xffffffff ? hexOf(mm.value) : `${hexOf(mm.value)}/${hexOf(mm.mask)}`];
  };
}

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
  options: [{ name: 'mss', args: 1, invert: true, parse: range('tcpmss', 'mss', 0xffff) }],
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
  options: [{ name: 'espspi', args: 1, invert: true, parse: range('esp', 'espspi', 0xffffffff) }],
  list: spiList('esp', 'espspi'),
};

export const AH: XtDefinition = {
  name: 'ah',
  options: [{ name: 'ahspi', args: 1, invert: true, parse: range('ah', 'ahspi', 0xffffffff) }],
  list: spiList('ah', 'ahspi'),
};

export const REALM: XtDefinition = {
  name: 'realm',
  options: [{ name: 'realm', args: 1, invert: true, parse: mark('realm', 'realm') }],
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
      parse: (v, at) => {
        const n = uintBase0(v[0] ?? '');
        if (n === undefined || n > 0xffffffff) throw paramProblem('cpu: bad value for option "--cpu", or out of range (0-4294967295).\n', at);
        return [String(n)];
      },
    },
  ],
  finish(s) {
    if (!s.has('cpu')) s.missing('cpu');
  },
  list: (args) => `cpu ${args[0] === '!' ? '! ' : ''}${args[args.length - 1] ?? ''}`,
};
